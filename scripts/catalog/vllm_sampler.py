"""Derive the ``profile_sampler_triton_rows`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_sampler.py            # every catalogued release with a V1 sampler
    python scripts/catalog/vllm_sampler.py 0.17.0     # only these

The profiling run's sampler warm-up (``_dummy_sampler_run``: ``top_k = vocab - 1`` with a ``top_p``, for
``min(max_num_seqs, max_num_batched_tokens)`` dummy requests) applies top-k/top-p through
``apply_top_k_top_p`` in vllm/v1/sample/ops/topk_topp_sampler.py. Up to 0.16 that op sorts the float32 logits
over the whole vocabulary (values and int64 indices, then a scatter back); from 0.17.0 it calls a Triton kernel
(``apply_top_k_top_p_triton``) when the batch has at least N rows (``logits.shape[0] >= N``) and sorts only
below. The fact is N, read by ``ast`` from the release's file (0: the op always sorts). Sources are the
releases' sdists, unpacked by scripts/catalog/vllm_mxfp4.py's ``sdist`` (its wheel fallback for 0.15.x).

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm as builder  # scripts/catalog/vllm.py (url, fetch)
import vllm_mxfp4
from catalog_io import releases_dir

from servespec.engines.catalog import SourcedInt

OPS = "vllm/v1/sample/ops/topk_topp_sampler.py"


def _returns_triton(node: ast.If) -> bool:
    """``if <test>: return <...triton...>(...)`` whose test calls nothing (``HAS_TRITON``, ``logits.shape[0] >= N``):
    a branch taken by CUDA GPUs, not one under ``current_platform.is_cpu()``."""
    first = node.body[0] if node.body else None
    return (
        isinstance(first, ast.Return)
        and isinstance(first.value, ast.Call)
        and "triton" in ast.unparse(first.value.func)
        and not any(isinstance(n, ast.Call) for n in ast.walk(node.test))
    )


def triton_rows(version: str, src: Path) -> dict[str, Any] | None:
    """``{value, source}``: the rows from which ``apply_top_k_top_p`` runs Triton on a GPU (0: it always sorts);
    None when the release has no such op (no V1 sampler)."""
    path = src / OPS
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    function = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply_top_k_top_p"), None
    )
    if function is None:
        return None
    for node in function.body:
        if not isinstance(node, ast.If) or not _returns_triton(node):
            continue
        rows = 1  # ``if HAS_TRITON:`` alone (0.23+): Triton for every batch
        for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            bound = compare.comparators[0] if len(compare.comparators) == 1 else None
            if isinstance(compare.ops[0], ast.GtE) and isinstance(bound, ast.Constant) and isinstance(bound.value, int):
                rows = bound.value
        return {"value": rows, "source": builder.url(version, OPS, node.lineno)}
    return {"value": 0, "source": builder.url(version, OPS, function.lineno)}


def tree(version: str) -> Path | None:
    folder = vllm_mxfp4.sdist(version)
    if folder is not None:
        return folder / "src"
    return builder.fetch(version) / "src"  # the wheel's .py members (0.15.x: no sdist on PyPI)


def main(argv: list[str]) -> int:
    folder = releases_dir("vllm")
    wanted = set(argv)
    for path in sorted(folder.glob("*.json")):
        if path.name == "options.json" or (wanted and path.stem not in wanted):
            continue
        data = json.loads(path.read_text())
        facts = data.setdefault("facts", {})
        if "profile_sampler_sorts_vocab" not in facts:
            continue  # no V1 sampler warm-up read for the release: nothing to refine
        src = tree(data["version"])
        found = triton_rows(data["version"], src) if src is not None else None
        if found is None:
            print(f"{data['version']}: {OPS} not found", file=sys.stderr)
            continue
        SourcedInt.model_validate(found)
        facts["profile_sampler_triton_rows"] = found
        path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{data['version']}: triton from {found['value']} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
