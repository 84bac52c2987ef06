"""Derive the ``block_fp8_moe_workspace`` fact (the Triton MoE experts' persistent workspace) of every catalogued
vLLM release from its own source.

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

The same fact carries where the release's unquantized and per-tensor FP8 MoE run the same Triton experts (read only
where the conditions above hold, so the workspace is persistent and unchunked):

* ``unquantized_*``: fused_moe/oracle/unquantized.py. 0.18-0.19 ``select_unquantized_moe_backend`` takes Triton on
  CUDA unless ``VLLM_USE_FLASHINFER_MOE_FP16`` is 1; 0.20 on ``_get_priority_backends`` lists FlashInfer TRT-LLM and
  FlashInfer CUTLASS ahead of Triton (their ``_supports_current_device`` capabilities are recorded), and 0.23 on
  moves both behind Triton on the 9.x family;
* ``per_tensor_fp8_source``: quantization/fp8.py ``Fp8MoEMethod`` passes ``kFp8DynamicTensorSym`` activations unless
  ``activation_scheme`` is static and ``allow_vllm_cutlass=False``, ``TritonExperts._supports_quant_scheme`` lists
  ``(kFp8StaticTensorSym, kFp8DynamicTensorSym)`` and ``FlashInferExperts``' per-tensor FP8 is static activations
  from 9.0 only.

And where an MXFP4 MoE (gpt-oss) holds it (``mxfp4_*``): 0.19 on, fused_moe/oracle/mxfp4.py
``backend_to_kernel_cls`` lists a ``...Monolithic`` class first for TRITON (9.x's default) and FlashInfer TRT-LLM
(10.x's), and ``FusedMoEKernelMonolithicImpl`` (modular_kernel.py) takes no workspace: transient; MARLIN (8.x) returns
the modular ``MarlinExperts``, whose ``workspace_shapes`` must read ``(M * topk, max(N, K))`` and
``(M * topk * max(2 * N, K),)``: held. 0.18: quantization/mxfp4.py ``Mxfp4MoEMethod.is_monolithic`` names the
monolithic backends and ``apply`` runs Marlin through the modular kernel.

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
UNQUANTIZED = f"{FUSED}/oracle/unquantized.py"
FP8_METHOD = "vllm/model_executor/layers/quantization/fp8.py"
BF16_TRTLLM_FILES = (f"{FUSED}/experts/trtllm_bf16_moe.py",)
SHAPES = {"workspace1": "(M, topk, max(activation_out_dim, K))", "workspace2": "(M, topk, max(N, K))"}


def _first(src: Path, files: tuple[str, ...]) -> tuple[str, ast.Module] | None:
    for rel in files:
        module = srcast.parse(src, rel)
        if module is not None:
            return rel, module
    return None


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
    allocate = srcast.function(module, "_allocate_buffers")
    if allocate is None or not _calls(allocate, "get_simultaneous"):
        return 0
    callers = _calls(module, "_allocate_buffers")
    for call in callers:
        names = [a.id if isinstance(a, ast.Name) else None for a in call.args[2:4]]
        if names != ["M_full", "M_full"]:
            return 0
    return allocate.lineno if callers else 0


def _persistent(module: ast.Module) -> int:
    ensure = srcast.function(module, "_ensure_workspace_size")
    return ensure.lineno if ensure is not None and _calls(ensure, "empty") else 0


def _triton_shapes(module: ast.Module) -> int:
    """The line of ``TritonExperts.workspace_shapes`` where its assignments are :data:`SHAPES`; 0 otherwise."""
    cls = srcast.find_class(module, "TritonExperts")
    shapes = srcast.function(cls, "workspace_shapes") if cls is not None else None
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
    priority = srcast.function(module, "_get_priority_backends")
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
    scheme = srcast.function(module, "_supports_quant_scheme")
    for node in ast.walk(scheme) if scheme is not None else ():
        block = isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And)
        if block and "kFp8Static128BlockSym" in ast.unparse(node):
            return scheme.lineno if _capability_tests(node) == ["9.0"] else 0
    return 0


def _trtllm_blackwell_only(module: ast.Module) -> int:
    device = srcast.function(module, "_supports_current_device")
    return device.lineno if device is not None and _capability_tests(device) == ["10"] else 0


def _flashinfer_opt_in(oracle: ast.Module) -> int:
    """0.18-0.19: the line of ``select_unquantized_moe_backend`` where, with no priority list, CUDA takes FlashInfer
    only when ``VLLM_USE_FLASHINFER_MOE_FP16`` is on (envs.py: ``"0"`` by default) and Triton otherwise; 0
    otherwise."""
    select = srcast.function(oracle, "select_unquantized_moe_backend")
    if select is None or srcast.function(oracle, "_get_priority_backends") is not None:
        return 0
    text = ast.unparse(select)
    gated = "envs.VLLM_USE_FLASHINFER_MOE_FP16" in text and "UnquantizedMoeBackend.TRITON" in text
    return select.lineno if gated else 0


def _cuda_priority(oracle: ast.Module) -> tuple[int, list[str], list[str]]:
    """0.20 on: the line of ``_get_priority_backends``, the CUDA list's order (backend names) and the capability
    families under which an ``if`` moves both FlashInfer backends behind Triton (``_move_to_back``)."""
    priority = srcast.function(oracle, "_get_priority_backends")
    if priority is None:
        return 0, [], []
    order: list[str] = []
    families: list[str] = []
    for node in ast.walk(priority):
        if isinstance(node, ast.If) and "is_cuda" in ast.unparse(node.test) and not order:
            listed = next((n.value for n in node.body if isinstance(n, ast.Assign)), None)
            if isinstance(listed, ast.List):
                order = [ast.unparse(e).rsplit(".", 1)[-1] for e in listed.elts]
        if isinstance(node, ast.If):
            tests = _capability_tests(node.test)
            moved = [ast.unparse(c.args[1]).rsplit(".", 1)[-1] for c in _calls(node, "_move_to_back")]
            if tests and set(moved) == {"FLASHINFER_TRTLLM", "FLASHINFER_CUTLASS"}:
                families += tests
    return priority.lineno, order, families


def _device_tests(module: ast.Module, cls_name: str | None = None) -> tuple[int, list[str]]:
    scope: ast.AST | None = srcast.find_class(module, cls_name) if cls_name else module
    device = srcast.function(scope, "_supports_current_device") if scope is not None else None
    return (device.lineno, _capability_tests(device)) if device is not None else (0, [])


def _dynamic_tensor_key(module: ast.Module) -> int:
    """The line where ``Fp8MoEMethod`` (quantization/fp8.py) takes ``kFp8DynamicTensorSym`` activations for
    per-tensor weights unless ``activation_scheme == "static"``, and passes ``allow_vllm_cutlass=False``; 0
    otherwise."""
    cls = srcast.find_class(module, "Fp8MoEMethod")
    if cls is None:
        return 0
    text = ast.unparse(cls)
    if "allow_vllm_cutlass=False" not in text:
        return 0
    for node in ast.walk(cls):
        if isinstance(node, (ast.If, ast.IfExp)) and "activation_scheme == 'static'" in ast.unparse(node.test):
            body = node.body[0] if isinstance(node, ast.If) else node.body
            if "kFp8DynamicTensorSym" in ast.unparse(node) and "kFp8StaticTensorSym" in ast.unparse(body):
                return node.lineno
    return 0


def _scheme_function(module: ast.Module, cls_name: str) -> ast.FunctionDef | None:
    cls = srcast.find_class(module, cls_name)
    return srcast.function(cls, "_supports_quant_scheme") if cls is not None else None


def _triton_takes_dynamic_tensor(module: ast.Module) -> int:
    scheme = _scheme_function(module, "TritonExperts")
    text = ast.unparse(scheme) if scheme is not None else ""
    return scheme.lineno if scheme is not None and "(kFp8StaticTensorSym, kFp8DynamicTensorSym)" in text else 0


def _cutlass_per_tensor_static_only(module: ast.Module) -> int:
    """FlashInferExperts' per-tensor FP8 is ``(kFp8StaticTensorSym, kFp8StaticTensorSym)`` from 9.0 only, never
    dynamic activations; 0 otherwise."""
    scheme = _scheme_function(module, "FlashInferExperts")
    text = ast.unparse(scheme) if scheme is not None else ""
    ok = "(kFp8StaticTensorSym, kFp8StaticTensorSym)" in text and "DynamicTensor" not in text
    return scheme.lineno if scheme is not None and ok and "has_device_capability(90)" in text else 0


def per_tensor_fp8(version: str, src: Path) -> dict[str, Any] | None:
    """Per-tensor FP8 MoE (``Fp8MoEMethod``): dynamic activations go to Triton (FlashInfer CUTLASS takes static
    ones only, from 9.0; DeepGEMM block scales only; vLLM CUTLASS not allowed), static ones to FlashInfer CUTLASS
    from 9.0: ``{per_tensor_fp8_source}``, or None where any of it is not read."""
    method, triton, cutlass = srcast.parse(src, FP8_METHOD), _first(src, TRITON_FILES), _first(src, CUTLASS_FILES)
    if method is None or triton is None or cutlass is None:
        return None
    lines = {
        (FP8_METHOD, "Fp8MoEMethod: dynamic per-tensor activations unless activation_scheme is static"): (
            _dynamic_tensor_key(method)
        ),
        (triton[0], "TritonExperts: (kFp8StaticTensorSym, kFp8DynamicTensorSym)"): _triton_takes_dynamic_tensor(
            triton[1]
        ),
        (cutlass[0], "FlashInferExperts: per-tensor FP8 static activations only, 9.0 on"): (
            _cutlass_per_tensor_static_only(cutlass[1])
        ),
    }
    if not all(lines.values()):
        return None
    return {"per_tensor_fp8_source": "; ".join(f"{builder.url(version, r, n)} ({w})" for (r, w), n in lines.items())}


def unquantized_moe(version: str, src: Path) -> dict[str, Any] | None:
    """Where the release's unquantized MoE oracle (fused_moe/oracle/unquantized.py) runs the Triton experts on CUDA:
    ``{unquantized_flashinfer_opt_in, unquantized_flashinfer_capabilities, unquantized_triton_first_families,
    unquantized_source}``, or None where the oracle is not read."""
    oracle = srcast.parse(src, UNQUANTIZED)
    if oracle is None:
        return None
    opt_in = _flashinfer_opt_in(oracle)
    if opt_in:
        return {
            "unquantized_flashinfer_opt_in": True,
            "unquantized_fp16_env": True,
            "unquantized_source": builder.url(version, UNQUANTIZED, opt_in)
            + " (select_unquantized_moe_backend: Triton on CUDA unless VLLM_USE_FLASHINFER_MOE_FP16=1)",
        }
    line, order, families = _cuda_priority(oracle)
    cutlass, trtllm = _first(src, CUTLASS_FILES), _first(src, BF16_TRTLLM_FILES)
    if not line or cutlass is None or trtllm is None:
        return None
    ahead = order[: order.index("TRITON")] if "TRITON" in order else []
    if set(ahead) != {"FLASHINFER_TRTLLM", "FLASHINFER_CUTLASS"}:
        return None
    cutlass_line, cutlass_caps = _device_tests(cutlass[1], "FlashInferExperts")
    trtllm_line, trtllm_caps = _device_tests(trtllm[1])
    if not cutlass_caps or not trtllm_caps:
        return None
    capabilities = sorted(set(cutlass_caps + trtllm_caps), key=lambda c: tuple(int(p) for p in c.split(".")))
    source = "; ".join(
        [
            f"{builder.url(version, UNQUANTIZED, line)} (_get_priority_backends: FlashInfer TRT-LLM and CUTLASS "
            f"ahead of Triton on CUDA{', moved behind it on ' + '/'.join(families) + '.x' if families else ''})",
            f"{builder.url(version, cutlass[0], cutlass_line)} (FlashInferExperts._supports_current_device)",
            f"{builder.url(version, trtllm[0], trtllm_line)} (TrtLlmBf16Experts._supports_current_device)",
        ]
    )
    return {
        "unquantized_fp16_env": "VLLM_USE_FLASHINFER_MOE_FP16" in ast.unparse(oracle),
        "unquantized_flashinfer_opt_in": False,
        "unquantized_flashinfer_capabilities": capabilities,
        "unquantized_triton_first_families": families,
        "unquantized_source": source,
    }


MXFP4_ORACLE = f"{FUSED}/oracle/mxfp4.py"
MXFP4_METHOD = "vllm/model_executor/layers/quantization/mxfp4.py"
MARLIN_FILES = (f"{FUSED}/experts/marlin_moe.py", f"{FUSED}/fused_marlin_moe.py")
MARLIN_SHAPES = {"workspace1": "(M * topk, max(N, K))", "workspace2": "(M * topk * max(2 * N, K),)"}


def _mxfp4_name(member: str) -> str | None:
    """An ``Mxfp4MoeBackend``/``Mxfp4Backend`` member as the ``mxfp4_moe`` fact's backend name; None: not one the
    estimator picks by default."""
    if member in ("TRITON", "MARLIN"):
        return member.lower()
    if member.startswith("FLASHINFER_TRTLLM") or member in ("SM100_FI_MXFP4_BF16", "SM100_FI_MXFP4_MXFP8_TRTLLM"):
        return "flashinfer_trtllm"
    return None


def _marlin_shapes(src: Path) -> tuple[str, int] | None:
    """``MarlinExperts.workspace_shapes`` where its assignments are :data:`MARLIN_SHAPES`: (file, line)."""
    found = _first(src, MARLIN_FILES)
    cls = srcast.find_class(found[1], "MarlinExperts") if found else None
    shapes = srcast.function(cls, "workspace_shapes") if cls is not None else None
    if found is None or shapes is None:
        return None
    assigned = {
        t.id: ast.unparse(n.value)
        for n in ast.walk(shapes)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and t.id in MARLIN_SHAPES
    }
    return (found[0], shapes.lineno) if assigned == MARLIN_SHAPES else None


def _kernel_classes(oracle: ast.Module) -> tuple[int, dict[str, str]]:
    """0.19 on: the line of ``backend_to_kernel_cls`` and, per backend name, the first class it returns (the one
    tried first: "prefer Monolithic > Modular")."""
    func = srcast.function(oracle, "backend_to_kernel_cls")
    if func is None:
        return 0, {}
    first: dict[str, str] = {}
    for node in ast.walk(func):
        if not isinstance(node, ast.If):
            continue
        ret = next((n for n in node.body if isinstance(n, ast.Return)), None)
        if ret is None or not isinstance(ret.value, ast.List) or not ret.value.elts:
            continue
        head = ast.unparse(ret.value.elts[0])
        for attr in (n for n in ast.walk(node.test) if isinstance(n, ast.Attribute)):
            name = _mxfp4_name(attr.attr) if ast.unparse(attr.value) == "Mxfp4MoeBackend" else None
            if name is not None:
                first.setdefault(name, head)
    return func.lineno, first


def mxfp4_kernels(version: str, src: Path, modular: ast.Module) -> dict[str, Any] | None:
    """Which default MXFP4 MoE backends hold the modular kernel's workspace (``marlin``) and which run a monolithic
    kernel whose buffers are transient: ``{mxfp4_held_backends, mxfp4_transient_backends, mxfp4_source}``, or None
    where not read."""
    marlin = _marlin_shapes(src)
    oracle = srcast.parse(src, MXFP4_ORACLE)
    held: list[str] = []
    transient: list[str] = []
    if oracle is not None:
        monolithic = srcast.find_class(modular, "FusedMoEKernelMonolithicImpl")
        line, first = _kernel_classes(oracle)
        if not line or monolithic is None or _calls(monolithic, "_allocate_buffers"):
            return None
        for name, cls in sorted(first.items()):
            if cls.endswith("Monolithic"):
                transient.append(name)
            elif cls == "MarlinExperts" and marlin is not None:
                held.append(name)
        pairs = ", ".join(f"{n} -> {c}" for n, c in sorted(first.items()))
        where = (
            f"{builder.url(version, MXFP4_ORACLE, line)} (backend_to_kernel_cls: {pairs}; "
            "FusedMoEKernelMonolithicImpl takes no workspace)"
        )
    else:
        method = srcast.parse(src, MXFP4_METHOD)
        cls = srcast.find_class(method, "Mxfp4MoEMethod") if method is not None else None
        prop = srcast.function(cls, "is_monolithic") if cls is not None else None
        apply = srcast.function(cls, "apply") if cls is not None else None
        if prop is None or apply is None:
            return None
        listed = {
            a.attr for a in ast.walk(prop) if isinstance(a, ast.Attribute) and ast.unparse(a.value) == "Mxfp4Backend"
        }
        transient = sorted({n for m in listed if (n := _mxfp4_name(m)) is not None})
        modular_apply = "Mxfp4Backend.MARLIN" in ast.unparse(apply) and _calls(apply, "apply")
        if modular_apply and "MARLIN" not in listed and marlin is not None:
            held.append("marlin")
        where = (
            f"{builder.url(version, MXFP4_METHOD, prop.lineno)} (Mxfp4MoEMethod.is_monolithic: "
            f"{', '.join(sorted(listed))}); {builder.url(version, MXFP4_METHOD, apply.lineno)} (apply: Marlin through "
            "moe_kernel.apply)"
        )
    if not held and not transient:
        return None
    if marlin is not None:
        where += f"; {builder.url(version, marlin[0], marlin[1])} (MarlinExperts.workspace_shapes)"
    return {"mxfp4_held_backends": held, "mxfp4_transient_backends": transient, "mxfp4_source": where}


def block_fp8_moe_workspace(version: str, src: Path) -> dict[str, Any] | None:
    """``{deep_gemm_capabilities, source}`` (:class:`BlockFp8MoeWorkspace`), or None where any condition of the
    module docstring fails."""
    modular, workspace, oracle, cuda = (srcast.parse(src, rel) for rel in (MODULAR, WORKSPACE, ORACLE, CUDA))
    triton, cutlass, trtllm = _first(src, TRITON_FILES), _first(src, CUTLASS_FILES), _first(src, TRTLLM_FILES)
    if None in (modular, workspace, oracle, cuda, triton, cutlass, trtllm):
        return None
    assert modular and workspace and oracle and cuda and triton and cutlass and trtllm
    deep_gemm, deep_gemm_file = srcast.function(cuda, "support_deep_gemm"), CUDA
    if deep_gemm is None:
        utils = srcast.parse(src, DEEP_GEMM)
        deep_gemm, deep_gemm_file = (srcast.function(utils, "is_deep_gemm_supported") if utils else None), DEEP_GEMM
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
    return {
        "deep_gemm_capabilities": _capability_tests(deep_gemm),
        "source": source,
        **(unquantized_moe(version, src) or {}),
        **(per_tensor_fp8(version, src) or {}),
        **(mxfp4_kernels(version, src, modular) or {}),
    }


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
