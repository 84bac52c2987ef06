"""KV-layout facts of llama.cpp builds older than the catalog (``kv_layout_older_builds.json``).

Written by ``scripts/catalog/llama_cpp_older.py`` from the llama.cpp trees Ollama vendored (each read
cites the tree, file and line). These builds are not catalogued releases: only the cells part of
``facts.kv_cache`` (the windowed cache's rule and the cells' padding) is known, per range of builds.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from servespec.engines.catalog import SwaCells

TABLE = Path(__file__).with_name("kv_layout_older_builds.json")


class OlderLayout(BaseModel):
    """``facts.kv_cache`` less the element types, for a build before the catalog."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    swa: SwaCells | None
    cell_pad: int
    cell_pad_flash_attn: int | None = None
    source: str


class OlderRange(BaseModel):
    """Builds ``first``-``last`` (inclusive) with one layout (None: read, but not expressible; ``why``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: str
    last: str
    read_at: tuple[str, ...]
    kv_cache: OlderLayout | None
    why: str = ""
    bracketed_by: str | None = None
    basis: str


def build_number(version: str | None) -> int | None:
    """``b7772`` -> 7772 (a commit hash, ``unknown`` or None: None)."""
    match = re.fullmatch(r"b(\d+)", (version or "").strip())
    return int(match.group(1)) if match else None


@cache
def ranges() -> tuple[OlderRange, ...]:
    data = json.loads(TABLE.read_text())
    return tuple(OlderRange.model_validate(entry) for entry in data["ranges"])


def lookup(version: str | None) -> OlderRange | None:
    """The range holding build ``version``, if the table has one."""
    number = build_number(version)
    if number is None:
        return None
    for entry in ranges():
        first, last = build_number(entry.first), build_number(entry.last)
        if first is not None and last is not None and first <= number <= last:
            return entry
    return None
