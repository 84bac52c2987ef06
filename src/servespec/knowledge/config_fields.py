"""Typed, bounded reads of config.json fields: every fact servespec takes from a model's config goes through here.

A config.json comes from a model folder, the Hugging Face cache, the Hub, a GGUF header or
``models.lock.yaml``: a file anyone may have written. Each field is read as the type its
transformers configuration class gives it (a whole number, a number, a string, a flag, a
mapping, a list) and within bounds no real model comes near, so that a string
``"num_hidden_layers": "32"``, a list, a negative head count or a boolean where a count belongs
never reaches the arithmetic of the estimators. A field that breaks its type is a
:class:`ConfigFieldError` naming the field, never quoting its value: the facts are then unknown
(REF003 says why), never a traceback. A field that is absent or null is simply not given.
"""

from __future__ import annotations

import math
from typing import Any

from servespec.spec.source import quote_value

MAX_COUNT = 2**40
"""Largest count or size a config field may give (vocabularies, context lengths, dimensions stay far below)."""

MAX_FACTOR = 1e6
"""Largest scaling factor (rope ``factor``) or bit width a config field may give."""

MAX_TEXT = 256
"""Longest string a config field read as a fact may be (model types, dtypes, method names)."""


class ConfigFieldError(ValueError):
    """A config.json field that does not hold what the field means; the message names the field only."""

    def __init__(self, key: str, expected: str) -> None:
        super().__init__(f"field {quote_value(key)} is not {expected}")
        self.key = key


class MissingFieldsError(KeyError):
    """Fields the facts cannot do without are absent or null: every one of them is named, never a value."""

    def __init__(self, keys: tuple[str, ...], model_type: str | None = None) -> None:
        super().__init__(keys[0] if keys else "")
        self.keys = keys
        self.model_type = model_type

    def __str__(self) -> str:
        return missing_message(self)


def missing_message(err: KeyError) -> str:
    """What a KeyError of :func:`count` or :class:`MissingFieldsError` says is missing, each field quoted.

    ``fields 'num_hidden_layers' and 'hidden_size' are missing (model_type 'foo')``: the field names are
    transformers' own (a multimodal config's are read from its ``text_config`` too).
    """
    keys = err.keys if isinstance(err, MissingFieldsError) else tuple(str(arg) for arg in err.args[:1])
    names = [quote_value(key) for key in keys] or ["a required field"]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
    text = f"field {listed} is missing" if len(names) == 1 else f"fields {listed} are missing"
    model_type = err.model_type if isinstance(err, MissingFieldsError) else None
    if model_type:
        text += f" (model_type {quote_value(model_type)}: servespec cannot size this architecture without them)"
    return text


def count(config: dict[str, Any], key: str, *, minimum: int = 0, required: bool = False) -> int | None:
    """A whole number in ``minimum`` .. :data:`MAX_COUNT` (an integral float such as ``4096.0`` too).

    Absent or null: None, or ``KeyError`` when ``required``.
    """
    value = config.get(key)
    if value is None:
        if required:
            raise KeyError(key)
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigFieldError(key, "a whole number")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ConfigFieldError(key, "a whole number")
    number = int(value)
    if not minimum <= number <= MAX_COUNT:
        raise ConfigFieldError(key, f"a whole number from {minimum} to 2**40")
    return number


def number(config: dict[str, Any], key: str, *, maximum: float = MAX_FACTOR) -> float | None:
    """A finite number above 0 and at most ``maximum``; None when absent or null."""
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigFieldError(key, "a number")
    result = float(value)
    if not 0 < result <= maximum:  # NaN fails every comparison
        raise ConfigFieldError(key, f"a number above 0 and at most {maximum:g}")
    return result


def _of_type(config: dict[str, Any], key: str, kind: type[Any], what: str) -> Any:
    """``config[key]`` when it is a ``kind``; None when absent or null; else ConfigFieldError naming ``what``."""
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise ConfigFieldError(key, what)
    return value


def text(config: dict[str, Any], key: str) -> str | None:
    """A string of at most :data:`MAX_TEXT` characters; None when absent or null."""
    what = f"a string of at most {MAX_TEXT} characters"
    value: str | None = _of_type(config, key, str, what)
    if value is not None and len(value) > MAX_TEXT:
        raise ConfigFieldError(key, what)
    return value


def flag(config: dict[str, Any], key: str) -> bool | None:
    """true or false; None when absent or null."""
    value: bool | None = _of_type(config, key, bool, "true or false")
    return value


def mapping(config: dict[str, Any], key: str) -> dict[str, Any] | None:
    """A JSON object; None when absent or null."""
    value: dict[str, Any] | None = _of_type(config, key, dict, "an object")
    return value


def items(config: dict[str, Any], key: str) -> list[Any] | None:
    """A JSON list; None when absent or null."""
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ConfigFieldError(key, "a list")
    return value


def first_count(config: dict[str, Any], *keys: str, minimum: int = 0) -> int | None:
    """The first of ``keys`` that is given, as :func:`count` reads it."""
    for key in keys:
        if config.get(key) is not None:
            return count(config, key, minimum=minimum)
    return None


def first_text(config: dict[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` that is given, as :func:`text` reads it."""
    for key in keys:
        if config.get(key) is not None:
            return text(config, key)
    return None


__all__ = [
    "MAX_COUNT",
    "MAX_FACTOR",
    "MAX_TEXT",
    "ConfigFieldError",
    "MissingFieldsError",
    "count",
    "first_count",
    "first_text",
    "flag",
    "items",
    "mapping",
    "missing_message",
    "number",
    "text",
]
