"""The rules the loader reports (SS001-SS004, REF002, SEC001): each one's id, name, severity and summary, declared once.

The loader (this package) builds these rules' findings while it reads files; their rule
classes (``rules/schema.py``, ``rules/references.py``) hold the explain page and the
sources, and take id, name, severity and summary from here. The declarations live in
``spec/`` because the rules package imports the loader, never the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

from servespec.findings import Finding, Severity
from servespec.spec.document import Document, KeyPath, Position

START = Position(1, 1)


@dataclass(frozen=True)
class LoaderRule:
    """A rule whose findings the loader builds; its rule class reads these attributes."""

    id: str
    name: str
    severity: Severity
    summary: str
    hint: str = ""

    def at(
        self, document: Document, message: str, path: KeyPath = (), *, hint: str | None = None, at_key: bool = False
    ) -> Finding:
        """A finding of this rule located at ``path`` in ``document`` (the rule's hint unless ``hint`` is given)."""
        return document.finding(
            self.id, message, path, severity=self.severity, hint=self.hint if hint is None else hint, at_key=at_key
        )

    def in_file(self, file: str, message: str, position: Position = START, *, hint: str | None = None) -> Finding:
        """A finding of this rule about ``file`` as a whole, or at ``position`` of a file no document came from."""
        return Finding(
            file=file,
            line=position.line,
            column=position.column,
            rule=self.id,
            severity=self.severity,
            message=message,
            hint=self.hint if hint is None else hint,
        )


YAML_SYNTAX = LoaderRule(
    "SS001",
    "spec.yaml-syntax",
    Severity.ERROR,
    "YAML syntax error, duplicate key, or aliases that expand beyond a sane size",
)
UNKNOWN_FIELD = LoaderRule(
    "SS002", "spec.unknown-field", Severity.ERROR, "unknown field (with a did-you-mean suggestion)"
)
WRONG_TYPE = LoaderRule(
    "SS003", "spec.wrong-type", Severity.ERROR, "wrong type or value outside the allowed set or range"
)
MISSING_FIELD = LoaderRule(
    "SS004", "spec.missing-field", Severity.ERROR, "required field missing; unsupported apiVersion/kind"
)
MISSING_FILE = LoaderRule(
    "REF002",
    "ref.missing-file",
    Severity.ERROR,
    "inventory, facts or model config file missing or unreadable",
    hint="fix the path",
)

INLINE_SECRET = LoaderRule(
    "SEC001",
    "security.inline-secret",
    Severity.ERROR,
    "a secret written inline instead of from_env/from_file",
    hint="reference it with {from_env: VAR} or {from_file: /path}, and rotate the exposed value",
)
"""A literal ``serving.api_key``/``model.hub_token`` fails validation as this; the rest of SEC001's
findings come from its rule's ``check`` (rules/security.py)."""

LOADER_RULES = (YAML_SYNTAX, UNKNOWN_FIELD, WRONG_TYPE, MISSING_FIELD, MISSING_FILE, INLINE_SECRET)
"""Every rule the loader reports."""

__all__ = [
    "INLINE_SECRET",
    "LOADER_RULES",
    "MISSING_FIELD",
    "MISSING_FILE",
    "UNKNOWN_FIELD",
    "WRONG_TYPE",
    "YAML_SYNTAX",
    "LoaderRule",
]
