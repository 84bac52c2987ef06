"""Derive the ``post_kv_warmup`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_post_kv.py            # every catalogued release
    python scripts/catalog/vllm_post_kv.py 0.19.0     # only these

vLLM sizes the KV cache from ``gpu_memory_utilization × total`` minus what its profiling run measured (weights,
the activation peak, non-torch memory), allocates it, and only then warms the model up: the worker's
``compile_or_warm_up_model`` (V1: vllm/v1/worker/gpu_worker.py, V0: vllm/worker/worker.py; with the private
helpers of the same class it calls) captures the CUDA graphs (``capture_model``) and, in V1, re-runs the
sampler on ``min(max_num_seqs, max_num_batched_tokens)`` dummy requests (``_dummy_sampler_run``). What those
allocate must fit in what the budget left. The fact records, read by ``ast`` from the release's file (the
engine the release runs by default, its ``default_engine`` fact):

V0 releases before that method (0.6-0.7) allocate the cache and warm up in ``initialize_cache``.

- ``cuda_graphs``: the warm-up calls ``capture_model``;
- ``sampler``: the warm-up calls ``_dummy_sampler_run``;
- ``sized_after_warmup_option``: the option under which the release measures its KV blocks after the warm-up
  instead (0.34's ``enable_extensible_kv_cache``: the warm-up references it and the module calls
  ``measure_kv_cache_blocks``), so nothing it allocates falls outside the budget; None where there is none.

The script writes a second profiling fact from the same sdists, ``v0_chunked_prefill_above``: the
``max_model_len`` above which the V0 engine turns chunked prefill on by itself (vllm/engine/arg_utils.py
``use_long_context = max_model_len > N``, in ``create_engine_config`` 0.6-0.7 and ``_set_default_args_v0``
0.8-0.10); below it, with chunked prefill off, V0 profiles a whole ``max_model_len`` prompt. Releases without a V0
engine (0.11 on) get none; 0.4.x, which never turns it on by itself, is not catalogued.

Sources are the releases' sdists, unpacked by scripts/catalog/vllm_mxfp4.py's ``sdist`` (its wheel fallback for
0.15.x). A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm as builder  # scripts/catalog/vllm.py (url, fetch)
from catalog_io import put_fact, release_files, write_facts
from vllm_sampler import tree  # a release's source: its sdist, else its wheel's .py members

from servespec.engines.catalog import PostKvWarmup, SourcedInt

WORKERS = {"v1": ("vllm/v1/worker/gpu_worker.py", "Worker"), "v0": ("vllm/worker/worker.py", "Worker")}
ENTRY = "compile_or_warm_up_model"
V0_ENTRY = "initialize_cache"
"""V0 before the split into ``compile_or_warm_up_model`` (0.6-0.7): allocates the cache, then ``_warm_up_model``."""
EXTENSIBLE = "enable_extensible_kv_cache"


def _methods(tree: ast.Module, cls: str) -> dict[str, ast.FunctionDef]:
    found = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    if found is None:
        return {}
    return {n.name: n for n in found.body if isinstance(n, ast.FunctionDef)}


def _self_calls(function: ast.FunctionDef) -> list[str]:
    """Methods of the same object ``function`` calls (``self.name(...)``)."""
    return [
        n.func.attr for n in ast.walk(function)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
    ]  # fmt: skip


def _warmup(methods: dict[str, ast.FunctionDef]) -> list[ast.FunctionDef]:
    """``compile_or_warm_up_model`` (else V0's ``initialize_cache``) and the worker's own methods it reaches (V0's
    ``_warm_up_model``, 0.34's ``_compile_or_warm_up_model``), breadth first."""
    entry = methods.get(ENTRY) or methods.get(V0_ENTRY)
    if entry is None:
        return []
    seen, queue = [entry], [entry]
    while queue:
        for name in _self_calls(queue.pop(0)):
            method = methods.get(name)
            if method is not None and method not in seen:
                seen.append(method)
                queue.append(method)
    return seen


def _call(functions: list[ast.FunctionDef], name: str) -> ast.Call | None:
    """The first call of a method named ``name`` (any receiver) in the warm-up."""
    for function in functions:
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name:
                return node
    return None


def post_kv_warmup(version: str, src: Path, engine: str) -> dict[str, Any] | None:
    """``{cuda_graphs, sampler, sized_after_warmup_option, source}`` for the release's default engine core;
    None when its worker has no ``compile_or_warm_up_model``."""
    rel, cls = WORKERS[engine]
    path = src / rel
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = _warmup(_methods(tree, cls))
    if not functions:
        return None
    graphs = _call(functions, "capture_model")
    sampler = _call(functions, "_dummy_sampler_run")
    references = any(
        isinstance(n, ast.Attribute) and n.attr == EXTENSIBLE for function in functions for n in ast.walk(function)
    )
    measures = any(isinstance(n, ast.Call) and "measure_kv_cache_blocks" in ast.unparse(n.func) for n in ast.walk(tree))
    entry = functions[0].name
    sources = [f"{builder.url(version, rel, functions[0].lineno)} ({entry}: runs after the KV cache is allocated)"]
    if graphs is not None:
        sources.append(f"{builder.url(version, rel, graphs.lineno)} (capture_model)")
    if sampler is not None:
        sources.append(f"{builder.url(version, rel, sampler.lineno)} (_dummy_sampler_run)")
    return {
        "cuda_graphs": graphs is not None,
        "sampler": sampler is not None,
        "sized_after_warmup_option": EXTENSIBLE if references and measures else None,
        "source": "; ".join(sources),
    }


ARG_UTILS = "vllm/engine/arg_utils.py"


def v0_chunked_prefill_above(version: str, src: Path) -> dict[str, Any] | None:
    """``{value, source}``: N of ``use_long_context = max_model_len > N`` in the release's arg_utils.py; None where
    the release has no such default (no V0 engine, or V0 that never turns chunked prefill on by itself)."""
    path = src / ARG_UTILS
    if not path.is_file():
        return None
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Assign) or not any(
            isinstance(t, ast.Name) and t.id == "use_long_context" for t in node.targets
        ):
            continue
        test = node.value
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.ops[0], ast.Gt)
            and "max_model_len" in ast.unparse(test.left)
            and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, int)
        ):
            return {"value": test.comparators[0].value, "source": builder.url(version, ARG_UTILS, node.lineno)}
    return None


def main(argv: list[str]) -> int:
    failed = 0
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        engine = (facts.get("default_engine") or {}).get("value") or "v0"
        found = post_kv_warmup(data["version"], tree(data["version"]), engine)
        if found is None:
            print(f"{data['version']}: no {ENTRY} in the {engine} worker", file=sys.stderr)
            failed += 1
            continue
        put_fact(facts, "post_kv_warmup", found, PostKvWarmup)
        above = v0_chunked_prefill_above(data["version"], tree(data["version"]))
        put_fact(facts, "v0_chunked_prefill_above", above, SourcedInt)
        write_facts(path, data)
        print(f"{data['version']}: {found}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
