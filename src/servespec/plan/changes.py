"""Which rendered fields differ between the files a host runs and the files the specs render.

Each file is read the way its engine reads it, with data parsers only (ruamel's safe loader,
``json.loads``, ``KEY=VALUE`` lines, Modelfile lines); nothing is evaluated. A command line
(``container.yaml``'s ``entrypoint``/``command``, an ``args.json`` argv) is compared flag by
flag, so a restart names ``--max-model-len`` rather than "the command". Fields that follow
from the content hash alone (``revision``, the ``servespec.revision`` label, the header
comment) are left out: they change with every change and say nothing about it. A file that
cannot be read this way (host text that is not what servespec writes) is one whole-file change.

The host's files are untrusted text: parsing is bounded (size, fields, depth) and a value is
cut to :data:`MAX_VALUE_CHARS` characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from servespec.text import is_number

MAX_VALUE_CHARS = 120
"""A shown value longer than this is cut (with ``...``): the diffs hold the whole text."""
_MAX_PARSED_CHARS = 256 << 10
"""A file longer than this is compared as a whole: servespec renders none that large."""
_MAX_FIELDS = 2000
"""More fields than this (an alias-expanded YAML, say) and the file is compared as a whole."""
_MAX_DEPTH = 16

_DIGEST_FIELDS = frozenset({"revision", "labels.servespec.revision"})
"""container.yaml fields that are the content hash itself."""
_ARGV_FIELDS = frozenset({"entrypoint", "command"})


@dataclass(frozen=True)
class Change:
    """One rendered field that differs: ``field`` is None when the file is compared as a whole.

    ``before``/``after`` are the values as rendered (None: absent); a command-line flag given
    without a value is ``""``.
    """

    file: str
    field: str | None
    before: str | None
    after: str | None

    def to_json(self) -> dict[str, Any]:
        """A plain dict for JSON output and test cases."""
        return {"file": self.file, "field": self.field, "before": self.before, "after": self.after}

    def describe(self) -> str:
        """``config.yaml max-model-len: 16384 -> 32768`` (values cut, absent shown as ``unset``)."""
        if self.field is None:
            what = "added" if self.before is None else "removed" if self.after is None else "changed"
            return f"{self.file} {what}"
        return f"{self.file} {self.field}: {_shown(self.before)} -> {_shown(self.after)}"


def _shown(value: str | None) -> str:
    if value is None:
        return "unset"
    if value == "":
        return "set"
    return value


class _UnreadableError(Exception):
    """The text is not a file of the kind its name says (or too large to compare by field)."""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def _scalar(value: Any) -> str:
    """A value as rendered text: strings as they are, everything else as compact JSON (sorted keys)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError) as err:
        raise _UnreadableError from err


def argv_fields(words: list[Any], prefix: str) -> dict[str, str]:
    """A command line as fields: ``PREFIX --flag`` -> its value words (``--flag=v`` split), positional
    words before the first flag as ``PREFIX argument N``; a repeated flag joins its values with ``, ``."""
    out: dict[str, str] = {}
    flag: str | None = None
    values: list[str] = []
    position = 0

    def close() -> None:
        if flag is not None:
            key = f"{prefix} {flag}"
            joined = " ".join(values)
            out[key] = f"{out[key]}, {joined}" if key in out else joined

    for raw in words:
        word = _scalar(raw)
        if word.startswith("-") and len(word) > 1 and not is_number(word):
            close()
            flag, _, inline = word.partition("=")
            values = [inline] if "=" in word else []
        elif flag is None:
            position += 1
            out[f"{prefix} argument {position}"] = word
        else:
            values.append(word)
    close()
    return out


def _flatten(value: Any, prefix: str, out: dict[str, str], depth: int = 0) -> None:
    """Mapping keys joined with dots down to scalars and lists (a list is one field)."""
    if len(out) > _MAX_FIELDS or depth > _MAX_DEPTH:
        raise _UnreadableError
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)
    else:
        out[prefix] = _scalar(value)


def _yaml(text: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe", pure=True).load(text)
    except (YAMLError, RecursionError, ValueError, TypeError) as err:
        raise _UnreadableError from err


def _mapping_fields(data: Any, argv: frozenset[str] = frozenset()) -> dict[str, str]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _UnreadableError
    out: dict[str, str] = {}
    for key, value in data.items():
        name = str(key)
        if name in argv and isinstance(value, list):
            out.update(argv_fields(value, name))
        else:
            _flatten(value, name, out, 1)
    return out


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _env_fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in _lines(text):
        key, equals, value = line.partition("=")
        if not equals:
            raise _UnreadableError
        out[key.strip()] = value
    return out


def _modelfile_fields(text: str) -> dict[str, str]:
    """Ollama Modelfile instructions: ``FROM``, ``PARAMETER name`` (one field per parameter), others by name."""
    out: dict[str, str] = {}
    for line in _lines(text):
        words = line.split(None, 2)
        if words[0].upper() == "PARAMETER" and len(words) > 1:
            key, value = f"PARAMETER {words[1]}", words[2] if len(words) > 2 else ""
        else:
            key, value = words[0].upper(), line[len(words[0]) :].strip()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def _fields_of(name: str, text: str) -> dict[str, str]:
    """A rendered file's fields by name; raises :class:`_UnreadableError` when it cannot be read so."""
    if len(text) > _MAX_PARSED_CHARS:
        raise _UnreadableError
    base = name.rsplit("/", 1)[-1]
    if base == "container.yaml":
        fields = _mapping_fields(_yaml(text), _ARGV_FIELDS)
        return {k: v for k, v in fields.items() if k not in _DIGEST_FIELDS}
    if base.endswith((".yaml", ".yml")):
        return _mapping_fields(_yaml(text))
    if base.endswith(".json"):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as err:
            raise _UnreadableError from err
        if isinstance(data, list):
            return argv_fields(data, "argv")
        return _mapping_fields(data)
    if base.endswith(".env"):
        return _env_fields(text)
    if base == "Modelfile":
        return _modelfile_fields(text)
    raise _UnreadableError


def file_changes(name: str, before: str | None, after: str | None) -> list[Change]:
    """The fields of one file that differ (``before``/``after`` None: the file is absent on that side)."""
    if before == after:
        return []
    if before is None or after is None:
        return [Change(name, None, None if before is None else "", None if after is None else "")]
    try:
        old, new = _fields_of(name, before), _fields_of(name, after)
    except _UnreadableError:
        return [Change(name, None, "", "")]
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            was, now = old.get(key), new.get(key)
            out.append(Change(name, key, None if was is None else _cut(was), None if now is None else _cut(now)))
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[Change]:
    """Every rendered field that differs, file by file in name order."""
    out: list[Change] = []
    for name in sorted(set(before) | set(after)):
        out += file_changes(name, before.get(name), after.get(name))
    return out


def container_fields(files: Mapping[str, str]) -> dict[str, str]:
    """The fields of a host's ``container.yaml`` (empty when it has none or it cannot be read)."""
    text = files.get("container.yaml")
    if text is None:
        return {}
    try:
        return _fields_of("container.yaml", text)
    except _UnreadableError:
        return {}


def image_of(files: Mapping[str, str]) -> str | None:
    """The engine image a host's ``container.yaml`` names (None when it names none or cannot be read)."""
    image = container_fields(files).get("image")
    return image if image and image != "null" else None
