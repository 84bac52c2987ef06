"""Derive the ``mxfp4_moe`` release fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_mxfp4.py            # every catalogued release
    python scripts/catalog/vllm_mxfp4.py 0.14.1     # only these

The catalog builder (vllm.py) reads releases from their wheels (~400 MB each); this fact is read
from the sdists instead: for each release, the sdist from PyPI's simple index
(``https://pypi.org/simple/vllm/``, sha256 checked) is unpacked into
``~/.cache/servespec/catalog-src/vllm-sdist/V/`` (``vllm/**/*.py`` under ``src/``; requirements,
CMakeLists.txt and cmake/ under ``build/``). A release PyPI has no sdist for (0.15.0, 0.15.1) is read
from its wheel through vllm.py's ``fetch`` (``vllm/third_party/triton_kernels`` and METADATA then
tell what the build ships). Releases without an ``mxfp4`` quantization method (the
``quantization_methods`` fact, itself read from each release's ``QUANTIZATION_METHODS``) get
``supported: false``. Everything else is read by ``ast`` from the files cited:

- padding per backend: the ``if``/``elif`` chain of ``Mxfp4MoEMethod.create_weights`` (0.10.1-0.18)
  or of ``mxfp4_round_up_hidden_size_and_intermediate_size`` (fused_moe/oracle/mxfp4.py, 0.19+):
  each branch's ``round_up(hidden_size, N)`` / ``round_up(intermediate_size..., N)`` (the XPU
  sub-branch skipped: CUDA only); the final ``else`` is the CUDA Triton path;
- ``keeps_loaded_scales`` (Triton): the branch that stores ``w13_precision_config`` (the swizzled
  scales) neither deletes nor replaces ``w13_weight_scale``;
- the default backend per compute capability: Triton's capability gate (below 9.0: Marlin), whether
  the build bundles ``triton_kernels`` (cmake/external_projects/triton_kernels.cmake, or the wheel's
  ``vllm/third_party/triton_kernels``; else Hopper falls back to Marlin), whether the CUDA
  requirements pin ``flashinfer-python`` and the selection picks FlashInfer's BF16 MXFP4 MoE on SM100
  without an environment variable.

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm as builder  # scripts/catalog/vllm.py (its url/vkey/fetch helpers)
from catalog_io import releases_dir

from servespec.engines.catalog import Mxfp4Moe

SDISTS = builder.CACHE.parent / "vllm-sdist"
INDEX = "https://pypi.org/simple/vllm/"
QUANT = "vllm/model_executor/layers/quantization/mxfp4.py"
ORACLE = "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py"
SELECTION_FILES = (
    QUANT, ORACLE, "vllm/model_executor/layers/fused_moe/gpt_oss_triton_kernels_moe.py",
    "vllm/model_executor/layers/fused_moe/experts/gpt_oss_triton_kernels_moe.py",
)  # fmt: skip


# --- sources ----------------------------------------------------------------------------------


def _index() -> str:
    path = SDISTS / "index.html"
    if not path.is_file():
        SDISTS.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(INDEX, timeout=120) as response:
            path.write_bytes(response.read())
    return path.read_text()


def sdist(version: str) -> Path | None:
    """The release's unpacked sdist (``src/`` and ``build/``), downloading it once; None: PyPI has none."""
    folder = SDISTS / version
    if (folder / "artifact.json").is_file():
        return folder
    found = re.search(rf'href="([^"#]*/vllm-{re.escape(version)}\.tar\.gz)#sha256=([0-9a-f]+)"', _index())
    if not found:
        return None
    archive = SDISTS / f"vllm-{version}.tar.gz"
    with urllib.request.urlopen(found.group(1), timeout=600) as response:
        archive.write_bytes(response.read())
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != found.group(2):
        archive.unlink()
        raise RuntimeError(f"{version}: sdist sha256 {digest} is not the index's {found.group(2)}")
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            rel = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not member.isfile() or ".." in rel.split("/"):
                continue
            keep_src = rel.startswith("vllm/") and rel.endswith(".py")
            keep_build = rel.startswith(("requirements", "cmake/")) or rel in ("CMakeLists.txt", "setup.py")
            if keep_src or keep_build:
                target = folder / ("src" if keep_src else "build") / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                handle = tar.extractfile(member)
                if handle is not None:
                    target.write_bytes(handle.read())
    meta = {"artifact": archive.name, "sha256": digest}
    (folder / "artifact.json").write_text(json.dumps(meta))
    archive.unlink()
    return folder


def _parse(path: Path) -> ast.Module | None:
    return ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else None


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    return [
        n for n in ast.walk(node) if isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Name) and n.func.id == name)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == name)
        )
    ]  # fmt: skip


def _function(tree: ast.Module, name: str, cls: str | None = None) -> ast.FunctionDef | None:
    scope: list[ast.stmt] = tree.body
    if cls is not None:
        found = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if found is None:
            return None
        scope = found.body
    return next((n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name), None)


# --- padding ----------------------------------------------------------------------------------


def canonical(member: str) -> str:
    """A backend enum member (or the 0.10.1 condition standing for one) as the fact names it."""
    if "MARLIN" in member:
        return "marlin"
    if "CUTLASS" in member or member.startswith("SM90_FI"):
        return "flashinfer_cutlass"
    if "TRTLLM" in member or member.startswith("SM100_FI") or member == "FLASHINFER":
        return "flashinfer_trtllm"
    if "TRITON" in member:
        return "triton"
    if member in ("CK", "ROCM") or member.startswith("AITER"):
        return "rocm"
    return member.lower()


def _members(test: ast.expr, tuples: dict[str, list[str]]) -> list[str]:
    """The backends a branch's test names: enum members, module-level tuples of them, or the 0.10.1 predicates."""
    out: list[str] = []
    for n in ast.walk(test):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id.startswith("Mxfp4"):
            out.append(n.attr)
        elif isinstance(n, ast.Name) and n.id in tuples:
            out += tuples[n.id]
        elif isinstance(n, ast.Attribute) and n.attr == "use_marlin":
            out.append("MARLIN")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "should_use_flashinfer_mxfp4":
            out.append("FLASHINFER")
        elif isinstance(n, ast.Attribute) and n.attr == "is_rocm":
            out.append("ROCM")
    return out


def _module_tuples(tree: ast.Module) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Tuple | ast.List):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [e.attr for e in node.value.elts if isinstance(e, ast.Attribute)]
            for target in targets:
                if isinstance(target, ast.Name) and names:
                    out[target.id] = names
    return out


def _roundings(body: list[ast.stmt]) -> dict[str, int]:
    """``hidden``/``intermediate`` to the constant multiple a branch rounds it up to (CUDA: XPU branches skipped)."""
    out: dict[str, int] = {}
    for stmt in body:
        if isinstance(stmt, ast.If) and _calls(stmt.test, "is_xpu"):
            out.update(_roundings(stmt.orelse))
            continue
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            call = node.value
            if not (isinstance(call.func, ast.Name) and call.func.id == "round_up" and len(call.args) == 2):
                continue
            if not (isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, int)):
                continue  # ROCm's get_padding_alignment(): not modelled
            target = node.targets[0]
            name = target.id if isinstance(target, ast.Name) else ""
            kind = "intermediate" if "intermediate" in name else "hidden" if "hidden" in name else None
            if kind:
                out.setdefault(kind, call.args[1].value)
    return out


def _padding_chain(src: Path) -> tuple[str, ast.If, dict[str, list[str]]] | None:
    """The file and the ``if`` chain that pads the expert sizes per backend."""
    for rel, func, cls in ((QUANT, "create_weights", "Mxfp4MoEMethod"),
                           (ORACLE, "mxfp4_round_up_hidden_size_and_intermediate_size", None)):  # fmt: skip
        tree = _parse(src / rel)
        function = _function(tree, func, cls) if tree else None
        if tree is None or function is None:
            continue
        for stmt in function.body:
            if isinstance(stmt, ast.If) and _calls(stmt, "round_up"):
                return rel, stmt, _module_tuples(tree)
    return None


def _size(block: list[ast.stmt]) -> int:
    return sum(1 for s in block for _ in ast.walk(s))


def _innermost_branch(tree: ast.Module, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The smallest ``if`` body or ``else`` block that holds ``stmt``."""
    blocks = [
        block for node in ast.walk(tree) if isinstance(node, ast.If) for block in (node.body, node.orelse)
        if any(stmt in list(ast.walk(s)) for s in block)
    ]  # fmt: skip
    return min(blocks, key=_size) if blocks else None


def keeps_loaded_scales(src: Path) -> tuple[bool, int] | None:
    """Whether the Triton branch leaves ``w13_weight_scale`` in place when it stores the swizzled
    scales in ``w13_precision_config``; with the line of that store."""
    tree = _parse(src / QUANT)
    if tree is None:
        return None
    store = next(
        (
            n for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == "w13_precision_config" for t in n.targets)
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)  # __init__'s placeholder
        ),
        None,
    )  # fmt: skip
    if store is None:
        return None
    branch = _innermost_branch(tree, store)
    if branch is None:
        return None

    def touches(node: ast.AST) -> bool:
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "w13_weight_scale"
            and isinstance(node.ctx, ast.Store | ast.Del)
        ):
            return True
        return isinstance(node, ast.Call) and any(
            isinstance(a, ast.Constant) and a.value == "w13_weight_scale" for a in node.args
        )

    kept = not any(touches(n) for s in branch for n in ast.walk(s))
    return kept, store.lineno


def _float32_bias(block: list[ast.stmt]) -> int | None:
    """The line of ``<...w13_bias...>.to(torch.float32)`` in a block."""
    for stmt in block:
        for n in ast.walk(stmt):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "to" and n.args):
                continue
            arg = n.args[0]
            if (
                isinstance(arg, ast.Attribute)
                and arg.attr == "float32"
                and any(
                    isinstance(x, ast.Name | ast.Attribute)
                    and "w13_bias" in (getattr(x, "id", "") or getattr(x, "attr", ""))
                    for x in ast.walk(n.func.value)
                )
            ):
                return n.lineno
    return None


def _names_triton(test: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr == "TRITON" and isinstance(n.value, ast.Name))
        or (isinstance(n, ast.Name) and n.id == "TRITON_BACKENDS")
        for n in ast.walk(test)
    )


def bias_float32(version: str, src: Path) -> str | None:
    """Where the Triton path turns the experts' bf16 biases into float32: in the quantization file's branch that
    stores the swizzled scales (0.10.1-0.18), or in the oracle's branch for the Triton backends (0.19+)."""
    tree = _parse(src / QUANT)
    store = next(
        (
            n for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == "w13_precision_config" for t in n.targets)
        ),
        None,
    ) if tree else None  # fmt: skip
    branch = _innermost_branch(tree, store) if tree and store else None
    line = _float32_bias(branch) if branch else None
    if line:
        return builder.url(version, QUANT, line)
    oracle = _parse(src / ORACLE)
    for node in ast.walk(oracle) if oracle else ():
        if isinstance(node, ast.If) and _names_triton(node.test):
            line = _float32_bias(node.body)
            if line:
                return builder.url(version, ORACLE, line)
    return None


def backends(version: str, src: Path) -> dict[str, dict[str, Any]]:
    found = _padding_chain(src)
    if found is None:
        raise RuntimeError(f"{version}: no MXFP4 padding chain found")
    rel, chain, tuples = found
    scales = keeps_loaded_scales(src)
    bias = bias_float32(version, src)
    out: dict[str, dict[str, Any]] = {}
    node: ast.If | None = chain
    while node is not None:
        branches: list[tuple[list[str], list[ast.stmt], int]] = [(_members(node.test, tuples), node.body, node.lineno)]
        following = node.orelse
        node = following[0] if len(following) == 1 and isinstance(following[0], ast.If) else None
        if node is None and following:
            branches.append((["TRITON"], following, following[0].lineno))  # the CUDA default: Triton
        for members, body, line in branches:
            rounding = _roundings(body)
            if "intermediate" not in rounding:
                continue
            for name in dict.fromkeys(canonical(m) for m in members):
                if name in out:
                    continue
                entry: dict[str, Any] = {
                    "hidden_multiple": rounding.get("hidden", 1),
                    "intermediate_multiple": rounding["intermediate"],
                    "source": builder.url(version, rel, line),
                }
                if name == "triton" and scales is not None:
                    entry["keeps_loaded_scales"] = scales[0]
                    entry["source"] += f"; {builder.url(version, QUANT, scales[1])} (swizzled scales stored"
                    entry["source"] += (
                        ", w13_weight_scale left in place)" if scales[0] else ", w13_weight_scale replaced)"
                    )
                if name == "triton" and bias:
                    entry["bias_float32"] = True
                    entry["source"] += f"; {bias} (biases to float32)"
                out[name] = entry
    return out


# --- backend per capability ---------------------------------------------------------------------


def _is_nine(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value == 9) or (
        isinstance(node, ast.Tuple) and [getattr(e, "value", None) for e in node.elts] == [9, 0]
    )


def _triton_gate(version: str, src: Path) -> str | None:
    """Where the release keeps Triton off GPUs below compute capability 9.0: ``has_device_capability(90)``,
    ``get_device_capability()[0] < 9`` or ``(9, 0) <= capability``."""
    for rel in SELECTION_FILES:
        tree = _parse(src / rel)
        for n in ast.walk(tree) if tree else ():
            capability_90 = (
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "has_device_capability"
                and bool(n.args) and isinstance(n.args[0], ast.Constant) and n.args[0].value == 90
            )  # fmt: skip
            if capability_90 or (isinstance(n, ast.Compare) and any(_is_nine(c) for c in [n.left, *n.comparators])):
                return builder.url(version, rel, n.lineno)
    return None


def _ships_triton_kernels(version: str, folder: Path, src: Path) -> str | None:
    cmake = folder / "build/cmake/external_projects/triton_kernels.cmake"
    if cmake.is_file():
        return builder.url(version, "cmake/external_projects/triton_kernels.cmake")
    if (src / "vllm/third_party/triton_kernels").is_dir():
        where = builder.url(version, "cmake/external_projects/triton_kernels.cmake")
        return f"{where} (the wheel holds vllm/third_party/triton_kernels)"
    return None


def _ships_flashinfer(version: str, folder: Path, src: Path) -> str | None:
    req = folder / "build/requirements/cuda.txt"
    if req.is_file():
        for number, line in enumerate(req.read_text().splitlines(), 1):
            if line.startswith("flashinfer-python"):
                return builder.url(version, "requirements/cuda.txt", number)
        return None
    for meta in src.glob("vllm-*.dist-info/METADATA"):
        for line in meta.read_text().splitlines():
            if line.startswith("Requires-Dist: flashinfer-python") and "extra ==" not in line:
                return f"{builder.url(version, 'requirements/cuda.txt')} (wheel METADATA: {line.split(': ', 1)[1]})"
    return None


def _uses_env(node: ast.AST) -> bool:
    return any(
        isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "envs" for a in ast.walk(node)
    )


def _sm100_in_method(version: str, tree: ast.Module) -> str | None:
    """0.10.1: ``_should_use_flashinfer_mxfp4_bf16``; 0.10.2-0.18: ``elif <SM100> and has_flashinfer(): return
    SM100_FI_MXFP4_BF16`` with no environment variable in the test."""
    f = _function(tree, "_should_use_flashinfer_mxfp4_bf16")
    if f is not None:
        calls = [c for c in _calls(f, "is_device_capability") if c.args and getattr(c.args[0], "value", None) == 100]
        return builder.url(version, QUANT, calls[0].lineno) if calls else None
    for n in ast.walk(tree):
        if not (isinstance(n, ast.If) and _calls(n.test, "has_flashinfer")) or _uses_env(n.test):
            continue
        returns = [s for s in n.body if isinstance(s, ast.Return) and isinstance(s.value, ast.Attribute)]
        if any(isinstance(r.value, ast.Attribute) and r.value.attr == "SM100_FI_MXFP4_BF16" for r in returns):
            return builder.url(version, QUANT, n.lineno)
    return None


def _sm100_in_oracle(version: str, tree: ast.Module) -> str | None:
    """0.19+: the priority list (``_get_priority_backends*``) starts with FlashInfer TRT-LLM BF16."""
    for f in tree.body:
        if not (isinstance(f, ast.FunctionDef) and f.name.startswith("_get_priority_backends")):
            continue
        lists = [n for n in ast.walk(f) if isinstance(n, ast.List) and n.elts and isinstance(n.elts[0], ast.Attribute)]
        if (
            lists
            and isinstance(lists[0].elts[0], ast.Attribute)
            and lists[0].elts[0].attr == "FLASHINFER_TRTLLM_MXFP4_BF16"
        ):
            return builder.url(version, ORACLE, lists[0].lineno)
    return None


def _sm100_flashinfer_default(version: str, src: Path) -> str | None:
    """Where the selection picks FlashInfer's BF16 MXFP4 MoE on SM100 without an environment variable."""
    tree = _parse(src / QUANT)
    found = _sm100_in_method(version, tree) if tree else None
    oracle = _parse(src / ORACLE)
    return found or (_sm100_in_oracle(version, oracle) if oracle else None)


def env_selected(src: Path) -> list[str]:
    names: set[str] = set()
    for rel in (QUANT, ORACLE):
        tree = _parse(src / rel)
        for n in ast.walk(tree) if tree else ():
            if (
                isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "envs"
                and "MXFP4" in n.attr
            ):
                names.add(n.attr)
    return sorted(names)


def by_capability(version: str, folder: Path, src: Path) -> list[dict[str, Any]]:
    gate = _triton_gate(version, src)
    if gate is None:
        raise RuntimeError(f"{version}: Triton's capability gate not found")
    triton = _ships_triton_kernels(version, folder, src)
    flashinfer = _ships_flashinfer(version, folder, src)
    out = [{"min_capability": "8.0", "below": "9.0", "backend": "marlin", "source": f"{gate} (Triton needs 9.0)"}]
    hopper = "triton" if triton else "marlin"
    why = (
        f"{gate}; {triton} (triton_kernels bundled)"
        if triton
        else f"{gate} (triton_kernels is not a dependency of this release: Marlin)"
    )
    out.append({"min_capability": "9.0", "below": "10.0", "backend": hopper, "source": why})
    sm100 = _sm100_flashinfer_default(version, src)
    if sm100 and flashinfer:
        out.append(
            {
                "min_capability": "10.0",
                "below": "11.0",
                "backend": "flashinfer_trtllm",
                "source": f"{sm100}; {flashinfer}",
            }
        )
    return out


# --- the fact ---------------------------------------------------------------------------------


def mxfp4_moe(version: str, data: dict[str, Any]) -> dict[str, Any]:
    methods = (data.get("facts") or {}).get("quantization_methods") or {}
    if "mxfp4" not in methods:
        where = builder.url(version, "vllm/model_executor/layers/quantization/__init__.py")
        return {"supported": False, "source": f"{where} (QUANTIZATION_METHODS has no mxfp4)"}
    folder = sdist(version)
    if folder is None:
        folder = builder.fetch(version)  # no sdist on PyPI: the wheel's .py members and METADATA
    src = folder / "src"
    found = backends(version, src)
    rows = by_capability(version, folder, src)
    fact = {
        "supported": True,
        "backends": found,
        "by_capability": rows,
        "env_selected": env_selected(src),
        "source": methods["mxfp4"]["source"],
    }
    Mxfp4Moe.model_validate(fact)
    return fact


def main(argv: list[str]) -> int:
    folder = releases_dir(builder.ENGINE)
    versions = argv or sorted((p.stem for p in folder.glob("*.json") if p.name != "options.json"), key=builder.vkey)
    for version in versions:
        path = folder / f"{version}.json"
        data = json.loads(path.read_text())
        fact = mxfp4_moe(version, data)
        data.setdefault("facts", {})["mxfp4_moe"] = fact
        path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        summary = {k: (v["hidden_multiple"], v["intermediate_multiple"]) for k, v in fact.get("backends", {}).items()}
        picks = [f"{r['min_capability']}:{r['backend']}" for r in fact.get("by_capability", [])]
        print(f"{version}: {summary or 'none'} {picks}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
