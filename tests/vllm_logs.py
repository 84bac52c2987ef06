"""Compare the estimator with real vLLM start-up logs (tests/data/vllm_logs/).

Shared by tests/test_estimator_logs.py and bench/estimator_accuracy.py.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from servespec.engines import get
from servespec.knowledge import gpus, models
from servespec.knowledge.error_band import CLASSES, model_class
from servespec.knowledge.gguf_header import deltanet_config, swa_layout
from servespec.knowledge.memory import CUDA_VISIBLE_SHARE, EstimateInput

LOGS = Path(__file__).resolve().parent / "data" / "vllm_logs"
_OPTIONS = (
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "kv_cache_dtype",
    "enforce_eager",
    "limit_mm_per_prompt",
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
    fits: bool | None = None
    """Whether the estimate says the engine starts with these settings (:func:`fits`); None: not estimated."""

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
    """The logged GPU from the catalogue, its memory the CUDA-visible total the log states; a GPU the catalogue
    lacks is stood in for by one of the logged total (id ``uncatalogued:<name>``, compute capability unknown)."""
    printed = str(data.get("gpu") or "").strip()
    name = printed.split("(")[0].strip()  # "NVIDIA H200 (141 GB class)"; "TITAN X (Pascal)" is a name
    found = (gpus.resolve(printed) or gpus.resolve(name)) if name else None
    seen = data.get("observed") or {}
    total = data.get("total_gpu_memory_gib") or seen.get("total_gpu_memory_gib") or data.get("gpu_total_gib")
    if found is None and name and _number(total):
        # NVIDIA prints one name for two memory sizes (RTX 3060 12/8 GB): the logged CUDA total picks the nearer
        sizes = [gpu for gpu in gpus.named(name) if abs(gpu.memory_gib * CUDA_VISIBLE_SHARE / float(total) - 1) < 0.1]
        found = min(sizes, key=lambda gpu: abs(gpu.memory_gib * CUDA_VISIBLE_SHARE - float(total)), default=None)
    if found is None and name:
        for gpu in gpus.catalog():  # "NVIDIA A100 80GB" style names in log file names
            if all(part.lower() in gpu.id.lower() for part in name.replace("NVIDIA", "").split()):
                found = gpu
                break
    if found is None and name and _number(total) and not gpus.named(name):
        found = gpus.GpuModel(f"uncatalogued:{name}", (name,), 0, (0, 0))
    if found is not None and _number(total):
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
    failed = not seen["started"]
    if (observed is None and not failed) or facts is None or gpu is None:
        why = (
            "no KV number"
            if observed is None and not failed
            else "model not catalogued"
            if facts is None
            else "GPU unknown"
        )
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
            max_model_len=int(settings.get("max_model_len") or facts.derived_max_len or 4096),
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
        plan.kv_tokens if observed is not None else None,
        "" if observed is not None else "failed start without a KV number: scored on the verdict only",
        version=version,
        hybrid=hybrid,
        model_class=kind,
        kv_gib=plan.kv_cache_gib,
        fits=fits(plan),
        **seen,
    )


def fits(plan: Any) -> bool:
    """Whether the estimate says the engine starts: the weights fit beside the overheads (MEM001) and the KV cache
    holds one sequence of the context (MEM002: vLLM's, SGLang's and TGI's own start-up checks), as the rules in
    servespec/rules/memory.py decide it, without their error band."""
    if plan.weights_gib > plan.total_gib - plan.overhead_gib:
        return False
    return bool(plan.kv_cache_gib >= plan.one_sequence_gib - 0.005 and plan.kv_tokens > 0)


WEIGHTS_SCHEMES = {
    "CompressedTensorsW8A8Int8": ("int8", 8.0),
    "CompressedTensorsW8A8Fp8": ("fp8", 8.0),
}
"""vLLM's compressed-tensors scheme classes (vllm/model_executor/layers/quantization/compressed_tensors/schemes/,
v0.19.0) as the weights they store: 8-bit integers or FP8 with a scale per output channel (negligible). A log
names the one vLLM built from the checkpoint's quantization_config ("Selected ...Kernel for <scheme>"); vLLM quantizes
only the decoder's linear layers with it, the embeddings and the LM head stay in the model's dtype."""


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


MIB = 1024 * 1024
GGUF_ENGINES = ("llama.cpp", "ollama")
SCORED_FIGURE = {
    "vllm": "KV-cache tokens (GPU KV cache size / # GPU blocks x block size)",
    "sglang": "KV-cache tokens (max_total_num_tokens)",
    "ktransformers": "KV-cache tokens (max_total_num_tokens)",
    "tgi": "KV-cache tokens (max batch total tokens)",
    "llama.cpp": "KV-cache bytes over all devices (llama_kv_cache size / KV self size)",
    "ollama": "KV-cache bytes over all devices (the llama.cpp runner's KV cache size)",
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
    }
    config: dict[str, Any] = {"model_type": str(block.get("arch") or "")}
    for key, name in names.items():
        value = block.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            config[name] = int(value)
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
    pattern = block.get("n_swa_pattern")
    header = {f"{arch}.attention.sliding_window": swa, f"{arch}.attention.sliding_window_pattern": pattern}
    config.update(swa_layout(arch, {key: value for key, value in header.items() if value is not None}, n_layers))
    if "qk_rope_head_dim" in config and "kv_lora_rank" not in config:
        del config["qk_rope_head_dim"]  # only MLA reads the rope width
    config.setdefault("num_attention_heads", config["num_key_value_heads"])
    config.setdefault("hidden_size", config.get("head_dim", 0) * config["num_attention_heads"])
    return config


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
    kv_dtype = settings.get("kv_cache_dtype")
    if kv_dtype and str(kv_dtype) != "auto":
        options["kv_cache_dtype"] = str(kv_dtype)
    context = _whole(settings.get("context_length"), 0) or facts.derived_max_len or 4096
    version = str(data.get("engine_version") or "")
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
        )
    )


def _estimate_tgi(data: dict[str, Any], facts: models.ModelFacts, gpu: gpus.GpuModel) -> Any:
    """TGI with the launcher's logged arguments."""
    settings = data.get("settings") or {}
    options: dict[str, Any] = _numbers(settings, ("cuda_memory_fraction", "max_batch_prefill_tokens"))
    version = str(data.get("engine_version") or "")
    length = _whole(settings.get("max_total_tokens"), 0) or facts.derived_max_len or 4096
    return get("tgi").estimate(
        EstimateInput(
            engine="tgi",
            release=_release("tgi", version),
            model=facts,
            gpu=gpu,
            tensor_parallel=_whole(settings.get("num_shard")),
            dtype=str(settings.get("dtype") or "auto"),
            quantization=settings.get("quantize") or None,
            max_model_len=length,
            options=options,
            engine_version=version,
            kv_cache_dtype_option="kv_cache_dtype",
        )
    )


def _gguf_kv_bytes(data: dict[str, Any], facts: models.ModelFacts) -> int | None:
    """The KV cache a llama.cpp or Ollama start-up lays out over all its devices, as the estimator sizes it
    for the logged context, slots and cache types (the layers' split between devices aside)."""
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
    version = str(data.get("engine_version") or "")
    release = _release(engine, version)
    inp = EstimateInput(
        engine=engine,
        release=release,
        model=facts,
        gpu=None,
        gguf_type=str((data.get("gguf") or {}).get("file_type") or "") or None,
        max_model_len=total,
        options=options,
        host_memory_gib=1e9,
        engine_version=version,
        kv_cache_dtype_option=option,
    )
    cells = _gguf_cells(engine, inp, total, slots)
    plan = get(engine).estimate(replace(inp, max_model_len=cells))
    return round(plan.kv_bytes_per_token * plan.kv_tokens) if plan is not None else None


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
    version = str(data.get("engine_version") or "")
    observed = _other_observed(data)
    seen = {
        "engine": engine,
        "attention": attention_class(facts),
        "started": data.get("started") is not False,
    }
    name = f"{engine}/{path.stem}"
    why = ""
    if calibration.get("use") is False:
        why = str(calibration.get("why", "excluded"))
    elif observed is None:
        why = "no KV number"
    elif facts is None:
        why = "model not catalogued"
    if why:
        return Comparison(name, observed, None, why, version, **seen)
    assert facts is not None and observed is not None
    if engine in GGUF_ENGINES:
        predicted = _gguf_kv_bytes(data, facts)
        if predicted is None:
            return Comparison(name, observed, None, "context not logged", version, **seen)
        return Comparison(name, observed, predicted, version=version, model_class=model_class(facts), **seen)
    gpu = _gpu(data)
    if gpu is None:
        return Comparison(name, observed, None, "GPU unknown", version, **seen)
    estimators = {"sglang": _estimate_sglang, "ktransformers": _estimate_sglang, "tgi": _estimate_tgi}
    if engine not in estimators:
        return Comparison(name, observed, None, f"{engine} logs not scored yet", version, **seen)
    plan = estimators[engine](data, facts, gpu)
    if plan is None:
        return Comparison(name, observed, None, f"no estimate for {engine} {version}", version, **seen)
    return Comparison(
        name,
        observed,
        plan.kv_tokens,
        version=version,
        model_class=model_class(facts),
        kv_gib=plan.kv_cache_gib,
        **seen,
    )


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
