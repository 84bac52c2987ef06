"""Build vLLM release catalogs from the released wheels, by running each release's own parser.

    python scripts/catalog/vllm.py                  # every release from 0.6.0 that PyPI lists
    python scripts/catalog/vllm.py 0.8.5 0.10.2     # only these (removed_in still spans all)
    python scripts/catalog/vllm.py --dump-only V..  # fetch and dump, write nothing
    python scripts/catalog/vllm.py --memory-facts   # rederive the memory facts of every catalogued release

For each release: ``pip download vllm==V --no-deps --only-binary :all:`` into
``~/.cache/servespec/catalog-src/vllm/V/`` (the wheel's sha256 is recorded, its ``.py`` members
and METADATA are kept, the wheel itself is deleted); then ``vllm_dump.py`` builds that
release's own ``vllm serve`` parser in a parser env (``SERVESPEC_VLLM_HOST`` or
``~/.cache/servespec/parser-envs/vllm-0.11.0``) and dumps its argparse actions; this script
turns the actions into catalog entries (engines/FORMAT.md) and reads the typed facts from the
same source tree by AST (``ast`` of the release's files; no regular expressions on code).

Release files that already exist keep their ``facts`` and ``notes`` (other people add facts by
hand); facts this script derives are added only where the file has none of that name. The
hand-extracted 0.11.0 and 0.33.0 catalogs are not rewritten unless named with ``--force``.
``--memory-facts`` rederives the memory facts the estimator reads (``hybrid_kv_cache``,
``profile_sampler_sorts_vocab``) for every
catalogued release, hand-extracted ones included, and replaces them in place (tests/engines/
test_catalog_vllm.py walks every release for them).
The ``mla_kv_cache`` fact (how the release caches multi-head latent attention) is read by
scripts/catalog/vllm_mla.py, here for a release built and by that script for every catalogued one.
Releases before 0.6.0 (0.4.1-0.5.5) have no wheel for the Python the download asks for: their ``.py`` files come
from the sdist (``fetch``), and before ``vllm serve`` (0.5.2) vllm_dump.py dumps the OpenAI server's own parser.
The ``mxfp4_moe`` fact is written by scripts/catalog/vllm_mxfp4.py from the releases' sdists (a release
file's existing facts are kept here, so a rebuild leaves it in place).
A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import srcast
from catalog_io import TOOL_VERSION, prune_pool, read_pool, releases_dir, write_pool, write_release

from servespec.engines.catalog import ReleaseFacts  # catalog_io puts src on the path

ENGINE = "vllm"
FIRST = (0, 4, 1)
"""The first release catalogued (0.4.1; its and 0.5.x's parsers are the OpenAI server's own, read from the sdist)."""
CACHE = Path(os.environ.get("SERVESPEC_CATALOG_SRC", Path.home() / ".cache/servespec/catalog-src")) / "vllm"
HOST = Path(os.environ.get("SERVESPEC_VLLM_HOST", Path.home() / ".cache/servespec/parser-envs/vllm-0.11.0"))
DUMP = Path(__file__).resolve().parent / "vllm_dump.py"
REPO_URL = "https://github.com/vllm-project/vllm/blob"
HAND = {"0.11.0", "0.33.0"}
"""Hand-extracted catalogs (from the real parser); kept unless --force names them."""
EXTENSIONS = (
    "vllm._C", "vllm._moe_C", "vllm._rocm_C", "vllm.cumem_allocator", "vllm._flashmla_C",
    "vllm._C_stable_libtorch", "vllm._flashmla_extension_C", "vllm._moe_C_stable_libtorch",
    "vllm._deepselect_C", "vllm._flashkda_C", "vllm._qutlass_C", "vllm.fs_io_C", "vllm.spinloop",
    "vllm.vllm_flash_attn._vllm_fa2_C", "vllm.vllm_flash_attn._vllm_fa3_C",
)  # fmt: skip
"""vLLM's compiled extensions: they need the CUDA runtime; the parser never calls them."""

ENV_OF = {
    "api_key": ("VLLM_API_KEY", "vllm/entrypoints/openai/api_server.py"),
    "log_config_file": ("VLLM_LOGGING_CONFIG_PATH", "vllm/entrypoints/openai/cli_args.py"),
    "log_error_stack": ("VLLM_SERVER_DEV_MODE", "vllm/entrypoints/openai/cli_args.py"),
    "mm_processor_cache_gb": ("VLLM_MM_INPUT_CACHE_GIB", "vllm/engine/arg_utils.py"),
}
"""Options an environment variable also sets (or defaults): recorded where that release's file reads it."""


def tag(version: str) -> str:
    return f"v{version}"


def url(version: str, path: str, line: int | None = None) -> str:
    return f"{REPO_URL}/{tag(version)}/{path}" + (f"#L{line}" if line else "")


def vkey(version: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", version.replace(".post", ".").split("rc")[0])
    return tuple(int(p) for p in parts)


# --- fetching -------------------------------------------------------------------------------


def pypi_versions() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", ENGINE], capture_output=True, text=True, check=True
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("Available versions:"))
    found = [v.strip() for v in line.split(":", 1)[1].split(",")]
    stable = [v for v in found if re.fullmatch(r"\d+\.\d+\.\d+(\.\d+|\.post\d+)?", v)]
    return sorted((v for v in stable if vkey(v) >= FIRST), key=vkey)


def fetch(version: str) -> Path:
    """The release's source tree (``.py`` members of its wheel), downloading it once."""
    folder = CACHE / version
    if (folder / "artifact.json").is_file():
        return folder
    if vkey(version) < (0, 6):
        # no wheel for the Python the builder asks for: the sdist's .py files (scripts/catalog/vllm_mxfp4.py)
        import vllm_mxfp4

        unpacked = vllm_mxfp4.sdist(version)
        if unpacked is None:
            raise RuntimeError(f"{version}: PyPI has no sdist")
        import shutil

        shutil.copytree(unpacked / "src", folder / "src", dirs_exist_ok=True)
        (folder / "artifact.json").write_text((unpacked / "artifact.json").read_text())
        return folder
    dl = CACHE / f"dl-{version}"
    dl.mkdir(parents=True, exist_ok=True)
    platforms = ["manylinux1_x86_64", "manylinux2014_x86_64"] + [
        f"manylinux_2_{n}_x86_64" for n in (24, 28, 31, 34, 35)
    ]
    cmd = [sys.executable, "-m", "pip", "download", f"vllm=={version}", "--no-deps", "--only-binary", ":all:"]
    cmd += ["--python-version", "3.12", "-d", str(dl), "-q"]
    for platform in platforms:
        cmd += ["--platform", platform]
    subprocess.run(cmd, check=True)
    wheel = next(dl.glob("*.whl"))
    digest = hashlib.sha256()
    with wheel.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".py") or name.endswith("METADATA"):
                archive.extract(name, folder / "src")
    meta = {"artifact": wheel.name, "sha256": digest.hexdigest(), "size": wheel.stat().st_size}
    (folder / "artifact.json").write_text(json.dumps(meta))
    wheel.unlink()
    dl.rmdir()
    return folder


def dump(version: str) -> dict[str, Any]:
    """The release's `vllm serve` parser, dumped by vllm_dump.py in the host parser env."""
    folder = fetch(version)
    out = folder / "dump.json"
    if not out.is_file():
        tmp = folder / "dump.tmp"
        cmd = [str(HOST / "bin/python"), str(DUMP), str(folder / "src"), str(tmp), ",".join(EXTENSIONS)]
        subprocess.run(cmd, check=True, cwd="/tmp", stdout=subprocess.DEVNULL)
        tmp.rename(out)
    return dict(json.loads(out.read_text()))


# --- option entries ---------------------------------------------------------------------------


def first_sentence(text: str | None) -> str:
    if not text:
        return ""
    flat = " ".join(text.replace("%%", "%").split())
    match = re.search(r"(?<!e\.g)(?<!i\.e)(?<!etc)(?<!vs)\.(\s|$)", flat)
    return flat[: match.start() + 1] if match else flat


def _negatable(action: dict[str, Any]) -> bool:
    """argparse's BooleanOptionalAction, or vLLM's own (EnableDisableAction, 0.27+): --x / --no-x."""
    strings = action["option_strings"]
    if action["kind"] in ("BooleanOptionalAction", "EnableDisableAction"):
        return True
    return action["nargs"] == 0 and any(f"--no-{s[2:]}" in strings for s in strings if s.startswith("--"))


def _kind(action: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """(type, bool_form, nargs) of one argparse action."""
    kind, nargs, types = action["kind"], action["nargs"], " ".join(action["type"])
    if _negatable(action):
        return "bool", "negatable", None
    if kind in ("_StoreTrueAction", "_StoreFalseAction") or (
        kind == "_StoreConstAction" and isinstance(action["const"], bool)
    ):
        return "bool", "flag", None
    if kind in ("_AppendAction", "_AppendConstAction"):
        return "list", None, "append"
    if nargs in ("+", "*"):
        return "list", None, nargs
    shape = nargs if nargs == "?" else None
    if re.search(r"builtins\.bool\b|str2bool|str_to_bool", types):
        return "bool", "value", shape
    if re.search(r"json\.loads|union_dict_and_str|parse_dataclass|from_cli|dict|Config\.|\.loads", types):
        return "dict", None, shape
    if re.search(r"builtins\.int\b|human_readable_int", types):
        return "int", None, shape
    if re.search(r"builtins\.float\b", types):
        return "float", None, shape
    return "str", None, shape


def _choices(action: dict[str, Any]) -> list[Any] | None:
    if action["choices"] is not None:
        return list(action["choices"])
    metavar = action["metavar"]
    if isinstance(metavar, list) and all(isinstance(item, str) for item in metavar):
        return list(metavar)  # vLLM's Literal|str fields: the known values, other strings accepted too
    return None


def _default(value: Any) -> Any:
    if value == "==SUPPRESS==" or (isinstance(value, dict) and ("<dataclass>" in value or "<repr>" in value)):
        return None
    return value


def entries(dump_: dict[str, Any], bounds: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for action in dump_["actions"]:
        strings = action["option_strings"]
        longs = [s for s in strings if s.startswith("--")]
        flag = longs[0] if longs else None
        key = flag[2:].replace("-", "_") if flag else action["dest"]
        negated: set[str] = set()
        if _negatable(action):  # the --no-x (EnableDisableAction: --disable-x) form is the flag's negation
            negated = (
                {f"--no-{s[2:]}" for s in longs}
                | {s.replace("--enable-", "--disable-", 1) for s in longs if s.startswith("--enable-")}
                | {s.replace("--disable-", "--enable-", 1) for s in longs if s.startswith("--disable-")}
            )
        aliases = [s for s in strings if s != flag and s not in negated]
        type_, bool_form, nargs = _kind(action)
        help_ = first_sentence(action["help"])
        bound = bounds.get(key, {})
        entry = {
            "flag": flag,
            "aliases": aliases,
            "env": None,
            "config_key": None,
            "type": type_,
            "choices": _choices(action),
            "min": bound.get("min"),
            "max": bound.get("max"),
            "default": _default(action["default"]),
            "bool_form": bool_form,
            "nargs": nargs,
            "help": help_,
            "deprecated": bool(action["deprecated"])
            or action["kind"].startswith("Deprecated")
            or "[DEPRECATED]" in (action["help"] or "")[:40].upper(),
        }
        if key in out:
            continue  # the first definition wins, as argparse's own conflict check would refuse a second
        out[key] = entry
    return out


# --- facts read from the release's source (AST) ------------------------------------------------


def _config_files(src: Path) -> list[str]:
    files = ["vllm/config.py"] if (src / "vllm/config.py").is_file() else []
    files += sorted(str(p.relative_to(src)) for p in (src / "vllm/config").glob("*.py"))
    return files


def _number(node: ast.expr) -> float | int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    return None


def bounds(version: str, src: Path, options: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inclusive bounds, exclusive bounds) of options, from the config classes' checks and Fields.

    ``if self.x > 1.0: raise`` in a config class means max 1.0; ``< 0`` min 0; ``<= 0`` /
    ``>= 1`` are strict (an int's strict bound becomes the next int); pydantic
    ``Field(ge=, gt=, le=, lt=)`` likewise.
    """
    inclusive: dict[str, dict[str, Any]] = {}
    exclusive: dict[str, dict[str, Any]] = {}

    def record(name: str, op: str, value: float | int, rel: str, line: int) -> None:
        option = options.get(name)
        if option is None or option["type"] not in ("int", "float"):
            return
        is_int = option["type"] == "int"
        where = url(version, rel, line)
        if op in ("min", "max"):
            inclusive.setdefault(name, {})[op] = value
        elif is_int:
            inclusive.setdefault(name, {})[op[:3]] = value + 1 if op == "min_exclusive" else value - 1
        else:
            exclusive.setdefault(name, {"source": where})[op] = value

    for rel in _config_files(src):
        tree = srcast.parse(src, rel)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and any(isinstance(n, ast.Raise) for n in node.body):
                test = node.test
                if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
                    continue
                left, value = test.left, _number(test.comparators[0])
                if not (
                    isinstance(left, ast.Attribute)
                    and isinstance(left.value, ast.Name)
                    and left.value.id == "self"
                    and value is not None
                ):
                    continue
                op = {ast.Gt: "max", ast.Lt: "min", ast.LtE: "min_exclusive", ast.GtE: "max_exclusive"}.get(
                    type(test.ops[0])
                )
                if op:
                    record(left.attr, op, value, rel, node.lineno)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                call = node.value
                if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", "")) == "Field":
                    for kw in call.keywords:
                        number = _number(kw.value) if kw.arg in ("ge", "gt", "le", "lt") else None
                        if number is not None:
                            op = {"ge": "min", "le": "max", "gt": "min_exclusive", "lt": "max_exclusive"}[str(kw.arg)]
                            record(node.target.id, op, number, rel, node.lineno)
    return inclusive, exclusive


def _class_methods(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _imports(tree: ast.Module, package: str) -> dict[str, str]:
    """Name -> module path (vllm/...py) for the ``from X import Name`` statements of a module."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + [module])
            for alias in node.names:
                out[alias.asname or alias.name] = module
    return out


def _module_file(src: Path, module: str) -> str | None:
    path = module.replace(".", "/")
    for rel in (f"{path}.py", f"{path}/__init__.py"):
        if (src / rel).is_file():
            return rel
    return None


def _min_capability(src: Path, rel: str, cls: str, depth: int = 0) -> tuple[int | None, str, int] | None:
    """get_min_capability()'s constant for class ``cls`` in ``rel`` (following base classes)."""
    tree = srcast.parse(src, rel)
    if tree is None or depth > 4:
        return None
    classes = _class_methods(tree)
    node = classes.get(cls)
    if node is None:
        return None
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "get_min_capability":
            returns = [n for n in ast.walk(item) if isinstance(n, ast.Return) and n.value is not None]
            values = [_number(r.value) for r in returns if r.value is not None]
            if len(values) == 1 and isinstance(values[0], int):
                return values[0], rel, item.lineno
            return None, rel, item.lineno
    imports = _imports(tree, rel.removesuffix(".py").replace("/", "."))
    for base in node.bases:
        name = base.id if isinstance(base, ast.Name) else None
        if not name:
            continue
        where = rel if name in classes else _module_file(src, imports.get(name, ""))
        if where:
            found = _min_capability(src, where, name, depth + 1)
            if found:
                return found
    return None


def quantization_methods(version: str, src: Path, methods: list[str]) -> dict[str, Any]:
    """Each --quantization method's get_min_capability(), from the registry in quantization/__init__.py."""
    rel = "vllm/model_executor/layers/quantization/__init__.py"
    tree = srcast.parse(src, rel)
    if tree is None:
        return {}
    registry: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and len(node.keys) > 5:
            pairs = [(k, v) for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)]
            if all(isinstance(v, ast.Name) for _, v in pairs) and len(pairs) == len(node.keys):
                registry = {str(k.value): v.id for k, v in pairs if isinstance(v, ast.Name)}  # type: ignore[union-attr]
    imports = _imports(tree, "vllm.model_executor.layers.quantization")
    out: dict[str, Any] = {}
    for method in methods:
        cls = registry.get(method)
        module = _module_file(src, imports.get(cls, "")) if cls else None
        if not cls or not module:
            continue
        found = _min_capability(src, module, cls)
        if found is None:
            continue
        value, where, line = found
        text = f"{value // 10}.{value % 10}" if isinstance(value, int) and value >= 0 else None
        out[method] = {"min_capability": text, "source": url(version, where, line)}
    return out


def _find_line(src: Path, rel: str, predicate: Any) -> int | None:
    tree = srcast.parse(src, rel)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if predicate(node):
            return int(getattr(node, "lineno", 0)) or None
    return None


def _is_string(node: ast.AST, text: str) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and text in node.value


def default_engine(version: str, src: Path) -> dict[str, Any] | None:
    """v0/v1 from envs.py's VLLM_USE_V1 default (``os.getenv("VLLM_USE_V1", "1")``); v1 when V0 is gone."""
    rel = "vllm/envs.py"
    tree = srcast.parse(src, rel)
    if tree is None:
        if not (src / "vllm/v1").is_dir() and (src / "vllm/engine/llm_engine.py").is_file():
            return {"value": "v0", "source": url(version, "vllm/engine/llm_engine.py")}  # 0.4.x: no envs.py
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "getenv"
            and len(node.args) == 2
            and _is_string(node.args[0], "VLLM_USE_V1")
            and isinstance(node.args[1], ast.Constant)
        ):
            value = "v1" if str(node.args[1].value) == "1" else "v0"
            return {"value": value, "source": url(version, rel, node.lineno)}
    if not (src / "vllm/v1").is_dir():
        # before VLLM_USE_V1 existed (0.6.x) the V0 engine is the only one
        return {"value": "v0", "source": url(version, "vllm/engine/llm_engine.py")}
    if _find_line(
        src, "vllm/engine/llm_engine.py", lambda n: isinstance(n, ast.ImportFrom) and "v1" in (n.module or "")
    ):
        # VLLM_USE_V1 is gone: vllm/engine/llm_engine.py aliases the V1 engine, the only one left
        return {"value": "v1", "source": url(version, "vllm/engine/llm_engine.py")}
    return None


def block_size_default(version: str, src: Path, options: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The CLI default when it is a number, else CudaPlatform's ``cache_config.block_size = N``."""
    default = options.get("block_size", {}).get("default")
    if isinstance(default, int):
        line = _find_line(
            src, "vllm/engine/arg_utils.py",
            lambda n: isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "block_size",
        )  # fmt: skip
        return {"value": default, "source": url(version, "vllm/engine/arg_utils.py", line)}
    for rel in _config_files(src):  # 0.13+: CacheConfig.DEFAULT_BLOCK_SIZE, applied when none is given
        tree = srcast.parse(src, rel)
        for node in ast.walk(tree) if tree else ():
            if (
                isinstance(node, ast.AnnAssign)
                and getattr(node.target, "id", "") == "DEFAULT_BLOCK_SIZE"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, int)
            ):
                return {"value": node.value.value, "source": url(version, rel, node.lineno)}
    rel = "vllm/platforms/cuda.py"
    tree = srcast.parse(src, rel)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and node.targets[0].attr == "block_size"
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            # the first assignment in check_and_update_config: the "block_size is None" default
            return {"value": node.value.value, "source": url(version, rel, node.lineno)}
    return None


def block_size_multiple(version: str, src: Path, engine: str | None) -> dict[str, Any] | None:
    """FlashAttention's "Block size must be a multiple of 16." in the default engine's backend."""
    rels = ["vllm/v1/attention/backends/flash_attn.py"] if engine == "v1" else ["vllm/attention/backends/flash_attn.py"]
    for rel in rels:
        tree = srcast.parse(src, rel)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if _is_string(node, "Block size must be a multiple of"):
                value = int(re.findall(r"multiple of (\d+)", str(node.value))[0])  # type: ignore[attr-defined]
                return {"value": value, "source": url(version, rel, node.lineno)}
        for node in ast.walk(tree):  # 0.29+: get_supported_kernel_block_sizes() -> [MultipleOf(16)]
            if isinstance(node, ast.FunctionDef) and node.name == "get_supported_kernel_block_sizes":
                for call in ast.walk(node):
                    if (
                        isinstance(call, ast.Call)
                        and getattr(call.func, "id", "") == "MultipleOf"
                        and call.args
                        and isinstance(call.args[0], ast.Constant)
                    ):
                        return {"value": int(call.args[0].value), "source": url(version, rel, call.lineno)}
    return None


def _env_default(src: Path, name: str) -> tuple[str, int] | None:
    """(default, line) of ``os.getenv(NAME, default)`` in envs.py."""
    tree = srcast.parse(src, "vllm/envs.py")
    for node in ast.walk(tree) if tree else ():
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "getenv"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == name
            and isinstance(node.args[1], ast.Constant)
        ):
            return str(node.args[1].value), node.lineno
    return None


def cuda_graph_memory_in_budget(version: str, src: Path, engine: str | None) -> dict[str, Any] | None:
    """Whether the worker's memory profiling subtracts a CUDA-graph estimate from the KV budget.

    Where envs.py has VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, its default decides (the V1
    gpu_worker.py estimates CUDA-graph memory during profiling when it is set); before it, the
    worker's determine_available_memory / determine_num_available_blocks is read: CUDA graphs
    are captured after the KV cache is sized, so nothing is subtracted unless it names them.
    """
    found = _env_default(src, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
    if found is not None:
        return {"value": found[0] == "1", "source": url(version, "vllm/envs.py", found[1])}
    rel = "vllm/v1/worker/gpu_worker.py" if engine == "v1" else "vllm/worker/worker.py"
    tree = srcast.parse(src, rel)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in (
            "determine_available_memory",  # V1 Worker
            "determine_num_available_blocks",  # V0 Worker
        ):
            names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            graph = sorted(n for n in names if "cudagraph" in n.lower() or "cuda_graph" in n.lower())
            return {"value": bool(graph), "source": url(version, rel, node.lineno)}
    return None


def image_cuda(version: str, src: Path) -> dict[str, Any] | None:
    """envs.py's VLLM_MAIN_CUDA_VERSION default: the CUDA the release's wheels and image are built with."""
    rel = "vllm/envs.py"
    tree = srcast.parse(src, rel)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    key is not None
                    and _is_string(key, "VLLM_MAIN_CUDA_VERSION")
                    and key.value == "VLLM_MAIN_CUDA_VERSION"
                ):  # type: ignore[attr-defined]
                    found = [
                        n.value for n in ast.walk(value)
                        if isinstance(n, ast.Constant) and isinstance(n.value, str) and re.fullmatch(r"\d+\.\d+", n.value)
                    ]  # fmt: skip
                    if len(found) == 1:
                        return {"value": found[0], "source": url(version, rel, key.lineno)}
    return None


def _core_files(src: Path) -> list[str]:
    """The V1 KV-cache planning modules (kv_cache_utils.py, from 0.33 also kv_cache_planning.py)."""
    return sorted(str(p.relative_to(src)) for p in (src / "vllm/v1/core").glob("*.py"))


def _names(node: ast.AST) -> set[str]:
    """Every identifier and attribute name under ``node``."""
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return out | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _token_formula(node: ast.AST, functions: dict[str, ast.FunctionDef], depth: int = 0) -> str | None:
    """How an expression computes "GPU KV cache size" tokens: ``max_concurrency`` (× max_model_len),
    ``blocks_per_group`` (``num_blocks // len(groups) × block_size``), following calls to the module's
    own functions into their ``return``; None when neither."""
    if "max_concurrency" in _names(node):
        return "max_concurrency"
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.BinOp)
            and isinstance(sub.op, ast.FloorDiv)
            and isinstance(sub.right, ast.Call)
            and getattr(sub.right.func, "id", "") == "len"
        ):
            return "blocks_per_group"
    if depth < 2:
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            callee = functions.get(getattr(call.func, "id", ""))
            for ret in (n for n in ast.walk(callee) if isinstance(n, ast.Return)) if callee else ():
                found = _token_formula(ret, functions, depth + 1) if ret.value else None
                if found:
                    return found
    return None


def _reported_tokens(version: str, src: Path) -> tuple[str, str] | None:
    """(formula, source) of the "GPU KV cache size: N tokens" line of the hybrid (several-group) path.

    The logging call is found by its format string; the ``num_tokens`` assignments of the function
    around it are classified by :func:`_token_formula`. Where the module logs twice (before 0.11: one
    call for a single KV type, one for page-size-unified groups), the group-aware one is taken.
    """
    found: list[tuple[str, str]] = []
    for rel in _core_files(src):
        tree = srcast.parse(src, rel)
        if tree is None:
            continue
        functions = srcast.functions(tree)
        for function in functions.values():
            calls = [
                n for n in ast.walk(function)
                if isinstance(n, ast.Call) and n.args and _is_string(n.args[0], "KV cache size: %s tokens")
            ]  # fmt: skip
            if not calls:
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and any("num_tokens" in _names(t) for t in node.targets):
                    formula = _token_formula(node.value, functions)
                    if formula:
                        found.append((formula, url(version, rel, node.lineno)))
    kinds = {kind for kind, _ in found}
    return found[0] if len(kinds) == 1 else None  # none found, or both: not modelled


def _group_rule(version: str, src: Path) -> tuple[float | None, str] | None:
    """(ratio, source) of ``_get_kv_cache_groups_uniform_page_size``: the layers per group are the
    largest type's count when ``max_num_layers < min_num_layers * RATIO`` (0.18+), else the smallest's
    (ratio None). None: the release has no page-size-unified grouping (no hybrid manager)."""
    for rel in _core_files(src):
        tree = srcast.parse(src, rel)
        for function in srcast.functions(tree).values() if tree else ():
            if "uniform_page_size" not in function.name or not function.name.startswith("_get_kv_cache_"):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Compare)
                    and len(node.ops) == 1
                    and isinstance(node.ops[0], ast.Lt)
                    and isinstance(node.comparators[0], ast.BinOp)
                    and isinstance(node.comparators[0].op, ast.Mult)
                    and isinstance(node.comparators[0].right, ast.Constant)
                    and isinstance(node.comparators[0].right.value, float)
                    and "min_num_layers" in _names(node.comparators[0].left)
                ):
                    return float(node.comparators[0].right.value), url(version, rel, node.lineno)
            mins = [
                n for n in ast.walk(function)
                if isinstance(n, ast.Assign) and "group_size" in _names(n.targets[0])
                and isinstance(n.value, ast.Call) and getattr(n.value.func, "id", "") == "min"
            ]  # fmt: skip
            if mins:
                return None, url(version, rel, mins[0].lineno)
    return None


def _has_class(src: Path, rel: str, name: str) -> int | None:
    tree = srcast.parse(src, rel)
    for node in tree.body if tree else ():
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node.lineno
    return None


def _chunked_gate(version: str, src: Path) -> tuple[bool, str] | None:
    """(kept by default, source) where the config turns the hybrid manager off for chunked local
    attention unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE (its envs.py default decides)."""
    env = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
    for rel in _config_files(src):
        tree = srcast.parse(src, rel)
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.If) and env in _names(node.test):
                default = _env_default(src, env)
                if default is None:
                    return None
                kept = default[0].strip().lower() in ("1", "true")
                return kept, f"{url(version, rel, node.lineno)}; {url(version, 'vllm/envs.py', default[1])}"
    return None


def _class_node(tree: ast.Module | None, name: str) -> ast.ClassDef | None:
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _assigns(node: ast.AST, name: str) -> list[ast.Assign]:
    """Assignments to the plain name ``name`` under ``node``, in source order."""
    found = [
        n for n in ast.walk(node)
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == name for t in n.targets)
    ]  # fmt: skip
    return sorted(found, key=lambda n: n.lineno)


def _aligned_to(value: ast.expr, multiple: str | int) -> bool:
    """``value`` is ``M * cdiv(mamba_page_size, ...)`` with ``M`` the literal ``multiple`` or the name ``multiple``."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult)):
        return False
    left, right = value.left, value.right
    same = (
        isinstance(left, ast.Constant) and left.value == multiple
        if isinstance(multiple, int)
        else isinstance(left, ast.Name) and left.id == multiple
    )
    return (
        same
        and isinstance(right, ast.Call)
        and getattr(right.func, "id", "") == "cdiv"
        and "mamba_page_size" in _names(right)
    )


def _linear_state_block(version: str, src: Path) -> tuple[int | None, bool, str]:
    """(multiple, scales with the block size, source) of the attention block a linear layer's state sets.

    - 0.10.1-0.11.0: ``attn_block_size = 16 * cdiv(mamba_page_size, ...)``, the only assignment in
      models/config.py ``HybridAttentionMambaModelConfig``.
    - 0.11.1-0.19: ``attn_block_size = kernel_block_alignment_size * cdiv(...)`` there, the alignment the
      literal of the non-MLA branch (``if model_config.use_mla: ... else: kernel_block_alignment_size = 16``;
      Blackwell's head-256 FlashInfer case, 32, is not modelled).
    - 0.20+: the same formula in platforms/interface.py ``Platform._align_hybrid_block_size``, the alignment
      ``max(min(backend.get_supported_kernel_block_sizes()), cache_config.block_size)``: FlashAttention's smallest
      size (vllm/v1/attention/backends/flash_attn.py), against the block size (scales: True).
    Any other form: None (not modelled)."""
    rel = "vllm/model_executor/models/config.py"
    cls = _class_node(srcast.parse(src, rel), "HybridAttentionMambaModelConfig")
    if cls is None:
        return None, False, url(version, rel)
    blocks = _assigns(cls, "attn_block_size")
    if len(blocks) == 1 and _aligned_to(blocks[0].value, 16):
        return 16, False, url(version, rel, blocks[0].lineno)
    plain = [b for b in blocks if _aligned_to(b.value, "kernel_block_alignment_size")]
    if plain:
        literal = _non_mla_alignment(cls)
        if literal is None:
            return None, False, url(version, rel, plain[0].lineno)
        assert isinstance(literal.value, ast.Constant)
        lines = f"{url(version, rel, literal.lineno)}; {url(version, rel, plain[0].lineno)}"
        return int(literal.value.value), False, lines
    if blocks:
        return None, False, url(version, rel, blocks[0].lineno)
    return _platform_alignment(version, src, url(version, rel, cls.lineno))


def _non_mla_alignment(cls: ast.ClassDef) -> ast.Assign | None:
    """``kernel_block_alignment_size = N`` first in the ``else`` of ``if model_config.use_mla``."""
    for node in ast.walk(cls):
        if isinstance(node, ast.If) and "use_mla" in _names(node.test):
            for a in node.orelse:
                if (
                    isinstance(a, ast.Assign)
                    and getattr(a.targets[0], "id", "") == "kernel_block_alignment_size"
                    and isinstance(a.value, ast.Constant)
                    and isinstance(a.value.value, int)
                ):
                    return a
    return None


def _blackwell_alignment(version: str, src: Path) -> tuple[int | None, bool, str]:
    """(multiple, whole 10.x family, source) of 0.11.1-0.17's FlashInfer case in HybridAttentionMambaModelConfig:
    ``if current_platform.is_device_capability[_family](100) and model_config.get_head_size() == 256 and (no
    backend or FLASHINFER): kernel_block_alignment_size = 32``; (None, False, "") where the release has none."""
    rel = "vllm/model_executor/models/config.py"
    cls = _class_node(srcast.parse(src, rel), "HybridAttentionMambaModelConfig")
    for node in ast.walk(cls) if cls else ():
        if not isinstance(node, ast.If):
            continue
        names = _names(node.test)
        capability = {"is_device_capability", "is_device_capability_family"} & names
        constants = {n.value for n in ast.walk(node.test) if isinstance(n, ast.Constant)}
        if not capability or "get_head_size" not in names or not {100, 256} <= constants:
            continue
        for a in node.body:
            if (
                isinstance(a, ast.Assign)
                and getattr(a.targets[0], "id", "") == "kernel_block_alignment_size"
                and isinstance(a.value, ast.Constant)
                and isinstance(a.value.value, int)
            ):
                family = "is_device_capability_family" in capability
                return int(a.value.value), family, url(version, rel, node.lineno)
    return None, False, ""


def _platform_alignment(version: str, src: Path, where: str) -> tuple[int | None, bool, str]:
    """0.20+: platforms/interface.py ``_align_hybrid_block_size``'s ``max(min(kernel sizes), block_size)``."""
    iface = "vllm/platforms/interface.py"
    align = srcast.function(srcast.parse(src, iface), "_align_hybrid_block_size")
    if align is None:
        return None, False, where
    formula = [b for b in _assigns(align, "attn_block_size") if _aligned_to(b.value, "kernel_block_alignment_size")]
    alignment = _assigns(align, "kernel_block_alignment_size")
    rule = alignment[0].value if alignment else None
    if (
        not formula
        or not isinstance(rule, ast.Call)
        or getattr(rule.func, "id", "") != "max"
        or "get_supported_kernel_block_sizes" not in _names(rule)
        or "block_size" not in _names(rule)
    ):
        return None, False, url(version, iface, align.lineno)
    smallest, backend_source = _flash_attn_smallest_block(version, src)
    if smallest is None:
        return None, False, backend_source
    lines = f"{url(version, iface, alignment[0].lineno)}; {url(version, iface, formula[0].lineno)}; {backend_source}"
    return smallest, True, lines


def _flash_attn_smallest_block(version: str, src: Path) -> tuple[int | None, str]:
    """The smallest kernel block size FlashAttention lists (``MultipleOf(N)`` counts as N) over its returns."""
    rel = "vllm/v1/attention/backends/flash_attn.py"
    function = srcast.function(srcast.parse(src, rel), "get_supported_kernel_block_sizes")
    if function is None:
        return None, url(version, rel)
    sizes: list[int] = []
    for ret in (n for n in ast.walk(function) if isinstance(n, ast.Return) and isinstance(n.value, ast.List)):
        assert isinstance(ret.value, ast.List)
        for item in ret.value.elts:
            if isinstance(item, ast.Constant) and isinstance(item.value, int):
                sizes.append(item.value)
            elif isinstance(item, ast.Call) and item.args and isinstance(item.args[0], ast.Constant):
                sizes.append(int(item.args[0].value))
    return (min(sizes) if sizes else None), url(version, rel, function.lineno)


def _linear_state_blocks(version: str, src: Path) -> tuple[str | None, str]:
    """How many blocks a linear layer's group holds per request (``MambaSpec.max_memory_usage_bytes``)."""
    rel = "vllm/v1/kv_cache_interface.py"
    function = srcast.function(_class_node(srcast.parse(src, rel), "MambaSpec"), "max_memory_usage_bytes")
    if function is None:
        return None, url(version, rel)
    names = _names(function)
    where = url(version, rel, function.lineno)
    if "mamba_cache_mode" in names:
        return "cache_mode", where
    if "cdiv" in names and "max_model_len" in names:
        return "mamba_block", where
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
    if len(returns) == 1 and returns[0].value is not None and _names(returns[0].value) == {"self", "page_size_bytes"}:
        return "one", where
    return None, where


def _hybrid_prefix_caching(version: str, src: Path) -> tuple[bool | None, str]:
    """Whether prefix caching is on by default for a hybrid model: engine/arg_utils.py's ``default_prefix_caching``
    is False where it says ``not model_config.is_hybrid``; where it is ``model_config.is_prefix_caching_supported``,
    what config/model.py's ``is_prefix_caching_supported`` returns in its ``attn_type == "hybrid"`` branch.
    Releases without the default (0.10-0.11.0): models/config.py ``MambaModelConfig`` turns it off (False)."""
    rel = "vllm/engine/arg_utils.py"
    tree = srcast.parse(src, rel)
    for node in _assigns(tree, "default_prefix_caching") if tree else []:
        names = _names(node.value)
        if "is_hybrid" in names:
            return False, url(version, rel, node.lineno)
        if "is_prefix_caching_supported" in names:
            model = "vllm/config/model.py"
            function = srcast.function(srcast.parse(src, model), "is_prefix_caching_supported")
            for branch in ast.walk(function) if function else ():
                if isinstance(branch, ast.If) and any(_is_string(n, "hybrid") for n in ast.walk(branch.test)):
                    ret = next((n for n in branch.body if isinstance(n, ast.Return)), None)
                    if ret is not None and isinstance(ret.value, ast.Constant) and isinstance(ret.value.value, bool):
                        lines = f"{url(version, rel, node.lineno)}; {url(version, model, ret.lineno)}"
                        return ret.value.value, lines
            return None, url(version, rel, node.lineno)
    config = "vllm/model_executor/models/config.py"
    cls = _class_node(srcast.parse(src, config), "MambaModelConfig")
    for node in ast.walk(cls) if cls else ():
        if (
            isinstance(node, ast.Assign)
            and any(getattr(t, "attr", "") == "enable_prefix_caching" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and node.value.value is False
        ):
            return False, url(version, config, node.lineno)
    return None, url(version, rel)


def _ssm_dtype_from_config(version: str, src: Path) -> tuple[tuple[str, ...], str]:
    """Architectures whose verify-and-update class (models/config.py ``MODELS_CONFIG_MAP``) copies the config's
    ``mamba_ssm_dtype`` into ``cache_config.mamba_ssm_cache_dtype`` when the option is ``auto``."""
    rel = "vllm/model_executor/models/config.py"
    tree = srcast.parse(src, rel)
    readers: dict[str, int] = {}
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.ClassDef) and any(_is_string(n, "mamba_ssm_dtype") for n in ast.walk(node)):
            assigns = any(
                isinstance(n, ast.Assign) and any(getattr(t, "attr", "") == "mamba_ssm_cache_dtype" for t in n.targets)
                for n in ast.walk(node)
            )
            if assigns:
                readers[node.name] = node.lineno
    architectures: list[str] = []
    where = url(version, rel)
    for node in ast.walk(tree) if tree else ():
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(getattr(t, "id", "") == "MODELS_CONFIG_MAP" for t in targets):
            value = getattr(node, "value", None)
            mapping = value if isinstance(value, ast.Dict) else None
            for key, item in zip(mapping.keys, mapping.values, strict=True) if mapping else ():
                if isinstance(key, ast.Constant) and getattr(item, "id", "") in readers:
                    architectures.append(str(key.value))
            where = url(version, rel, node.lineno)
    if not architectures:
        return (), where
    first = min(readers.values())
    return tuple(sorted(architectures)), f"{url(version, rel, first)}; {where}"


def _ssm_dtype_defaults(version: str, src: Path) -> tuple[tuple[tuple[str, str], ...], str]:  # noqa: C901
    """(architecture, dtype) for each ``MODELS_CONFIG_MAP`` entry whose class sets ``DEFAULT_MAMBA_SSM_CACHE_DTYPE``
    or calls such a class's update (models/config.py ``NemotronHForCausalLMConfig``, 0.13+)."""
    rel = "vllm/model_executor/models/config.py"
    tree = srcast.parse(src, rel)
    defaults: dict[str, tuple[str, int]] = {}
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)] if tree else []
    for node in classes:
        for item in node.body:
            target = item.target if isinstance(item, ast.AnnAssign) else None
            if isinstance(item, ast.Assign) and len(item.targets) == 1:
                target = item.targets[0]
            value = getattr(item, "value", None)
            if getattr(target, "id", "") == "DEFAULT_MAMBA_SSM_CACHE_DTYPE" and isinstance(value, ast.Constant):
                defaults[node.name] = (str(value.value), item.lineno)
    users = dict(defaults)
    for node in classes:
        named = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for owner, found in defaults.items():
            if owner in named and node.name not in users:
                users[node.name] = found
    pairs: list[tuple[str, str]] = []
    where = url(version, rel)
    for node in ast.walk(tree) if tree else ():
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(getattr(t, "id", "") == "MODELS_CONFIG_MAP" for t in targets):
            mapping = getattr(node, "value", None)
            for key, item in zip(mapping.keys, mapping.values, strict=True) if isinstance(mapping, ast.Dict) else ():
                if isinstance(key, ast.Constant) and getattr(item, "id", "") in users:
                    pairs.append((str(key.value), users[item.id][0]))
            where = url(version, rel, node.lineno)
    if not pairs:
        return (), where
    first = min(line for _, line in defaults.values())
    return tuple(sorted(pairs)), f"{url(version, rel, first)}; {where}"


def _mamba2_checkpoint_blocks(version: str, src: Path) -> tuple[int, str]:
    """``num_prefill_checkpoint_blocks`` MambaMixer2's own ``get_kv_cache_spec`` adds (0.32+), else 0."""
    rel = "vllm/model_executor/layers/mamba/mamba_mixer2.py"
    function = srcast.function(srcast.parse(src, rel), "get_kv_cache_spec")
    for node in ast.walk(function) if function else ():
        value = node.value if isinstance(node, ast.keyword) and node.arg == "num_prefill_checkpoint_blocks" else None
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            return value.value, url(version, rel, value.lineno)
    return 0, url(version, rel)


def _kda_state_float32(version: str, src: Path) -> tuple[bool, str]:
    """Whether ``MambaStateDtypeCalculator.kda_state_dtype`` returns ``torch.float32`` for the recurrent state."""
    rel = "vllm/model_executor/layers/mamba/mamba_utils.py"
    function = srcast.function(srcast.parse(src, rel), "kda_state_dtype")
    if function is None:
        return False, url(version, rel)
    auto_float32 = {
        target.id
        for branch in ast.walk(function) if isinstance(branch, ast.If)
        and any(_is_string(n, "auto") for n in ast.walk(branch.test))
        for a in branch.body if isinstance(a, ast.Assign) and getattr(a.value, "attr", "") == "float32"
        for target in a.targets if isinstance(target, ast.Name)
    }  # fmt: skip
    for ret in (n for n in ast.walk(function) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)):
        assert isinstance(ret.value, ast.Tuple)
        last = ret.value.elts[-1]
        if getattr(last, "attr", "") == "float32" or (isinstance(last, ast.Name) and last.id in auto_float32):
            return True, url(version, rel, ret.lineno)
    return False, url(version, rel, function.lineno)


GDN = "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py"


def _checkpoint_layout(version: str, src: Path) -> tuple[dict[str, Any], list[str]]:
    """The align-mode prefill checkpoints of Qwen's Gated DeltaNet layer (0.33+): the alignment constant, the
    blocks its spec adds, and the GPUs ``_resolve_gdn_prefill_backend`` gives FlashInfer's prefill."""
    found: dict[str, Any] = {}
    sources: list[str] = []
    constants = "vllm/v1/attention/backends/gdn_attn.py"
    tree = srcast.parse(src, constants)
    for node in _assigns(tree, "FLASHINFER_GDN_CHECKPOINT_ALIGNMENT") if tree else []:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
            found["checkpoint_alignment"] = node.value.value
            sources.append(url(version, constants, node.lineno))
    layer = srcast.parse(src, GDN)
    for node in ast.walk(layer) if layer else ():
        if (
            isinstance(node, ast.keyword)
            and node.arg == "num_prefill_checkpoint_blocks"
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            found["checkpoint_blocks"] = node.value.value
            sources.append(url(version, GDN, node.value.lineno))
    resolve = srcast.function(layer, "_resolve_gdn_prefill_backend")
    gpus = []
    for branch in ast.walk(resolve) if resolve else ():
        if not isinstance(branch, ast.If) or "supports_flashinfer" not in _names(branch.body[0]):
            continue
        rule = _checkpoint_gpu(branch.test)
        if rule is not None:
            gpus.append(rule)
            sources.append(url(version, GDN, branch.lineno))
    if gpus:
        found["checkpoint_gpus"] = gpus
    return found, sources


CAPABILITY_CHECKS = ("is_device_capability", "is_device_capability_family")


def _checkpoint_gpu(test: ast.expr) -> dict[str, Any] | None:
    """One ``is_device_capability[_family](N) [and head_k_dim == K] [and get_cuda_runtime_major() >= R]`` test."""
    calls = [
        n for n in ast.walk(test)
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") in CAPABILITY_CHECKS
        and n.args and isinstance(n.args[0], ast.Constant)
    ]  # fmt: skip
    if len(calls) != 1:
        return None
    code = int(calls[0].args[0].value)  # type: ignore[attr-defined]
    rule: dict[str, Any] = {
        "capability": f"{code // 10}.{code % 10}",
        "family": getattr(calls[0].func, "attr", "") == "is_device_capability_family",
    }
    for compare in (n for n in ast.walk(test) if isinstance(n, ast.Compare) and len(n.comparators) == 1):
        right = compare.comparators[0]
        if not (isinstance(right, ast.Constant) and isinstance(right.value, int)):
            continue
        if "head_k_dim" in _names(compare.left) and isinstance(compare.ops[0], ast.Eq):
            rule["head_k_dim"] = right.value
        elif "get_cuda_runtime_major" in _names(compare.left) and isinstance(compare.ops[0], ast.GtE):
            rule["cuda_runtime_min"] = right.value
    return rule


def _prefill_checkpoints(version: str, src: Path) -> tuple[bool, str]:
    """Whether align mode adds Mamba prefill checkpoints (an extra block and a 64-token alignment where the
    FlashInfer GDN prefill runs: platforms/interface.py ``get_mamba_prefill_checkpoint_alignment``, 0.32+)."""
    rel = "vllm/platforms/interface.py"
    function = srcast.function(srcast.parse(src, rel), "_align_hybrid_block_size")
    if function is None or "get_mamba_prefill_checkpoint_alignment" not in _names(function):
        return False, url(version, rel)
    line = next(
        n.lineno for n in ast.walk(function)
        if isinstance(n, ast.Name) and n.id == "get_mamba_prefill_checkpoint_alignment"
    )  # fmt: skip
    return True, url(version, rel, line)


def _in_flight_window(version: str, src: Path) -> tuple[bool, str]:
    """Whether windowed layers reserve ``window - 1 + max_in_flight_tokens`` (one batch per concurrent step:
    2 under async scheduling at pipeline size 1) rather than one batch: a ``max_in_flight_tokens`` argument
    in vllm/v1/kv_cache_interface.py (0.26+), with VllmConfig.max_concurrent_batches in vllm/config/vllm.py."""
    rel = "vllm/v1/kv_cache_interface.py"
    text = (src / rel).read_text(encoding="utf-8") if (src / rel).is_file() else ""
    line = next((n for n, row in enumerate(text.splitlines(), 1) if "max_in_flight_tokens" in row), 0)
    if not line:
        return False, f"{url(version, rel)} (a windowed layer reserves one batch)"
    config = "vllm/config/vllm.py"
    rows = (src / config).read_text(encoding="utf-8").splitlines() if (src / config).is_file() else []
    batches = next((n for n, row in enumerate(rows, 1) if "def max_concurrent_batches" in row), 0)
    return True, f"{url(version, rel, line)}; {url(version, config, batches)} (one batch per concurrent step)"


def hybrid_kv_cache(
    version: str, src: Path, options: dict[str, Any], engine: str | None
) -> tuple[dict[str, Any] | None, str]:
    """The hybrid KV-cache manager's layout (ReleaseFacts.hybrid_kv_cache), or None with the reason.

    A release has the manager when its V1 engine is the default, ``--disable-hybrid-kv-cache-manager``
    exists and is off by default, and the KV planning code groups layers of several types by page
    size (``_get_kv_cache_(config|groups)_uniform_page_size``). Each sub-field is read from the
    code cited; a sub-field that cannot be read leaves the whole fact unset (the estimator hedges).
    """
    if engine != "v1":
        return None, "the default engine is V0: every layer caches every token"
    option = options.get("disable_hybrid_kv_cache_manager")
    if option is None:
        return None, "no --disable-hybrid-kv-cache-manager: V1 unifies all attention layers as full attention"
    if option.get("default") is True:
        return None, "the hybrid KV-cache manager is off by default"
    grouping = _group_rule(version, src)
    if grouping is None:
        return None, "no page-size-unified grouping in vllm/v1/core: layout not read"
    reported = _reported_tokens(version, src)
    if reported is None:
        return None, "the 'GPU KV cache size' formula could not be read: layout not modelled"
    sliding = _has_class(src, "vllm/v1/kv_cache_interface.py", "SlidingWindowSpec")
    chunked_spec = _has_class(src, "vllm/v1/kv_cache_interface.py", "ChunkedLocalAttentionSpec")
    gate = _chunked_gate(version, src) if chunked_spec else None
    chunked = bool(chunked_spec) and (gate[0] if gate else True)
    block, block_scales, block_source = _linear_state_block(version, src)
    blackwell, blackwell_family, blackwell_source = _blackwell_alignment(version, src)
    state_blocks, state_blocks_source = _linear_state_blocks(version, src)
    prefix_caching, prefix_source = _hybrid_prefix_caching(version, src)
    ssm_from_config, ssm_source = _ssm_dtype_from_config(version, src)
    kda_float32, kda_source = _kda_state_float32(version, src)
    ssm_defaults, ssm_defaults_source = _ssm_dtype_defaults(version, src)
    mamba2_blocks, mamba2_blocks_source = _mamba2_checkpoint_blocks(version, src)
    checkpoints, checkpoints_source = _prefill_checkpoints(version, src)
    checkpoint_layout, checkpoint_sources = _checkpoint_layout(version, src) if checkpoints else ({}, [])
    in_flight, in_flight_source = _in_flight_window(version, src)
    interface = "vllm/v1/kv_cache_interface.py"
    ratio = grouping[0]
    group_text = (
        f"the largest type's layer count when max < min * {ratio}, else the smallest's" if ratio
        else "the smallest type's layer count"
    )  # fmt: skip
    token_text = (
        "int(max_concurrency * max_model_len)" if reported[0] == "max_concurrency"
        else "num_blocks // len(groups) * block_size"
    )  # fmt: skip
    sliding_text = (
        f"{url(version, interface, sliding)} (SlidingWindowSpec: a sliding layer keeps its window's blocks)" if sliding
        else f"{url(version, interface)} (no SlidingWindowSpec: sliding layers cache every token)"
    )  # fmt: skip
    chunked_text = (
        f"{url(version, interface, chunked_spec)} (ChunkedLocalAttentionSpec)" if chunked_spec
        else f"{url(version, interface)} (no ChunkedLocalAttentionSpec: chunked layers cache every token)"
    )  # fmt: skip
    if gate:
        chunked_text += f"; {gate[1]} (hybrid manager {'kept' if gate[0] else 'turned off'} for chunked local "
        chunked_text += "attention by default)"
    if block and block_scales:
        block_text = f"max({block}, block_size) * cdiv(state page, max({block}, block_size) * per-token page)"
    elif block:
        block_text = f"{block} * cdiv(state page, {block} * per-token page)"
    else:
        block_text = "another rule: not modelled"
    if prefix_caching is None and state_blocks != "one":
        state_blocks = None  # the state's blocks per request hang on prefix caching, whose default is not read
    sources = [
        f"{grouping[1]} (group size: {group_text})",
        f"{reported[1]} (GPU KV cache size: {token_text})",
        sliding_text,
        chunked_text,
        f"{block_source} (attention block for a linear layer's state: {block_text})",
        *(
            [
                f"{blackwell_source} (compute capability {'10.x' if blackwell_family else '10.0'}, head size 256, "
                f"FlashInfer or no backend chosen: multiple {blackwell})"
            ]
            if blackwell
            else []
        ),
        f"{state_blocks_source} (a linear layer's blocks per request: {state_blocks or 'not read'})",
        f"{prefix_source} (prefix caching for hybrid models by default: {prefix_caching})",
        f"{ssm_source} (recurrent state dtype from the config's mamba_ssm_dtype: "
        f"{', '.join(ssm_from_config) or 'none'})",
        f"{kda_source} (KDA recurrent state float32: {kda_float32})",
        f"{checkpoints_source} (align-mode prefill checkpoints: {checkpoints})",
        *(f"{where} (prefill checkpoints where FlashInfer's GDN prefill runs)" for where in checkpoint_sources),
        in_flight_source,
        f"{ssm_defaults_source} (recurrent state dtype by architecture when auto: "
        f"{', '.join(f'{a} {d}' for a, d in ssm_defaults) or 'none'})",
        f"{mamba2_blocks_source} (Mamba-2 prefill checkpoint blocks in align mode: {mamba2_blocks})",
    ]
    fact = {
        "sliding_window_blocks": bool(sliding),
        "chunked_local_attention": chunked,
        "group_size_ratio": grouping[0],
        "reported_tokens": reported[0],
        "linear_state_block": block,
        "linear_state_block_scales": block_scales,
        "linear_state_block_blackwell": blackwell,
        "linear_state_block_blackwell_family": blackwell_family,
        "linear_state_blocks": state_blocks,
        "hybrid_prefix_caching": bool(prefix_caching),
        "ssm_dtype_from_config": list(ssm_from_config),
        "kda_state_float32": kda_float32,
        "ssm_dtype_defaults": [list(pair) for pair in ssm_defaults],
        "mamba2_checkpoint_blocks": mamba2_blocks,
        "linear_prefill_checkpoints": checkpoints,
        **checkpoint_layout,
        "in_flight_window": in_flight,
        "source": "; ".join(sources),
    }
    return fact, ""


def profile_sampler_sorts_vocab(version: str, src: Path, engine: str | None) -> dict[str, Any] | None:
    """Whether V1's profiling sampler warm-up sorts the whole vocabulary: ``_dummy_sampler_run`` in
    vllm/v1/worker/gpu_model_runner.py passes ``top_k=...(logits.size(1) - 1)`` with a ``top_p`` and the top-k/top-p
    op (vllm/v1/sample/ops/topk_topp_sampler.py) sorts the logits (``.sort(``); False where the warm-up
    is written otherwise (0.34's gpu/model_runner.py: SamplingParams.for_sampler_warmup, not modelled);
    None for V0 or where no ``_dummy_sampler_run`` is found."""
    if engine != "v1":
        return None
    for rel in ("vllm/v1/worker/gpu_model_runner.py", "vllm/v1/worker/gpu/model_runner.py"):  # 0.34: gpu/
        tree = srcast.parse(src, rel)
        function = srcast.functions(tree).get("_dummy_sampler_run") if tree else None
        if function is not None:
            break
    else:
        return None
    top_k = next(
        (
            kw for n in ast.walk(function) if isinstance(n, ast.Call) for kw in n.keywords
            if kw.arg == "top_k" and any(other.arg == "top_p" for other in n.keywords) and any(
                isinstance(b, ast.BinOp) and isinstance(b.op, ast.Sub) and isinstance(b.right, ast.Constant)
                and b.right.value == 1 and {"size", "shape"} & _names(b.left)
                for b in ast.walk(kw.value)
            )
        ),
        None,
    )  # fmt: skip
    ops = "vllm/v1/sample/ops/topk_topp_sampler.py"
    sort = _find_line(
        src, ops, lambda n: isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "sort"
    )
    value = top_k is not None and sort is not None
    where = url(version, rel, top_k.value.lineno if top_k is not None else function.lineno)
    return {"value": value, "source": f"{where}; {url(version, ops, sort)}" if sort else where}


def facts(version: str, src: Path, options: dict[str, dict[str, Any]], exclusive: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    methods = [m for m in options.get("quantization", {}).get("choices") or [] if m is not None]
    quant = quantization_methods(version, src, [m for m in methods if isinstance(m, str)])
    if quant:
        out["quantization_methods"] = quant
    engine = default_engine(version, src)
    if engine:
        out["default_engine"] = engine
    for name, found in (
        ("block_size_default", block_size_default(version, src, options)),
        ("image_cuda", image_cuda(version, src)),
        ("block_size_multiple", block_size_multiple(version, src, engine["value"] if engine else None)),
        ("cuda_graph_memory_in_budget", cuda_graph_memory_in_budget(version, src, engine["value"] if engine else None)),
    ):
        if found:
            out[name] = found
    hybrid, _why = hybrid_kv_cache(version, src, options, engine["value"] if engine else None)
    if hybrid:
        out["hybrid_kv_cache"] = hybrid
    sampler = profile_sampler_sorts_vocab(version, src, engine["value"] if engine else None)
    if sampler:
        out["profile_sampler_sorts_vocab"] = sampler
    import vllm_mla  # scripts/catalog/vllm_mla.py (it imports this module: loaded when first needed)

    out["mla_kv_cache"] = vllm_mla.mla_kv_cache(version, src)
    if exclusive:
        out["option_bounds_exclusive"] = exclusive
    return out


# --- releases -------------------------------------------------------------------------------


def build(version: str) -> dict[str, Any]:
    folder = fetch(version)
    src = folder / "src"
    dumped = dump(version)
    if '"<stub>"' in json.dumps(dumped["actions"]):
        raise RuntimeError(f"{version}: a stubbed module's value reached a parser action; not catalogued")
    options = entries(dumped, {})
    methods = dumped.get("quantization_methods")
    if "quantization" in options and not options["quantization"]["choices"] and methods:
        options["quantization"]["choices"] = list(methods)
    inclusive, exclusive = bounds(version, src, options)
    for key, found in inclusive.items():
        options[key].update(found)
    for key, (env, rel) in ENV_OF.items():
        path = src / rel
        if key in options and path.is_file() and env in path.read_text(encoding="utf-8"):
            options[key]["env"] = env
    artifact = json.loads((folder / "artifact.json").read_text())
    files = [
        "vllm/entrypoints/cli/serve.py" if (src / "vllm/entrypoints/cli/serve.py").is_file() else "vllm/scripts.py"
    ]
    files += ["vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py", *_config_files(src)]
    stubbed = [s for s in dumped["stubbed"] if s not in EXTENSIONS]
    method = (
        f"ran the release's own `vllm serve` parser (its CLI main(), captured at parse_args; "
        f"scripts/catalog/vllm_dump.py, Python {dumped['python']}) from the wheel's source and dumped every "
        f"argparse action; compiled extensions and NVML replaced (one GPU, CUDA platform); host-env adaptations "
        f"and modules the host env lacks made inert: {', '.join(stubbed) or 'none'}. Bounds: AST of the config classes' "
        "`if self.x > N: raise` checks and pydantic Field(ge/gt/le/lt). --quantization choices: the parser's, or where it lists none the methods ModelConfig accepts (QUANTIZATION_METHODS). Facts: AST of the files cited."
    )
    return {
        "version": version,
        "source": url(version, "vllm/engine/arg_utils.py"),
        "provenance": {
            "artifact": artifact["artifact"],
            "sha256": artifact["sha256"],
            "tag": tag(version),
            "files": files,
            "method": method,
            "tool": TOOL_VERSION,
        },
        "partial": False,
        "options": options,
        "facts": facts(version, src, options, exclusive),
    }


def removed(releases: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per release: the options an earlier catalogued release had and it lacks, with removed_in."""
    order = sorted(releases, key=vkey)
    out: dict[str, dict[str, Any]] = {}
    last_seen: dict[str, int] = {}
    for index, version in enumerate(order):
        keys = set(releases[version])
        gone = {}
        for key, seen in sorted(last_seen.items()):
            if key not in keys:
                first_without = order[seen + 1]
                gone[key] = {
                    "removed_in": first_without,
                    "replaced_by": None,
                    "source": url(first_without, "vllm/engine/arg_utils.py"),
                }
        for key in keys:
            last_seen[key] = index
        out[version] = gone
    return out


def memory_facts(versions: list[str]) -> None:
    """Derive the memory facts (hybrid_kv_cache, profile_sampler_sorts_vocab) of catalogued releases from their source and write
    them into the release files, replacing what the files had (hand-set facts included); the rest of
    each file is kept. A fact the source does not yield is removed and its reason printed."""
    folder = releases_dir(ENGINE)
    pool = read_pool(ENGINE)
    for version in versions:
        path = folder / f"{version}.json"
        data = json.loads(path.read_text())
        options = {k: pool[v] if isinstance(v, str) else v for k, v in data["options"].items()}
        src = fetch(version) / "src"
        engine = (data.get("facts", {}).get("default_engine") or {}).get("value")
        found, why = hybrid_kv_cache(version, src, options, engine)
        facts_ = data.setdefault("facts", {})
        if found:
            facts_["hybrid_kv_cache"] = found
        else:
            facts_.pop("hybrid_kv_cache", None)
        sampler = profile_sampler_sorts_vocab(version, src, engine)
        if sampler:
            facts_["profile_sampler_sorts_vocab"] = sampler
        else:
            facts_.pop("profile_sampler_sorts_vocab", None)
        ReleaseFacts.model_validate(facts_)
        path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{version}: hybrid_kv_cache {'derived' if found else 'none: ' + why}", file=sys.stderr)


def main(argv: list[str]) -> int:
    force = "--force" in argv
    if "--memory-facts" in argv:
        memory_facts(
            [a for a in argv if not a.startswith("--")]
            or sorted((p.stem for p in releases_dir(ENGINE).glob("*.json") if p.name != "options.json"), key=vkey)
        )
        return 0
    dump_only = "--dump-only" in argv
    wanted = [a for a in argv if not a.startswith("--")]
    versions = wanted or pypi_versions()
    if dump_only:
        for version in versions:
            dump(version)
        return 0
    folder = releases_dir(ENGINE)
    pool = read_pool(ENGINE)
    built = {v: build(v) for v in versions if force or v not in HAND}
    keys: dict[str, set[str]] = {v: set(r["options"]) for v, r in built.items()}
    for path in folder.glob("*.json"):
        if path.name != "options.json" and path.stem not in keys:
            keys[path.stem] = set(json.loads(path.read_text())["options"])
    gone = removed({v: k for v, k in keys.items() if vkey(v) >= FIRST})
    for version, release in built.items():
        path = folder / f"{version}.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
        merged = dict(old.get("facts") or {})
        derived = release["facts"]
        if gone[version]:
            derived["removed_options"] = gone[version]
        mine = (old.get("provenance") or {}).get("tool") == TOOL_VERSION
        for name, value in derived.items():
            if mine or name not in merged:  # a hand-written fact stays; this tool's own are rebuilt
                merged[name] = value
        release["facts"] = merged
        if old.get("notes"):
            release["notes"] = old["notes"]
        write_release(ENGINE, release, pool)
        print(f"{version}: {len(release['options'])} options", file=sys.stderr)
    for version in sorted(set(keys) - set(built), key=vkey):
        # Hand-extracted catalogs keep everything but "removed in", which the catalogued range
        # now tells exactly (their own entries came from a sample of releases).
        path = folder / f"{version}.json"
        data = json.loads(path.read_text())
        removed_options = data.setdefault("facts", {}).setdefault("removed_options", {})
        changed = False
        for key, found in gone.get(version, {}).items():
            old = removed_options.get(key)
            # a finer range can only move "removed in" earlier: keep the hand value when it is earlier
            if old is None or vkey(found["removed_in"]) < vkey(old.get("removed_in") or "99"):
                removed_options[key] = {**found, "replaced_by": (old or {}).get("replaced_by")}
                changed = True
        if changed:
            data.pop("engine", None)
            write_release(ENGINE, data, pool)
            print(f"{version}: removed_in updated from the catalogued range", file=sys.stderr)
    write_pool(ENGINE, pool)
    prune_pool(ENGINE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
