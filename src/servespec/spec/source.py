"""Read YAML files into plain data plus a source map, turning every problem into a finding.

ruamel.yaml composes each document into a node tree that carries the line and column of
every key and value. One walk over that tree builds the plain Python data the models
validate and, beside it, the source map that locates findings. Walking the nodes
ourselves (instead of constructing round-trip objects) lets the same pass reject what a
spec never needs and an attacker might send: duplicate keys, custom tags, alias bombs
and absurd nesting, each located at the node that offends.

Composing is most of a validate run's time, so a file is first composed by ruamel.yaml's C
parser (``ruamel.yaml.clib``, libyaml: the same node tree and marks, about six times faster)
when :func:`_c_parsable` allows it. The pure-Python parser stays the authority: libyaml reads
YAML 1.1, which refuses some YAML 1.2 a spec may hold (``{source: qwen2.5:7b}``: a ``:`` in a
flow plain scalar) and breaks lines at NEL/LS/PS, so any error of the C parser, and any file
holding those characters, is composed again (or only) by the pure parser, which decides. The C
composer also recurses without a depth check and crashes the process on nesting in the hundred
thousands, so a file goes to it only when its nesting provably stays shallow.

Every file has one meaning whichever parser reads it. YAML directives are refused: the pure
parser honours ``%YAML 1.1`` (``010000`` is then octal 4096) where libyaml ignores it (10000),
so a file's meaning would hang on its last newline. A tag must fit its node and its value
(``!!bool abc``, ``!!int [1]`` are findings, never exceptions), and a scalar the constructor
cannot turn into its type (a 5,000-digit integer) is a finding located at that scalar.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.tokens import DirectiveToken

from servespec import redact
from servespec.findings import Finding
from servespec.spec.document import (
    Document,
    KeyPath,
    Position,
    SourceMap,
    Usage,
    dotted,
    quote_value,
)
from servespec.spec.loader_rules import MISSING_FIELD, YAML_SYNTAX, LoaderRule
from servespec.spec.paths import PathRefusedError, read_bounded
from servespec.text import printable

MAX_FILE_BYTES = 1024 * 1024
"""Specs are a few kilobytes; anything above this is refused before parsing."""

MAX_NODES = 20_000
"""Nodes a document may expand to, aliases counted at every use (alias bombs)."""

MAX_DOCUMENTS = 256
"""Documents one file may hold (1 MiB of ``---`` is a quarter of a million of them)."""

MAX_ALIASED_NODES = 20_000
"""Nodes reached through aliases in one file, all its documents together (a bomb split over
many documents passes the per-document cap); a file without aliases never counts any."""

MAX_ALIASED_CHARS = 256 * 1024
"""Characters of scalars reached through aliases in one file: one large aliased scalar
would otherwise make every rendered file that repeats it hundreds of megabytes."""


MAX_DEPTH = 32
"""Nesting a document may reach; the deepest real spec field is five levels down."""

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _TIMESTAMP = _TAG + "str", _TAG + "int", _TAG + "float", _TAG + "timestamp"
_MAP, _SEQ = _TAG + "map", _TAG + "seq"
_SCALAR_TAGS = {_TAG + "null", _TAG + "bool", _INT, _FLOAT, _STR, _TIMESTAMP}
_PLAIN_TAGS = {*_SCALAR_TAGS, _MAP, _SEQ}
_SCALAR_KINDS = {
    _TAG + "null": "a null",
    _TAG + "bool": "a boolean",
    _INT: "an integer",
    _FLOAT: "a number",
    _TIMESTAMP: "a timestamp",
}
"""What each tag of a non-string scalar means, in a finding's words."""


class _Resolver(VersionedResolver):
    """ruamel.yaml's resolver, remembering the implicit tag of each short scalar text it resolves.

    Resolving is most of composing a small file: each call looks the YAML version up through
    several attribute misses before matching. A text's implicit tag depends on the text alone
    here, since :func:`load_text` refuses YAML directives: every file is read as YAML 1.2.
    """

    _tags: ClassVar[dict[tuple[str, tuple[bool, bool]], Any]] = {}
    _TEXT_MAX = 64
    """Longer texts (never a number, a boolean or a null) are resolved each time, so the memory stays small."""
    _TAGS_MAX = 4096

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not ScalarNode:
            return super().resolve(kind, value, implicit)
        key = (value, tuple(implicit))
        tag = self._tags.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(value) <= self._TEXT_MAX and len(self._tags) < self._TAGS_MAX and not self.yaml_path_resolvers:
                self._tags[key] = tag
        return tag


class _SafeYaml(YAML):
    """ruamel.yaml's loader without its plug-in search (a glob of its package folder on each construction):
    plug-ins add loader types, and servespec only ever reads with ``safe``."""

    def official_plug_ins(self) -> list[Any]:
        return []


def _yaml(*, pure: bool = False) -> YAML:
    """A safe loader (ruamel.yaml's C parser unless ``pure``) with the remembering resolver."""
    yaml = _SafeYaml(typ="safe", pure=pure)
    yaml.Resolver = _Resolver
    return yaml


def _shown_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


class _RefusedError(Exception):
    """A node the walk will not turn into data; carries where and why."""

    def __init__(self, node: Node, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.node = node
        self.message = message
        self.hint = hint


def _pos(node: Node) -> Position:
    mark = node.start_mark
    return Position(mark.line + 1, mark.column + 1)


class _Walker:
    """Turns one composed document into plain data and fills its source map."""

    def __init__(self, yaml: YAML, source_map: SourceMap, usage: Usage) -> None:
        self._constructor = yaml.constructor
        self._resolver = yaml.resolver
        self._map = source_map
        self._nodes = 0
        self._usage = usage
        self._seen: set[int] = set()
        self._aliased = 0
        """Depth inside an alias expansion: nodes met a second time are reached through an alias."""

    def walk(self, node: Node, path: KeyPath, depth: int) -> Any:
        again = id(node) in self._seen
        self._seen.add(id(node))
        self._aliased += again
        try:
            return self._walk(node, path, depth)
        finally:
            self._aliased -= again

    def _count(self, node: Node) -> None:
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _RefusedError(
                node,
                f"document expands to more than {MAX_NODES} nodes (anchors and aliases included)",
                "remove the aliases that repeat large structures",
            )
        if not self._aliased:
            return
        usage = self._usage
        usage.aliased_nodes += 1
        if isinstance(node, ScalarNode):
            usage.aliased_chars += len(str(node.value))
        if usage.aliased_nodes > MAX_ALIASED_NODES:
            raise _RefusedError(
                node,
                f"the file's documents expand to more than {MAX_ALIASED_NODES} nodes through aliases",
                "remove the aliases that repeat large structures",
            )
        if usage.aliased_chars > MAX_ALIASED_CHARS:
            raise _RefusedError(
                node,
                f"aliases in this file repeat more than {MAX_ALIASED_CHARS // 1024} KiB of characters",
                "write the value once instead of aliasing it",
            )

    def _walk(self, node: Node, path: KeyPath, depth: int) -> Any:
        self._count(node)
        if depth > MAX_DEPTH:
            raise _RefusedError(node, f"nesting deeper than {MAX_DEPTH} levels")
        tag = node.tag or ""
        if tag not in _PLAIN_TAGS:
            raise _RefusedError(
                node,
                f"YAML tag {quote_value(_shown_tag(tag))} is not allowed in a servespec file",
                "remove the tag; specs hold plain mappings, lists and scalars",
            )
        expected = _MAP if isinstance(node, MappingNode) else _SEQ if isinstance(node, SequenceNode) else None
        if tag != expected and (expected is not None or tag in (_MAP, _SEQ)):
            shape = {_MAP: "a mapping", _SEQ: "a list"}.get(expected or "", "a scalar")
            raise _RefusedError(node, f"YAML tag {_shown_tag(tag)} does not fit {shape}", "remove the tag")
        self._map.values[path] = _pos(node)
        if isinstance(node, MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, SequenceNode):
            return [self.walk(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        return self._scalar(node, tag)

    def _mapping(self, node: MappingNode, path: KeyPath, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key_tag = key_node.tag or ""  # a property that formats the tag anew on each read: read once
            if key_tag == "tag:yaml.org,2002:merge":
                raise _RefusedError(key_node, "merge keys (<<) are not supported", "write the keys out")
            if not isinstance(key_node, ScalarNode):
                raise _RefusedError(key_node, "mapping keys must be plain scalars")
            key = self._scalar(key_node, key_tag)
            if not isinstance(key, str):
                key = str(key) if not isinstance(key, bool) else str(key).lower()
            if key in out:
                first = self._map.keys[(*path, key)]
                raise _RefusedError(
                    key_node,
                    f"duplicate key {quote_value(key)} (first defined at line {first.line})",
                    "keep one of the two entries",
                )
            self._map.keys[(*path, key)] = _pos(key_node)
            out[key] = self.walk(value_node, (*path, key), depth + 1)
        return out

    def _scalar(self, node: Node, tag: str) -> Any:
        """The scalar's value (``tag``: the node's, "" for none); a tag its text does not fit, or a value its type
        cannot hold, is refused here."""
        assert isinstance(node, ScalarNode)  # _walk and _mapping send only scalars
        if tag == _STR:
            return node.value
        # The tag the value would get untagged: an explicit tag must agree with it (!!float on an integer widens).
        implicit = _STR if node.style else self._resolver.resolve(ScalarNode, node.value, (True, False))
        kind = _SCALAR_KINDS.get(tag, "a scalar")
        if tag != implicit and not (tag == _FLOAT and implicit == _INT):
            raise _RefusedError(
                node,
                f"{quote_value(node.value)} is not {kind} ({_shown_tag(tag)})",
                f"remove the tag, or write {kind}",
            )
        if tag == _TIMESTAMP:
            return node.value  # dates are never meant as dates in a spec; keep the text
        try:
            return self._constructor.construct_object(node, deep=True)
        except (ValueError, TypeError, KeyError, ArithmeticError):
            # ruamel's constructors raise these for a value of the right shape they cannot build
            # (an integer beyond Python's 4,300-digit limit).
            message = f"{quote_value(node.value)} cannot be read as {kind}"
            raise _RefusedError(node, message, "write a smaller value") from None


def _decode(raw: bytes) -> tuple[str | None, str, Position]:
    """Decode file bytes as YAML allows (UTF-8, or UTF-16/32 with a BOM)."""
    if b"\x00" in raw[:8192] and not raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        offset = raw.index(b"\x00")
        return None, "file is binary (NUL byte), not YAML", _byte_position(raw, offset)
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if raw.startswith(bom):
            try:
                return raw.decode(codec), "", Position(1, 1)
            except UnicodeDecodeError as err:
                return None, f"file is not valid {codec}: {err.reason}", Position(1, 1)
    try:
        return raw.decode("utf-8"), "", Position(1, 1)
    except UnicodeDecodeError as err:
        return None, f"file is not UTF-8 (byte 0x{raw[err.start]:02x})", _byte_position(raw, err.start)


def _byte_position(raw: bytes, offset: int) -> Position:
    return _text_position(raw.decode("latin-1"), offset)  # one character per byte: same offsets


def _text_position(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Position(line, column)


def _syntax_finding(file: str, message: str, pos: Position, hint: str = "", rule: LoaderRule = YAML_SYNTAX) -> Finding:
    return rule.in_file(file, message, pos, hint=hint)


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|'[^']*\.\.\.|\"[^\"]*\.\.\.")
"""A quoted piece of a message; the last two forms are a value quote_value cut short (no closing quote)."""


def _unquoted(message: str) -> str:
    """A parser message without the pieces of the file it quotes (for referenced files)."""
    return _QUOTED.sub("'...'", message)


def _yaml_error_finding(file: str, err: YAMLError, text: str) -> Finding:
    if isinstance(err, ReaderError):
        position = _text_position(text, min(int(err.position), len(text)))
        return _syntax_finding(
            file, f"character U+{int(err.character):04X} is not allowed in YAML", position, "remove it"
        )
    if isinstance(err, MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        problem = err.problem or "YAML error"
        context = f" {err.context}" if err.context else ""
        message = f"YAML syntax error: {problem}{context}".strip()
        hint = "indent with spaces; YAML forbids tabs there" if "\\t" in problem else ""
        return _syntax_finding(file, message, Position(mark.line + 1, mark.column + 1), hint)
    return _syntax_finding(file, f"YAML error: {err}".splitlines()[0], Position(1, 1))


_DIRECTIVE_LINE = re.compile(r"^%", re.MULTILINE)
"""A line that may start a directive (a scanner makes a ``%`` at column 0 one wherever a token may start)."""


def _directive(text: str) -> Position | None:
    """Where ``text``'s first YAML directive (``%YAML``, ``%TAG``) is, if it has one.

    Only files with a line starting with ``%`` are scanned (the pure scanner: the C one would
    give the same tokens); a scanner error leaves the verdict to the parse, which reports it.
    """
    if not _DIRECTIVE_LINE.search(text):
        return None
    try:
        for token in YAML(typ="safe", pure=True).scan(text):
            if isinstance(token, DirectiveToken):
                return Position(token.start_mark.line + 1, token.start_mark.column + 1)
    except (YAMLError, RecursionError):
        return None
    return None


def _too_many_documents(file: str, node: Node | None) -> Finding:
    pos = _pos(node) if node is not None else Position(1, 1)
    message = f"file holds more than {MAX_DOCUMENTS} YAML documents; none of them was read"
    return _syntax_finding(file, message, pos, "split it into several files")


def _compose(
    yaml: YAML, text: str, file: str, path: Path, usage: Usage, documents: list[Document], findings: list[Finding]
) -> None:
    """Fill ``documents`` and ``findings`` one document at a time (a later syntax error keeps the earlier ones)."""
    for index, node in enumerate(yaml.compose_all(text)):
        usage.documents += 1
        if usage.documents > MAX_DOCUMENTS:
            # One finding instead of one per document: 1 MiB of '---' would print 250k lines.
            documents.clear()
            findings[:] = [_too_many_documents(file, node)]
            return
        if node is None:
            continue
        source_map = SourceMap(start=_pos(node))
        try:
            data = _Walker(yaml, source_map, usage).walk(node, (), 0)
        except _RefusedError as refused:
            findings.append(_syntax_finding(file, refused.message, _pos(refused.node), refused.hint))
            if usage.aliased_nodes > MAX_ALIASED_NODES or usage.aliased_chars > MAX_ALIASED_CHARS:
                break  # the file's budget is spent: later documents would only repeat the finding
            continue
        end = node.end_mark.line + 1
        documents.append(Document(file=file, path=path, index=index, data=data, source_map=source_map, end_line=end))


def load_text(
    text: str, file: str, path: Path, usage: Usage | None = None, *, referenced: bool = False
) -> tuple[list[Document], list[Finding]]:
    """Parse every document of ``text``; documents before a syntax error are kept.

    ``usage`` receives what the file spent of the YAML budgets (the loader sums them over
    a run). For a ``referenced`` file, messages leave out the pieces of it the parser quotes.
    """
    usage = usage if usage is not None else Usage()
    documents: list[Document] = []
    findings: list[Finding] = []
    directive = _directive(text)
    if directive is not None:
        message = "YAML directives (%YAML, %TAG) are not allowed: servespec reads every file as YAML 1.2"
        return _finish([], [_syntax_finding(file, message, directive, "remove the directive line")], referenced)
    if _c_parsable(text):
        before = replace(usage)
        try:
            _compose(_yaml(), text, file, path, usage, documents, findings)
            fast = True
        except (YAMLError, RecursionError, ValueError, TypeError, ArithmeticError):
            fast = False
        if fast:
            return _finish(documents, findings, referenced)
        usage.documents, usage.aliased_nodes, usage.aliased_chars = (
            before.documents,
            before.aliased_nodes,
            before.aliased_chars,
        )
        documents.clear()
        findings.clear()
    try:
        _compose(_yaml(pure=True), text, file, path, usage, documents, findings)
    except YAMLError as err:
        findings.append(_yaml_error_finding(file, err, text))
    except RecursionError:
        findings.append(_syntax_finding(file, f"nesting deeper than {MAX_DEPTH} levels", Position(1, 1)))
    except (ValueError, TypeError, ArithmeticError):
        # The walk locates every value it constructs; this is the parser itself failing unlocated.
        findings.append(_syntax_finding(file, "cannot read a value of this file", Position(1, 1)))
    return _finish(documents, findings, referenced)


def _finish(
    documents: list[Document], findings: list[Finding], referenced: bool
) -> tuple[list[Document], list[Finding]]:
    for document in documents:
        document.referenced = referenced
    return documents, [_safe_message(f, referenced) for f in findings]


_HAVE_C = YAML(typ="safe").Parser is not YAML(typ="safe", pure=True).Parser
"""Whether ruamel.yaml.clib is installed (ruamel.yaml falls back to its pure parser without it)."""
C_NESTING_BOUND = 1_000
"""Nesting below which the C composer runs; it crashed between 10,000 and 100,000 levels (ruamel.yaml.clib 0.2.14)."""
_YAML11_BREAKS = ("\x85", "\u2028", "\u2029")
"""Line breaks in YAML 1.1 (libyaml) but not in 1.2: lines would be counted differently."""


def _c_parsable(text: str) -> bool:
    """Whether the C parser may compose ``text``: it is installed, the text ends with a line break (libyaml
    puts the end of a last line without one on the next line), no 1.1-only line break, no line that could be a
    directive (load_text refuses directives; the pure parser decides what such a line is), nesting provably shallow.

    The nesting bound is an upper bound, never an estimate: flow nesting needs one ``[`` or
    ``{`` per level; block nesting one more column of indent, or a ``-``/``?``/``:``
    indicator, per level, two levels (a mapping and its compact sequence) sharing a column at
    most, so twice the longest line bounds it.
    """
    if not _HAVE_C or not text.endswith("\n") or any(mark in text for mark in _YAML11_BREAKS):
        return False
    if _DIRECTIVE_LINE.search(text):
        return False
    if len(text) < C_NESTING_BOUND:
        return True
    flow = text.count("[") + text.count("{")
    longest = max(map(len, text.splitlines()), default=0)
    return flow + 2 * longest + 2 < C_NESTING_BOUND


def _safe_message(finding: Finding, referenced: bool) -> Finding:
    """The finding with its message escaped, cut, scrubbed of tokens (and of quotes, for referenced files)."""
    message = _unquoted(finding.message) if referenced else finding.message
    message = printable(redact.scrub(message))
    if len(message) > 300:
        message = message[:297] + "..."
    return finding if message == finding.message else replace(finding, message=message)


def load_file(
    path: Path, file: str, usage: Usage | None = None, *, referenced: bool = False
) -> tuple[list[Document], list[Finding]]:
    """Read and parse one file. ``OSError`` escapes: an unreadable path is a usage error.

    Only regular files are read, and at most ``MAX_FILE_BYTES`` of them (:class:`PathRefusedError`
    escapes for a FIFO or a device, which would block or never end).
    """
    raw = read_bounded(path, MAX_FILE_BYTES, follow=not referenced)
    if len(raw) > MAX_FILE_BYTES:
        message = f"file is larger than {MAX_FILE_BYTES // 1024} KiB; servespec files are small"
        return [], [_syntax_finding(file, message, Position(1, 1), "split it, or check that this is a spec")]
    text, problem, pos = _decode(raw)
    if text is None:
        return [], [_syntax_finding(file, problem, pos)]
    documents, findings = load_text(text, file, path, usage, referenced=referenced)
    if not documents and not findings:
        findings.append(
            _syntax_finding(
                file,
                "file holds no YAML document",
                Position(1, 1),
                "start it with 'apiVersion: servespec/v1' and a 'kind'",
                rule=MISSING_FIELD,
            )
        )
    return documents, findings


__all__ = [
    "MAX_FILE_BYTES",
    "Document",
    "KeyPath",
    "PathRefusedError",
    "Position",
    "SourceMap",
    "Usage",
    "dotted",
    "load_file",
    "load_text",
    "quote_value",
]
