"""The llm-d capacity planner (PyPI ``llm-d-planner``) against the same vLLM start-up logs as servespec.

.venv/bin/pip install -e '.[bench]'          # llm-d-planner (no transformers / huggingface_hub needed)
.venv/bin/python bench/llmd_planner_comparison.py

For every log in tests/data/vllm_logs it asks the planner's own arithmetic
(``planner.capacity_planner.total_kv_cache_blocks``: GPU memory x utilization minus weights, its
calibrated activation and non-torch constants, divided by its KV bytes per token) for the KV-cache
tokens vLLM logged, and prints its error beside servespec's (tests/vllm_logs.py ``compare``).

What is patched (the planner reads the Hugging Face Hub, which is not reachable here):
- The planner's functions are called as its own accuracy campaign calls them (accuracy/scripts/predict_capacity.py
  at commit d3121e05): ``allocatable_kv_cache_memory`` over all GPUs, per GPU, over ``KVCacheDetail``'s bytes per
  token per GPU. (Its library helper ``total_kv_cache_blocks`` skips the per-GPU division, which would multiply
  multi-GPU answers by tp x pp.)
- ``AutoConfig.from_pretrained``: the model's config.json is the verbatim subset servespec's catalog
  vendors (knowledge/data/models.yaml ``config``) or the one the log file pastes (``config:``), given to
  the planner as an object with those attributes. Fields the subset omits are absent (the planner's own
  ``getattr`` defaults apply), except ``num_key_value_heads``, which transformers defaults to
  ``num_attention_heads``: that default is set, as transformers would.
- **Stand-in** for the Hub's safetensors metadata (``model_params_by_dtype``, ``model_total_params``):
  the parameter count servespec derives from the config (knowledge/models.py ``count_parameters``), all
  in the checkpoint's ``torch_dtype``. So the planner's weight term shares servespec's parameter count;
  the comparison measures its overhead constants and KV layout, not its weight counting. Quantized
  checkpoints are left out (their packed dtypes are only in the real metadata).

Caveat printed with the table: the planner's constants (planner/data/configuration/vllm_memory_constants.json)
were calibrated on llm-d-planner's own vLLM 0.19.0 H100 campaign, whose committed logs are 016-076 here,
so on those logs its figures are in-sample.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ruamel.yaml import YAML
from tests.vllm_logs import LOGS, _facts, _gpu, attention_class, compare

from servespec.knowledge.datafile import load_yaml_data
from servespec.knowledge.memory import cuda_total_gib

_DTYPE_NAMES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}


class _Config:
    """A config.json as the attributes ``transformers.AutoConfig`` would expose (a hashable object: the
    planner caches on it)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        from servespec.knowledge.models import _TRANSFORMERS_DEFAULTS

        # fields a model type's config.json leaves to its transformers configuration class (Gemma 3's text_config)
        fields = {**_TRANSFORMERS_DEFAULTS.get(str(fields.get("model_type")), {}), **fields}
        for key, value in fields.items():
            setattr(self, key, _Config(value) if key == "text_config" and isinstance(value, dict) else value)
        if hasattr(self, "num_attention_heads") and getattr(self, "num_key_value_heads", None) is None:
            self.num_key_value_heads = self.num_attention_heads  # transformers' default (PretrainedConfig subclasses)


def _config_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    inline = data.get("config")
    if isinstance(inline, dict):
        return inline
    name = str(data.get("architecture_from") or data.get("model") or "").strip().lower()
    catalog = {key.lower(): value for key, value in load_yaml_data("models.yaml")["models"].items()}
    entry = catalog.get(name)
    return dict(entry["config"]) if entry else None


def _planner_tokens(data: dict[str, Any]) -> tuple[int | None, str]:
    """The planner's KV-cache tokens for one log, or None and why it has none."""
    from planner import capacity_planner as cp

    config = _config_dict(data)
    facts = _facts(data)
    gpu = _gpu(data)
    if config is None or facts is None:
        return None, "model not in servespec's catalog (no local config.json)"
    if gpu is None:
        return None, "GPU unknown"
    if config.get("quantization_config") or (data.get("settings") or {}).get("quantization"):
        return None, "quantized checkpoint: needs the Hub's safetensors metadata"
    dtype = _DTYPE_NAMES.get(str(config.get("torch_dtype") or config.get("dtype") or "bfloat16"), "BF16")
    params = int(facts.params)
    cp.model_params_by_dtype = lambda name, token=None: {dtype: params}  # stand-in for the Hub call
    cp.model_total_params = lambda name, token=None: params  # stand-in for the Hub call
    settings = data.get("settings") or {}
    tp = int(settings.get("tensor_parallel_size") or 1)
    pp = int(settings.get("pipeline_parallel_size") or 1)
    model_config = _Config(config)
    context = int(settings.get("max_model_len") or facts.max_position_embeddings or 4096)  # as compare() does
    # The planner's memory over all tp x pp GPUs, per GPU, over the per-GPU share of a token's KV bytes: how
    # llm-d-planner's own accuracy campaign turns it into vLLM's "GPU KV cache size" (accuracy/scripts/
    # predict_capacity.py at d3121e05). Its library helper total_kv_cache_blocks() does not divide the
    # total by the GPUs, so it would report tp x (tp x pp) times as many tokens on multi-GPU logs.
    total = cp.allocatable_kv_cache_memory(
        str(data.get("model")),
        model_config,
        cuda_total_gib(gpu),  # type: ignore[arg-type]  # the planner's GiB per device
        float(settings.get("gpu_memory_utilization") or 0.9),
        tp,
        pp,
        1,
        max_model_len=context,
    )
    per_token = cp.KVCacheDetail(str(data.get("model")), model_config, context_len=context).per_token_memory_bytes
    return int(total / (tp * pp) * 1024**3 / (per_token / (tp * pp))), ""


def main() -> None:
    try:
        import planner.capacity_planner  # noqa: F401
    except ImportError:
        print("llm-d-planner is not installed: .venv/bin/pip install -e '.[bench]'")
        raise SystemExit(1) from None
    from importlib.metadata import version

    print(f"llm-d-planner {version('llm-d-planner')} vs servespec on tests/data/vllm_logs\n")
    print(f"{'log':62} {'attention':9} {'logged':>11} {'llm-d':>11} {'error':>8} {'servespec':>11} {'error':>8}")
    both: list[tuple[str, str, float, float]] = []
    missing: dict[str, list[str]] = {}
    for path in sorted(LOGS.glob("*.yaml")):
        data = YAML(typ="safe").load(path.read_text())
        ours = compare(path)
        if ours.skipped or not ours.observed:
            continue  # servespec does not answer it: the comparison is on the logs both can be scored on
        try:
            tokens, why = _planner_tokens(data)
        except Exception as err:  # the planner cannot take this config: listed with the reason, not fatal
            tokens, why = None, f"llm-d-planner raised {type(err).__name__}"
        if tokens is None:
            missing.setdefault(why, []).append(path.stem)
            continue
        theirs = (tokens - ours.observed) / ours.observed
        kind = attention_class(_facts(data))
        both.append((path.stem, kind, theirs, ours.error))
        print(
            f"{path.stem:62} {kind:9} {ours.observed:>11,} {tokens:>11,} {theirs:>+8.1%} "
            f"{ours.predicted:>11,} {ours.error:>+8.1%}"
        )
    print(f"\n{'attention':9} {'n':>4} {'llm-d median':>13} {'p90':>7} {'servespec median':>17} {'p90':>7}")
    groups = [(kind, [row for row in both if row[1] == kind]) for kind in sorted({row[1] for row in both})]
    groups.append(("all", both))
    groups.append(("016-076", [row for row in both if row[0].endswith("-llmd")]))  # llm-d's own campaign
    groups.append(("others", [row for row in both if not row[0].endswith("-llmd")]))  # out of its sample
    for kind, rows in groups:
        if not rows:
            continue
        llmd = sorted(abs(row[2]) for row in rows)
        ours_ = sorted(abs(row[3]) for row in rows)
        print(
            f"{kind:9} {len(rows):>4} {statistics.median(llmd):>13.1%} {_p90(llmd):>7.1%} "
            f"{statistics.median(ours_):>17.1%} {_p90(ours_):>7.1%}"
        )
    print("\nNot scored for llm-d (servespec answers them):")
    for why, names in missing.items():
        print(f"  {len(names):>3}  {why}: {', '.join(names)}")
    print(
        "\nCaveat: llm-d-planner's constants were calibrated on its own vLLM 0.19.0 H100 campaign (logs 016-076 "
        "here): in-sample for it there. Weights use servespec's parameter count (stand-in for the Hub metadata)."
    )


def _p90(errors: list[float]) -> float:
    import math

    return errors[max(math.ceil(0.9 * len(errors)) - 1, 0)]


if __name__ == "__main__":
    main()
