"""Compare the estimator with real vLLM start-up logs (tests/data/vllm_logs/).

Shared by tests/test_estimator_logs.py and bench/estimator_accuracy.py.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.gguf import KV_PLACEMENT_SOURCE, GgufEngine
from servespec.engines.vllm.memory import FLASHINFER_SAMPLER_MIN_CAPABILITY, batch_defaults
from servespec.engines.vllm.parallel import vllm_layout
from servespec.knowledge import gpus, models
from servespec.knowledge.error_band import CLASSES, model_class
from servespec.knowledge.gguf_header import deltanet_config, per_kind_config, swa_layout
from servespec.knowledge.memory import CUDA_VISIBLE_SHARE, EstimateInput, cuda_total_gib, default_context

LOGS = Path(__file__).resolve().parent / "data" / "vllm_logs"
_OPTIONS = (
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "kv_cache_dtype",
    "enforce_eager",
    "limit_mm_per_prompt",
    "enable_expert_parallel",
    "language_model_only",
    "skip_mm_profiling",
    "mm_processor_kwargs",
    "enable_prefix_caching",
    "runner",
    "task",
    "convert",
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
    failure_cause: str = ""
    """A failed start's cause where it is not memory (the file's ``failure_cause``, e.g. ``software``: an error
    after the KV cache was sized): still a failed start, scored on its KV figure, but not a failure MEM001/MEM002
    should catch; "" for a memory failure or a clean start."""
    fits: bool | None = None
    """Whether the estimate says the engine starts with these settings (:func:`fits`); None: not estimated."""
    warned_after_kv: bool = False
    """MEM008's "may not fit": the warm-up after the KV cache fits only by reusing the freed activation peak."""
    after_kv_shortfall_gib: float | None = None
    """MEM008's arithmetic shortfall after the KV cache (> 0: predicted not to start); None: not modelled."""
    assumed: tuple[str, ...] = ()
    """The stand-ins and assumptions the figure rests on (an unnamed or uncatalogued GPU, a release the log does not
    state), each labelled; empty when every fact comes from the log and the catalogs."""
    figure: str = ""
    """What ``observed`` and ``predicted`` count: "" for the engine's own figure (:data:`SCORED_FIGURE`),
    :data:`KV_MIB` for a vLLM log that gives the KV-cache memory but no token count."""
    logged_kv_gib: float | None = None
    """The KV-cache memory per GPU a vLLM log states ("Available KV cache memory" / kv_cache_size), when it does."""

    observed_precision: int = 0
    """How far the true figure may sit from ``observed`` because the log rounds it (bytes; 0: exact): Ollama's
    'kv cache' lines print one decimal (:func:`_ollama_engine_kv_precision`)."""

    @property
    def error(self) -> float:
        """Relative error of the predicted figure: its distance from what the log states, which for a rounded
        figure is the interval ``observed`` +- ``observed_precision`` (an estimate inside it is not shown wrong)."""
        assert self.observed and self.predicted is not None
        low, high = self.observed - self.observed_precision, self.observed + self.observed_precision
        return (self.predicted - min(max(self.predicted, low), high)) / self.observed

    @property
    def error_gib(self) -> float:
        """Error of the predicted KV-cache memory in GiB per GPU: what the estimate of everything
        before it (weights, activations, overheads) got wrong, as the tokens' ratio says."""
        assert self.observed and self.predicted
        return self.kv_gib * (self.predicted - self.observed) / self.predicted


KV_MIB = "kv_mib"
"""A vLLM log scored on its KV-cache memory in MiB per GPU, because it logs no token count (:func:`compare`)."""


def _logged_kv_gib(data: dict[str, Any]) -> float | None:
    """The KV-cache memory per GPU a vLLM log states, when positive."""
    value = _number((data.get("observed") or {}).get("available_kv_cache_gib"))
    return value if value is not None and value > 0 else None


def _memory_tracks_tokens(data: dict[str, Any]) -> bool:
    """Whether a vLLM log's KV memory may stand for its token count: every rank holds the same layers (one pipeline
    stage) and one kind of attention (full or MLA); :func:`kv_memory_pairs` measures how closely it does."""
    stages = int((data.get("settings") or {}).get("pipeline_parallel_size") or 1)
    return stages == 1 and attention_class(_facts(data)) in ("full", "mla")


def kv_memory_pairs() -> list[tuple[str, float]]:
    """(log, |token error - memory error|) over the answered vLLM logs that give both figures and whose memory may
    stand for the tokens (:func:`_memory_tracks_tokens`)."""
    rows = {row.name: row for row in compare_all()}
    pairs = []
    for path in sorted(LOGS.glob("*.yaml")):
        row = rows[path.stem]
        if row.skipped or row.figure or not row.logged_kv_gib or not row.kv_gib:
            continue
        if _memory_tracks_tokens(YAML(typ="safe").load(path.read_text())):
            pairs.append((row.name, abs(row.error - (row.kv_gib - row.logged_kv_gib) / row.logged_kv_gib)))
    return pairs


def _observed(data: dict[str, Any]) -> int | None:
    seen = data.get("observed") or {}
    if seen.get("kv_cache_tokens"):
        return int(seen["kv_cache_tokens"])
    if seen.get("num_gpu_blocks"):
        block = (data.get("settings") or {}).get("block_size") or 16
        return int(seen["num_gpu_blocks"]) * int(block)
    return None


STAND_IN_PREFIXES = ("uncatalogued:", "unnamed:")
"""The ids of the bench's GPU stand-ins (:func:`_gpu`): a card the catalogue lacks, or one the log does not name."""


def _logged_capability(data: dict[str, Any]) -> tuple[int, int]:
    """The compute capability the log prints (``gpu_compute_capability``, e.g. "8.6"); (0, 0) when it does not."""
    text = str(data.get("gpu_compute_capability") or "")
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else (0, 0)


def _gpu(data: dict[str, Any]) -> gpus.GpuModel | None:
    """The logged GPU from the catalogue, its memory the CUDA-visible total the log states; a GPU the catalogue
    lacks is stood in for by one of the logged total (id ``uncatalogued:<name>``), and so is a GPU the log does not
    name (``gpu: null`` or ``gpu_named: false``) when it states the total (id ``unnamed:<total> GiB``). A stand-in's
    compute capability is the one the log prints (``gpu_compute_capability``), else unknown (0, 0); what else the
    estimate reads from a GPU is checked by :func:`_settled`. A name several catalogued cards fit ("NVIDIA A100
    80GB": PCIe or SXM4) gives the first; :func:`_gpu_candidates` gives them all."""
    found = _gpu_candidates(data)
    return found[0] if found else None


def _gpu_candidates(data: dict[str, Any]) -> list[gpus.GpuModel]:
    """Every card the logged GPU may be (:func:`_gpu`): one, except for a loose name that several catalogued
    cards fit ("NVIDIA H100": PCIe, SXM5 or NVL), which :func:`_settled` estimates as each."""
    printed = str(data.get("gpu") or "").strip()
    name = printed.split("(")[0].strip()  # "NVIDIA H200 (141 GB class)"; "TITAN X (Pascal)" is a name
    seen = data.get("observed") or {}
    total = data.get("total_gpu_memory_gib") or seen.get("total_gpu_memory_gib") or data.get("gpu_total_gib")
    if not name or data.get("gpu_named") is False:
        if not _number(total):
            return []
        stand_in = gpus.GpuModel(f"unnamed:{float(str(total)):.2f} GiB", (), 0, _logged_capability(data))
        return [dataclasses.replace(stand_in, memory_mib=round(float(str(total)) / CUDA_VISIBLE_SHARE * 1024))]
    resolved = gpus.resolve(printed) or gpus.resolve(name)
    found = [resolved] if resolved else []
    if not found and _number(total):
        # NVIDIA prints one name for two memory sizes (RTX 3060 12/8 GB): the logged CUDA total picks the nearer
        sizes = [gpu for gpu in gpus.named(name) if abs(gpu.memory_gib * CUDA_VISIBLE_SHARE / float(total) - 1) < 0.1]
        nearest = min(sizes, key=lambda gpu: abs(gpu.memory_gib * CUDA_VISIBLE_SHARE - float(total)), default=None)
        found = [nearest] if nearest else []
    if not found:  # "NVIDIA A100 80GB" style names in log file names: every card whose id holds each word
        words = name.replace("NVIDIA", "").lower().split()
        found = [gpu for gpu in gpus.catalog() if all(part in gpu.id.lower() for part in words)]
    if not found and _number(total) and not gpus.named(name):
        found = [gpus.GpuModel(f"uncatalogued:{name}", (name,), 0, _logged_capability(data))]
    if _number(total):
        # The log states the CUDA-visible total: use it instead of the nvidia-smi figure (and the card's catalogued
        # CUDA total, gpus.yaml ``cuda_total_gib``, which another box or driver of the card printed).
        mib = round(float(str(total)) / CUDA_VISIBLE_SHARE * 1024)
        found = [dataclasses.replace(gpu, memory_mib=mib, cuda_total_gib=None) for gpu in found]
    return found


CAPABILITIES = ((7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0))
"""The compute capabilities of the catalogued GPUs vLLM, SGLang and TGI run on (Volta to Blackwell)."""
BOARDS = (("A100-SXM4-80GB", (8, 0)), ("H100-SXM5-80GB", (9, 0)), ("B200", (10, 0)))
"""Catalogued ids the estimate tells apart by id: vLLM's larger defaults for >= 70 GiB cards that are not A100
(engines/vllm/memory.py ``_big_gpu``), NCCL's NVLS buffers on NVSwitch boards (knowledge/memory.py ``NVLS_GPUS``)."""


AFTER_TP_SETUP = " after a TP set-up"
"""Ends the id of a stand-in made from SGLang's pre-load memory at tensor-parallel size > 1 (:func:`_variants`)."""


def _variants(gpu: gpus.GpuModel) -> list[gpus.GpuModel]:
    """The cards a stand-in may be: its memory with every identity and capability the estimate tells apart
    (the logged capability only, when the log prints it)."""
    logged = gpu.compute_capability if gpu.compute_capability != (0, 0) else None
    # A stand-in made from a baseline measured after a tensor-parallel set-up already holds what NCCL took there,
    # NVLS buffers included on an NVSwitch board: the boards (told apart for NVLS and vLLM's defaults) do not vary it.
    boards = [] if gpu.id.endswith(AFTER_TP_SETUP) else list(BOARDS)
    identities = [(gpu.id, cc) for cc in CAPABILITIES] + boards
    return [
        dataclasses.replace(gpu, id=ident, compute_capability=cc)
        for ident, cc in identities
        if logged is None or cc == logged
    ]


def _candidate_plans(
    run: Any, gpu: gpus.GpuModel, candidates: list[gpus.GpuModel] | None = None, keep: Any = None
) -> tuple[list[tuple[str, Any]], str]:
    """``run`` as every card the logged GPU may be, each with its label, and what makes them several ("" when the
    log's GPU is one card): a stand-in as every identity and capability the estimate tells apart (:func:`_variants`),
    a loose name as every catalogued card it fits (``candidates``). ``keep(card)``: False for a card the log's own
    lines rule out (:func:`_defaults_agree`); the others are kept, all of them when it would rule out every one."""
    if gpu.id.startswith(STAND_IN_PREFIXES):
        cards, what = _variants(gpu), f"GPU {gpu.id}"
        label = lambda card: f"{card.id} cc {card.compute_capability[0]}.{card.compute_capability[1]}"  # noqa: E731
    elif candidates and len(candidates) > 1:
        cards, what = candidates, f"GPU name fits {', '.join(card.id for card in candidates)}"
        label = lambda card: card.id  # noqa: E731
    else:
        return [(gpu.id, run(gpu))], ""
    kept = [card for card in cards if keep is None or keep(card)]
    if kept and len(kept) < len(cards):
        cards = kept
        what += f" ({RULED_OUT})"
    return [(label(card), run(card)) for card in cards], what


def _settled(
    run: Any,
    gpu: gpus.GpuModel,
    candidates: list[gpus.GpuModel] | None = None,
    engine: str = "vllm",
    keep: Any = None,
) -> tuple[Any, str]:
    """The estimate ``run(gpu)`` gives, and "" when it rests on the log's facts alone. For a stand-in GPU or a loose
    name the estimate is run as every card it may be (:func:`_candidate_plans`); when the KV tokens or the verdict
    differ between them, the estimate reads a fact the log does not show (the memory, the board's NVSwitch, an
    A100's defaults, the compute capability that picks a kernel), and the reason names the spread instead of a
    figure. A failed start is judged on its verdict over them instead (:func:`verdict_over`)."""
    plans, what = _candidate_plans(run, gpu, candidates, keep)
    if not what:
        return plans[0][1], ""
    outcomes = {(plan.kv_tokens, fits(plan, engine)) if plan is not None else None for _, plan in plans}
    if len(outcomes) > 1:
        tokens = [plan.kv_tokens for _, plan in plans if plan is not None]
        return None, (
            f"{what}: the estimate depends on a GPU fact the log does not show (memory, NVSwitch board, A100 defaults "
            f"or compute capability): {min(tokens):,} to {max(tokens):,} KV tokens over the cards it may be"
        )
    return plans[0][1], ""


VERDICT_ONLY = "failed start without a KV number: scored on the verdict only"
VERDICT_OVER = "failed start on an ambiguous GPU, release or setting: scored on the verdict every candidate gives"
MIXED_VERDICT = "failed start whose verdict differs between the candidates"
"""The skip reasons of a failed start that is judged on its verdict (:func:`verdict_over`), or cannot be."""


@dataclass(frozen=True)
class Verdict:
    """A failed start judged over every candidate (card, release, setting) the log leaves open."""

    fits: bool | None
    """All candidates predict a start (True) or a failure (False); None: they disagree, or one has no estimate."""
    plan: Any
    """A candidate's plan (the first) when they agree, for MEM008's figures; None otherwise."""
    label: str
    """Which candidates were judged and what they say (the disagreement, when they disagree)."""
    warned_after_kv: bool = False
    """Every candidate's MEM008 warns that the warm-up after the KV cache may not fit."""


def verdict_over(plans: list[tuple[str, Any]], what: str, engine: str = "vllm") -> Verdict:
    """A failed start's verdict over the candidates ``plans`` ((label, plan) each; ``what`` says why there are
    several): caught when every candidate predicts that it does not fit, a miss when every one predicts a start,
    unanswered when they disagree (the label names which candidates say which) or one has no estimate."""
    says: dict[str, list[str]] = {}
    for label, plan in plans:
        verdict = "no estimate" if plan is None else "does not fit" if not fits(plan, engine) else "starts"
        says.setdefault(verdict, []).append(label)
    if len(says) == 1 and "no estimate" not in says:
        verdict = next(iter(says))
        label = f"{what}: all {len(plans)} candidates predict '{verdict}' ({_some(says[verdict])})"
        warned = all(plan.after_kv is not None and plan.after_kv.tight for _, plan in plans)
        return Verdict(verdict == "starts", plans[0][1], label, warned)
    parts = "; ".join(f"'{verdict}' on {_some(labels)}" for verdict, labels in sorted(says.items()))
    return Verdict(None, None, f"{what}: {parts}")


def _some(labels: list[str], shown: int = 6) -> str:
    """The first ``shown`` labels, and how many more."""
    more = f" and {len(labels) - shown} more" if len(labels) > shown else ""
    return ", ".join(labels[:shown]) + more


def _stand_in_label(gpu: gpus.GpuModel, how: str = "", basis: str = "") -> tuple[str, ...]:
    """The label a stand-in GPU adds to a comparison's ``assumed`` (none for a catalogued card); ``basis``: where
    its total and capability come from when the log does not print them (``total_gpu_memory_basis``)."""
    if not gpu.id.startswith(STAND_IN_PREFIXES):
        return ()
    if basis:
        return (f"GPU stand-in {gpu.id} ({basis.strip()})",)
    known = "" if gpu.compute_capability == (0, 0) else f", compute capability {gpu.compute_capability[0]}."
    known += f"{gpu.compute_capability[1]} logged" if known else ", compute capability not logged"
    return (f"GPU stand-in {gpu.id} ({how or 'the logged CUDA total'}{known})",)


def _version(data: dict[str, Any], key: str) -> tuple[str, tuple[str, ...]]:
    """The engine release a log is estimated with, and its label when it is assumed.

    A log that does not print its release (``unknown`` or empty) may carry ``engine_version_assumed: {version,
    why}``: the release its date (and its own lines) bound it to, as an explicit assumption that the bench prints."""
    stated = str(data.get(key) or "").strip()
    assumed = data.get("engine_version_assumed")
    if (stated and stated != "unknown") or not isinstance(assumed, dict) or not assumed.get("version"):
        return stated, ()
    version = str(assumed["version"])
    return version, (f"release {version} assumed: {str(assumed.get('why') or '').strip()}",)


def _settings_assumed(data: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A launch setting the log does not show but the estimate needs, as ``settings_assumed: {name: {value, why}}``:
    the values (used only where ``settings`` leaves it null) and their labels for the bench."""
    found: dict[str, Any] = {}
    labels: list[str] = []
    settings = data.get("settings") or {}
    for name, entry in (data.get("settings_assumed") or {}).items():
        if not isinstance(entry, dict) or settings.get(name) is not None:
            continue
        if entry.get("value") is not None:
            found[name] = entry["value"]
            labels.append(f"{name} {entry['value']} assumed: {str(entry.get('why') or '').strip()}")
        elif isinstance(entry.get("range"), list) and len(entry["range"]) == 2:
            low, high = entry["range"]
            found[name] = low
            labels.append(f"{name} {low}-{high} (not logged): {str(entry.get('why') or '').strip()}")
    return found, tuple(labels)


def _engine_env(data: dict[str, Any]) -> tuple[dict[str, str], tuple[str, ...]]:
    """Environment variables the engine ran with that its command line does not show (an image's own ``ENV``),
    as ``engine_env: {NAME: {value, why}}``: the values (``EstimateInput.env``, what ``engine.env`` gives a spec)
    and their labels for the bench."""
    env: dict[str, str] = {}
    labels: list[str] = []
    for name, entry in (data.get("engine_env") or {}).items():
        if isinstance(entry, dict) and entry.get("value") is not None:
            env[str(name)] = str(entry["value"])
            labels.append(f"environment {name}={entry['value']}: {str(entry.get('why') or '').strip()}")
    return env, tuple(labels)


def _setting_range_spread(data: dict[str, Any], estimate: Any) -> str:
    """Why a log is not answered when a setting it does not show (``settings_assumed: {name: {range: [low, high]}}``,
    the values its launcher accepts) moves the estimate between the range's ends; "" when neither end moves it."""
    for name, entry in (data.get("settings_assumed") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("range"), list):
            continue
        ends = []
        for value in entry["range"]:
            plan = estimate({**data, "settings": {**(data.get("settings") or {}), name: value}})
            ends.append(plan.kv_tokens if plan is not None else None)
        if len(set(ends)) > 1:
            low, high = entry["range"]
            return (
                f"{name} not logged: the values its launcher accepts ({low}-{high}) give {ends[0]}-{ends[1]} KV tokens"
            )
    return ""


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
    version, assumed = _version(data, "vllm_version")
    facts = _facts(data)
    seen: dict[str, Any] = {"attention": attention_class(facts), "started": data.get("started") is not False}
    if not seen["started"] and data.get("failure_cause"):
        seen["failure_cause"] = str(data["failure_cause"])
    logged_gib = _logged_kv_gib(data)
    figure = KV_MIB if observed is None and seen["started"] and logged_gib and _memory_tracks_tokens(data) else ""
    if figure:  # no token count: the KV-cache memory it logs is scored instead (SCORED_FIGURE, bench legend)
        observed = round(float(str(logged_gib)) * 1024)
    seen.update(figure=figure, logged_kv_gib=logged_gib)
    failed = not seen["started"]
    left_out = ""  # a failed start whose figure is left out of the measure, judged on its verdict (VERDICT_ONLY)
    if calibration.get("use") is False and failed and calibration.get("verdict") is True:
        left_out = f"; its figure is left out: {str(calibration.get('why', 'excluded')).strip()}"
        observed, seen["figure"] = None, ""
    elif calibration.get("use") is False:
        return Comparison(name, observed, None, str(calibration.get("why", "excluded")), version, **seen)
    gpu = _gpu(data)
    if (observed is None and not failed) or facts is None or gpu is None:
        why = (
            "no KV number: neither a token count nor the KV-cache memory is logged"
            if observed is None and not failed
            else "model not catalogued"
            if facts is None
            else "GPU unknown: the log names no catalogued GPU and states no total memory"
        )
        return Comparison(name, observed, None, why, version, **seen)
    settings = data.get("settings") or {}
    method = str(settings.get("quantization") or "")
    if method and facts.quant_bits is None and not _sized_by_name(method):
        # e.g. RedHatAI's compressed-tensors checkpoints: the log names the format, not its scheme, and the file
        # does not carry the checkpoint's quantization_config; in use servespec reads the width from the checkpoint.
        why = f"weights' width unknown: {method} without its config"
        return Comparison(name, observed, None, why, version, **seen)
    return _compare_sized(name, data, facts, gpu, (version, assumed), observed, (figure, left_out), seen)


def _compare_sized(
    name: str,
    data: dict[str, Any],
    facts: models.ModelFacts,
    gpu: gpus.GpuModel,
    stated: tuple[str, tuple[str, ...]],
    observed: int | None,
    scored: tuple[str, str],
    seen: dict[str, Any],
) -> Comparison:
    """A vLLM log the estimator can size: its figure under every candidate card and release (``stated``: the
    version and the labels so far; ``scored``: the figure it is scored on and why a failed start's figure is left
    out), or a failed start's verdict over them."""
    (version, assumed), (figure, left_out) = stated, scored
    failed = not seen["started"]
    speculative, why = _speculative(data.get("settings") or {}, data)
    if why:
        return Comparison(name, observed, None, why, version, **seen)
    releases = _candidate_releases(version)

    def run(card: gpus.GpuModel, release: Any = releases[0]) -> Any:
        return _estimate_vllm(data, facts, version, card, release, speculative)

    assumed += _stand_in_label(gpu, basis=str(data.get("total_gpu_memory_basis") or ""))
    assumed += _sampler_install_label(data, releases[0], gpu)
    assumed += _by_default_label(data, gpu)
    if failed and _ranged(data):  # settings it does not show: judged on the verdict at every end of their ranges
        estimate = lambda body, card: _estimate_vllm(body, facts, version, card, releases[0], speculative)  # noqa: E731
        plans, left_open = _range_plans(data, estimate, (gpu, _gpu_candidates(data)))
        assumed += _settings_assumed(data)[1]
        return _verdict_row(name, observed, version, (plans, left_open), assumed, seen)

    def keep(card: gpus.GpuModel, release: Any = releases[0]) -> bool:
        return _defaults_agree(data, facts, version, card, release)

    runs = [
        _settled(lambda card, r=release: run(card, r), gpu, _gpu_candidates(data), keep=lambda c, r=release: keep(c, r))
        for release in releases
    ]
    unsettled = next((why for _, why in runs if why), "")
    if unsettled and failed:  # judged on the verdict every card (and release) it may be gives, not on a figure
        plans: list[tuple[str, Any]] = []
        for release in releases:
            found, what = _candidate_plans(
                lambda card, r=release: run(card, r), gpu, _gpu_candidates(data), lambda c, r=release: keep(c, r)
            )
            plans += [(f"{label} {release.version}".strip() if len(releases) > 1 else label, p) for label, p in found]
        return _verdict_row(name, observed, version, (plans, what), assumed, seen)
    if unsettled:
        return Comparison(name, observed, None, unsettled, version, assumed=assumed, **seen)
    if len({(p.kv_tokens, fits(p)) if p is not None else None for p, _ in runs}) > 1:
        why = _candidate_spread(version, releases, [p for p, _ in runs])
        return Comparison(name, observed, None, why, version, assumed=assumed, **seen)
    assumed += _candidate_label(version, releases)
    plan = runs[0][0]
    assert plan is not None
    if plan.unified_memory:
        return Comparison(name, observed, None, _unified_reason(gpu, data, plan.unified_memory), version, **seen)
    hybrid = bool(facts.linear_layers or (facts.sliding_window and facts.sliding_layers))
    kind = model_class(facts)
    predicted = round(plan.kv_cache_gib * 1024) if figure else plan.kv_tokens
    return Comparison(
        name,
        observed,
        predicted if observed is not None else None,
        "" if observed is not None else VERDICT_ONLY + left_out,
        version=version,
        hybrid=hybrid,
        model_class=kind,
        kv_gib=plan.kv_cache_gib,
        fits=fits(plan),
        warned_after_kv=plan.after_kv is not None and plan.after_kv.tight,
        after_kv_shortfall_gib=plan.after_kv.shortfall_gib if plan.after_kv is not None else None,
        assumed=assumed,
        **seen,
    )


def _unified_reason(gpu: gpus.GpuModel, data: dict[str, Any], said: str) -> str:
    """Why a log on a GPU that shares the host's RAM is not answered: the release's KV budget subtracts the host's
    memory growth during start-up (the estimate's ``unified_memory``, from the engine unit), which the log does not
    show; and, where the log prints no total and installs print several (GB10), the total itself."""
    seen = data.get("observed") or {}
    logged = data.get("total_gpu_memory_gib") or seen.get("total_gpu_memory_gib")
    totals = sorted({round(mib / 1024, 2) for mib in (gpu.memory_mib, *gpu.memory_mib_other)})
    total = (
        f"; the log prints no total and {gpu.id} installs print {' or '.join(f'{t:g}' for t in totals)} GiB"
        if not _number(logged) and len(totals) > 1
        else ""
    )
    version = str(data.get("vllm_version") or "")
    build = (
        "; an NVIDIA container build, its memory code taken to be the upstream tag's (the build's source not read)"
        if re.search(r"\.nv\d", version)
        else ""
    )
    return f"{gpu.id} shares the host's RAM ({said}){total}{build}"


def _candidate_releases(version: str) -> list[Any]:
    """The catalogued releases a vLLM log's build is estimated under: the one :meth:`Catalog.select` gives, or,
    for a build the catalogue lacks that lies between two catalogued releases (a development or release-candidate
    build, ``0.10.1.dev101``; an uncatalogued release), both of them (:meth:`Catalog.candidates`)."""
    catalog = get("vllm").catalog
    names = catalog.candidates(version) if version and version != "unknown" else ()
    if len(names) == 2:
        return [catalog.release(name) for name in names]
    return [get("vllm").select(version).release]


def _candidate_label(version: str, releases: list[Any]) -> tuple[str, ...]:
    """The stand-in label of a build estimated under the catalogued releases on either side of it."""
    if len(releases) < 2:
        return ()
    low, high = (release.version for release in releases)
    return (
        f"release {version} not catalogued: it lies between {low} and {high}, and the figure is the same under both "
        "(their facts stand in for the build's)",
    )


def _candidate_spread(version: str, releases: list[Any], plans: list[Any]) -> str:
    """Why a build between two catalogued releases is not answered: they give different figures."""
    said = ", ".join(
        f"{release.version}: {plan.kv_tokens:,} KV tokens ({'fits' if fits(plan) else 'does not fit'})"
        if plan is not None
        else f"{release.version}: no estimate"
        for release, plan in zip(releases, plans, strict=True)
    )
    return f"release {version} not catalogued, and the catalogued releases on either side of it disagree: {said}"


SPECULATIVE_METHODS = ("mtp", "ngram", "eagle", "eagle3", "draft", "dflash")
"""``settings.speculative.method`` values the estimator takes (spec-v1 ``model.speculative.method``)."""


def _speculative(settings: dict[str, Any], data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The estimate's speculative-decoding input from ``settings.speculative`` (``{method, num_tokens, draft}`` as
    spec-v1's ``model.speculative`` spells them; ``draft_config``: the draft's config.json when the log shows it), or
    why the log is not answered: a method the spec does not express, or a draft whose config the log does not give
    (its weights and attention layers would be guessed)."""
    found = settings.get("speculative")
    if found is None:
        return {}, ""
    if not isinstance(found, dict) or not isinstance(found.get("method"), str):
        return {}, "speculative decoding's settings are not given as {method, num_tokens, draft}"
    method = found["method"]
    if method not in SPECULATIVE_METHODS:
        return {}, f"speculative method {method}: not one the spec expresses, so its draft is not modelled"
    tokens = found.get("num_tokens")
    out: dict[str, Any] = {"speculative": method, "speculative_tokens": int(tokens) if tokens else None}
    if method in ("mtp", "ngram"):
        return out, ""
    config = data.get("draft_config")
    if not isinstance(config, dict):
        return {}, f"the {method} draft's config is not in the log: its weights and attention layers are not known"
    out["draft"] = models.facts_from_config(config, str(found.get("draft") or ""))
    return out, ""


FLASHINFER_SAMPLER_LINES = {
    "Using FlashInfer for top-p & top-k sampling": True,
    "FlashInfer is not available": False,
    "FlashInfer is available, but it is not enabled": False,
    "FlashInfer version >= 0.2.3 required": False,
    "FlashInfer top-p & top-k sampling sampler is disabled": False,
    "FlashInfer top-p/top-k sampling disabled": False,
    "FlashInfer top-p/top-k sampling not supported": False,
}
"""What vLLM's V1 ``TopKTopPSampler.__init__`` logs about the sampler it takes (vllm/v1/sample/ops/
topk_topp_sampler.py: v0.8.5 L41-69, v0.10.1.1 L34-62, v0.22.0 L39-73): True where it runs FlashInfer's kernels."""

LOGGED_INSTALL = "(the logged install: not the official image unless the file names one)"
"""The ``image`` a recorded log is estimated with when its file names none: how vLLM was installed is not known
(a pip install or another image), so the estimate does not take the release's official image's FlashInfer
(``profile_sampler_flashinfer.image_flashinfer``) for it; the log's own sampler line decides where it has one."""


def _sampler_install_label(data: dict[str, Any], release: Any, gpu: gpus.GpuModel) -> tuple[str, ...]:
    """The stated assumption of a V1 log on a release whose sampler takes FlashInfer whenever it is installed
    (``profile_sampler_flashinfer`` ``when_installed``, 0.8.0-0.11.0) when the log does not say which sampler ran:
    the estimate takes the native path (pip's requirements carry no FlashInfer before 0.12.0), the larger peak."""
    fact = release.facts.profile_sampler_flashinfer if release is not None else None
    capability = gpu.cuda_capability
    v1 = str(data.get("engine") or "v1") == "v1"
    if fact is None or fact.value != "when_installed" or not v1 or logged_flashinfer_sampler(data) is not None:
        return ()
    if capability is None or capability < FLASHINFER_SAMPLER_MIN_CAPABILITY:
        return ()
    return (
        f"sampler path not logged: vLLM {release.version} takes FlashInfer's top-k/top-p kernels whenever FlashInfer "
        "is installed, which the log does not show; the native path (no FlashInfer, as pip installs the release) is "
        "assumed, the larger warm-up peak",
    )


def logged_flashinfer_sampler(data: dict[str, Any]) -> bool | None:
    """Whether the log says vLLM's V1 sampler ran FlashInfer (:data:`FLASHINFER_SAMPLER_LINES`); None: it does
    not say (the stored excerpt has no such line)."""
    text = str(data.get("log") or "")
    said = {value for line, value in FLASHINFER_SAMPLER_LINES.items() if line in text}
    return said.pop() if len(said) == 1 else None


def _estimate_vllm(
    data: dict[str, Any],
    facts: models.ModelFacts,
    version: str,
    card: gpus.GpuModel,
    release: Any,
    speculative: dict[str, Any],
) -> Any:
    """vLLM's estimate for a log's settings on ``card`` under ``release`` (the catalogued release the build is sized
    as), with its parallel layout (:func:`vllm_layout`) and speculative decoding (:func:`_speculative`)."""
    return get("vllm").estimate(_vllm_input(data, facts, version, card, release, speculative))


BY_DEFAULT = ("max_num_batched_tokens", "max_num_seqs")
"""The scheduler budgets vLLM's V1 API server picks as a pair by GPU when neither is set (engine/arg_utils.py
``_set_default_args``, the release's ``v1_batch_defaults`` fact; v0.10.2 L1669: 8192 tokens / 1024 sequences on a
card of >= 70 GiB that is not an A100, else 2048 / 256)."""

RULED_OUT = "cards whose vLLM defaults differ from the logged settings_by_default ruled out"


def _settings_by_default(data: dict[str, Any]) -> dict[str, int]:
    """``settings_by_default``: the :data:`BY_DEFAULT` budgets a log prints (its "Chunked prefill is enabled with
    max_num_batched_tokens=N" line) that vLLM chose itself, the command and "non-default args" not setting them,
    each with the value its ``settings`` give; the quoted line that shows it is the entry's value."""
    settings = data.get("settings") or {}
    return {
        key: int(settings[key])
        for key in (data.get("settings_by_default") or {})
        if key in BY_DEFAULT and _number(settings.get(key))
    }


def _by_default_label(data: dict[str, Any], gpu: gpus.GpuModel) -> tuple[str, ...]:
    """The label a log's ``settings_by_default`` adds when the logged GPU may be several cards (a stand-in or a
    loose name): the candidates its budgets rule out are not estimated (:func:`_defaults_agree`)."""
    wanted = _settings_by_default(data)
    if not wanted or not (gpu.id.startswith(STAND_IN_PREFIXES) or len(_gpu_candidates(data)) > 1):
        return ()
    return (f"{RULED_OUT} ({', '.join(f'{key} {value}' for key, value in wanted.items())})",)


def _defaults_agree(data: dict[str, Any], facts: models.ModelFacts, version: str, card: Any, release: Any) -> bool:
    """Whether ``card`` gives the budgets the log shows vLLM chose by default (:func:`_settings_by_default`): the
    release's default pair on it (:func:`batch_defaults`) equals the logged values. A card that would have made
    vLLM pick other defaults is not the card the log ran on (an unnamed 80 GB card that logs 8192 tokens by default
    is not an A100, whose default is 2048), and its estimate, which would pair the logged tokens with that card's
    other default (256 sequences, not 1024: a different sampler warm-up), is left out."""
    wanted = _settings_by_default(data)
    if not wanted:
        return True
    inp = _vllm_input(data, facts, version, card, release, {}, leave_out=tuple(wanted))
    batched, seqs = batch_defaults(inp, cuda_total_gib(card))
    chosen = {"max_num_batched_tokens": batched, "max_num_seqs": seqs}
    return all(chosen[key] == value for key, value in wanted.items())


def _vllm_input(
    data: dict[str, Any],
    facts: models.ModelFacts,
    version: str,
    card: gpus.GpuModel,
    release: Any,
    speculative: dict[str, Any],
    leave_out: tuple[str, ...] = (),
) -> EstimateInput:
    """The estimator's input for a log (:func:`_estimate_vllm`); ``leave_out``: settings not passed, so that the
    release's own default for them applies (:func:`_defaults_agree`)."""
    settings = data.get("settings") or {}
    placed = vllm_layout(
        int(settings.get("tensor_parallel_size") or 1),
        int(settings.get("pipeline_parallel_size") or 1),
        int(settings.get("data_parallel_size") or 1),
        settings.get("enable_expert_parallel") is True,
    )
    return EstimateInput(
        engine="vllm",
        release=release,
        model=facts,
        gpu=card,
        tensor_parallel=placed.tensor,
        pipeline_parallel=placed.pipeline,
        data_parallel=placed.data,
        moe_group=placed.moe_group,
        expert_parallel=placed.expert,
        dtype=str(settings.get("dtype") or "auto"),
        quantization=settings.get("quantization"),
        max_model_len=int(settings.get("max_model_len") or facts.derived_max_len or 4096),
        options={k: settings[k] for k in _OPTIONS if settings.get(k) is not None and k not in leave_out},
        engine_version=version,
        engine_core=str(data.get("engine") or "") or None,  # the log says V0 or V1
        kv_cache_dtype_option="kv_cache_dtype",
        env=_engine_env(data)[0],
        image=str(data["image"]) if data.get("image") else LOGGED_INSTALL,
        flashinfer_sampler=logged_flashinfer_sampler(data),
        **speculative,
    )


def _ranged(data: dict[str, Any]) -> dict[str, list[Any]]:
    """The settings a log does not show, as the ``[low, high]`` its launcher accepts (``settings_assumed: {name:
    {range}}``), where ``settings`` leaves them null."""
    settings = data.get("settings") or {}
    return {
        key: list(entry["range"])
        for key, entry in (data.get("settings_assumed") or {}).items()
        if isinstance(entry, dict) and isinstance(entry.get("range"), list) and settings.get(key) is None
    }


def _range_plans(
    data: dict[str, Any],
    estimate: Any,
    card: tuple[gpus.GpuModel, list[gpus.GpuModel]],
    releases: tuple[str, list[str]] = ("", []),
) -> tuple[list[tuple[str, Any]], str]:
    """``estimate(data, card)`` under every candidate a failed start leaves open, each labelled, and what is left
    open: each release it may have run (``releases``: the engine and its catalogued releases, when it states none),
    each end of a setting's range it does not show (:func:`_ranged`), each card the logged GPU may be (``card``: the
    card and the candidates of a loose name). A verdict at a range's ends holds between them: a higher memory
    fraction and a shorter context only give the KV cache more room."""
    gpu, cards = card
    engine, choices = releases
    ranged = _ranged(data)
    variants = [(version, {**data, "engine_version": version}) for version in choices] or [("", data)]
    for key, ends in ranged.items():
        variants = [
            (f"{label} {key}={end}".strip(), {**body, "settings": {**(body.get("settings") or {}), key: end}})
            for label, body in variants
            for end in ends
        ]
    plans: list[tuple[str, Any]] = []
    left_open: list[str] = []
    for label, body in variants:
        found, what = _candidate_plans(lambda one, body=body: estimate(body, one), gpu, cards)  # type: ignore[misc]
        plans += [(" ".join(filter(None, (card_label if what else "", label))), p) for card_label, p in found]
        left_open += [what] if what and what not in left_open else []
    left_open += [f"{engine} release not stated ({len(choices)} candidates)"] if choices else []
    left_open += [f"{key} not logged ({ends[0]}-{ends[1]})" for key, ends in ranged.items()]
    return plans, "; ".join(left_open)


def _verdict_row(
    name: str,
    observed: int | None,
    version: str,
    candidates: tuple[list[tuple[str, Any]], str],
    assumed: tuple[str, ...],
    seen: dict[str, Any],
) -> Comparison:
    """A failed start judged over its candidates (:func:`verdict_over`): its verdict, labelled with the candidates
    in ``assumed``, or unanswered with the candidates that disagree."""
    plans, what = candidates
    verdict = verdict_over(plans, what, str(seen.get("engine") or "vllm"))
    if verdict.fits is None:
        return Comparison(name, observed, None, f"{MIXED_VERDICT}: {verdict.label}", version, assumed=assumed, **seen)
    plan = verdict.plan
    return Comparison(
        name,
        observed,
        None,
        VERDICT_OVER,
        version=version,
        fits=verdict.fits,
        warned_after_kv=verdict.warned_after_kv,
        after_kv_shortfall_gib=plan.after_kv.shortfall_gib if plan.after_kv is not None else None,
        assumed=(*assumed, f"verdict over candidates: {verdict.label}"),
        **seen,
    )


def fits(plan: Any, engine: str = "vllm") -> bool:
    """Whether the estimate says the engine starts: the weights fit beside the overheads (MEM001) and the KV cache
    holds one sequence of the context (MEM002: vLLM's and TGI's own start-up checks; an engine whose profile has
    ``short_kv_cache``, SGLang's, starts with any pool that is not empty and caps the request length), as the rules
    in servespec/rules/memory.py decide it, without their error band; and what the release allocates after sizing
    the KV cache fits (MEM008's arithmetic: ``after_kv.shortfall_gib``)."""
    if plan.weights_gib > plan.total_gib - plan.overhead_gib:
        return False
    if plan.after_kv is not None and plan.after_kv.shortfall_gib > 0:
        return False
    if get(engine).profile.short_kv_cache is not None:
        return bool(plan.kv_tokens > 0)
    return bool(plan.kv_cache_gib >= plan.one_sequence_gib - 0.005 and plan.kv_tokens > 0)


WEIGHTS_SCHEMES = {
    "CompressedTensorsW8A8Int8": ("int8", 8.0),
    "CompressedTensorsW8A8Fp8": ("fp8", 8.0),
    "QuarkMXFP4Experts": ("mxfp4", 4.25),
}
"""vLLM's compressed-tensors scheme classes (vllm/model_executor/layers/quantization/compressed_tensors/schemes/,
v0.19.0) as the weights they store: 8-bit integers or FP8 with a scale per output channel (negligible). A log
names the one vLLM built from the checkpoint's quantization_config ("Selected ...Kernel for <scheme>"); vLLM quantizes
only the decoder's linear layers with it, the embeddings and the LM head stay in the model's dtype.
``QuarkMXFP4Experts``: an AMD Quark checkpoint (SGLang logs ``quant=quark``) with MXFP4 routed experts (4 bits and an
8-bit scale per 32) and the rest in the model's dtype, as servespec sizes ``mxfp4``; the log names no layout, the
file says where it was read (sglang/005-011)."""


def _facts(data: dict[str, Any]) -> models.ModelFacts | None:
    """The logged model's facts: from a pasted config, else the catalogue (by ``architecture_from`` or ``model``).

    ``weights_scheme`` (a quantized checkpoint of the ``architecture_from`` model) is the compressed-tensors scheme
    the log shows vLLM loading: the weights are sized by it, as servespec sizes them from the checkpoint's
    quantization_config in use."""
    inline = data.get("config")
    name_or_repo = str(data.get("architecture_from") or data.get("model") or "")
    if isinstance(inline, dict):
        return models.facts_from_config(inline, name_or_repo)
    facts = models.catalogued(name_or_repo)
    scheme = WEIGHTS_SCHEMES.get(str(data.get("weights_scheme") or ""))
    if facts is not None and scheme is not None and facts.quant_bits is None:
        facts = dataclasses.replace(facts, quant_method=scheme[0], quant_bits=scheme[1])
    return facts


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


def _guarded(score: Any, path: Path) -> Comparison:
    """One log's comparison; a log the estimator cannot take (an odd field, a bug) is reported, not fatal."""
    try:
        return score(path)
    except Exception as err:  # the table must list every log: the reason names the failure
        engine = "vllm" if path.parent == LOGS else path.parent.name
        name = path.stem if engine == "vllm" else f"{engine}/{path.stem}"
        return Comparison(name, None, None, f"not scored: {type(err).__name__}: {err}", engine=engine)


def compare_all() -> list[Comparison]:
    """Every vLLM log, in file order."""
    return [_guarded(compare, path) for path in sorted(LOGS.glob("*.yaml"))]


OTHER_LOGS = LOGS.parent / "startup_logs"
"""Start-up logs of the other engines, one folder per engine (tests/data/startup_logs/README.md)."""


def _other_observed(data: dict[str, Any]) -> int | None:
    """The figure a log of another engine is scored on (:data:`SCORED_FIGURE`)."""
    seen = data.get("observed") or {}
    engine = str(data.get("engine") or "")
    if engine in GGUF_ENGINES:
        kv = _logged_kv_mib(seen)
        return round(kv * MIB) if kv else None
    for key in ("kv_cache_tokens", "kv_allocated_tokens", "max_batch_total_tokens"):
        if seen.get(key):
            return int(seen[key])
    return None


OLLAMA_ENGINE_KV = "ollama_engine_kv"
"""An Ollama log scored on the allocation its own "kv cache" device lines print (device.go), because it has no
llama.cpp runner KV line (the Go ollama engine logs none): :func:`_ollama_engine_kv_bytes`."""
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def _ollama_engine_kv_bytes(seen: dict[str, Any]) -> int | None:
    """The KV cache Ollama's "kv cache" lines give over all devices (``engine_kv_cache``: "18.0 GiB" per device), in
    bytes. Ollama prints one decimal (format.HumanBytes2), so the figure is good to half a unit of the last place
    (0.05 GiB of 18.0: 0.3 %)."""
    sizes = seen.get("engine_kv_cache")
    if not isinstance(sizes, dict) or not sizes:
        return None
    total = 0.0
    for text in sizes.values():
        number, _, unit = str(text).strip().partition(" ")
        if unit not in _UNITS or _number(number) is None:
            return None
        total += float(number) * _UNITS[unit]
    return round(total) if total > 0 else None


def _ollama_engine_kv_precision(seen: dict[str, Any]) -> int:
    """Half a unit of the last printed place of each 'kv cache' line, summed over the devices, in bytes: Ollama
    prints them with format.HumanBytes2, "%.1f GiB" / "%.1f MiB" / "%.1f KiB" and whole bytes below a KiB
    (https://github.com/ollama/ollama/blob/v0.17.7/format/bytes.go#L52-L63, the lines at ml/device.go#L251-L256),
    so "1.1 GiB" stands for anything from 1.05 to 1.15 GiB. 0 when the lines are missing or unreadable."""
    sizes = seen.get("engine_kv_cache")
    if not isinstance(sizes, dict):
        return 0
    total = 0.0
    for text in sizes.values():
        number, _, unit = str(text).strip().partition(" ")
        if unit not in _UNITS or _number(number) is None:
            return 0
        total += 0.05 * _UNITS[unit] if unit != "B" else 0.0
    return round(total)


MIB = 1024 * 1024
GGUF_ENGINES = ("llama.cpp", "ollama")
SCORED_FIGURE = {
    "vllm": "KV-cache tokens (GPU KV cache size / # GPU blocks x block size)",
    "sglang": "KV-cache tokens (max_total_num_tokens)",
    "ktransformers": "KV-cache tokens (max_total_num_tokens)",
    "tgi": "KV-cache tokens (max batch total tokens)",
    "llama.cpp": "KV-cache bytes over all devices (llama_kv_cache size / KV self size)",
    "ollama": "KV-cache bytes over all devices (the llama.cpp runner's KV cache size)",
    KV_MIB: (
        "KV-cache memory in MiB per GPU (vLLM's 'Available KV cache memory' / kv_cache_size), for a vLLM log that "
        "gives no token count (one pipeline stage, full or MLA attention)"
    ),
    OLLAMA_ENGINE_KV: (
        "KV-cache bytes over all devices as Ollama's own 'kv cache' lines print them (one decimal), for an Ollama "
        "log without the llama.cpp runner's KV line (the Go ollama engine)"
    ),
}
"""What each engine's logs are scored on: the KV cache an engine sizes from memory (vLLM, SGLang, TGI) is
compared in tokens; llama.cpp and Ollama allocate the context they are given, so their KV cache's bytes
are compared (bytes per cell, cells per layer, padding)."""


def _logged_kv_mib(seen: dict[str, Any]) -> float | None:
    """The whole KV cache a GGUF engine logged, in MiB: its own total, else the buffers by device."""
    if seen.get("kv_cache_mib"):
        return float(seen["kv_cache_mib"])
    parts = [float(seen[key]) for key in ("kv_buffer_mib_gpu", "kv_buffer_mib_cpu") if seen.get(key)]
    return sum(parts) if parts else None


def _whole(value: Any, default: int = 1) -> int:
    try:
        return int(str(value)) if value not in (None, "", "null") else default
    except ValueError:
        return default


def _number(value: Any) -> float | None:
    try:
        return float(str(value)) if value not in (None, "", "null") else None
    except ValueError:
        return None


def _numbers(settings: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    """The logged settings among ``keys`` that are numbers, as floats (the estimators' ``options``)."""
    found = {key: _number(settings.get(key)) for key in keys}
    return {key: value for key, value in found.items() if value is not None}


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("true", "1", "yes", "on")


def _gguf_config(block: dict[str, Any]) -> dict[str, Any] | None:
    """config.json fields from the architecture facts llama.cpp prints (print_info / llm_load_print_meta),
    as knowledge/gguf_header.py maps a GGUF header's keys; None when the layer and head counts are missing."""
    names = {
        "n_layer": "num_hidden_layers",
        "n_embd": "hidden_size",
        "n_head": "num_attention_heads",
        "n_head_kv": "num_key_value_heads",
        "n_ctx_train": "max_position_embeddings",
        "n_ff": "intermediate_size",
        "n_embd_head_k": "head_dim",
        "n_vocab": "vocab_size",
        "n_expert": "num_local_experts",
        "n_expert_used": "num_experts_per_tok",
        "n_lora_kv": "kv_lora_rank",
        "n_rot": "qk_rope_head_dim",
        # an MLA GGUF's K and V widths, which llama.cpp caches (knowledge/gguf_header.py mla_kv_widths)
        "n_embd_k_gqa": "gguf_n_embd_k_gqa",
        "n_embd_v_gqa": "gguf_n_embd_v_gqa",
    }
    config: dict[str, Any] = {"model_type": str(block.get("arch") or "")}
    for key, name in names.items():
        value = block.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            config[name] = int(value)
    per_layer = _per_layer_heads(block)
    if per_layer is not None:
        config.update(per_layer)
    if not config["model_type"] or "num_hidden_layers" not in config or "num_key_value_heads" not in config:
        return None
    n_layers = int(config["num_hidden_layers"])
    ssm = {  # Gated DeltaNet architectures print their GGUF ssm.* keys under these names (llama-model.cpp print_info)
        "ssm.conv_kernel": block.get("ssm_d_conv"),
        "ssm.state_size": block.get("ssm_d_state"),
        "ssm.group_count": block.get("ssm_n_group"),
        "ssm.time_step_rank": block.get("ssm_dt_rank"),
        "ssm.inner_size": block.get("ssm_d_inner"),
        "full_attention_interval": block.get("full_attention_interval"),
    }
    config.update(deltanet_config(config["model_type"], ssm.get))
    arch, swa = config["model_type"], block.get("n_swa")
    pattern = config.pop("_pattern", None) or block.get("n_swa_pattern")
    header = {f"{arch}.attention.sliding_window": swa, f"{arch}.attention.sliding_window_pattern": pattern}
    config.update(swa_layout(arch, {key: value for key, value in header.items() if value is not None}, n_layers))
    if "qk_rope_head_dim" in config and "kv_lora_rank" not in config:
        del config["qk_rope_head_dim"]  # only MLA reads the rope width
    config.setdefault("num_attention_heads", config["num_key_value_heads"])
    config.setdefault("hidden_size", config.get("head_dim", 0) * config["num_attention_heads"])
    return config


def _layer_list(value: Any) -> list[int] | None:
    """A per-layer list print_info prints (``[8, 8, 2, ...]``), as whole numbers; None when it is not one."""
    text = str(value or "").strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        return [int(item) for item in text[1:-1].split(",")]
    except ValueError:
        return None


def _per_layer_heads(block: dict[str, Any]) -> dict[str, Any] | None:
    """Gemma 4's per-layer-kind layout from print_info's per-layer lists, as gguf_header.per_kind_config reads the
    header: ``n_head_kv`` and ``n_embd_k_gqa`` per layer give each layer's head size (``n_embd_head_k(il)``: the
    SWA size on sliding layers, src/llama-hparams.cpp), so the window flags; ``n_embd_head_k`` is the full layers'.
    print_info does not print ``shared_kv_layers``: the block's ``shared_kv_layers`` when recorded, else 0."""
    heads, widths = _layer_list(block.get("n_head_kv")), _layer_list(block.get("n_embd_k_gqa"))
    swa_dim, full_dim = block.get("n_embd_head_k_swa"), block.get("n_embd_head_k")
    if heads is None or not isinstance(swa_dim, int) or not isinstance(full_dim, int):
        return None
    found: dict[str, Any] = {"num_key_value_heads": max(heads)}
    arch = str(block.get("arch") or "")
    if widths is None or len(widths) != len(heads) or swa_dim == full_dim or 0 in heads:
        return found
    flags = tuple(width // head == swa_dim for width, head in zip(widths, heads, strict=True))
    header = {
        "attention.sliding_window_pattern": flags,
        "attention.head_count_kv": tuple(heads),
        "attention.key_length": full_dim,
        "attention.key_length_swa": swa_dim,
        "attention.shared_kv_layers": block.get("shared_kv_layers"),
        "expert_count": block.get("n_expert"),
    }
    # no tensor table in a log: a full layer's attn_v is taken as absent only where the full layers' KV heads differ
    # from the sliding ones' (num_global_key_value_heads applies with attention_k_eq_v only)
    distinct = len({heads[il] for il, flag in enumerate(flags) if not flag} | {max(heads)}) > 1
    found.update(per_kind_config(arch, header.get, lambda name: not distinct))
    found["_pattern"] = flags
    return found


def _other_facts(data: dict[str, Any]) -> models.ModelFacts | None:
    """A GGUF log's model from the architecture facts it prints, else as for vLLM logs (pasted config, catalogue)."""
    block = data.get("gguf")
    if isinstance(block, dict):
        config = _gguf_config(block)
        if config is not None:
            try:
                return models.facts_from_config(config, str(data.get("model") or ""))
            except ValueError:
                return None
    return _facts(data)


def _release(engine: str, version: str) -> Any:
    return get(engine).select(version).release if version else None


def _estimate_sglang(data: dict[str, Any], facts: models.ModelFacts, gpu: gpus.GpuModel) -> Any:
    """SGLang (and KTransformers' SGLang) with the logged server_args."""
    engine = str(data.get("engine"))
    settings = data.get("settings") or {}
    tp = _whole(settings.get("tp_size"))
    dp = _whole(settings.get("dp_size"))
    attention_dp = _truthy(settings.get("enable_dp_attention")) and dp > 1
    options: dict[str, Any] = _numbers(settings, ("mem_fraction_static", "chunked_prefill_size", "cuda_graph_max_bs"))
    options.update(_numbers(settings, ("cpu_offload_gb", "max_total_tokens", "page_size")))
    options.update(_kt_options(settings))
    kv_dtype = settings.get("kv_cache_dtype")
    if kv_dtype and str(kv_dtype) != "auto":
        options["kv_cache_dtype"] = str(kv_dtype)
    context = _whole(settings.get("context_length"), 0) or facts.derived_max_len or 4096
    version = _version(data, "engine_version")[0]
    return get(engine).estimate(
        EstimateInput(
            engine=engine,
            release=_release(engine, version),
            model=facts,
            gpu=gpu,
            tensor_parallel=tp // dp if attention_dp else tp,
            pipeline_parallel=_whole(settings.get("pp_size")),
            data_parallel=dp if attention_dp else 1,
            moe_group=tp if attention_dp else 0,
            dtype=str(settings.get("dtype") or "auto"),
            quantization=settings.get("quantization") or None,
            max_model_len=context,
            options=options,
            engine_version=version,
            kv_cache_dtype_option="kv_cache_dtype",
            env=_engine_env(data)[0],
            image=str(data["image"]) if data.get("image") else None,
        )
    )


def _kt_options(settings: dict[str, Any]) -> dict[str, Any]:
    """KTransformers' ``--kt-*`` arguments as logged, typed as the unit reads them (engines/sglang/kt.py ``read``):
    the weight path and method as text, the GPU-expert count whole, the ratio a number, the dynamic update a flag."""
    found: dict[str, Any] = {}
    for key in ("kt_weight_path", "kt_method"):
        if settings.get(key) not in (None, "", "None"):
            found[key] = str(settings[key])
    count = _number(settings.get("kt_num_gpu_experts"))
    if count is not None:
        found["kt_num_gpu_experts"] = int(count)
    ratio = _number(settings.get("kt_gpu_experts_ratio"))
    if ratio is not None:
        found["kt_gpu_experts_ratio"] = ratio
    if _truthy(settings.get("kt_enable_dynamic_expert_update")):
        found["kt_enable_dynamic_expert_update"] = True
    return found


def _estimate_tgi(data: dict[str, Any], facts: models.ModelFacts, gpu: gpus.GpuModel) -> Any:
    """TGI with the launcher's logged arguments (and those ``settings_assumed`` supplies, labelled)."""
    settings = {**(data.get("settings") or {}), **_settings_assumed(data)[0]}
    logged = ("cuda_memory_fraction", "max_batch_prefill_tokens", "max_input_tokens", "max_input_length")
    logged += ("max_batch_size",)
    options: dict[str, Any] = _numbers(settings, logged)
    version = _version(data, "engine_version")[0]
    release = _release("tgi", version)
    given = _whole(settings.get("max_total_tokens"), 0)
    # An unset max_total_tokens is the launcher's default for the release, as the product resolves it
    # (knowledge/resolve.py ``context``): 2.0.0-2.4.0 min(max_position_embeddings, 4096), 2.4.1+ what the KV
    # cache holds after warm-up (``context_default`` from launcher/src/main.rs and flash_causal_lm.py ``warmup``)
    fact = release.facts.context_default if release is not None and not given else None
    length = given or default_context(fact, facts, None)[0] or facts.derived_max_len or 4096
    return get("tgi").estimate(
        EstimateInput(
            engine="tgi",
            release=release,
            model=facts,
            gpu=gpu,
            tensor_parallel=_whole(settings.get("num_shard")),
            dtype=str(settings.get("dtype") or "auto"),
            quantization=settings.get("quantize") or None,
            max_model_len=length,
            options=options,
            engine_version=version,
            kv_cache_dtype_option="kv_cache_dtype",
            context_default=fact,
        )
    )


BATCHES = (("ubatch_size", "n_ubatch"), ("batch_size", "n_batch"))
"""llama-server's options and the llama_context lines' names for them."""


def _gguf_kv_bytes(data: dict[str, Any], facts: models.ModelFacts) -> int | None:
    """The KV cache a llama.cpp or Ollama start-up lays out over all its devices, as the estimator sizes it
    for the logged context, slots and cache types (the layers' split between devices aside)."""
    inp = _gguf_input(data, facts, None)
    plan = get(str(data.get("engine"))).estimate(inp) if inp is not None else None
    # full layers' cells and the windowed ones, over the GPU and host memory alike
    return round(plan.kv_cache_bytes_all_devices) if plan is not None else None


def _gguf_input(data: dict[str, Any], facts: models.ModelFacts, gpu: gpus.GpuModel | None) -> EstimateInput | None:
    """The estimator's input for a llama.cpp or Ollama log's context, slots and cache types, ``gpu`` its device
    (None: host memory; :func:`_device_free_kv` varies it); None when the log gives no context."""
    engine = str(data.get("engine"))
    settings = data.get("settings") or {}
    seen = data.get("observed") or {}
    total = _whole(settings.get("num_ctx") if engine == "ollama" else settings.get("n_ctx"), 0)
    total = total or _whole(seen.get("n_ctx"), 0)
    if not total:
        return None
    slots = _whole(settings.get("parallel") or seen.get("n_seq_max"))
    options: dict[str, Any] = {"parallel": slots, "num_parallel": slots}
    kv_type = settings.get("kv_cache_type") or settings.get("cache_type_k") or seen.get("kv_type_k")
    option = "kv_cache_type" if engine == "ollama" else "cache_type_k"
    if kv_type:
        options[option] = str(kv_type).lower()
    unified = settings.get("kv_unified")
    if unified is not None:
        options["kv_unified"] = _truthy(unified)
    if engine == "llama.cpp":  # the logged batch sizes: a windowed cache holds n_swa + n_ubatch cells
        options |= {key: _whole(settings.get(logged)) for key, logged in BATCHES if settings.get(logged)}
    flash = _flash_attention(data)
    if flash is not None:  # as the runner got it; "auto" or unlogged: unset (the release's resolution)
        options[getattr(get(engine), "flash_option", "flash_attn")] = flash
    version = _version(data, "engine_version")[0]
    release = _release(engine, version)
    inp = EstimateInput(
        engine=engine,
        release=release,
        model=facts,
        gpu=gpu,
        gguf_type=str((data.get("gguf") or {}).get("file_type") or "") or None,
        max_model_len=total,
        options=options,
        host_memory_gib=1e9,
        engine_version=version,
        kv_cache_dtype_option=option,
    )
    return replace(inp, max_model_len=_gguf_cells(engine, inp, total, slots))


def _gguf_cells(engine: str, inp: EstimateInput, total: int, slots: int) -> int:
    """The unit's per-sequence context that gives the logged ``n_ctx`` in all (the command line's total)."""
    if engine == "ollama":
        return max(total // max(slots, 1), 1)  # the runner's --ctx-size is num_ctx x parallel
    from servespec.engines.llama_cpp import memory as llama_memory

    layout = llama_memory.slots(inp.options, inp.release)
    return max(total // layout.count, 1) if llama_memory.ctx_size(1, layout, inp.release) > 1 else total


def compare_other(path: Path) -> Comparison:
    """One start-up log of another engine, scored on :data:`SCORED_FIGURE` with the settings it shows."""
    data = YAML(typ="safe").load(path.read_text())
    engine = str(data.get("engine") or path.parent.name)
    calibration = data.get("calibration") or {}
    facts = _other_facts(data)
    version, assumed = _version(data, "engine_version")
    version_assumed = bool(assumed)  # a release assumed from the log's date: no neighbouring releases to try
    assumed += _settings_assumed(data)[1] + _engine_env(data)[1]
    observed = _other_observed(data)
    seen: dict[str, Any] = {
        "engine": engine,
        "attention": attention_class(facts),
        "started": data.get("started") is not False,
        "version": version,
    }
    name = f"{engine}/{path.stem}"
    if observed is None and engine == "ollama" and seen["started"]:
        observed = _ollama_engine_kv_bytes(data.get("observed") or {})
        seen["figure"] = OLLAMA_ENGINE_KV if observed is not None else ""
        seen["observed_precision"] = _ollama_engine_kv_precision(data.get("observed") or {}) if observed else 0
    why = ""
    if calibration.get("use") is False:
        why = str(calibration.get("why", "excluded"))
    elif observed is None and (seen["started"] or engine in GGUF_ENGINES):  # a failed start: judged on its verdict
        why = "no KV number: no KV figure of the engine's in the stored log"
    elif facts is None:
        why = "model not catalogued"
    if why:
        return Comparison(name, observed, None, why, assumed=assumed, **seen)
    assert facts is not None
    choices = _release_choices(engine, data) if not version_assumed else []
    if engine in GGUF_ENGINES:
        assert observed is not None
        return _compare_gguf(name, data, facts, observed, choices, assumed, seen)
    return _compare_on_gpu(name, data, facts, observed, choices, assumed, seen)


def _mla_v_unread(engine: str, data: dict[str, Any], facts: models.ModelFacts, choices: list[str]) -> str:
    """Why a llama.cpp log of a GGUF in the MLA layout is not answered: its build lies between the last one read
    with a V cache for such a file and the first read without (engines/llama_cpp/mla_v_cache.json); "" otherwise."""
    if engine != "llama.cpp" or not facts.gguf_mla_latent:
        return ""
    from servespec.engines.llama_cpp import memory as llama_memory

    versions = choices or [_version(data, "engine_version")[0]]
    gap = [v for v in versions if llama_memory.mla_v_cache(_release(engine, v), v) is None]
    if not gap:
        return ""
    return (
        f"llama.cpp {', '.join(gap)}: whether this build keeps a V cache for an MLA-layout GGUF (PR #19067's V-less "
        "cache) is not read: between the builds mla_v_cache.json reads with and without it"
    )


def _compare_gguf(
    name: str,
    data: dict[str, Any],
    facts: models.ModelFacts,
    observed: int,
    choices: list[str],
    assumed: tuple[str, ...],
    seen: dict[str, Any],
) -> Comparison:
    """A llama.cpp or Ollama log: the KV bytes laid out for its context (under every release it may have run)."""
    engine = str(seen["engine"])
    unread = _mla_v_unread(engine, data, facts, choices)
    if unread:
        return Comparison(name, observed, None, unread, assumed=assumed, **seen)
    kind = _kv_device(data)
    if kind:  # the KV cache is not on a catalogued discrete GPU: answered only where the device cannot matter
        predicted, why, label = _device_free_kv(data, facts, choices, kind)
        if predicted is None:
            return Comparison(name, observed, None, why, assumed=assumed, **seen)
        assumed += (label, *_release_free_label(engine, choices))
        return Comparison(name, observed, predicted, model_class=model_class(facts), assumed=assumed, **seen)
    figures = {_gguf_kv_bytes({**data, "engine_version": v}, facts) for v in choices} or {_gguf_kv_bytes(data, facts)}
    if len(figures) > 1:
        why = _release_spread(engine, [f for f in figures if f is not None], "KV bytes", choices)
        return Comparison(name, observed, None, why, assumed=assumed, **seen)
    predicted = figures.pop()
    if predicted is None:
        return Comparison(name, observed, None, "context not logged", assumed=assumed, **seen)
    assumed += _release_free_label(engine, choices)
    return Comparison(name, observed, predicted, model_class=model_class(facts), assumed=assumed, **seen)


_ON, _OFF = ("1", "true", "on", "yes", "enabled"), ("0", "false", "off", "no", "disabled")


def _flash_attention(data: dict[str, Any]) -> bool | None:
    """Flash attention as the runner got it: the logged setting when it is on or off, else (``auto``, unlogged) the
    line llama.cpp prints where it resolves ``auto`` on the device ("Flash Attention was auto, set to enabled"), else
    None: the release decides, and it may decide by the device."""
    settings = data.get("settings") or {}
    text = str(settings.get("flash_attn", settings.get("flash_attention"))).strip().lower()
    if text in _ON or text in _OFF:
        return text in _ON
    resolved = re.search(r"Flash Attention was auto, set to (enabled|disabled)", str(data.get("log") or ""))
    return resolved.group(1) == "enabled" if resolved else None


DEVICE_KINDS = {
    "unified-memory": "a unified-memory device (CPU and GPU share one memory: Apple silicon, NVIDIA Jetson)",
    "host": "host memory (no layer offloaded)",
    "uncatalogued": "a GPU the catalogue lacks",
}
"""Where a GGUF log's KV cache may be other than on a catalogued discrete GPU (:func:`_kv_device`)."""

MEMORY_CONTEXTS = {
    "fit": "llama.cpp's --fit reduced the unset context to leave its target free (llama_params_fit_impl)",
    "vram_default": "Ollama's default num_ctx, chosen by the GPUs' total VRAM",
    "scheduler": "Ollama's scheduler lowered num_ctx or num_parallel to fit free memory",
}
"""How a context may have been chosen from the device's memory (a log's ``context_from``; :func:`_context_source`)."""


UNIFIED_MEMORY = re.compile(r"has unified memory\s*=\s*true|\b(Apple M\d|Jetson|Orin|GB10|Thor)\b")
"""What marks a unified-memory device in a log or its GPU name: ggml-metal's "has unified memory = true" line, Apple
silicon, NVIDIA Jetson (Orin, Thor) and DGX Spark (GB10)."""
NO_GPU = ("", "cpu", "none", "null")


def _kv_device(data: dict[str, Any]) -> str:
    """Where a GGUF log's KV cache is, when not on a catalogued discrete GPU (a :data:`DEVICE_KINDS` key): the
    recorded ``kv_device``; else ``host`` when no layer was offloaded or no GPU is named (a CPU-only run);
    ``unified-memory`` where the log or the name says so (:data:`UNIFIED_MEMORY`); ``uncatalogued`` when no
    catalogued card (nor a stand-in of a logged total) fits the logged name; "" for a catalogued discrete GPU."""
    recorded = str(data.get("kv_device") or "")
    if recorded:
        if recorded not in DEVICE_KINDS:
            raise ValueError(f"kv_device {recorded!r}: one of {', '.join(DEVICE_KINDS)}")
        return recorded
    named = str(data.get("gpu") or "").strip()
    if str((data.get("observed") or {}).get("offloaded_layers") or "").startswith("0/") or named.lower() in NO_GPU:
        return "host"
    if UNIFIED_MEMORY.search(named) or UNIFIED_MEMORY.search(str(data.get("log") or "")):
        return "unified-memory"
    return "" if _gpu_candidates(data) else "uncatalogued"


def _context_source(data: dict[str, Any]) -> str:
    """How the logged context was chosen: the recorded ``context_from`` (``given``, ``default``, or a
    :data:`MEMORY_CONTEXTS` key); else ``fit`` where llama.cpp logs that --fit reduced it ("context size reduced
    from", llama_params_fit_impl); else, for an Ollama release whose default num_ctx follows the VRAM (catalog
    ``context_default.by_vram``) and no positive OLLAMA_CONTEXT_LENGTH, ``vram_default`` unless its logged default
    ("vram-based default context ... default_num_ctx=N", server/routes.go) differs from each slot's context (then a
    request or Modelfile set it); else ``given``."""
    recorded = str(data.get("context_from") or "")
    if recorded:
        if recorded not in ("given", "default", *MEMORY_CONTEXTS):
            raise ValueError(f"context_from {recorded!r}: given, default or one of {', '.join(MEMORY_CONTEXTS)}")
        return recorded
    log = str(data.get("log") or "")
    if "context size reduced from" in log:
        return "fit"
    settings = data.get("settings") or {}
    release = _release(str(data.get("engine")), _version(data, "engine_version")[0])
    fact = release.facts.context_default if release and data.get("engine") == "ollama" else None
    if fact is None or not fact.by_vram or _whole(settings.get("ollama_context_length"), 0) > 0:
        return "given"
    logged = re.search(r"default_num_ctx=(\d+)", log)
    if logged is None:
        return "vram_default"  # the default may have applied, and the excerpt does not say which it was
    default, trained = int(logged.group(1)), _whole((data.get("gguf") or {}).get("n_ctx_train"), 0)
    per_slot = _whole(settings.get("num_ctx"), 0) // _whole(settings.get("parallel"))
    return "vram_default" if per_slot in (default, min(default, trained or default)) else "given"


def _memory_contexts(data: dict[str, Any], facts: models.ModelFacts, source: str) -> list[int]:
    """The runner's contexts a context chosen from memory may take on other devices ([] where not known): --fit
    anywhere from the release's floor (``fit_min``) to ``n_ctx_train``; Ollama's VRAM default each tier of the
    release (lowered to ``n_ctx_train`` where the release does), times the slots. The scheduler's lowering has no
    known range."""
    engine = str(data.get("engine"))
    release = _release(engine, _version(data, "engine_version")[0])
    fact = release.facts.context_default if release else None
    trained = _whole((data.get("gguf") or {}).get("n_ctx_train"), 0) or facts.derived_max_len or 0
    if fact is None or not trained:
        return []
    if source == "fit":
        return [fact.fit_min, trained] if fact.fit_min else []
    if source == "vram_default" and fact.by_vram:
        slots = _whole((data.get("settings") or {}).get("parallel"))
        tiers = {min(t.tokens, trained) if fact.within_model else t.tokens for t in fact.by_vram}
        return sorted(tier * slots for tier in tiers)
    return []


def _device_free_kv(
    data: dict[str, Any], facts: models.ModelFacts, choices: list[str], kind: str
) -> tuple[int | None, str, str]:
    """A GGUF log whose KV cache is not on a catalogued discrete GPU: (figure, "", label) when the KV bytes do not
    depend on the device, else (None, why, "").

    llama.cpp sizes the KV cache from the context, the slots, the cache types and the layer layout, and places each
    layer's tensors on its device without changing their size (:data:`KV_PLACEMENT_SOURCE`). What a device may still
    decide is varied, and the log is answered only when every combination gives one figure: a context chosen from
    memory (:func:`_memory_contexts`), flash attention left to the release (it sets the cells' padding in some),
    Ollama's automatic slots before 0.10 (4 or 2 where they fit, else 1), and the estimate's own device (host memory,
    the smallest and the largest catalogued GPU). The size llama.cpp logs sums its KV buffers (``total_size``), each
    the tensors' sizes aligned to the buffer type; Metal reports the unrounded size, not its page-rounded allocation
    (https://github.com/ollama/ollama/blob/v0.20.7/ml/backend/ggml/ggml/src/ggml-metal/ggml-metal.cpp#L177-L183),
    and a K or V tensor of whole padded cells is already a multiple of those alignments."""
    engine = str(data.get("engine"))
    where = f"KV cache in {DEVICE_KINDS[kind]} ({str(data.get('gpu') or '').strip()})"
    settings = data.get("settings") or {}
    variants, varied = [settings], []
    source = _context_source(data)
    if source in MEMORY_CONTEXTS:
        contexts = _memory_contexts(data, facts, source)
        if not contexts:
            return None, f"{where}; {MEMORY_CONTEXTS[source]}, and the values it takes on other devices are unknown", ""
        key = "num_ctx" if engine == "ollama" else "n_ctx"
        variants = [{**v, key: n} for v in variants for n in contexts]
        varied.append(f"context {min(contexts)}-{max(contexts)} ({MEMORY_CONTEXTS[source]})")
    if _flash_attention(data) is None:  # the estimator's kv_without_device tries it on and off
        varied.append("flash attention on or off (left to the release)")
    release = _release(engine, _version(data, "engine_version")[0])
    auto = release.facts.auto_parallel if engine == "ollama" and release else None
    if auto is not None and not (settings.get("parallel") or (data.get("observed") or {}).get("n_seq_max")):
        variants = [{**v, "parallel": n} for v in variants for n in (1, auto.value)]
        varied.append(f"1 or {auto.value} automatic slots")
    cards = sorted(gpus.catalog(), key=lambda card: card.memory_mib)
    devices: list[gpus.GpuModel | None] = [None, cards[0], cards[-1]]
    unit = get(engine)
    assert isinstance(unit, GgufEngine)
    found = [
        unit.kv_without_device(
            lambda device, v=v, version=version: _gguf_input(  # type: ignore[misc]
                {**data, "settings": v, "engine_version": version}, facts, device
            ),
            devices,
        )
        for v in variants
        for version in choices or [str(data.get("engine_version") or "")]
    ]
    figures = sorted({free.kv_bytes or 0 for free in found})
    unsettled = next((free.why for free in found if free.kv_bytes is None), "")
    if unsettled.startswith("no estimate input"):
        return None, "context not logged", ""
    if unsettled or len(figures) > 1:
        spread = unsettled or f"{figures[0]:,} to {figures[-1]:,} KV bytes"
        return None, f"{where}, and the figure depends on what the device decides ({'; '.join(varied)}): {spread}", ""
    label = (
        f"{where}: the KV bytes do not depend on the device: one figure in host memory and on the {cards[0].id} and "
        f"{cards[-1].id} records, {len(variants)} setting combination(s) the device may decide "
        f"({'; '.join(varied) or 'none: every one is logged'}); {KV_PLACEMENT_SOURCE}"
    )
    return figures[0], "", label


def _compare_on_gpu(
    name: str,
    data: dict[str, Any],
    facts: models.ModelFacts,
    observed: int | None,
    choices: list[str],
    assumed: tuple[str, ...],
    seen: dict[str, Any],
) -> Comparison:
    """An SGLang, KTransformers or TGI log: the KV tokens sized from the GPU's memory (a labelled stand-in for a
    card the log does not name or the catalogue lacks), under every release it may have run when it states none."""
    engine = str(seen["engine"])
    gpu, how = _card_of(data, engine)
    if gpu is None:
        return Comparison(name, observed, None, how, assumed=assumed, **seen)
    estimators = {"sglang": _estimate_sglang, "ktransformers": _estimate_sglang, "tgi": _estimate_tgi}
    if engine not in estimators:
        return Comparison(name, observed, None, f"{engine} logs not scored yet", assumed=assumed, **seen)
    estimator = estimators[engine]
    assumed += _stand_in_label(gpu, how)
    cards = _gpu_candidates(data)
    failed = (name, data, facts, observed, (gpu, cards), estimator, choices, assumed, seen)
    if not seen["started"] and observed is None:
        return _failed_on_gpu(*failed)
    runs = [
        _settled(lambda card, v=v: estimator({**data, "engine_version": v}, facts, card), gpu, cards, engine)  # type: ignore[misc]
        for v in choices
    ] or [_settled(lambda card: estimator(data, facts, card), gpu, cards, engine)]
    plan = runs[0][0]
    why = next((why for _, why in runs if why), "")  # the GPU left open
    if not why and len({(p.kv_tokens, fits(p, engine)) if p is not None else None for p, _ in runs}) > 1:
        why = _release_spread(engine, [p.kv_tokens for p, _ in runs if p is not None], "KV tokens", choices)
    if not why and plan is not None:
        why = _setting_range_spread(data, lambda changed: estimator(changed, facts, gpu))
    if why and not seen["started"]:  # a failed start is judged on the verdict every candidate gives
        return _failed_on_gpu(*failed)
    if why:
        return Comparison(name, observed, None, why, assumed=assumed, **seen)
    if plan is None:
        why = f"no estimate for {engine} {seen['version']}"
        return Comparison(name, observed, None, why, assumed=assumed, **seen)
    assumed += _release_free_label(engine, choices)
    kind = model_class(facts)
    tight = plan.after_kv is not None and plan.after_kv.tight
    return Comparison(
        name,
        observed,
        plan.kv_tokens,
        model_class=kind,
        kv_gib=plan.kv_cache_gib,
        fits=fits(plan, engine),
        warned_after_kv=tight,
        after_kv_shortfall_gib=plan.after_kv.shortfall_gib if plan.after_kv is not None else None,
        assumed=assumed,
        **seen,
    )


def _card_of(data: dict[str, Any], engine: str) -> tuple[gpus.GpuModel | None, str]:
    """The card a log of an engine on GPUs ran on, and how a stand-in for it was made; None and why not."""
    gpu, how = _gpu(data), ""
    if gpu is None and engine in SGLANG_ENGINES:
        gpu, how = _sglang_preload_gpu(data)
    if gpu is None:
        return None, how or "GPU unknown: the log names no catalogued GPU and states no total memory"
    return gpu, how


def _failed_on_gpu(
    name: str,
    data: dict[str, Any],
    facts: models.ModelFacts,
    observed: int | None,
    card: tuple[gpus.GpuModel, list[gpus.GpuModel]],
    estimator: Any,
    choices: list[str],
    assumed: tuple[str, ...],
    seen: dict[str, Any],
) -> Comparison:
    """A failed start of SGLang, KTransformers or TGI, judged on the verdict (:func:`verdict_over`) every candidate
    gives: each card the logged GPU may be, each release it may have run (when it states none), each end of a
    setting's range it does not show (``settings_assumed: {name: {range}}``)."""
    engine = str(seen["engine"])
    estimate = lambda body, one: estimator(body, facts, one)  # noqa: E731
    plans, left_open = _range_plans(data, estimate, card, (engine, choices))
    if len(plans) == 1:  # nothing left open: the verdict is the plan's
        plan = plans[0][1]
        if plan is None:
            why = f"no estimate for {seen['engine']} {seen['version']}"
            return Comparison(name, observed, None, why, assumed=assumed, **seen)
        return Comparison(name, observed, None, VERDICT_ONLY, fits=fits(plan, engine), assumed=assumed, **seen)
    return _verdict_row(name, observed, str(seen.pop("version")), (plans, left_open), assumed, seen)


SGLANG_ENGINES = ("sglang", "ktransformers")


def _release_choices(engine: str, data: dict[str, Any]) -> list[str]:
    """The releases a log may have run when the catalogue does not give it one: for a log that states none (and
    assumes none), every catalogued one and "unknown" (the arithmetic without release facts, which releases older
    than the catalogue get); for a stated build the catalogue lacks between two catalogued releases (a development
    or release-candidate build), those two (:meth:`Catalog.candidates`); [] otherwise."""
    stated = str(data.get("engine_version") or "").strip()
    if stated and stated != "unknown":
        between = get(engine).catalog.candidates(stated)
        return list(between) if len(between) == 2 else []
    return _printed_args_bound(engine, data, ["unknown", *get(engine).select("unknown").known])


def _printed_args_bound(engine: str, data: dict[str, Any], choices: list[str]) -> list[str]:
    """The releases among ``choices`` that have every field an SGLang log's ``server_args=ServerArgs(...)`` line
    prints which some catalogued release has as an option (a field no catalogued release has bounds nothing).
    The arithmetic before the catalogue ("unknown") stays only when the oldest catalogued release has them all."""
    line = re.search(r"server_args=ServerArgs\((.*)", str(data.get("log") or ""))
    if engine not in SGLANG_ENGINES or line is None:
        return choices
    printed = set(re.findall(r"(?:^|, )(\w+)=", line.group(1)))
    releases = {v: _release(engine, v) for v in choices if v != "unknown"}
    names = {v: _option_names(release) for v, release in releases.items()}
    wanted = printed & {name for found in names.values() for name in found}
    kept = [v for v in choices if v != "unknown" and wanted <= names[v]]
    from servespec.engines.catalog import version_key

    oldest = min(releases, key=version_key, default=None)
    if "unknown" in choices and oldest in kept:
        kept.insert(0, "unknown")
    if not kept or len(kept) == len(choices):
        return choices
    return _Bounded(kept)


def _option_names(release: Any) -> set[str]:
    """A release's options by the names ``ServerArgs`` prints: each flag and alias, dashes as underscores."""
    if release is None:
        return set()
    found = set(release.options)
    for option in release.options.values():
        found.update(alias.lstrip("-").replace("-", "_") for alias in option.aliases)
    return found


class _Bounded(list[str]):
    """Releases a log's printed ``ServerArgs`` fields bound it to (:func:`_printed_args_bound`)."""


def _stated_between(choices: list[str]) -> bool:
    """The choices are the two catalogued releases around a stated build (:func:`_release_choices`)."""
    return len(choices) == 2 and "unknown" not in choices and not isinstance(choices, _Bounded)


def _release_spread(engine: str, figures: list[int], unit: str, choices: list[str] | None = None) -> str:
    low, high = (min(figures), max(figures)) if figures else (0, 0)
    if choices and _stated_between(choices):
        return (
            f"{engine} release not catalogued, and the catalogued releases on either side of it ({choices[0]} and "
            f"{choices[1]}) disagree: {low:,} to {high:,} {unit}"
        )
    if isinstance(choices, _Bounded):
        return (
            f"{engine} release not stated, and the figure depends on it: {low:,} to {high:,} {unit} over the "
            f"{len(choices)} catalogued releases ({choices[0]} to {choices[-1]}) whose options include every "
            "ServerArgs field the log prints"
        )
    return (
        f"{engine} release not stated, and the figure depends on it: {low:,} to {high:,} {unit} over the catalogued "
        "releases and the arithmetic before them"
    )


def _release_free_label(engine: str, choices: list[str]) -> tuple[str, ...]:
    if not choices:
        return ()
    if _stated_between(choices):
        return (
            f"{engine} release not catalogued: it lies between {choices[0]} and {choices[1]}, and the figure is the "
            "same under both (their facts stand in for the build's)",
        )
    if isinstance(choices, _Bounded):
        return (
            f"{engine} release not stated: the figure is the same under all {len(choices)} catalogued releases "
            f"({choices[0]} to {choices[-1]}) whose options include every ServerArgs field the log prints (no "
            "release assumed)",
        )
    return (
        f"{engine} release not stated: the figure is the same under all {len(choices) - 1} catalogued releases and "
        "the arithmetic before them (no release assumed)",
    )


def _sglang_preload_gpu(data: dict[str, Any]) -> tuple[gpus.GpuModel | None, str]:
    """A stand-in for a GPU an SGLang log does not name, from the free memory it logs before loading
    ("Load weight begin. avail mem=X GB", GiB: SGLang's get_available_gpu_memory divides by 1 << 30).

    SGLang takes ``mem_fraction_static`` of that figure (model_runner.py ``profile_max_num_token``); the estimator
    takes it as the card's total less its CUDA-context allowance (``CONTEXT_GIB``) and NCCL's communicators, so the
    stand-in's total is the logged figure plus that allowance: on such a log the allowance itself is not tested.
    Over several ranks the least of their logged figures (SGLang's baseline), plus the estimator's NCCL allowance,
    which it subtracts again. Only with a logged ``mem_fraction_static`` (the default reads the card's real total).
    Returns the stand-in and how it was made, or None and why not ("" when the log has no such figure)."""
    from servespec.knowledge.memory import CONTEXT_GIB, VLLM_NON_TORCH_GIB

    printed = str(data.get("gpu") or "").strip()
    before = _number((data.get("observed") or {}).get("avail_mem_before_load_gb"))
    if (printed and data.get("gpu_named") is not False) or before is None:
        return None, ""
    settings = data.get("settings") or {}
    ranks = _whole(settings.get("tp_size")) * _whole(settings.get("pp_size")) * _whole(settings.get("dp_size"))
    if _number(settings.get("mem_fraction_static")) is None:
        return None, "GPU not named and mem_fraction_static not logged: SGLang's default reads the card's total"
    allowance, how_nccl = 0.0, ""
    if ranks > 1:
        # SGLang's baseline is the free memory after its distributed set-up, the least over all ranks
        # (get_available_gpu_memory(distributed=world_size > 1): an all-reduce MIN; v0.5.10 model_runner.py L1002,
        # model_runner_kv_cache_mixin.py L148); each rank logs its own just before loading. So the stand-in is the
        # least of every rank's logged figure, plus what the estimator subtracts for NCCL on a card it cannot place
        # on a board (its allowance, no NVLS): the estimate's baseline is then the logged one, whatever NCCL took.
        logged = re.findall(
            r"^\s*\[([^\]]*)\] Load weight begin\. avail mem=([\d.]+) GB", str(data.get("log") or ""), re.M
        )
        by_rank = {label.split(None, 2)[-1] if " " in label else label: float(gb) for label, gb in logged}
        if len(by_rank) != ranks:
            why = (
                f"GPU not named, and the log shows {len(by_rank)} of {ranks} ranks' pre-load memory: SGLang's "
                "baseline is the least of all ranks'"
            )
            return None, why
        before = min(by_rank.values())
        allowance = VLLM_NON_TORCH_GIB[1]
        how_nccl = f" + its {allowance} GiB NCCL allowance (the least of {ranks} ranks' figures)"
    total = before + CONTEXT_GIB + allowance
    mark = AFTER_TP_SETUP if _whole(settings.get("tp_size")) > 1 else ""
    stand_in = gpus.GpuModel(f"unnamed:{total:.2f} GiB{mark}", (), 0, _logged_capability(data))
    stand_in = dataclasses.replace(stand_in, memory_mib=round(total / CUDA_VISIBLE_SHARE * 1024))
    how = (
        f"SGLang's logged pre-load free memory {before:.2f} GiB + the estimator's {CONTEXT_GIB} GiB context allowance"
        + how_nccl
    )
    return stand_in, how


def ollama_figure_pairs() -> list[tuple[str, int, int, int]]:
    """(log, bytes of Ollama's 'kv cache' lines, bytes of the llama.cpp runner's KV lines, the lines' rounding in
    bytes) for the Ollama logs that print both: how far the rounded 'kv cache' figure sits from the runner's exact
    one, and how far its one printed decimal lets it sit (:func:`_ollama_engine_kv_precision`)."""
    pairs = []
    for path in sorted((OTHER_LOGS / "ollama").glob("*.yaml")):
        seen = YAML(typ="safe").load(path.read_text()).get("observed") or {}
        engine_kv, runner = _ollama_engine_kv_bytes(seen), _logged_kv_mib(seen)
        if engine_kv and runner:
            pairs.append((f"ollama/{path.stem}", engine_kv, round(runner * MIB), _ollama_engine_kv_precision(seen)))
    return pairs


def compare_corpus() -> list[Comparison]:
    """Every recorded start-up log: vLLM's, then the other engines' by folder."""
    others = [_guarded(compare_other, path) for path in sorted(OTHER_LOGS.glob("*/*.yaml"))]
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
            versions = sorted(
                {m.version for m in members if m.version}, key=lambda v: (version_key(v), v)
            )  # ties: by name
            guessed = {m.version for m in members if any(text.startswith("release ") for text in m.assumed)}
            shown = [f"{v}*" if v in guessed else v for v in versions]  # * a release assumed from the log's date
            label = f"{shown[0]} - {shown[-1]}" if len(shown) > 1 else shown[0] if shown else "unstated"
        answered = [m for m in members if not m.skipped]
        table.append(
            {
                "engine": engine,
                "versions": label,
                "attention": attention,
                "n": len(members),
                "failed_starts": sum(1 for m in members if not m.started),
                "failed_predicted": sum(1 for m in members if not m.started and m.fits is False),
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
