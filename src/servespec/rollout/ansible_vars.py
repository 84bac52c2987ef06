"""Ansible's inputs written so that no user or host string is ever a template.

Ansible templates every string of an inventory and of ``-e`` extra vars it reads: a spec's
``engine.image`` of ``{{ lookup('pipe', 'id') }}`` would run on the controller. Ansible
never templates a scalar tagged ``!unsafe`` (its own mark for data that is not code), so
:func:`unsafe_yaml` writes every string that could hold a template (one with a ``{``: every
Jinja delimiter starts with one) with that tag. A string without one cannot be templated and
is written double-quoted and untagged, because Ansible's loader types a tagged scalar by its
text: ansible-core 2.19 reads ``!unsafe "010"`` as the integer 8 and ``!unsafe "true"`` as a
boolean, while ``"010"`` stays the string it is. Numbers, booleans and null stay plain.
Mapping keys cannot carry the tag, so they must be plain names (:data:`SAFE_KEY`) and
anything else is refused. ansible-runner is given these files instead of dicts (it would
write dicts as plain JSON, which Ansible templates).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SAFE_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
"""Variable names, host names and dict keys: no template delimiters, spaces or quotes."""


class UnsafeInputError(ValueError):
    """A value that cannot be written so that Ansible leaves it alone (a key with template syntax, an object)."""


def _quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar in pure ASCII (every other character escaped)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _scalar(value: Any) -> str:
    # bool before int: True is an int in Python.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return repr(value)
    if isinstance(value, str):
        # Only a string with a "{" can be a template; untagged, every other one keeps its type
        # (Ansible loads `!unsafe "010"` as 8 and `!unsafe ""` as None).
        return "!unsafe " + _quoted(value) if "{" in value else _quoted(value)
    raise UnsafeInputError(f"cannot pass a {type(value).__name__} to Ansible")


def _lines(value: Any, indent: str) -> list[str]:
    if isinstance(value, Mapping):
        if not value:
            return [indent + "{}"]
        out = []
        for key, item in value.items():
            if not isinstance(key, str) or not SAFE_KEY.match(key):
                raise UnsafeInputError(f"refusing key {key!r}: only letters, digits, '.', '_' and '-'")
            out += _entry(f"{key}:", item, indent)
        return out
    if isinstance(value, list | tuple):
        if not value:
            return [indent + "[]"]
        out = []
        for item in value:
            out += _entry("-", item, indent)
        return out
    return [indent + _scalar(value)]


def _entry(head: str, item: Any, indent: str) -> list[str]:
    if isinstance(item, Mapping | list | tuple) and item:
        return [indent + head, *_lines(item, indent + "  ")]
    return [f"{indent}{head} {_lines(item, '')[0]}"]


def unsafe_yaml(data: Mapping[str, Any]) -> str:
    """YAML text of ``data`` with every string that could be a template tagged ``!unsafe`` (never templated)."""
    return "\n".join(["---", *_lines(data, "")]) + "\n"


def write_inputs(private: Path, inventory: Mapping[str, Any], extravars: Mapping[str, Any]) -> Path:
    """Write ansible-runner's inventory and ``env/extravars`` into ``private``; returns the inventory path.

    ansible-runner passes ``env/extravars`` to ansible-playbook as ``-e @file``, which Ansible
    reads with its own YAML loader, so the ``!unsafe`` tags hold there as in the inventory.
    """
    folder = private / "inventory"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hosts.yml"
    path.write_text(unsafe_yaml(inventory), encoding="ascii")
    if extravars:
        env = private / "env"
        env.mkdir(parents=True, exist_ok=True)
        (env / "extravars").write_text(unsafe_yaml(extravars), encoding="ascii")
    return path
