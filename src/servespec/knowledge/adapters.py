"""What servespec knows of each ``model.adapters`` entry: its PEFT ``adapter_config.json``; vLLM's LoRA slots.

The config is read, in order, from the adapter's host path when the controller may read it
(the same model roots as the model's: controller_roots.read_problem), from the local Hugging
Face cache at the adapter's revision, or from the Hub inside :func:`sources.hub_access` (the
same session, offline switch and token as the model's). Nothing of it is evaluated: the
fields servespec uses are checked for their type, the rest ignored.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servespec.knowledge.models import ModelFacts
from servespec.spec.fleet import DeploymentDoc

ADAPTER_CONFIG = "adapter_config.json"
"""PEFT's config file name (peft/utils/constants.py ``CONFIG_NAME``), read by vLLM's PEFTHelper.from_local_dir."""


@dataclass(frozen=True)
class AdapterConfig:
    """The fields of an ``adapter_config.json`` the rules read."""

    rank: int | None
    """The largest rank: ``r`` and every ``rank_pattern`` value (vLLM 0.33.0 lora/peft_helper.py validate_legal)."""
    base_model: str | None
    target_modules: tuple[str, ...] | str | None
    """A list of module names, or a regular expression (PEFT takes both); None when absent."""
    where: str
    """Where it was read: ``the host path``, ``the local Hugging Face cache``, ``the Hub``."""
    use_dora: bool = False
    modules_to_save: tuple[str, ...] = ()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def parse(config: dict[str, Any], where: str) -> AdapterConfig:
    """The fields of a parsed ``adapter_config.json`` (wrong-typed ones read as absent)."""
    ranks = [_int(config.get("r"))]
    pattern = config.get("rank_pattern")
    if isinstance(pattern, dict):
        ranks += [_int(value) for value in pattern.values()]
    found = [rank for rank in ranks if rank is not None]
    base = config.get("base_model_name_or_path")
    saved = config.get("modules_to_save")
    targets = config.get("target_modules")
    if isinstance(targets, list):
        modules: tuple[str, ...] | str | None = tuple(str(name) for name in targets if isinstance(name, str))
    else:
        modules = targets if isinstance(targets, str) else None
    return AdapterConfig(
        rank=max(found) if found else None,
        base_model=base if isinstance(base, str) and base else None,
        target_modules=modules,
        where=where,
        use_dora=config.get("use_dora") is True,
        modules_to_save=tuple(str(name) for name in saved) if isinstance(saved, list) else (),
    )


def _read(path: Path) -> dict[str, Any] | None:
    from servespec.knowledge.sources import _read_json

    with contextlib.suppress(OSError, ValueError, UnicodeDecodeError):
        return _read_json(path) if path.is_file() else None
    return None


def _local_config(deployment: DeploymentDoc, source: str) -> tuple[AdapterConfig | None, str]:
    from servespec.knowledge.controller_roots import read_problem

    if not source.startswith("/") or source.endswith(".gguf"):
        return None, ""  # a GGUF adapter has no adapter_config.json; a relative path is SEC004's
    refused = read_problem(source, deployment)
    if refused is None or refused:
        return None, refused or ""
    found = _read(Path(source) / ADAPTER_CONFIG)
    return (parse(found, "the host path"), "") if found is not None else (None, "")


def _cached_config(source: str, revision: str | None) -> AdapterConfig | None:
    from servespec.knowledge import sources

    repo = sources.cache_root() / ("models--" + source.replace("/", "--"))
    wanted = str(revision or "main")
    if ".." in wanted.split("/") or wanted.startswith("/"):
        return None
    sha = wanted.lower() if sources.SHA.match(wanted.lower()) else None
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if (repo / "refs" / wanted).is_file():
            sha = (repo / "refs" / wanted).read_text(encoding="utf-8").strip()
    if not sha or not sources.SHA.match(sha):
        return None
    found = _read(repo / "snapshots" / sha / ADAPTER_CONFIG)
    return parse(found, "the local Hugging Face cache") if found is not None else None


def adapter_config(deployment: DeploymentDoc, index: int) -> tuple[AdapterConfig | None, str]:
    """``model.adapters[index]``'s config, or None and why not ('' when no source had it and none was asked)."""
    from servespec import hostpaths
    from servespec.knowledge import hub, sources

    adapter = deployment.spec.model.adapters[index]
    source = str(adapter.source)
    if hostpaths.is_local_path(source):
        return _local_config(deployment, source)
    if not sources.REPO_ID.match(source) or "--" in source or ".." in source:
        return None, ""
    cached = _cached_config(source, adapter.revision)
    session = sources._HUB.get()
    if cached is not None or session is None:
        return cached, ""
    token = sources.hub_token(deployment)
    key = (f"{source}#{ADAPTER_CONFIG}", adapter.revision, token)
    if key not in session.answers:
        session.answers[key] = hub.fetch_json(source, adapter.revision, token, ADAPTER_CONFIG)
    answer = session.answers[key]
    if answer.config is None:
        return None, answer.problem
    return parse(answer.config, "the Hub"), ""


# --- vLLM's LoRA slots (reserved at start-up, before the KV cache is sized).

VLLM_LORA_LAYERS = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/layers/base_linear.py#L36-L80"
"""``create_lora_weights``: per wrapped linear layer and slice, ``lora_a_stacked`` (max_loras, 1, max_lora_rank,
input_size) and ``lora_b_stacked`` (max_loras, 1, output_size, max_lora_rank) in ``lora_dtype``, sized per
tensor-parallel shard (a column-parallel layer keeps its whole input, a row-parallel one its whole output)."""


def vllm_lora_slot_bytes(
    model: ModelFacts, max_loras: int, max_rank: int, tensor_parallel: int, element_bytes: float, fully_sharded: bool
) -> float:
    """Bytes per GPU of the LoRA A/B tensors vLLM allocates for ``max_loras`` slots of ``max_rank`` (every layer).

    The decoder's linear layers vLLM wraps for LoRA (vllm/lora/layers: ``MergedQKVParallelLinearWithLoRA``,
    ``RowParallelLinearWithLoRA``, ``MergedColumnParallelLinearWithLoRA``): qkv_proj (three slices), o_proj,
    gate_up_proj (two slices) and down_proj, per :data:`VLLM_LORA_LAYERS`. Per slot and layer, in elements:
    A of qkv 3·r·h, B of qkv r·(q+2kv)/tp; A of o_proj r·q/tp, B r·h; A of gate_up 2·r·h, B 2·r·I/tp; A of
    down r·I/tp, B r·h. ``fully_sharded_loras`` divides the column layers' A and the row layers' B by tp.
    A mixture-of-experts model is counted for its attention only (its experts' LoRA, where the
    release has it, is not). The logits and embedding LoRA tensors (vocabulary × rank) are not counted.
    """
    h = model.hidden_size
    q = model.attention_heads * model.head_dim
    kv = model.kv_heads * model.head_dim
    tp = max(tensor_parallel, 1)
    column_a = 1 / tp if fully_sharded else 1.0
    row_b = 1 / tp if fully_sharded else 1.0
    attention = 3 * h * column_a + (q + 2 * kv) / tp + q / tp + h * row_b
    intermediate = 0 if model.is_moe else (model.intermediate_size or 0)
    mlp = (2 * h * column_a + 2 * intermediate / tp + intermediate / tp + h * row_b) if intermediate else 0.0
    per_slot_layer = max_rank * (attention + mlp)
    return math.ceil(model.layers) * max_loras * per_slot_layer * element_bytes


# --- The speculative draft (model.speculative.draft): its facts, for its weights and KV cache in the plan.


def draft_facts(deployment: DeploymentDoc) -> ModelFacts | None:
    """The draft model's facts: its host folder when the controller may read it, the local Hugging Face cache at
    ``draft_revision``, or the built-in catalog; None when none has it (the plan then counts no draft)."""
    from servespec import hostpaths
    from servespec.knowledge import sources
    from servespec.knowledge.controller_roots import read_problem
    from servespec.knowledge.models import catalogued

    speculative = deployment.spec.model.speculative
    if speculative is None or speculative.draft is None:
        return None
    source = str(speculative.draft)
    if hostpaths.is_local_path(source):
        if not source.startswith("/") or read_problem(source, deployment) != "":
            return None
        found = sources.folder_facts(Path(source), source, "dir") if (Path(source) / "config.json").is_file() else None
        return found.facts if found is not None else None
    cached = sources.cache_snapshot(source, speculative.draft_revision)
    if cached is not None:
        return sources.folder_facts(cached[0], source, "cache", revision=cached[1]).facts
    return catalogued(source)
