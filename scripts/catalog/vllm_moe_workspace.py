"""Derive the ``block_fp8_moe_workspace`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_moe_workspace.py            # every catalogued release
    python scripts/catalog/vllm_moe_workspace.py 0.27.1     # only these

The fact (engines/catalog.py ``BlockFp8MoeWorkspace``) is written where every one of these holds in the release's
sdist (read by ``ast`` from the files named; scripts/catalog/vllm_sampler.py ``tree``), and dropped otherwise:

* fused_moe/modular_kernel.py ``_allocate_buffers`` takes its buffers from the workspace manager
  (``current_workspace_manager().get_simultaneous``), and its caller passes ``M_full`` as the chunk size too (no
  chunking: 0.18 on; 0.13-0.17 chunk by ``VLLM_FUSED_MOE_CHUNK_SIZE``, before 0.13 the buffers are transient);
* vllm/v1/worker/workspace.py ``_ensure_workspace_size`` grows one persistent ``torch.empty``;
* ``TritonExperts.workspace_shapes`` (fused_moe.py, from 0.22 experts/triton_moe.py) returns
  ``workspace1 = (M, topk, max(activation_out_dim, K))`` and ``workspace2 = (M, topk, max(N, K))``;
* the fp8 oracle (fused_moe/oracle/fp8.py) moves Triton to the front on Hopper (``is_device_capability(90)``) for
  block FP8 unless ``ep_size > 1``, FlashInfer CUTLASS takes block FP8 on ``is_device_capability(90)`` only, and
  FlashInfer TRT-LLM's FP8 experts need ``is_device_capability_family(100)``;
* ``deep_gemm_capabilities``: the capabilities ``CudaPlatform.support_deep_gemm`` (platforms/cuda.py) names, or
  before it (0.18) ``is_deep_gemm_supported`` (utils/deep_gemm.py).

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm as builder  # scripts/catalog/vllm.py (url)
from catalog_io import put_fact, release_files, write_facts
from vllm_sampler import tree

from servespec.engines.catalog import BlockFp8MoeWorkspace

FUSED = "vllm/model_executor/layers/fused_moe"
MODULAR = f"{FUSED}/modular_kernel.py"
WORKSPACE = "vllm/v1/worker/workspace.py"
ORACLE = f"{FUSED}/oracle/fp8.py"
CUDA = "vllm/platforms/cuda.py"
DEEP_GEMM = "vllm/utils/deep_gemm.py"
TRITON_FILES = (f"{FUSED}/experts/triton_moe.py", f"{FUSED}/fused_moe.py")
CUTLASS_FILES = (f"{FUSED}/experts/flashinfer_cutlass_moe.py", f"{FUSED}/flashinfer_cutlass_moe.py")
TRTLLM_FILES = (f"{FUSED}/experts/trtllm_fp8_moe.py", f"{FUSED}/trtllm_fp8_moe.py")
SHAPES = {"workspace1": "(M, topk, max(activation_out_dim, K))", "workspace2": "(M, topk, max(N, K))"}


def _parse(src: Path, rel: str) -> ast.Module | None:
    path = src / rel
    return ast.parse(path.read_text()) if path.is_file() else None


def _first(src: Path, files: tuple[str, ...]) -> tuple[str, ast.Module] | None:
    for rel in files:
        module = _parse(src, rel)
        if module is not None:
            return rel, module
    return None


def _function(node: ast.AST, name: str) -> ast.FunctionDef | None:
    return next((n for n in ast.walk(node) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _class(module: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in ast.walk(module) if isinstance(n, ast.ClassDef) and n.name == name), None)


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    """Calls in ``node`` of ``name``, as a method (``x.name(...)``) or a plain function."""
    return [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr == name)
            or (isinstance(n.func, ast.Name) and n.func.id == name)
        )
    ]


def _unchunked_manager(module: ast.Module) -> int:
    """The line of ``_allocate_buffers`` where it takes the workspace manager's buffers and every caller passes
    ``M_full`` as ``M_chunk`` (its third and fourth arguments); 0 otherwise."""
    allocate = _function(module, "_allocate_buffers")
    if allocate is None or not _calls(allocate, "get_simultaneous"):
        return 0
    callers = _calls(module, "_allocate_buffers")
    for call in callers:
        names = [a.id if isinstance(a, ast.Name) else None for a in call.args[2:4]]
        if names != ["M_full", "M_full"]:
            return 0
    return allocate.lineno if callers else 0


def _persistent(module: ast.Module) -> int:
    ensure = _function(module, "_ensure_workspace_size")
    return ensure.lineno if ensure is not None and _calls(ensure, "empty") else 0


def _triton_shapes(module: ast.Module) -> int:
    """The line of ``TritonExperts.workspace_shapes`` where its assignments are :data:`SHAPES`; 0 otherwise."""
    cls = _class(module, "TritonExperts")
    shapes = _function(cls, "workspace_shapes") if cls is not None else None
    if shapes is None:
        return 0
    found = {
        t.id: ast.unparse(n.value)
        for n in ast.walk(shapes)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and t.id in SHAPES
    }
    return shapes.lineno if found == SHAPES else 0


def _capability_tests(node: ast.AST) -> list[str]:
    """``is_device_capability(90)`` as ``"9.0"``, ``is_device_capability_family(100)`` as ``"10"``, in order."""
    found = []
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or not call.args:
            continue
        arg = call.args[0]
        if not isinstance(arg, ast.Constant) or not isinstance(arg.value, int):
            continue
        if call.func.attr == "is_device_capability":
            found.append(f"{arg.value // 10}.{arg.value % 10}")
        elif call.func.attr == "is_device_capability_family":
            found.append(str(arg.value // 10))
    return found


def _hopper_prefers_triton(module: ast.Module) -> int:
    """The line of the ``if`` in ``_get_priority_backends`` that tests ``is_device_capability(90)`` and moves
    ``Fp8MoeBackend.TRITON`` to the front unless ``ep_size > 1``; 0 otherwise."""
    priority = _function(module, "_get_priority_backends")
    for node in ast.walk(priority) if priority is not None else ():
        if isinstance(node, ast.If) and _capability_tests(node.test) == ["9.0"]:
            inner = next((n for n in node.body if isinstance(n, ast.If)), None)
            moved = [ast.unparse(c.args[1]) for c in _calls(inner, "_move_to_front")] if inner else []
            if inner is not None and "ep_size" in ast.unparse(inner.test) and moved[-1:] == ["Fp8MoeBackend.TRITON"]:
                return node.lineno
    return 0


def _block_fp8_cutlass_hopper_only(module: ast.Module) -> int:
    """The line of FlashInfer CUTLASS's ``_supports_quant_scheme`` where block FP8 is tested with
    ``is_device_capability(90)`` alone; 0 otherwise."""
    scheme = _function(module, "_supports_quant_scheme")
    for node in ast.walk(scheme) if scheme is not None else ():
        block = isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And)
        if block and "kFp8Static128BlockSym" in ast.unparse(node):
            return scheme.lineno if _capability_tests(node) == ["9.0"] else 0
    return 0


def _trtllm_blackwell_only(module: ast.Module) -> int:
    device = _function(module, "_supports_current_device")
    return device.lineno if device is not None and _capability_tests(device) == ["10"] else 0


def block_fp8_moe_workspace(version: str, src: Path) -> dict[str, Any] | None:
    """``{deep_gemm_capabilities, source}`` (:class:`BlockFp8MoeWorkspace`), or None where any condition of the
    module docstring fails."""
    modular, workspace, oracle, cuda = (_parse(src, rel) for rel in (MODULAR, WORKSPACE, ORACLE, CUDA))
    triton, cutlass, trtllm = _first(src, TRITON_FILES), _first(src, CUTLASS_FILES), _first(src, TRTLLM_FILES)
    if None in (modular, workspace, oracle, cuda, triton, cutlass, trtllm):
        return None
    assert modular and workspace and oracle and cuda and triton and cutlass and trtllm
    deep_gemm, deep_gemm_file = _function(cuda, "support_deep_gemm"), CUDA
    if deep_gemm is None:
        utils = _parse(src, DEEP_GEMM)
        deep_gemm, deep_gemm_file = (_function(utils, "is_deep_gemm_supported") if utils else None), DEEP_GEMM
    lines = {
        (MODULAR, "_allocate_buffers: the workspace manager's buffers, M_chunk = M_full"): _unchunked_manager(modular),
        (WORKSPACE, "_ensure_workspace_size: one persistent torch.empty"): _persistent(workspace),
        (triton[0], "TritonExperts.workspace_shapes"): _triton_shapes(triton[1]),
        (ORACLE, "_get_priority_backends: Triton first on Hopper without EP"): _hopper_prefers_triton(oracle),
        (cutlass[0], "FlashInfer CUTLASS: block FP8 on 9.0 only"): _block_fp8_cutlass_hopper_only(cutlass[1]),
        (trtllm[0], "FlashInfer TRT-LLM FP8 experts: Blackwell 10.x only"): _trtllm_blackwell_only(trtllm[1]),
        (deep_gemm_file, "DeepGEMM's capabilities"): deep_gemm.lineno if deep_gemm is not None else 0,
    }
    if not all(lines.values()) or deep_gemm is None:
        return None
    source = "; ".join(f"{builder.url(version, rel, line)} ({what})" for (rel, what), line in lines.items())
    return {"deep_gemm_capabilities": _capability_tests(deep_gemm), "source": source}


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        version = data["version"]
        found = block_fp8_moe_workspace(version, tree(version))
        put_fact(facts, "block_fp8_moe_workspace", found, BlockFp8MoeWorkspace)
        print(f"{version}: block-FP8 MoE workspace {'read' if found else 'none'}", file=sys.stderr)
        write_facts(path, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
