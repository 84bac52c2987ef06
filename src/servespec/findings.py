"""The one type every stage reports problems with."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from servespec.text import printable


class Severity(enum.StrEnum):
    """How bad a finding is; ordered from worst to mildest."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, order=True)
class Finding:
    """One located problem in a user's file.

    ``line`` and ``column`` are 1-based and point at the offending value, or at the
    nearest enclosing key when the value is missing. ``path`` is the dotted key path
    inside the document (``model.max_model_len``), empty for the document itself.
    """

    file: str
    line: int
    column: int
    rule: str
    severity: Severity
    message: str
    hint: str = ""
    path: str = ""
    docs: str = ""

    def with_severity(self, severity: Severity) -> Finding:
        """Return a copy at another severity (``--strict``)."""
        return replace(self, severity=severity)

    @property
    def message_with_hint(self) -> str:
        """``message (fix: hint)``, or the message alone when there is no hint."""
        return f"{self.message} (fix: {self.hint})" if self.hint else self.message

    def to_text(self) -> str:
        """Render as ``file:line:col: RULE severity message (fix: hint)``, every field escaped.

        File names, keys and values come from the checkout: control and bidi characters are
        written as visible escapes (no ANSI/OSC sequence reaches a terminal), and a file name
        that would start the line with ``::`` (a GitHub workflow command) gets a ``./`` in front.
        """
        file = printable(self.file)
        if file.lstrip().startswith("::") or file[:1].isspace():
            file = "./" + file
        hint = f" (fix: {printable(self.hint)})" if self.hint else ""
        return (
            f"{file}:{self.line}:{self.column}: {printable(self.rule)} {self.severity.value} "
            f"{printable(self.message)}{hint}"
        )

    def to_json(self) -> dict[str, object]:
        """Render as the contract's JSON finding object (§2.1)."""
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "hint": self.hint,
            "docs": self.docs,
        }
