"""Read YAML files into plain data plus a source map, turning every problem into a finding.

ruamel.yaml composes each document into a node tree that carries the line and column of
every key and value. One walk over that tree builds the plain Python data the models
validate and, beside it, the source map that locates findings. Walking the nodes
ourselves (instead of constructing round-trip objects) lets the same pass reject what a
spec never needs and an attacker might send: duplicate keys, custom tags, alias bombs
and absurd nesting, each located at the node that offends.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError

from servespec.findings import Finding, Severity

MAX_FILE_BYTES = 1024 * 1024
"""Specs are a few kilobytes; anything above this is refused before parsing."""

MAX_NODES = 20_000
"""Nodes a document may expand to, aliases counted at every use (alias bombs)."""

MAX_DEPTH = 32
"""Nesting a document may reach; the deepest real spec field is five levels down."""

KeyPath = tuple[str | int, ...]

_PLAIN_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


@dataclass(frozen=True)
class Position:
    """A 1-based line and column."""

    line: int
    column: int


@dataclass
class SourceMap:
    """Positions of every key and value of one document, by key path."""

    start: Position
    keys: dict[KeyPath, Position] = field(default_factory=dict)
    values: dict[KeyPath, Position] = field(default_factory=dict)

    def locate(self, path: KeyPath, *, at_key: bool = False) -> Position:
        """Position of the value at ``path`` (or its key), else of the nearest ancestor's key."""
        table = self.keys if at_key else self.values
        if path in table:
            return table[path]
        for cut in range(len(path) - 1, 0, -1):
            prefix = path[:cut]
            if prefix in self.keys:
                return self.keys[prefix]
        return self.start


@dataclass
class Document:
    """One YAML document of one file, as plain data with its source map."""

    file: str
    """The path as the user should see it in findings."""
    path: Path
    index: int
    data: Any
    source_map: SourceMap
    end_line: int = 0
    """Last line of the document, for matching findings to it."""

    def contains(self, finding: Finding) -> bool:
        """Whether ``finding`` points inside this document."""
        return finding.file == self.file and self.source_map.start.line <= finding.line <= self.end_line

    def finding(
        self,
        rule: str,
        message: str,
        path: KeyPath = (),
        *,
        severity: Severity = Severity.ERROR,
        hint: str = "",
        at_key: bool = False,
    ) -> Finding:
        """Build a finding located at ``path`` inside this document."""
        pos = self.source_map.locate(path, at_key=at_key)
        return Finding(
            file=self.file,
            line=pos.line,
            column=pos.column,
            rule=rule,
            severity=severity,
            message=message,
            hint=hint,
            path=dotted(path),
        )


def dotted(path: KeyPath) -> str:
    """Render a key path the way users write it: ``resources.gpu_ids[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


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

    def __init__(self, yaml: YAML, source_map: SourceMap) -> None:
        self._constructor = yaml.constructor
        self._map = source_map
        self._nodes = 0

    def walk(self, node: Node, path: KeyPath, depth: int) -> Any:
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _RefusedError(
                node,
                f"document expands to more than {MAX_NODES} nodes (anchors and aliases included)",
                "remove the aliases that repeat large structures",
            )
        if depth > MAX_DEPTH:
            raise _RefusedError(node, f"nesting deeper than {MAX_DEPTH} levels")
        if node.tag not in _PLAIN_TAGS:
            raise _RefusedError(
                node,
                f"YAML tag {node.tag!r} is not allowed in a servespec file",
                "remove the tag; specs hold plain mappings, lists and scalars",
            )
        self._map.values[path] = _pos(node)
        if isinstance(node, MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, SequenceNode):
            return [self.walk(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _mapping(self, node: MappingNode, path: KeyPath, depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _RefusedError(key_node, "merge keys (<<) are not supported", "write the keys out")
            if not isinstance(key_node, ScalarNode):
                raise _RefusedError(key_node, "mapping keys must be plain scalars")
            key = self._scalar(key_node)
            if not isinstance(key, str):
                key = str(key) if not isinstance(key, bool) else str(key).lower()
            if key in out:
                first = self._map.keys[(*path, key)]
                raise _RefusedError(
                    key_node,
                    f"duplicate key {key!r} (first defined at line {first.line})",
                    "keep one of the two entries",
                )
            self._map.keys[(*path, key)] = _pos(key_node)
            out[key] = self.walk(value_node, (*path, key), depth + 1)
        return out

    def _scalar(self, node: Node) -> Any:
        value = self._constructor.construct_object(node, deep=True)
        if isinstance(value, (datetime.date, datetime.datetime)):
            return node.value  # dates are never meant as dates in a spec; keep the text
        return value


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


def _syntax_finding(file: str, message: str, pos: Position, hint: str = "", rule: str = "SS001") -> Finding:
    return Finding(
        file=file, line=pos.line, column=pos.column, rule=rule, severity=Severity.ERROR, message=message, hint=hint
    )


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


def load_text(text: str, file: str, path: Path) -> tuple[list[Document], list[Finding]]:
    """Parse every document of ``text``; documents before a syntax error are kept."""
    yaml = YAML(typ="safe", pure=True)
    documents: list[Document] = []
    findings: list[Finding] = []
    try:
        for index, node in enumerate(yaml.compose_all(text)):
            if node is None:
                continue
            source_map = SourceMap(start=_pos(node))
            try:
                data = _Walker(yaml, source_map).walk(node, (), 0)
            except _RefusedError as refused:
                findings.append(_syntax_finding(file, refused.message, _pos(refused.node), refused.hint))
                continue
            documents.append(
                Document(
                    file=file,
                    path=path,
                    index=index,
                    data=data,
                    source_map=source_map,
                    end_line=node.end_mark.line + 1,
                )
            )
    except YAMLError as err:
        findings.append(_yaml_error_finding(file, err, text))
    except RecursionError:
        findings.append(_syntax_finding(file, f"nesting deeper than {MAX_DEPTH} levels", Position(1, 1)))
    except (ValueError, TypeError, OverflowError) as err:
        # ruamel's scalar constructors raise these for values like a malformed timestamp.
        findings.append(_syntax_finding(file, f"cannot read a value: {err}".splitlines()[0], Position(1, 1)))
    return documents, findings


def load_file(path: Path, file: str) -> tuple[list[Document], list[Finding]]:
    """Read and parse one file. ``OSError`` escapes: an unreadable path is a usage error."""
    with path.open("rb") as handle:
        raw = handle.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        message = f"file is larger than {MAX_FILE_BYTES // 1024} KiB; servespec files are small"
        return [], [_syntax_finding(file, message, Position(1, 1), "split it, or check that this is a spec")]
    text, problem, pos = _decode(raw)
    if text is None:
        return [], [_syntax_finding(file, problem, pos)]
    documents, findings = load_text(text, file, path)
    if not documents and not findings:
        findings.append(
            _syntax_finding(
                file,
                "file holds no YAML document",
                Position(1, 1),
                "start it with 'apiVersion: servespec/v1' and a 'kind'",
                rule="SS004",
            )
        )
    return documents, findings
