"""Derive the ``pooling_models`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_pooling.py            # every catalogued release
    python scripts/catalog/vllm_pooling.py 0.11.0     # only these

How a release serves an embedding, reranker (score / classify) or reward model, read by ``ast`` and exact text
from its sdist (scripts/catalog/vllm_mxfp4.py's ``sdist``; the wheel's .py members for 0.15.x):

- ``drops_lm_head``: vllm/model_executor/models/adapters.py converts a ``*ForCausalLM`` into a pooling model
  (``as_embedding_model``, ``as_seq_cls_model`` / ``as_classification_model``, ``as_reward_model``) by a subclass that
  keeps no LM head: 0.6.5-0.17 build the model and then ``delattr(self, attr)`` for ``("lm_head",
  "logits_processor")`` (the tensor is freed before the loader measures the weights), later releases construct it
  under ``no_init_weights(..., targets=(LogitsProcessor, ParallelLMHead))``; the loader skips ``lm_head.*`` either
  way. The line cited is the ``delattr`` call or the ``targets=`` keyword.
- ``score_head_float32``: ``as_seq_cls_model``'s classification head is ``ReplicatedLinear(hidden_size,
  num_labels, params_dtype=torch.float32)`` (0.10.0-0.11.0) or ``params_dtype=model_config.head_dtype`` (0.11.1 on,
  float32 by default for pooling models); earlier releases build it in the model dtype. A reranker
  converted from its LM head (``method: from_2_way_softmax``) rebuilds the vocabulary-wide head only while loading and
  deletes it (``del model.lm_head``), so only the ``num_labels x hidden`` score stays.
- ``pooling_tasks``: the ``--task`` values that select the pooling runner, the ``TaskOption`` literal of the
  release's config (vllm/config.py, config/__init__.py or config/model.py) less ``auto``, ``generate``,
  ``transcription`` and ``draft`` (0.6.4-0.12.0; the option is gone from 0.13.0).
- ``suffix_defaults``: ``_SUFFIX_TO_DEFAULTS``, the architecture-name suffixes ``--runner auto`` / ``--convert
  auto`` resolve by, in order (``(suffix, runner, convert)``; 0.10.1 on). Earlier releases resolve by the model
  registry's own lists, which are not read (an architecture is then pooling only by an explicit ``--task``).
- ``generative_architectures``: the registry's generative-only architectures (vllm/model_executor/models/registry.py
  ``_TEXT_GENERATION_MODELS`` / ``_MULTIMODAL_MODELS``, in none of its pooling lists) whose names fall on a pooling
  suffix; ``_get_default_runner_type`` asks the registry before the suffixes, so these stay generative.
- ``v0_long_context_unchunked``: V0's rule that turns chunked prefill on above 32K tokens (arg_utils.py
  ``use_long_context``) excludes pooling models (``and model_config.runner_type != "pooling"``, 0.6.5-0.10.0), and
  an explicit ``--enable-chunked-prefill`` is refused for them ("Chunked prefill is not supported for pooling
  models"), so V0 profiles a pooling model with the whole ``max_model_len`` in one batch.
- ``v0_fallback``: the V1 engine refuses a pooling task and falls back to V0 (vllm/engine/arg_utils.py
  ``_is_v1_supported_oracle``: ``if model_config.task not in ["generate"]: _raise_or_fallback(...)``, 0.8.0-0.9.1).

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_sampler
from catalog_io import put_fact, release_files, write_facts

from servespec.engines.catalog import PoolingModels

ADAPTERS = "vllm/model_executor/models/adapters.py"
CONFIGS = ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
ARG_UTILS = "vllm/engine/arg_utils.py"
REGISTRY = "vllm/model_executor/models/registry.py"
GENERATIVE = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS")
POOLING = (
    "_EMBEDDING_MODELS", "_CROSS_ENCODER_MODELS", "_REWARD_MODELS", "_SEQUENCE_CLASSIFICATION_MODELS",
    "_TOKEN_CLASSIFICATION_MODELS", "_LATE_INTERACTION_MODELS",
)  # fmt: skip
NOT_POOLING = {"auto", "generate", "transcription", "draft"}


def _url(version: str, path: str, line: int) -> str:
    return f"https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def lm_head_drop(tree: ast.Module) -> int | None:
    """The line where the pooling conversion leaves the LM head out: a ``delattr`` inside a loop over a tuple naming
    ``"lm_head"``, or a ``targets=`` keyword naming ``ParallelLMHead``; None: neither."""
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and "lm_head" in _strings(node.iter):
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "delattr":
                    return call.lineno
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                names = {n.id for n in ast.walk(keyword.value) if isinstance(n, ast.Name)}
                if keyword.arg == "targets" and "ParallelLMHead" in names:
                    return keyword.value.lineno
    return None


def score_float32(tree: ast.Module) -> int | None:
    """The line of ``self.score = ReplicatedLinear(..., params_dtype=torch.float32, ...)`` (0.10.0-0.11.0) or
    ``params_dtype=...model_config.head_dtype`` (0.11.1 on: ``ModelConfig.head_dtype``, float32 for a pooling model
    unless ``--hf-overrides '{"head_dtype": "model"}'``); None: the model dtype."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        if not any(isinstance(t, ast.Attribute) and t.attr == "score" for t in node.targets):
            continue
        for keyword in node.value.keywords:
            text = ast.unparse(keyword.value)
            if keyword.arg == "params_dtype" and (text == "torch.float32" or text.endswith("model_config.head_dtype")):
                return node.lineno
    return None


def _assigned(tree: ast.Module, name: str) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def tasks(tree: ast.Module) -> tuple[list[str], int] | None:
    """The pooling ``--task`` values of the ``TaskOption`` literal and its line; None: no such literal."""
    value = _assigned(tree, "TaskOption")
    if value is None:
        return None
    return [s for s in _strings(value) if s not in NOT_POOLING and s != "Literal"], value.lineno


def suffixes(tree: ast.Module) -> tuple[list[list[str]], int] | None:
    """``_SUFFIX_TO_DEFAULTS`` as ``[suffix, runner, convert]`` rows in order, and its line; None: not there."""
    value = _assigned(tree, "_SUFFIX_TO_DEFAULTS")
    if not isinstance(value, ast.List):
        return None
    rows = []
    for item in value.elts:
        flat = _strings(item)
        if len(flat) != 3:
            raise ValueError(f"_SUFFIX_TO_DEFAULTS row not (suffix, (runner, convert)): {ast.unparse(item)}")
        rows.append(flat)
    return rows, value.lineno


def _keys(node: ast.expr) -> list[str]:
    """The string keys of a dict literal, those of ``**{...}`` literals inside it included."""
    if not isinstance(node, ast.Dict):
        return []
    found: list[str] = []
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None:
            found += _keys(value)
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.append(key.value)
    return found


def generative_exceptions(tree: ast.Module, rows: list[list[str]]) -> tuple[list[str], int] | None:
    """Architectures the registry lists as generative only (``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS``, in no
    pooling list) whose name ends with a suffix ``_SUFFIX_TO_DEFAULTS`` resolves to pooling (``ChatGLMModel``,
    ``AquilaModel``): ``_get_default_runner_type`` asks the registry first, so they stay generative. None: no
    generative list."""
    lists = {name: _assigned(tree, name) for name in (*GENERATIVE, *POOLING)}
    generative = lists.get("_TEXT_GENERATION_MODELS")
    if generative is None:
        return None
    pooled = {key for name in POOLING for key in _keys(lists[name]) if lists[name] is not None}
    found = []
    for name in GENERATIVE:
        for arch in _keys(lists[name]) if lists[name] is not None else []:
            row = next((r for r in rows if arch.endswith(r[0])), None)
            if row is not None and row[1] == "pooling" and arch not in pooled and arch not in found:
                found.append(arch)
    return sorted(found), generative.lineno


def v0_fallback(text: str) -> int | None:
    """The line of the V1 oracle's fallback for a non-generate task; None: the release has none."""
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if 'model_config.task not in ["generate"]' in line and "_raise_or_fallback" in "".join(
            lines[number : number + 2]
        ):
            return number
    return None


def v0_no_auto_chunking(text: str) -> int | None:
    """The line of the V0 long-context rule's ``model_config.runner_type != "pooling"`` condition: the rule that turns
    chunked prefill on above 32K (``use_long_context``) leaves a pooling model out, so its profiling batch stays the
    whole ``max_model_len``; None: no such condition."""
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if 'runner_type != "pooling"' not in line:
            continue
        window = "".join(lines[max(0, number - 8) : number + 2])
        if "use_sliding_window" in window and "self.enable_chunked_prefill = True" in window:
            return number
    return None


def _selection(version: str, src: Path, found: dict[str, Any], sources: list[str]) -> None:
    """Add how the release selects the pooling runner (its ``TaskOption``, ``_SUFFIX_TO_DEFAULTS`` and the registry's
    generative exceptions) to ``found``, citing each in ``sources``: the first config file that has either."""
    for path in CONFIGS:
        if not (src / path).is_file():
            continue
        config = ast.parse((src / path).read_text())
        task = tasks(config)
        if task is not None:
            found["pooling_tasks"] = task[0]
            sources.append(f"{_url(version, path, task[1])} (TaskOption)")
        suffix = suffixes(config)
        if suffix is not None:
            found["suffix_defaults"] = suffix[0]
            sources.append(f"{_url(version, path, suffix[1])} (_SUFFIX_TO_DEFAULTS)")
            registry = generative_exceptions(ast.parse((src / REGISTRY).read_text()), suffix[0])
            if registry is not None:
                found["generative_architectures"] = registry[0]
                sources.append(f"{_url(version, REGISTRY, registry[1])} (_TEXT_GENERATION_MODELS)")
        if task is not None or suffix is not None:
            return


def pooling(version: str, src: Path) -> dict[str, Any] | None:
    """The release's ``pooling_models`` fact; None where adapters.py is absent (before 0.6.5)."""
    adapters = src / ADAPTERS
    if not adapters.is_file():
        return None
    tree = ast.parse(adapters.read_text())
    drop = lm_head_drop(tree)
    sources = [
        f"{_url(version, ADAPTERS, drop)} (no lm_head)" if drop else f"{_url(version, ADAPTERS, 1)} (lm_head kept)"
    ]
    score = score_float32(tree)
    if score:
        sources.append(f"{_url(version, ADAPTERS, score)} (float32 score)")
    found: dict[str, Any] = {"drops_lm_head": drop is not None, "score_head_float32": score is not None}
    _selection(version, src, found, sources)
    arg_utils = (src / ARG_UTILS).read_text() if (src / ARG_UTILS).is_file() else ""
    fallback = v0_fallback(arg_utils)
    found["v0_fallback"] = fallback is not None
    if fallback:
        sources.append(f"{_url(version, ARG_UTILS, fallback)} (V0 fallback)")
    unchunked = v0_no_auto_chunking(arg_utils)
    found["v0_long_context_unchunked"] = unchunked is not None
    if unchunked:
        sources.append(f"{_url(version, ARG_UTILS, unchunked)} (V0 long context: no chunked prefill for pooling)")
    found["source"] = "; ".join(sources)
    return found


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        version = data["version"]
        found = pooling(version, vllm_sampler.tree(version))
        put_fact(facts, "pooling_models", found, PoolingModels)
        print(f"{version}: {found and {k: v for k, v in found.items() if k != 'source'}}", file=sys.stderr)
        write_facts(path, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
