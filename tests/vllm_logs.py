"""Compare the estimator with real vLLM start-up logs (tests/data/vllm_logs/).

Shared by tests/test_estimator_logs.py and bench/estimator_accuracy.py.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from servespec.engines import get
from servespec.knowledge import gpus, models
from servespec.knowledge.error_band import CLASSES, model_class
from servespec.knowledge.memory import CUDA_VISIBLE_SHARE, EstimateInput

LOGS = Path(__file__).resolve().parent / "data" / "vllm_logs"
_OPTIONS = (
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "kv_cache_dtype",
    "enforce_eager",
)


@dataclass(frozen=True)
class Comparison:
    """One log: what vLLM logged and what the estimator predicts, or why it was skipped."""

    name: str
    observed: int | None
    predicted: int | None
    skipped: str = ""
    version: str = ""
    hybrid: bool = False
    """The model mixes attention kinds (sliding windows, linear attention)."""
    model_class: str = ""
    """The estimator's model class (knowledge/error_band.py ``model_class``)."""
    kv_gib: float = 0.0
    """The KV-cache memory per GPU the estimator predicts."""
    engine: str = "vllm"
    attention: str = "unknown"
    """The model's attention class (:func:`attention_class`); ``unknown`` when its facts are not known."""
    started: bool = True
    """The log reaches the engine's "ready" line (False: a failed start)."""

    @property
    def error(self) -> float:
        """Relative error of the predicted KV tokens."""
        assert self.observed and self.predicted is not None
        return (self.predicted - self.observed) / self.observed

    @property
    def error_gib(self) -> float:
        """Error of the predicted KV-cache memory in GiB per GPU: what the estimate of everything
        before it (weights, activations, overheads) got wrong, as the tokens' ratio says."""
        assert self.observed and self.predicted
        return self.kv_gib * (self.predicted - self.observed) / self.predicted


def _observed(data: dict[str, Any]) -> int | None:
    seen = data.get("observed") or {}
    if seen.get("kv_cache_tokens"):
        return int(seen["kv_cache_tokens"])
    if seen.get("num_gpu_blocks"):
        block = (data.get("settings") or {}).get("block_size") or 16
        return int(seen["num_gpu_blocks"]) * int(block)
    return None


def _gpu(data: dict[str, Any]) -> gpus.GpuModel | None:
    name = str(data.get("gpu") or "").split("(")[0].strip()
    found = gpus.resolve(name) if name else None
    total = data.get("total_gpu_memory_gib") or (data.get("observed") or {}).get("total_gpu_memory_gib")
    if found is None and name:
        for gpu in gpus.catalog():  # "NVIDIA A100 80GB" style names in log file names
            if all(part.lower() in gpu.id.lower() for part in name.replace("NVIDIA", "").split()):
                found = gpu
                break
    if found is not None and total:
        # The log states the CUDA-visible total: use it instead of the nvidia-smi figure.
        found = dataclasses.replace(found, memory_mib=round(float(total) / CUDA_VISIBLE_SHARE * 1024))
    return found


def _sized_by_name(method: str) -> bool:
    """Whether the estimator sizes weights from the quantization name alone (knowledge.memory)."""
    from servespec.knowledge.memory import quant_bits_of_name

    return quant_bits_of_name(method) is not None


def compare(path: Path) -> Comparison:
    """Estimate one log's KV tokens with the settings it shows."""
    data = YAML(typ="safe").load(path.read_text())
    name = path.stem
    calibration = data.get("calibration") or {}
    observed = _observed(data)
    version = str(data.get("vllm_version", ""))
    facts = _facts(data)
    seen = {"attention": attention_class(facts), "started": data.get("started") is not False}
    if calibration.get("use") is False:
        return Comparison(name, observed, None, str(calibration.get("why", "excluded")), version, **seen)
    gpu = _gpu(data)
    if observed is None or facts is None or gpu is None:
        why = "no KV number" if observed is None else "model not catalogued" if facts is None else "GPU unknown"
        return Comparison(name, observed, None, why, version, **seen)
    settings = data.get("settings") or {}
    method = str(settings.get("quantization") or "")
    if method and facts.quant_bits is None and not _sized_by_name(method):
        # e.g. RedHatAI's compressed-tensors checkpoints: the log names the format, not its scheme, and the file
        # does not carry the checkpoint's quantization_config; in use servespec reads the width from the checkpoint.
        why = f"weights' width unknown: {method} without its config"
        return Comparison(name, observed, None, why, version, **seen)
    plan = get("vllm").estimate(
        EstimateInput(
            engine="vllm",
            release=get("vllm").select(version).release,
            model=facts,
            gpu=gpu,
            tensor_parallel=int(settings.get("tensor_parallel_size") or 1),
            pipeline_parallel=int(settings.get("pipeline_parallel_size") or 1),
            dtype=str(settings.get("dtype") or "auto"),
            quantization=settings.get("quantization"),
            max_model_len=int(settings.get("max_model_len") or facts.max_position_embeddings or 4096),
            options={k: settings[k] for k in _OPTIONS if settings.get(k) is not None},
            engine_version=version,
            engine_core=str(data.get("engine") or "") or None,  # the log says V0 or V1
            kv_cache_dtype_option="kv_cache_dtype",
        )
    )
    assert plan is not None
    hybrid = bool(facts.linear_layers or (facts.sliding_window and facts.sliding_layers))
    kind = model_class(facts)
    return Comparison(
        name,
        observed,
        plan.kv_tokens,
        version=version,
        hybrid=hybrid,
        model_class=kind,
        kv_gib=plan.kv_cache_gib,
        **seen,
    )


def _facts(data: dict[str, Any]) -> models.ModelFacts | None:
    """The logged model's facts: from a pasted config, else the catalogue (by ``architecture_from`` or ``model``)."""
    inline = data.get("config")
    name_or_repo = str(data.get("architecture_from") or data.get("model") or "")
    if isinstance(inline, dict):
        return models.facts_from_config(inline, name_or_repo)
    return models.catalogued(name_or_repo)


ATTENTION_CLASSES = ("full", "sliding", "chunked", "linear", "mla", "sparse", "unknown")
"""The attention classes issue 23 reports the error in (``unknown``: the model's facts are not known)."""


def attention_class(facts: models.ModelFacts | None) -> str:
    """Full attention, sliding windows, Llama 4 chunked attention, linear attention (Gated DeltaNet,
    Mamba), MLA, or DeepSeek Sparse Attention (MLA plus an indexer)."""
    if facts is None:
        return "unknown"
    if facts.is_sparse:
        return "sparse"
    if facts.is_mla:
        return "mla"
    if facts.linear_layers:
        return "linear"
    if facts.sliding_window and facts.sliding_layers:
        return "chunked" if facts.window_kind == "chunked" else "sliding"
    return "full"


def compare_all() -> list[Comparison]:
    """Every vLLM log, in file order."""
    return [compare(path) for path in sorted(LOGS.glob("*.yaml"))]


OTHER_LOGS = LOGS.parent / "startup_logs"
"""Start-up logs of the other engines, one folder per engine (tests/data/startup_logs/README.md)."""


def _other_observed(data: dict[str, Any]) -> int | None:
    seen = data.get("observed") or {}
    for key in ("kv_cache_tokens", "kv_allocated_tokens", "n_ctx", "max_batch_total_tokens"):
        if seen.get(key):
            return int(seen[key])
    return None


def compare_other(path: Path) -> Comparison:
    """One start-up log of another engine. Only the logged figures and the model's attention class are
    read: servespec's budgets of these engines are not scored against logs yet (issue 23), so every
    such log counts as unanswered, with that reason."""
    data = YAML(typ="safe").load(path.read_text())
    engine = str(data.get("engine") or path.parent.name)
    calibration = data.get("calibration") or {}
    facts = _facts(data)
    why = (
        str(calibration.get("why", "excluded"))
        if calibration.get("use") is False
        else "model not catalogued"
        if facts is None
        else f"{engine} logs not scored yet"
    )
    return Comparison(
        f"{engine}/{path.stem}",
        _other_observed(data),
        None,
        why,
        str(data.get("engine_version") or ""),
        engine=engine,
        attention=attention_class(facts),
        started=data.get("started") is not False,
    )


def compare_corpus() -> list[Comparison]:
    """Every recorded start-up log: vLLM's, then the other engines' by folder."""
    others = [compare_other(path) for path in sorted(OTHER_LOGS.glob("*/*.yaml"))]
    return compare_all() + others


def p90_abs_error(rows: list[Comparison]) -> float:
    """The 90th percentile of the absolute relative error (nearest rank) over the compared logs."""
    import math

    errors = sorted(abs(row.error) for row in rows if not row.skipped)
    return errors[max(math.ceil(0.9 * len(errors)) - 1, 0)]


def _range_of(row: Comparison) -> str:
    from servespec.engines.catalog import version_key

    if row.engine != "vllm":
        return ""
    key = version_key(row.version)
    for label, low, high in VERSION_RANGES:
        if (not low and not key) or (low and low <= key < high):
            return label
    return "unstated (V0 era)"


def class_table(rows: list[Comparison]) -> list[dict[str, Any]]:
    """Issue 23's table: per engine, version range and attention class, the logs (n), how many the
    estimator answered, and the median / p90 absolute KV-token error over the answered ones."""
    from servespec.engines.catalog import version_key

    groups: dict[tuple[str, str, str], list[Comparison]] = {}
    for row in rows:
        groups.setdefault((row.engine, _range_of(row), row.attention), []).append(row)
    order = {label: i for i, (label, _, _) in enumerate(VERSION_RANGES)}
    table = []

    def place(key: tuple[str, str, str]) -> tuple[bool, str, int, int]:
        return (key[0] != "vllm", key[0], order.get(key[1], 0), ATTENTION_CLASSES.index(key[2]))

    for (engine, label, attention), members in sorted(groups.items(), key=lambda item: place(item[0])):
        if not label:
            versions = sorted({m.version for m in members if m.version}, key=version_key)
            label = f"{versions[0]} - {versions[-1]}" if len(versions) > 1 else versions[0] if versions else "unstated"
        answered = [m for m in members if not m.skipped]
        table.append(
            {
                "engine": engine,
                "versions": label,
                "attention": attention,
                "n": len(members),
                "failed_starts": sum(1 for m in members if not m.started),
                "answered": len(answered),
                "median": median_abs_error(answered) if answered else None,
                "p90": p90_abs_error(answered) if answered else None,
                "classes": sorted({m.model_class for m in answered}),
            }
        )
    return table


def median_abs_error(rows: list[Comparison]) -> float:
    """Median absolute relative error over the logs that could be compared."""
    return statistics.median(abs(row.error) for row in rows if not row.skipped)


VERSION_RANGES = (
    ("unstated (V0 era)", (), (0, 0)),
    ("< 0.8 (V0 engine)", (0, 0), (0, 8)),
    ("0.8 - 0.9.0.1 (V1, one KV layout)", (0, 8), (0, 9, 1)),
    ("0.9.1 - 0.20.0 (hybrid manager, blocks per group)", (0, 9, 1), (0, 20, 1)),
    (">= 0.20.1 (hybrid manager, concurrency x length)", (0, 20, 1), (10**6,)),
)
"""The vLLM release ranges whose KV-cache arithmetic differs (engines/vllm/memory.py), as the catalogs'
``hybrid_kv_cache`` facts read them from each release's source (scripts/catalog/vllm.py)."""


def by_range(rows: list[Comparison]) -> list[tuple[str, list[Comparison]]]:
    """The compared logs of each vLLM version range, then of hybrid-attention models."""
    from servespec.engines.catalog import version_key

    used = [row for row in rows if not row.skipped]
    groups = []
    for label, low, high in VERSION_RANGES:
        key = lambda row: version_key(row.version)  # noqa: E731
        members = [row for row in used if (not low and not key(row)) or (low and low <= key(row) < high)]
        groups.append((label, members))
    groups.append(("hybrid-attention models", [row for row in used if row.hybrid]))
    return groups


BAND_MEASURED = (
    "the largest |predicted - logged| KV-cache memory in GiB per GPU over the compared vLLM start-up logs of "
    "the class (tests/data/vllm_logs, bench/estimator_accuracy.py), rounded up to 0.01 GiB"
)


BAND_MIN_LOGS = 5
"""A class measured on fewer logs takes the widest band of any class (issue 23 judges classes from n >= 5)."""


def bands(rows: list[Comparison]) -> dict[str, Any]:
    """The error band per model class (knowledge/data/estimator_band.yaml), from the compared logs."""
    import math

    classes: dict[str, Any] = {}
    for name in CLASSES:
        members = [row for row in rows if not row.skipped and row.model_class == name and row.predicted]
        if not members:
            classes[name] = {"gib": 0.0, "logs": 0, "worst": None}
            continue
        worst = max(members, key=lambda row: abs(row.error_gib))
        gib = math.ceil(abs(worst.error_gib) * 100) / 100
        classes[name] = {"gib": gib, "logs": len(members), "worst": worst.name}
    return {"measured": BAND_MEASURED, "min_logs": BAND_MIN_LOGS, "classes": classes}


BAND_FILE = Path(__file__).resolve().parent.parent / "src" / "servespec" / "knowledge" / "data" / "estimator_band.yaml"
"""The error band the MEM rules read (knowledge/error_band.py), written by bench/estimator_accuracy.py --write-band."""


def band_text(band: dict[str, Any]) -> str:
    """The band file's text: a header saying how it is made, then the band as YAML."""
    import io

    out = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.dump(band, out)
    header = (
        "# Generated by `.venv/bin/python bench/estimator_accuracy.py --write-band` from tests/data/vllm_logs;\n"
        "# tests/test_estimator_logs.py fails when it no longer matches the logs. Do not edit by hand.\n"
    )
    return header + out.getvalue()
