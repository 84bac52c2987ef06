"""Findings for documents that fail validation: pydantic's errors, located in the user's file.

One finding per distinct problem: SS002 (unknown field), SS004 (missing field), SEC001 (a
secret written inline where only a reference is accepted) and SS003 for every other error,
with the schema lookups their hints need (:func:`allowed_keys`, :func:`field_description`).
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from servespec import redact
from servespec.findings import Finding
from servespec.spec.loader_rules import INLINE_SECRET, MISSING_FIELD, UNKNOWN_FIELD, WRONG_TYPE, LoaderRule
from servespec.spec.source import Document, KeyPath, dotted, quote_value
from servespec.text import printable

MAX_MESSAGE = 200
"""Longest pydantic message shown; longer ones are cut (they can hold a whole value)."""

INLINE_SECRET_ERROR = "inline_secret"
"""The error type of a literal ``serving.api_key``/``model.hub_token``: reported as loader_rules.INLINE_SECRET."""

RULE_BY_ERROR_TYPE: dict[str, LoaderRule] = {
    "extra_forbidden": UNKNOWN_FIELD,
    "missing": MISSING_FIELD,
}
"""Error types with a rule of their own; every other type but :data:`INLINE_SECRET_ERROR` is SS003."""


def findings_from_error(document: Document, model: type[BaseModel], error: ValidationError) -> list[Finding]:
    """One finding per distinct problem, located in the user's file."""
    findings: list[Finding] = []
    seen: set[tuple[str, KeyPath]] = set()
    for detail in error.errors(include_url=False):
        kind = detail["type"] if detail["type"] in (*RULE_BY_ERROR_TYPE, INLINE_SECRET_ERROR) else ""
        path = _data_path(document.data, detail)
        if (kind, path) in seen:
            continue
        seen.add((kind, path))
        findings.append(_finding(document, model, kind, path, detail))
    return findings


def _finding(document: Document, model: type[BaseModel], kind: str, path: KeyPath, detail: ErrorDetails) -> Finding:
    where = _describe(path)
    if kind == INLINE_SECRET_ERROR:
        return INLINE_SECRET.at(document, f"secret written inline at '{_dotted(path)}'", path)
    rule = RULE_BY_ERROR_TYPE.get(kind, WRONG_TYPE)
    if rule is UNKNOWN_FIELD:
        name = str(path[-1])
        allowed = allowed_keys(model, path[:-1])
        close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else _allowed_hint(allowed)
        return rule.at(document, f"unknown field {_key(name)}{where}", path, hint=hint, at_key=True)
    if rule is MISSING_FIELD:
        message = f"required field '{path[-1]}' is missing{_describe(path[:-1])}"
        return rule.at(document, message, path, hint=f"add '{path[-1]}'")
    message = _value_message(model, path, detail, quote=not document.referenced)
    return rule.at(document, f"{message}{where}", path, hint=_value_hint(detail))


def _dotted(path: KeyPath) -> str:
    # Key paths are made of the user's keys: escaped, and scrubbed of anything token-shaped.
    return printable(redact.scrub(dotted(path)))


def _key(name: str) -> str:
    # quote_value masks token-shaped names itself: one quoting function for every value and key.
    return quote_value(name)


def _describe(path: KeyPath) -> str:
    return f" at '{_dotted(path)}'" if path else ""


def _value_message(model: type[BaseModel], path: KeyPath, detail: ErrorDetails, *, quote: bool) -> str:
    """pydantic's message, with the value quoted (masked, cut, escaped) unless ``quote`` is off.

    Values of files a spec refers to (inventories, facts) are never quoted: the finding's
    location says where the value is, and the file's contents stay out of CI logs.
    """
    message = printable(redact.scrub(detail["msg"]))
    if len(message) > MAX_MESSAGE:  # custom messages may carry the value (a duration's, say)
        message = message[: MAX_MESSAGE - 3] + "..."
    value = detail.get("input")
    name = str(path[-1]) if path else ""
    shown = quote_value(value, name) if quote else "the value"
    if detail["type"] == "string_pattern_mismatch":
        description = field_description(model, path)
        if description:
            return f"{shown} is not valid: {description}"
    if "should be" in message and isinstance(value, str | int | float | bool) and quote:
        return f"{message}, got {shown}"
    return message


def _value_hint(detail: ErrorDetails) -> str:
    context = detail.get("ctx") or {}
    expected = context.get("expected")
    value = detail.get("input")
    if detail["type"] == "literal_error" and isinstance(expected, str) and isinstance(value, str):
        options = [part.strip().strip("'") for part in expected.replace(" or ", ",").split(",")]
        close = difflib.get_close_matches(value, [o for o in options if o], n=1, cutoff=0.5)
        if close:
            return f"did you mean '{close[0]}'?"
        return f"use one of: {expected}"
    if detail["type"] == "string_type" and isinstance(value, int | float):
        return "quote the value to make it a string"
    return ""


def _allowed_hint(allowed: list[str]) -> str:
    if not allowed:
        return "remove it"
    shown = ", ".join(sorted(allowed)[:12])
    return f"remove it; allowed here: {shown}"


def _has(current: Any, segment: str | int) -> bool:
    if isinstance(current, dict):
        return segment in current
    return isinstance(current, list) and isinstance(segment, int) and 0 <= segment < len(current)


def _data_path(data: Any, detail: ErrorDetails) -> KeyPath:
    """Follow pydantic's ``loc`` through the data, dropping segments that name union members."""
    loc = detail["loc"]
    missing = detail["type"] == "missing"
    path: list[str | int] = []
    current = data
    for index, segment in enumerate(loc):
        if _has(current, segment):
            path.append(segment)
            current = current[segment]
        elif missing and (index == len(loc) - 1 or isinstance(current, dict)):
            # The missing field itself, or a missing parent: report the first one absent.
            path.append(segment)
            break
    return tuple(path)


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _schema_nodes(model: type[BaseModel], path: KeyPath) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    schema = _schema(model)
    defs = schema.get("$defs", {})
    nodes = [schema]
    for segment in path:
        nodes = [child for node in nodes for child in _children(_resolve(node, defs), segment, defs)]
    return nodes, defs


def allowed_keys(model: type[BaseModel], path: KeyPath) -> list[str]:
    """Field names allowed in the mapping at ``path``, read from the model's JSON Schema."""
    nodes, defs = _schema_nodes(model, path)
    names: set[str] = set()
    for node in nodes:
        for option in _options(_resolve(node, defs), defs):
            names.update(option.get("properties", {}))
    return sorted(names)


def field_description(model: type[BaseModel], path: KeyPath) -> str:
    """The schema description of the field at ``path``, or ''."""
    nodes, defs = _schema_nodes(model, path)
    for node in nodes:
        for option in [node, *_options(_resolve(node, defs), defs)]:
            if option.get("description"):
                return str(option["description"])
    return ""


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def _options(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    variants = node.get("anyOf") or node.get("oneOf")
    if not variants:
        return [node]
    return [_resolve(v, defs) for v in variants]


def _children(node: dict[str, Any], segment: str | int, defs: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for option in _options(node, defs):
        if isinstance(segment, int):
            if "items" in option:
                out.append(option["items"])
        elif segment in option.get("properties", {}):
            out.append(option["properties"][segment])
        elif isinstance(option.get("additionalProperties"), dict):
            out.append(option["additionalProperties"])
    return out
