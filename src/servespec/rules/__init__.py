"""Every rule, in one explicit tuple, and the function that runs them over a fleet."""

from __future__ import annotations

from servespec.rules.base import Rule
from servespec.rules.references import MissingFile, UnknownHost
from servespec.rules.schema import MissingField, Suppressions, UnknownField, WrongType, YamlSyntax

ALL_RULES: tuple[type[Rule], ...] = (
    YamlSyntax,
    UnknownField,
    WrongType,
    MissingField,
    Suppressions,
    UnknownHost,
    MissingFile,
)

RULES_BY_ID: dict[str, type[Rule]] = {rule.id: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_ID", "Rule"]
