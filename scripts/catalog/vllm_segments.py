"""Derive the ``v0_budget_counts_segments`` and ``v1_budget_counts_segments`` facts of every catalogued vLLM release
from its own source.

    python scripts/catalog/vllm_segments.py            # every catalogued release
    python scripts/catalog/vllm_segments.py 0.27.1     # only these

Whether the memory the worker subtracts before sizing the KV cache holds the weights as PyTorch's caching allocator's
segments (the drop in free device memory, knowledge/torch_allocator.py) or as the tensors' bytes
(``torch.cuda.max_memory_allocated``, which "Model loading took" logs in every release: platforms/cuda.py
``get_current_memory_usage``). Read by ``ast`` from V0's ``determine_num_available_blocks`` (vllm/worker/worker.py) and
V1's ``determine_available_memory`` (vllm/v1/worker/gpu_worker.py), and from ``memory_profiling`` where they call it:

- ``peak_memory = self.init_gpu_memory - free_gpu_memory`` (V0 up to 0.6.3.post1): the free-memory drop since the
  worker started, so segments (True);
- ``non_torch_allocations = total_allocated_bytes - torch_allocated_bytes`` (V0 0.6.4, V1 0.7.0-0.9.0.1): device
  memory in use less torch's allocated bytes, so the segments' unallocated rest counts too (True);
- ``memory_profiling`` with ``non_torch_increase_in_bytes = current_cuda_memory_bytes - baseline_memory_in_bytes -
  weights_memory_in_bytes - diff.torch_memory_in_bytes`` (0.6.5-0.6.6.post1): what the load reserved beyond the
  weights' bytes stays in the non-torch term (True);
- ``memory_profiling`` over ``MemorySnapshot``s whose ``non_torch_memory = cuda_memory - torch_memory`` with
  ``torch_memory`` torch's reserved memory and ``non_kv_cache_memory = non_torch + peak + weights_memory``
  (0.7.0-0.26.0): the segments' rest is torch's, neither non-torch nor weights (False);
- ``memory_profiling`` with ``total_consumed = before_create.free_memory - after_profile.free_memory`` (0.27.0 on):
  the whole free-memory drop (True).

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import srcast
import vllm as builder  # scripts/catalog/vllm.py (url)
from catalog_io import put_fact, release_files, write_facts
from vllm_sampler import V0_WORKER, V1_WORKER, tree

from servespec.engines.catalog import SourcedBool

PROFILING = ("vllm/utils/mem_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")
"""Where ``memory_profiling`` lives, newest layout first."""
SEGMENT_FORMS = (
    "self.init_gpu_memory - free_gpu_memory",
    "total_allocated_bytes - torch_allocated_bytes",
    "result.before_create.free_memory - result.after_profile.free_memory",
    "current_cuda_memory_bytes - baseline_memory_in_bytes",
)
"""Expressions (``ast.unparse``) of a budget that counts the load's segments."""
BYTES_FORM = "self.cuda_memory - self.torch_memory"
"""``MemorySnapshot.non_torch_memory``, the budget's non-torch term, where ``torch_memory`` is the reserved memory."""


def _form(version: str, rel: str, function: ast.FunctionDef) -> dict[str, Any] | None:
    """``{value: True, source}`` at the first binary expression of a segment-counting form in ``function``."""
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and ast.unparse(node) in SEGMENT_FORMS:
            return {"value": True, "source": builder.url(version, rel, node.lineno)}
    return None


def _profiling(version: str, src: Path) -> dict[str, Any] | None:
    for rel in PROFILING:
        path = src / rel
        if not path.is_file():
            continue
        functions = srcast.functions(ast.parse(path.read_text(encoding="utf-8")))
        function = functions.get("memory_profiling")
        if function is None:
            continue
        found = _form(version, rel, function)
        if found is not None:
            return found
        measure = functions.get("measure")
        if measure is None:
            return None
        reserved = any(
            isinstance(n, ast.Assign)
            and ast.unparse(n.targets[0]) == "self.torch_memory"
            and "memory_reserved" in ast.unparse(n.value)
            for n in ast.walk(measure)
        )
        for node in ast.walk(measure):
            if reserved and isinstance(node, ast.BinOp) and ast.unparse(node) == BYTES_FORM:
                return {"value": False, "source": builder.url(version, rel, node.lineno)}
        return None
    return None


def counts_segments(version: str, src: Path, worker: str, name: str) -> dict[str, Any] | None:
    """``{value, source}``: whether ``worker``'s ``name`` sizes the KV cache with the load's segments (True) or the
    weights' bytes (False); None: no such worker, or a form not listed above."""
    path = src / worker
    if not path.is_file():
        return None
    method = srcast.functions(ast.parse(path.read_text(encoding="utf-8"))).get(name)
    if method is None:
        return None
    found = _form(version, worker, method)
    if found is not None:
        return found
    if "memory_profiling" in ast.unparse(method):
        return _profiling(version, src)
    return None


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        version, src = data["version"], tree(data["version"])
        v0 = counts_segments(version, src, V0_WORKER, "determine_num_available_blocks")
        put_fact(facts, "v0_budget_counts_segments", v0, SourcedBool)
        v1 = counts_segments(version, src, V1_WORKER, "determine_available_memory")
        put_fact(facts, "v1_budget_counts_segments", v1, SourcedBool)
        print(f"{version}: V0 {v0 and v0['value']}, V1 {v1 and v1['value']}", file=sys.stderr)
        write_facts(path, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
