"""Regenerate SGLang's release catalogs from the released packages on PyPI.

    python scripts/catalog/sglang.py             # every release from 0.4.0 to the newest on PyPI
    python scripts/catalog/sglang.py 0.5.6 0.5.23

For each release: download its sdist (or, where it has none, its CPython 3.11 x86_64
wheel) into ~/.cache/servespec/catalog-src/sglang/ (checked against PyPI's sha256),
extract its ``sglang/`` Python sources to a temporary directory, and run that release's own
parser (``ServerArgs.add_cli_args(argparse.ArgumentParser())``) with the SGLang parser
environment's interpreter (``scripts/parser-envs``, or $SERVESPEC_SGLANG_PARSER_PYTHON);
``sglang_parser.py`` says what may be stubbed and how that is kept from reaching the parser.
Each action becomes one option entry (engines/FORMAT.md). Typed facts, read from the same
artefacts: ``quantization_methods`` (the ``--quantization`` choices, each with the minimum
compute capability its config class's ``get_min_capability`` returns, from the AST of
``srt/layers/quantization/**.py``), and ``removed_options`` (every option of an earlier
catalogued release this one lacks, with the first release that lacked it), and ``memory``
(``mem_fraction_static``'s default, the multimodal cut and the KV pool's baseline, each with the
constants the release's own source holds: ``sglang_memory.py``).

    python scripts/catalog/sglang.py --memory-only   # refresh facts.memory of every catalogued release

``--memory-only`` reads only the cached artefacts' source files (no parser run) and rewrites
``facts.memory`` in the release catalogs already written.

A development tool: never imported by the CLI.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_io import (
    TOOL_VERSION,
    _dump,
    prune_pool,
    read_pool,
    releases_dir,
    write_pool,
    write_release,
)
from sglang_memory import memory_facts, read_sources

ENGINE = "sglang"
CACHE = Path.home() / ".cache" / "servespec" / "catalog-src" / "sglang"
INDEX = "https://pypi.org/simple/sglang/"
FIRST = (0, 4, 0)
REPO_URL = "https://github.com/sgl-project/sglang/blob"
HELPER = Path(__file__).resolve().parent / "sglang_parser.py"
PARSER_PYTHON = Path(
    os.environ.get(
        "SERVESPEC_SGLANG_PARSER_PYTHON",
        Path.home() / ".cache" / "servespec" / "parser-envs" / "sglang-0.5.23" / "bin" / "python",
    )
)
WHEEL_TAG = "cp311-cp311-manylinux_2_34_x86_64"


# --- versions and artefacts -------------------------------------------------------------


def pep440_key(version: str) -> tuple[int, ...]:
    """0.4.1 < 0.4.1.post1 < 0.4.2 (final releases only)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)*)(?:\.post(\d+))?", version)
    if not match:
        raise ValueError(version)
    release = tuple(int(p) for p in match.group(1).split("."))
    release = release + (0,) * (3 - len(release))
    return (*release, int(match.group(2) or -1) + 1)


def pypi_files() -> dict[str, dict[str, Any]]:
    """Final releases >= 0.4.0 -> the artefact to read (sdist, else the cp311 x86_64 wheel)."""
    request = urllib.request.Request(INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        index = json.load(answer)
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in index["files"]:
        if entry.get("yanked"):
            continue
        name = entry["filename"]
        sdist = re.fullmatch(r"sglang-(\d+(?:\.\d+)*(?:\.post\d+)?)\.tar\.gz", name)
        wheel = re.fullmatch(rf"sglang-(\d+(?:\.\d+)*(?:\.post\d+)?)-(?:py3-none-any|{WHEEL_TAG})\.whl", name)
        if sdist:
            found.setdefault(sdist.group(1), {})["sdist"] = entry
        elif wheel:
            found.setdefault(wheel.group(1), {}).setdefault("wheel", entry)
    chosen = {
        v: files.get("sdist") or files["wheel"] for v, files in found.items() if "sdist" in files or "wheel" in files
    }
    return {v: chosen[v] for v in sorted(chosen, key=pep440_key) if pep440_key(v)[:3] >= FIRST}


def fetch(entry: dict[str, Any]) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / entry["filename"]
    want = entry["hashes"]["sha256"]
    if path.is_file() and sha256(path) == want:
        return path
    with urllib.request.urlopen(entry["url"], timeout=600) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != want:
        raise SystemExit(f"{entry['filename']}: sha256 differs from PyPI's")
    path.write_bytes(data)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extract(artifact: Path, dest: Path) -> Path:
    """The release's ``sglang/**.py`` (and package data read at import) under ``dest``; returns the root."""
    keep = re.compile(r"(?:^|/)(sglang/.*\.(?:py|json|yaml|txt))$")
    if artifact.name.endswith(".tar.gz"):
        with tarfile.open(artifact) as tar:
            for member in tar.getmembers():
                match = keep.search(member.name)
                # sdists: sglang-X/sglang/... (0.4) or sglang-X/python/sglang/...; never a test tree
                if member.isfile() and match and "/test/" not in member.name.split("sglang/", 1)[0]:
                    target = dest / match.group(1)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    assert source is not None
                    target.write_bytes(source.read())
    else:
        with zipfile.ZipFile(artifact) as wheel:
            for name in wheel.namelist():
                if name.startswith("sglang/") and keep.search(name):
                    target = dest / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(wheel.read(name))
    if not (dest / "sglang" / "srt" / "server_args.py").is_file():
        raise SystemExit(f"{artifact.name}: no sglang/srt/server_args.py")
    return dest


EXTRA_PACKAGES = ("dill==0.4.1",)
"""Real pure-Python packages some releases compute import-time values with (dill pickles a
default logit processor in 0.5.15+); installed once beside the artefacts, never stubbed."""


def extra_site() -> list[str]:
    folder = CACHE / "extra-site"
    if not (folder / "dill").is_dir():
        subprocess.run(
            [str(PARSER_PYTHON), "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder), *EXTRA_PACKAGES],
            check=True,
        )
    return [str(folder)]


def run_parser(root: Path) -> dict[str, Any]:
    if not PARSER_PYTHON.is_file():
        raise SystemExit(f"no SGLang parser environment at {PARSER_PYTHON} (run scripts/parser-envs sglang-0.5.23)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["SGLANG_USE_CPU_ENGINE"] = "1"
    for _ in range(8):
        done = subprocess.run(  # fixed arguments: our own helper
            [str(PARSER_PYTHON), str(HELPER), str(root), *extra_site()],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            timeout=600,
            check=False,
        )
        if done.returncode == 0:
            break
        found = re.findall(r"^SGLANG_CATALOG_STUBS=(.*)$", done.stderr, re.M)
        if not found or found[-1] == env.get("SGLANG_CATALOG_STUBS"):
            raise RuntimeError(done.stderr[-3000:])
        env["SGLANG_CATALOG_STUBS"] = found[-1]  # a fresh process with the stubs named up front
    else:
        raise RuntimeError(done.stderr[-3000:])
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1]
    result: dict[str, Any] = json.loads(line)
    return result


# --- option entries -----------------------------------------------------------------------

_BOOL_ACTIONS = {"_StoreTrueAction": "flag", "_StoreFalseAction": "flag", "BooleanOptionalAction": "negatable"}
_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "bool", "loads": "dict"}


def first_sentence(text: str | None) -> str:
    """The help's first sentence (``e.g.``/``i.e.`` do not end one; a label such as "Deprecated." takes the next)."""
    if not text:
        return ""
    text = " ".join(text.split())
    ends = [
        m.end()
        for m in re.finditer(r"[.!?](?=\s|$)", text)
        if not re.search(r"\b(e\.g|i\.e|etc|vs)\.$", text[: m.end()])
    ]
    if not ends:
        return text
    first = text[: ends[0]]
    label = re.fullmatch(r"\(?deprecated[.)]?|\S+ only\.", first.strip(), re.I)
    if label and len(ends) > 1:  # "Deprecated.", "DFLASH only.": a label, not the sentence
        first = text[: ends[1]]
    return first


def _value_type(action: dict[str, Any]) -> str:
    kind = action["type"]
    if kind in _TYPES:
        return _TYPES[kind]
    if kind:  # a converter of the release's own: named for what it returns
        for pattern, name in (("list", "list"), ("int", "int"), ("float", "float"), ("json|dict|config|loads", "dict")):
            if re.search(pattern, kind, re.I):
                return name
        return "str"
    choices = action["choices"]
    if choices and all(isinstance(c, str) for c in choices):
        return "str"
    if choices and all(isinstance(c, int) and not isinstance(c, bool) for c in choices):
        return "int"
    default = action["default"]
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    return "str"


def entry_of(action: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(catalog key, option entry) of one argparse action as sglang_parser.py dumped it."""
    strings = action["option_strings"]
    longs = [s for s in strings if s.startswith("--")]
    # The spelling named like the ServerArgs field is the flag: the key then stays the same when a
    # release reorders its spellings (--tensor-parallel-size/--tp-size in 0.4, --tp-size first later).
    named = [s for s in longs if s[2:].replace("-", "_") == action["dest"]]
    flag = (named or longs or strings)[0]
    key = flag.lstrip("-").replace("-", "_")
    mro = action["action_mro"]
    bool_form = next((form for name, form in _BOOL_ACTIONS.items() if name in mro), None)
    nargs = action["nargs"]
    if bool_form is None and nargs == 0 and isinstance(action["const"], bool):
        bool_form = "flag"  # the release's own store-true action (DeprecatedStoreTrueAction and the like)
    if bool_form:
        value_type = "bool"
        if bool_form == "negatable":
            flag = strings[0]
    elif nargs in ("+", "*") or (isinstance(nargs, int) and nargs > 1) or "_AppendAction" in mro:
        value_type = "list"
    else:
        value_type = _value_type(action)
        if value_type == "bool":
            bool_form = "value"  # type=bool: takes a value (0.4.1.post2's --prefill-only-one-req)
    default = action["default"]
    if isinstance(default, dict) and set(default) == {"repr"}:
        default = None  # an object argparse holds (a callable, a sentinel): not a value
    help_text = action["help"] or ""
    deprecated = bool(re.search(r"deprecat", " ".join(mro), re.I)) or bool(
        re.match(r"\s*[(\[]?deprecated\b", help_text, re.I)
    )
    entry: dict[str, Any] = {
        "flag": flag,
        "aliases": [s for s in strings if s != flag and not (bool_form == "negatable" and s == "--no-" + flag[2:])],
        "env": None,
        "config_key": None,
        "type": value_type,
        "choices": action["choices"],
        "min": None,
        "max": None,
        "default": default,
        "bool_form": bool_form,
        "nargs": nargs if nargs in ("+", "*", "?") else None,
        "help": first_sentence(help_text),
        "deprecated": deprecated,
    }
    if action["required"]:
        entry["required"] = True
    if action["dest"] != key:
        entry["dest"] = action["dest"]
    return key, entry


# --- quantization methods -------------------------------------------------------------------


_OFF_CUDA = re.compile(
    r"^_?(is_)?(npu|musa|hip|cpu|xpu|mps|hpu|gfx\w*|sm\w*_supported|.*_required)$|^_?is_(npu|musa|hip|cpu|xpu|mps|hpu)\w*$"
)
_ON_CUDA = re.compile(r"^_?is_cuda(_alike)?$")


class _UnknownError(Exception):
    """get_min_capability's value on CUDA cannot be read from its source alone."""


_METHOD: list[str] = [""]
"""The --quantization method being read: ``self.use_mxfp8`` is true for ``mxfp8`` only."""


def _on_cuda(node: ast.expr) -> bool:
    """A platform condition as it reads on an NVIDIA GPU (is_cuda() true; NPU, MUSA, HIP, CPU, XPU false)."""
    if isinstance(node, ast.Call) and not node.args:
        return _on_cuda(node.func)
    if isinstance(node, ast.Attribute) and _is_self(node) and re.match(r"use_\w+$", node.attr):
        return node.attr.removeprefix("use_") in _METHOD[0]
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if name and _ON_CUDA.match(name):
        return True
    if name and _OFF_CUDA.match(name) and not (isinstance(node, ast.Attribute) and _is_self(node)):
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _on_cuda(node.operand)
    if isinstance(node, ast.BoolOp):
        return _bool_op(node)
    raise _UnknownError


def _bool_op(node: ast.BoolOp) -> bool:
    values = []
    for value in node.values:  # short-circuit: a known False ends an `and`, a known True an `or`
        try:
            known = _on_cuda(value)
        except _UnknownError:
            values.append(None)
            continue
        if known is isinstance(node.op, ast.Or):
            return known
        values.append(known)
    if None in values:
        raise _UnknownError
    return isinstance(node.op, ast.And)


def _is_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def _value(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.IfExp):
        return _value(node.body if _on_cuda(node.test) else node.orelse)
    raise _UnknownError


def _run(body: list[ast.stmt]) -> int | None:
    """The value the statements return on CUDA, None when they fall through."""
    for stmt in body:
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                raise _UnknownError
            return _value(stmt.value)
        if isinstance(stmt, ast.If):
            found = _run(stmt.body if _on_cuda(stmt.test) else stmt.orelse)
            if found is not None:
                return found
        elif isinstance(stmt, ast.Raise):
            raise _UnknownError
        elif not isinstance(stmt, (ast.Expr, ast.Pass)):
            raise _UnknownError  # an assignment or loop: not a plain constant
    return None


def cuda_min_capability(func: ast.FunctionDef) -> str | None:
    """``get_min_capability()`` on an NVIDIA GPU as "major.minor", or None when it is not a constant there."""
    try:
        value = _run(func.body)
    except _UnknownError:
        return None
    return None if value is None else f"{value // 10}.{value % 10}"


def min_capabilities(root: Path) -> dict[str, list[Any]]:
    """--quantization method -> [min capability on CUDA or None, file of its config class].

    Platform branches (NPU, MUSA, HIP, CPU, XPU) are read as on an NVIDIA GPU, and
    ``self.use_<x>`` as true for the method named like ``<x>`` (fp8 vs mxfp8, one class);
    a method whose CUDA value cannot be read this way (it raises, or depends on other state),
    or whose class name is defined twice, gets None.
    """
    functions: dict[str, tuple[ast.FunctionDef, str]] = {}
    twice: set[str] = set()
    folder = root / "sglang" / "srt" / "layers" / "quantization"
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            for func in cls.body:
                if isinstance(func, ast.FunctionDef) and func.name == "get_min_capability":
                    if cls.name in functions:
                        twice.add(cls.name)
                    functions[cls.name] = (func, str(path.relative_to(root)))
    found: dict[str, list[Any]] = {}
    for method, cls_name in method_classes(root).items():
        if cls_name in functions and cls_name not in twice:
            func, path = functions[cls_name]
            _METHOD[0] = method
            found[method] = [cuda_min_capability(func), path]
    return found


_REGISTRIES = {"QUANTIZATION_METHODS", "BASE_QUANTIZATION_METHODS", "VLLM_QUANTIZATION_METHODS"}


def _cuda_updates(tree: ast.Module) -> dict[str, str]:
    """``REGISTRY.update({...})`` under a module-level platform condition that holds on CUDA."""
    classes = {}
    for stmt in tree.body:
        try:
            on_cuda = isinstance(stmt, ast.If) and _on_cuda(stmt.test)
        except _UnknownError:
            on_cuda = False
        for inner in stmt.body if on_cuda and isinstance(stmt, ast.If) else []:
            call = inner.value if isinstance(inner, ast.Expr) else None
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args):
                continue
            target, table = call.func, call.args[0]
            registry = isinstance(target.value, ast.Name) and target.value.id in _REGISTRIES
            if target.attr == "update" and registry and isinstance(table, ast.Dict):
                for k, v in zip(table.keys, table.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name):
                        classes[k.value] = v.id
    return classes


def method_classes(root: Path) -> dict[str, str]:
    """--quantization method -> config class name, from the release's QUANTIZATION_METHODS dict(s)."""
    classes: dict[str, str] = {}
    folder = root / "sglang" / "srt" / "layers" / "quantization"
    for path in [folder / "__init__.py", *sorted(folder.glob("*.py"))]:
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes.update(_cuda_updates(tree))
        for node in ast.walk(tree):
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            # the registry itself, not a platform's variant of it (CPU_QUANTIZATION_METHODS)
            if not isinstance(value, ast.Dict) or not names & _REGISTRIES:
                continue
            for k, v in zip(value.keys, value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name):
                    classes.setdefault(k.value, v.id)
    return classes


def quantization_facts(version: str, caps: dict[str, list[Any]], choices: list[str] | None) -> dict[str, Any]:
    """Each --quantization choice, with the minimum its config class states on CUDA in this release's source.

    A choice whose class is not in the release's own tree (0.4.x takes most from vLLM) or whose
    minimum cannot be read gets min_capability None, sourced to the --quantization choices.
    """
    facts = {}
    for method in choices or []:
        capability, path = caps.get(method, [None, None])
        where = f"python/{path}" if capability is not None else "python/sglang/srt/server_args.py"
        facts[method] = {"min_capability": capability, "source": f"{REPO_URL}/v{version}/{where}"}
    return facts


# --- releases ----------------------------------------------------------------------------------


def source_files(root: Path) -> list[str]:
    """The files the parser's definitions live in (server_args.py and, in newer releases, arg_groups/)."""
    files = ["sglang/srt/server_args.py"]
    groups = root / "sglang" / "srt" / "arg_groups"
    if groups.is_dir():
        files += sorted(str(p.relative_to(root)) for p in groups.rglob("*.py"))
    return files


RAW_VERSION = 2
"""Raise when what :func:`read_release` or sglang_parser.py records changes (the cache of parsed
artefacts is keyed on it and the artefact's sha256)."""


def memo_path(entry: dict[str, Any]) -> Path:
    return CACHE / "parsed" / f"{entry['filename']}.{entry['hashes']['sha256'][:16]}.{RAW_VERSION}.json"


def read_release(version: str, entry: dict[str, Any]) -> dict[str, Any]:
    """What one artefact gives: the parser's actions and the quantization sources (cached by sha256)."""
    memo = memo_path(entry)
    if memo.is_file():
        cached: dict[str, Any] = json.loads(memo.read_text())
        return cached
    print(f"sglang {version}: reading {entry['filename']}", file=sys.stderr, flush=True)
    artifact = fetch(entry)
    with tempfile.TemporaryDirectory(prefix=f"sglang-{version}-") as tmp:
        root = extract(artifact, Path(tmp))
        raw = {
            **run_parser(root),
            "min_capabilities": min_capabilities(root),
            "files": source_files(root),
        }
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(json.dumps(raw, sort_keys=True))
    return raw


def build(version: str, entry: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, dict[str, Any]] = {}
    for action in raw["actions"]:
        key, option = entry_of(action)
        if key in options:
            raise RuntimeError(f"{version}: two actions for {key}")
        options[key] = option
    facts: dict[str, Any] = {}
    methods = quantization_facts(version, raw["min_capabilities"], options.get("quantization", {}).get("choices"))
    if methods:
        facts["quantization_methods"] = methods
    facts["memory"] = memory_facts(version, read_sources(fetch(entry)), entry.get("upload-time"))
    stubs = raw["stubs"]
    method = (
        "ran the release's own parser: ServerArgs.add_cli_args(argparse.ArgumentParser(prog='sglang serve')) "
        "imported from the artefact's sglang/ Python tree (extracted to a temporary directory) in the "
        "sglang-0.5.23 parser environment "
        "(torch CPU, triton), SGLANG_USE_CPU_ENGINE=1; read each action's option strings, type, choices, "
        "default, nargs, help (scripts/catalog/sglang_parser.py; dill 0.4.1 added beside it); "
        "quantization minimums from the AST of get_min_capability in srt/layers/quantization. "
        + (
            f"Stubbed (poisoned stub modules, each only after its import failed; no stub value in any "
            f"recorded action): {', '.join(stubs)}."
            if stubs
            else "Nothing stubbed."
        )
    )
    files = ["python/sglang/srt/server_args.py"]
    sources = []
    if any(f.startswith("sglang/srt/arg_groups/") for f in raw["files"]):
        files.append("python/sglang/srt/arg_groups/**")
        sources.append(f"https://github.com/sgl-project/sglang/tree/v{version}/python/sglang/srt/arg_groups")
    files.append("python/sglang/srt/layers/quantization/**")
    return {
        "version": version,
        "source": f"{REPO_URL}/v{version}/python/sglang/srt/server_args.py",
        "sources": sources,
        "commit": f"v{version}",
        "extracted_by": method,
        "provenance": {
            "artifact": entry["filename"],
            "sha256": entry["hashes"]["sha256"],
            "tag": f"v{version}",
            "files": files,
            "method": method,
            "tool": TOOL_VERSION,
        },
        "partial": False,
        "options": options,
        "facts": facts,
    }


_REPLACEMENT = re.compile(r"(?:alias (?:for|of)|[Uu]se|replaced by|in favou?r of)\s+[`'\"]?(--[a-z0-9][a-z0-9-]*)")


def add_removed(releases: list[dict[str, Any]], published: list[str]) -> None:
    """removed_options of each release: options of earlier catalogued releases it lacks.

    ``removed_in`` is the first catalogued release without the option when it directly follows
    (on PyPI) the last catalogued release with it, else None (only "absent here" is known).
    ``replaced_by``: the flag the last release with it named in its help ("Deprecated alias for
    --x", "use --x"), when the release without it has that flag.
    """
    versions = [r["version"] for r in releases]
    seen: dict[str, dict[str, Any]] = {}  # key -> the last catalogued release that had it, and its entry
    for release in releases:
        removed = {}
        spellings = {f for o in release["options"].values() for f in (o["flag"], *o["aliases"])}
        for key, last in seen.items():
            if key in release["options"] or {last["entry"]["flag"], *last["entry"]["aliases"]} & spellings:
                continue  # still there (under another key when the release reordered its spellings)
            following = versions[versions.index(last["version"]) + 1]
            adjacent = published.index(following) == published.index(last["version"]) + 1
            replacement = _REPLACEMENT.search(last["entry"]["help"] or "")
            flags = {o["flag"] for o in release["options"].values()}
            removed[key] = {
                "removed_in": following if adjacent else None,
                "replaced_by": replacement.group(1) if replacement and replacement.group(1) in flags else None,
                # the last release that still had it (its definition and help)
                "source": f"{REPO_URL}/v{last['version']}/python/sglang/srt/server_args.py",
            }
        if removed:
            release["facts"]["removed_options"] = dict(sorted(removed.items()))
        for key, option in release["options"].items():
            seen[key] = {"version": release["version"], "entry": option}


def merge_facts(old: dict[str, Any], new: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Re-derived facts win; hand-extracted ones are kept where this tool has none (a method's
    minimum it cannot read, an option removed before 0.4.0, a replacement it cannot name)."""
    facts = {**old, **new}
    methods = dict(old.get("quantization_methods", {}))
    for name, method in new.get("quantization_methods", {}).items():
        if method["min_capability"] is not None or name not in methods:
            methods[name] = method
    methods = {k: v for k, v in methods.items() if k in new.get("quantization_methods", methods)}
    if methods:
        facts["quantization_methods"] = dict(sorted(methods.items()))
    removed = dict(old.get("removed_options", {}))
    for key, entry in new.get("removed_options", {}).items():
        before = removed.get(key, {})
        removed[key] = {**entry, "replaced_by": entry["replaced_by"] or before.get("replaced_by")}
        if entry["removed_in"] is None and before.get("removed_in"):
            removed[key] = before
    removed = {k: v for k, v in removed.items() if k not in options}
    if removed:
        facts["removed_options"] = dict(sorted(removed.items()))
    return facts


def existing(version: str) -> dict[str, Any] | None:
    path = releases_dir(ENGINE) / f"{version}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def refresh_memory() -> int:
    """Rewrite facts.memory of every catalogued release from its cached (or fetched) artefact."""
    files = pypi_files()
    for path in sorted(releases_dir(ENGINE).glob("[0-9]*.json")):
        release = json.loads(path.read_text())
        version = release["version"]
        entry = files[version]
        release["facts"]["memory"] = memory_facts(version, read_sources(fetch(entry)), entry.get("upload-time"))
        release["facts"] = dict(sorted(release["facts"].items()))
        path.write_text(_dump(release))
        print(path, file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if "--memory-only" in argv:
        return refresh_memory()
    cached_only = "--cached-only" in argv  # catalog the releases already read, nothing else
    argv = [a for a in argv if a != "--cached-only"]
    files = pypi_files()
    wanted = argv or list(files)
    unknown = [v for v in wanted if v not in files]
    if unknown:
        print(f"not SGLang releases on PyPI (>= 0.4.0, final): {', '.join(unknown)}", file=sys.stderr)
        return 2
    built: dict[str, dict[str, Any]] = {}
    # removed_options needs every release from 0.4.0 up to the newest asked for.
    last = max(wanted, key=pep440_key)
    todo = [v for v in files if pep440_key(v) <= pep440_key(last)]
    if cached_only:
        todo = [v for v in todo if memo_path(files[v]).is_file()]
        wanted = [v for v in wanted if v in todo]
    with ThreadPoolExecutor(max_workers=int(os.environ.get("SERVESPEC_CATALOG_JOBS", "2"))) as pool_:
        raws = dict(zip(todo, pool_.map(lambda v: read_release(v, files[v]), todo), strict=True))
    for version in todo:
        built[version] = build(version, files[version], raws[version])
    releases = [built[v] for v in sorted(built, key=pep440_key)]
    for release in releases:
        release["facts"] = {k: v for k, v in release["facts"].items() if k != "removed_options"}
    add_removed(releases, list(files))
    pool = read_pool(ENGINE)
    for release in releases:
        if release["version"] not in wanted:
            continue
        old = existing(release["version"])
        if old and old.get("notes"):
            release["notes"] = old["notes"]
        if old and old.get("facts"):
            release["facts"] = merge_facts(old["facts"], release["facts"], release["options"])
        print(write_release(ENGINE, release, pool), file=sys.stderr)
    write_pool(ENGINE, pool)
    prune_pool(ENGINE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
