"""The loaded form of one YAML document: plain data, the positions of its keys and values, and
how findings about it are built (located, and quoting values only in a safe form)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servespec import redact
from servespec.findings import Finding, Severity
from servespec.text import printable

KeyPath = tuple[str | int, ...]

MAX_SHOWN = 60
"""Longest value a message quotes; longer ones are cut with '...'."""


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
class Usage:
    """What parsing one file (or, summed, one run) spent of the YAML budgets."""

    documents: int = 0
    aliased_nodes: int = 0
    aliased_chars: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts to these."""
        self.documents += other.documents
        self.aliased_nodes += other.aliased_nodes
        self.aliased_chars += other.aliased_chars


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
    root: Path | None = None
    """The directory the files this document refers to must stay inside (see spec.paths)."""
    referenced: bool = False
    """Loaded because another file named it: its findings quote none of its values."""

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
            path=printable(redact.scrub(dotted(path))),
        )


def quote_value(value: object, name: str = "", limit: int = MAX_SHOWN) -> str:
    """``value`` as a message may show it: repr'd, secrets masked, cut to ``limit``, escaped.

    Every message that echoes part of a user's file goes through here, so that no token
    reaches CI logs or SARIF, no 1 MiB scalar is printed, and no control or bidi character
    reaches a terminal.
    """
    if redact.holds_secret(name, value):  # strings, and numbers or containers SEC001 calls secret
        return repr(redact.MASK)
    text = printable(repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dotted(path: KeyPath) -> str:
    """Render a key path the way users write it: ``resources.gpu_ids[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
