"""TGI release catalogs from the launcher's clap ``Args`` struct at each release tag.

``python scripts/catalog/tgi.py [VERSION...]`` (default: every release 2.0.0 -> 3.3.7).

The source is read from a git snapshot of github.com/huggingface/text-generation-inference
(``gitsrc.repo_dir``). ``launcher/src/main.rs`` is tokenized (a small Rust lexer: doc
comments, attributes, strings, raw strings, punctuation) and parsed structurally: the
``struct Args { ... }`` fields with their ``#[clap(...)]``/``#[arg(...)]`` attributes and
types, and every ``#[derive(ValueEnum)]`` enum with its variants' clap names. Rules:

- flag ``--<field-with-dashes>`` (``long``; ``long = "x"`` overrides); ``short`` gives
  ``-<first letter>`` (``short = 'x'`` overrides) as an alias;
- env: ``env`` -> the field name upper-cased (``env = "X"`` overrides), none without ``env``;
- type: integers -> int, f32/f64 -> float, String/PathBuf -> str, ``bool`` -> a flag,
  ``Option<bool>`` -> ``--x true|false``, ``Vec<T>`` -> list (repeatable, nargs ``*``,
  default ``[]``), ``Option<Vec<T>>`` with ``value_delimiter`` -> list of one value;
- choices: the field's type is a ValueEnum enum -> its variants' clap names (kebab-case,
  or ``#[clap(name = "...")]``);
- default: ``default_value`` parsed as the field's type; help: the first sentence of the
  doc comment; deprecated: a doc comment saying "Legacy version of" or "deprecated";
- min: the launcher (and the router binary) reject 0 for a field (``args.x == 0`` /
  ``x < 1`` followed by an error) -> min 1.

Facts: ``quantization_methods`` from the ``Quantization`` value enum, ``image_cuda`` from
the Dockerfile's ``nvidia/cuda`` base stage, ``removed_options`` from diffing ``Args``
across the releases (and 1.4.5 before 2.0.0), ``tgi_memory`` (the warm-up's KV sizing, block
sizes, the prefill budget's default) and ``context_default`` by ``tgi_memory.py``, always rebuilt.
Existing files keep their hand-written facts and notes (they win
over derived facts of the same key, so a rerun rewrites the same bytes; ``--fresh`` ignores them).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog_io import keeps_facts, read_pool, releases_dir, tagged_release, write_pool, write_release
from gitsrc import commit, repo_dir, show, tags
from tgi_memory import FILES as MEMORY_FILES
from tgi_memory import WARMUP_CLIENTS, context_default, memory_facts
from tokens import group_end, split_commas

ENGINE = "tgi"
OWNER, NAME = "huggingface", "text-generation-inference"
BLOB = f"https://github.com/{OWNER}/{NAME}/blob"
FIRST, LAST = (2, 0, 0), (3, 3, 7)
BASELINE = "v1.4.5"
"""Read (not catalogued) so that options removed at 2.0.0 are known."""
LAUNCHER = "launcher/src/main.rs"
ROUTER_MAINS = ("backends/v3/src/main.rs", "router/src/main.rs")
REPLACED_BY = {
    "disable_crash_reports": "usage_stats",
    "disable_usage_stats": "usage_stats",
    "enable_cuda_graphs": "cuda_graphs",
}
"""What replaced a removed option (from the hand-made 3.3.7 catalog; the launcher diff shows the swap)."""

INT_TYPES = {"usize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "isize"}
FLOAT_TYPES = {"f32", "f64"}
STR_TYPES = {"String", "PathBuf", "str"}


# --- a small Rust lexer -------------------------------------------------------------------


@dataclass(frozen=True)
class Tok:
    kind: str  # doc | ident | str | char | num | punct | lifetime
    text: str
    line: int


_TOKEN = re.compile(
    r"""
    (?P<doc>///(?!/)[^\n]*)
  | (?P<comment>//[^\n]*)
  | (?P<block>/\*)
  | (?P<raw>r(?P<hashes>\#*)")
  | (?P<str>b?"(?:\\.|[^"\\])*")
  | (?P<char>'(?:\\.|[^\\'])')
  | (?P<lifetime>'[A-Za-z_]\w*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\w*)
  | (?P<punct>::|->|=>|==|!=|<=|>=|&&|\|\||\.\.|\S)
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "0": "\0", "r": "\r"}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.DOTALL)


def _block_end(src: str, i: int) -> int:
    """The index after the (nested) block comment opening at ``src[i]``."""
    depth, j = 1, i + 2
    while j < len(src) and depth:
        if src.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif src.startswith("*/", j):
            depth, j = depth - 1, j + 2
        else:
            j += 1
    return j


def lex(src: str) -> list[Tok]:
    """Rust tokens: doc comments kept, other comments dropped, string contents unescaped."""
    out: list[Tok] = []
    i = 0
    line, counted = 1, 0
    space = re.compile(r"\s+")
    while i < len(src):
        gap = space.match(src, i)
        if gap:
            i = gap.end()
            continue
        m = _TOKEN.match(src, i)
        assert m, f"cannot lex at {i}"
        kind = m.lastgroup if m.lastgroup != "hashes" else "raw"
        line, counted = line + src.count("\n", counted, i), i
        text = m.group(0)
        if kind == "block":
            i = _block_end(src, i)
            continue
        if kind == "raw":
            close = '"' + m.group("hashes")
            stop = src.index(close, m.end())
            out.append(Tok("str", src[m.end() : stop], line))
            i = stop + len(close)
            continue
        i = m.end()
        if kind == "comment":
            continue
        if kind == "doc":
            text = text[3:]
        elif kind == "str":
            text = _unescape(text[text.index('"') + 1 : -1])
        elif kind == "char":
            text = _unescape(text[1:-1])
        out.append(Tok(str(kind), text, line))
    return out


@dataclass
class Attr:
    name: str  # clap | arg | derive | value | serde ...
    args: dict[str, Any]  # ident -> True | literal value | list of idents (derive)
    line: int


def parse_attr(toks: list[Tok], i: int) -> tuple[Attr, int]:
    """``#[name(args)]`` starting at ``toks[i] == '#'``; returns the attribute and the index after it."""
    end = group_end(toks, i + 1)
    body = toks[i + 2 : end]
    name = body[0].text if body else ""
    args: dict[str, Any] = {}
    if len(body) > 1 and body[1].text == "(":
        inner = body[2 : group_end(body, 1)]
        for part in split_commas(inner, angles=True):
            key = part[0].text
            if len(part) == 1:
                args[key] = True
            elif part[1].text == "=":
                value = part[2:]
                args[key] = value[0].text if len(value) == 1 else " ".join(t.text for t in value)
                args[key + ".kind"] = value[0].kind if len(value) == 1 else "expr"
            else:
                args[key] = " ".join(t.text for t in part[1:])
    return Attr(name, args, toks[i].line), end + 1


@dataclass
class Item:
    name: str
    docs: list[str] = field(default_factory=list)
    attrs: list[Attr] = field(default_factory=list)
    type_toks: list[Tok] = field(default_factory=list)
    line: int = 0

    def clap(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for attr in self.attrs:
            if attr.name in ("clap", "arg", "value"):
                merged.update(attr.args)
        return merged


def _member_end(toks: list[Tok], i: int, end: int) -> int:
    """The index of the comma (or ``end``) closing a member that continues at ``toks[i]``."""
    depth = 0
    for j in range(i, end):
        t = toks[j]
        if t.kind == "punct" and t.text in "([{<":
            depth += 1
        elif t.kind == "punct" and t.text in ")]}>":
            depth -= 1
        elif depth == 0 and t.text == ",":
            return j
    return end


def parse_members(toks: list[Tok], start: int, end: int, *, fields: bool) -> list[Item]:
    """The fields of a struct body or the variants of an enum body (``toks[start:end]``)."""
    items: list[Item] = []
    docs: list[str] = []
    attrs: list[Attr] = []
    i = start
    while i < end:
        tok = toks[i]
        if tok.kind == "doc":
            docs.append(tok.text)
            i += 1
        elif tok.text == "#" and toks[i + 1].text == "[":
            attr, i = parse_attr(toks, i)
            attrs.append(attr)
        elif tok.kind == "ident" and tok.text == "pub":
            i += 1
            if toks[i].text == "(":
                i = group_end(toks, i) + 1
        elif tok.kind == "ident":
            item = Item(tok.text, docs, attrs, line=tok.line)
            j = _member_end(toks, i + 1, end)
            rest = toks[i + 1 : j]
            item.type_toks = rest[1:] if fields and rest and rest[0].text == ":" else rest
            items.append(item)
            docs, attrs = [], []
            i = j + 1
        else:
            i += 1
    return items


@dataclass
class Enum:
    name: str
    variants: list[Item]
    start_line: int
    end_line: int

    def values(self) -> list[str]:
        out = []
        for variant in self.variants:
            clap = variant.clap()
            if clap.get("skip"):
                continue
            out.append(str(clap["name"]) if "name" in clap else kebab(variant.name))
        return out


def kebab(name: str) -> str:
    """clap's default ValueEnum / long name: heck's kebab case (no split before digits)."""
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+[0-9]*", name)
    return "-".join(w.lower() for w in words) if words else name.lower()


def find_items(toks: list[Tok]) -> tuple[list[Item] | None, int, dict[str, Enum]]:
    """``struct Args`` fields (with its line) and every ValueEnum enum of a file."""
    args: list[Item] | None = None
    args_line = 0
    enums: dict[str, Enum] = {}
    derives: list[str] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok.text == "#" and i + 1 < len(toks) and toks[i + 1].text == "[":
            attr, j = parse_attr(toks, i)
            if attr.name == "derive":
                derives += [t.text for t in toks[i + 3 : j - 2] if t.kind == "ident"]
            i = j
            continue
        if tok.kind == "ident" and tok.text in ("struct", "enum") and i + 2 < len(toks):
            name = toks[i + 1].text
            j = i + 2
            while j < len(toks) and toks[j].text not in ("{", ";", "("):
                j += 1
            if j < len(toks) and toks[j].text == "{":
                end = group_end(toks, j)
                if tok.text == "struct" and name == "Args":
                    args, args_line = parse_members(toks, j + 1, end, fields=True), tok.line
                elif tok.text == "enum" and "ValueEnum" in derives:
                    enums[name] = Enum(name, parse_members(toks, j + 1, end, fields=False), tok.line, toks[end].line)
                derives = []
                i = end + 1
                continue
        if tok.kind == "ident" and tok.text not in ("pub",):
            derives = [] if tok.text in ("fn", "impl", "struct", "enum", "mod", "use") else derives
        i += 1
    return args, args_line, enums


# --- options ------------------------------------------------------------------------------


def first_sentence(docs: list[str]) -> str | None:
    """The first sentence of a doc comment: up to '. ', a blank line, or a line break before a capital."""
    lines = [d[1:] if d.startswith(" ") else d for d in docs]
    text = ""
    for k, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            if text:
                break
            continue
        text = f"{text} {stripped}" if text else stripped
        for m in re.finditer(r"(?<=[a-z0-9`)\]])\.(\s|$)", text):
            if not re.search(r"\b(?:i\.e|e\.g|etc|vs)$", text[: m.start()]):
                return text[: m.start() + 1]
        following = lines[k + 1].strip() if k + 1 < len(lines) else ""
        if following and following[0].isupper() and not stripped.endswith((",", "(", "`", "-", ":")):
            break
    return text or None


def type_of(toks: list[Tok]) -> tuple[bool, list[str]]:
    """(is Option<...>, the remaining type path words) of a field type."""
    words = [t.text for t in toks if t.kind == "ident"]
    if words and words[0] == "Option":
        return True, words[1:]
    return False, words


def parse_default(text: str, kind: str) -> Any:
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "bool":
        return text == "true"
    return text


def value_shape(item: Item, enums: dict[str, Enum]) -> dict[str, Any]:
    """type, choices, bool_form, nargs and the implicit default of a field, from its Rust type."""
    optional, words = type_of(item.type_toks)
    inner = words[-1] if words else "String"
    shape: dict[str, Any] = {"type": "str", "choices": None, "bool_form": None, "nargs": None, "default": None}
    if words and words[0] == "Vec":
        shape["type"] = "list"
        if not optional:  # a repeatable flag, empty when not given
            shape.update(nargs="*", default=[])
    elif inner in INT_TYPES:
        shape["type"] = "int"
    elif inner in FLOAT_TYPES:
        shape["type"] = "float"
    elif inner == "bool":
        shape.update(type="bool", bool_form="value" if optional else "flag", default=None if optional else False)
    elif inner in enums:
        shape["choices"] = enums[inner].values()
    return shape


def _spelled(clap: dict[str, Any], key: str, implicit: str) -> str | None:
    """A clap name attribute: absent -> None, bare -> the implicit name, ``key = "x"`` -> x."""
    value = clap.get(key)
    if not value:
        return None
    return str(value) if isinstance(value, str) else implicit


def option_entry(item: Item, enums: dict[str, Enum], mins: dict[str, int]) -> dict[str, Any]:
    clap = item.clap()
    shape = value_shape(item, enums)
    if "default_value" in clap:
        shape["default"] = parse_default(str(clap["default_value"]), shape["type"])
    long = _spelled(clap, "long", item.name.replace("_", "-"))
    short = _spelled(clap, "short", item.name[0])
    doc = " ".join(d.strip() for d in item.docs)
    return {
        "flag": f"--{long}" if long else None,
        "aliases": [f"-{short}"] if short else [],
        "env": _spelled(clap, "env", item.name.upper()),
        "config_key": None,
        **shape,
        "min": mins.get(item.name),
        "max": None,
        "help": first_sentence(item.docs),
        "deprecated": bool(re.search(r"\blegacy version of\b|\bdeprecated\b", doc, re.I)),
    }


def zero_rejected(src: str, names: set[str]) -> dict[str, int]:
    """Fields a binary refuses at 0: ``if [args.]x == 0 {`` / ``if x < 1 {`` followed by an error."""
    toks = lex(src)
    found: dict[str, int] = {}
    for i, tok in enumerate(toks[:-6]):
        if tok.text != "if":
            continue
        j = i + 1
        while toks[j].text in ("args", ".") and j < i + 4:
            j += 1
        name = toks[j].text
        if name not in names:
            continue
        cmp = (toks[j + 1].text, toks[j + 2].text)
        if cmp not in (("==", "0"), ("<", "1")) or toks[j + 3].text != "{":
            continue
        body = toks[j + 3 : group_end(toks, j + 3) + 1]
        if any(t.text in ("Err", "panic", "bail") for t in body):
            found[name] = 1
    return found


# --- releases -----------------------------------------------------------------------------


@dataclass
class Release:
    version: str
    tag: str
    commit: str
    options: dict[str, dict[str, Any]]
    enums: dict[str, Enum]
    files: list[str]
    image: tuple[str, int, str] | None  # (cuda major.minor, line, image)
    build_image: tuple[str, int] | None = None  # the pytorch-install stage's nvidia/cuda devel image
    derived: dict[str, Any] = field(default_factory=dict)  # facts.tgi_memory and context_default (tgi_memory.py)


def read_release(repo: Path, tag: str) -> Release:
    src = show(repo, tag, LAUNCHER)
    if src is None:
        raise SystemExit(f"{tag}: no {LAUNCHER}")
    toks = lex(src)
    args, _, enums = find_items(toks)
    if args is None:
        raise SystemExit(f"{tag}: no struct Args in {LAUNCHER}")
    names = {item.name for item in args}
    files = [LAUNCHER]
    mins = zero_rejected(src, names)
    for router in ROUTER_MAINS:
        text = show(repo, tag, router)
        if text is not None:
            files.append(router)
            for name, low in zero_rejected(text, names).items():
                mins.setdefault(name, low)
            break
    options = {item.name: option_entry(item, enums, mins) for item in args}
    image = None
    build_image: tuple[str, int] | None = None
    docker = show(repo, tag, "Dockerfile")
    if docker is not None:
        files.append("Dockerfile")
        for lineno, line in enumerate(docker.splitlines(), 1):
            m = re.match(r"FROM\s+(nvidia/cuda:(\d+)\.(\d+)\.\d+-base\S*)\s+(?:AS|as)\s+base\b", line)
            if m:
                image = (f"{m.group(2)}.{m.group(3)}", lineno, m.group(1))
            m = re.match(r"FROM\s+(nvidia/cuda:\S+-devel\S*)\s+(?:AS|as)\s+pytorch-install\b", line)
            if m:
                build_image = (m.group(1), lineno)
    derived = _memory(repo, tag, files) if tag != BASELINE else {}
    return Release(tag.lstrip("v"), tag, commit(repo, tag), options, enums, files, image, build_image, derived)


def _memory(repo: Path, tag: str, files: list[str]) -> dict[str, Any]:
    """facts.tgi_memory and facts.context_default of a tag (tgi_memory.py); the files read join ``files``."""

    def read(path: str) -> str | None:
        return show(repo, tag, path)

    files += [path for path in MEMORY_FILES if path != LAUNCHER and read(path) is not None]
    files += [next(path for path in WARMUP_CLIENTS if read(path) is not None)]
    return {"tgi_memory": memory_facts(tag, read), "context_default": context_default(tag, read)}


def release_tags(repo: Path, upto: tuple[int, ...] = LAST) -> list[str]:
    """The release tags from FIRST to ``upto`` (LAST, or a newer release named on the command line)."""
    found = []
    for tag in tags(repo):
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", tag)
        if m and FIRST <= tuple(int(x) for x in m.groups()) <= upto:
            found.append(tag)
    return sorted(found, key=lambda t: tuple(int(x) for x in t[1:].split(".")))


def build(release: Release, history: list[Release], existing: dict[str, Any] | None) -> dict[str, Any]:
    tag = release.tag
    facts: dict[str, Any] = {}
    quant = release.enums.get("Quantization")
    if quant is not None:
        src = f"{BLOB}/{tag}/{LAUNCHER}#L{quant.start_line}-L{quant.end_line}"
        facts["quantization_methods"] = {v: {"min_capability": None, "source": src} for v in quant.values()}
    if release.image is not None:
        cuda, line, _ = release.image
        facts["image_cuda"] = {"value": cuda, "source": f"{BLOB}/{tag}/Dockerfile#L{line}"}
    removed: dict[str, Any] = {}
    for k, older in enumerate(history):
        for key in older.options:
            if key in release.options:
                removed.pop(key, None)
                continue
            gone = next((h for h in history[k + 1 :] if key not in h.options), release)
            if key not in removed:
                removed[key] = {
                    "removed_in": gone.version,
                    "replaced_by": REPLACED_BY.get(key),
                    "source": f"{BLOB}/{gone.tag}/{LAUNCHER}",
                }
    # an option absent now but present in a later-checked release was re-added: drop it
    removed = {k: v for k, v in removed.items() if k not in release.options}
    if removed:
        facts["removed_options"] = dict(sorted(removed.items()))
    notes: dict[str, Any] = {}
    if release.image is not None:
        notes["image"] = {
            "cuda_base_image": release.image[2],
            **({"cuda_build_image": release.build_image[0]} if release.build_image else {}),
            "note": "image_cuda is the runtime base stage's CUDA; PyTorch and the kernels are built in the "
            "pytorch-install stage (cuda_build_image).",
            "source": f"{BLOB}/{tag}/Dockerfile#L{release.image[1]}",
            "value": f"ghcr.io/huggingface/text-generation-inference:{release.version}",
        }
    sources = [f"{BLOB}/{tag}/{f}" for f in release.files]
    kept = None
    if existing is not None:
        facts = {**facts, **(existing.get("facts") or {})}
        notes = existing.get("notes") or notes
        sources = sorted(set(sources) | set(existing.get("sources") or []))
        old = existing.get("provenance") or {}
        kept = old.get("facts_and_notes") or f"facts and notes kept from the earlier catalog ({old.get('tool')})"
    facts.update(release.derived)  # always from the source: a kept hand-written value never wins
    method = (
        "tokenized launcher/src/main.rs and parsed the clap `struct Args` fields (attributes, doc comments, "
        "types) and the ValueEnum enums structurally (scripts/catalog/tgi.py); minimums from the launcher's "
        "and router's zero checks; image CUDA from the Dockerfile base stage; tgi_memory and context_default from "
        "the warm-up, models/globals.py and the launcher's defaults (scripts/catalog/tgi_memory.py)"
    )
    return tagged_release(
        release.version,
        f"{BLOB}/{tag}/{LAUNCHER}",
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


def main(versions: list[str]) -> None:
    fresh = "--fresh" in versions  # ignore the facts and notes of existing files
    versions = [v for v in versions if not v.startswith("--")]
    repo = repo_dir(OWNER, NAME)
    named = [tuple(int(x) for x in re.findall(r"\d+", v)) for v in versions]
    all_tags = release_tags(repo, max([LAST, *named]))  # a release newer than LAST is read when named
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
            out = write_release(ENGINE, build(release, history, existing), pool)
            print(f"{out.relative_to(releases_dir(ENGINE).parents[3])}: {len(release.options)} options")
        history.append(release)
    write_pool(ENGINE, pool)


if __name__ == "__main__":
    main(sys.argv[1:])
