"""Catalogued releases by their file names alone: ordering, pre-releases, the newest per engine.

A leaf below :mod:`servespec.engines.catalog` (it imports neither pydantic nor an engine unit), so
``deploy --version`` names the newest catalogued release of every engine by listing the
``releases/`` folders, without parsing a release file or importing a unit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib.resources import files
from importlib.resources.abc import Traversable

from servespec.engines.registry import UNITS

POOL = "options.json"
"""The shared option definitions of an engine's releases (``{"version": 1, "options": {id: entry}}``), not a release."""


def version_key(text: str) -> tuple[int, ...]:
    """Sortable numeric key: ``v0.11.0`` -> (0, 11, 0); ``b6900`` -> (6900,); other suffixes ignored.

    A post release sorts after its release: ``0.4.1.post3`` -> (0, 4, 1, 3).
    """
    match = re.match(r"^[vb]?(\d+(?:\.\d+)*)(?:\.?post(\d+))?", text.strip())
    if not match:
        return ()
    post = (int(match.group(2)),) if match.group(2) else ()
    return tuple(int(part) for part in match.group(1).split(".")) + post


def is_prerelease(version: str) -> bool:
    """``0.33.0-rc2``, ``1.3.0rc1``, ``0.5.0.dev1``: release candidates and development builds."""
    return bool(re.search(r"rc|dev|alpha|beta", version))


def release_names(folder: Traversable) -> frozenset[str]:
    """Every catalogued version in ``folder`` as its file is named, pre-releases included."""
    found = {e.name.removesuffix(".json") for e in folder.iterdir() if e.name.endswith(".json")}
    return frozenset(found - {POOL.removesuffix(".json")})


def ordered(names: Iterable[str]) -> tuple[str, ...]:
    """Releases oldest first: pre-releases only where there is no other release."""
    every = list(names)
    stable = [v for v in every if not is_prerelease(v)]
    return tuple(sorted(stable or every, key=version_key))


def newest_catalogued() -> dict[str, tuple[str | None, str | None]]:
    """Engine name -> (its newest catalogued release, a newer catalogued pre-release or None), registry order."""
    root = files("servespec.engines")
    out: dict[str, tuple[str | None, str | None]] = {}
    for engine, unit in UNITS.items():
        names = release_names(root.joinpath(unit, "releases"))
        releases = ordered(names)
        newest = releases[-1] if releases else None
        pre = sorted((n for n in names if is_prerelease(n)), key=lambda n: (version_key(n), _pre_number(n)))
        newer = pre[-1] if pre and (newest is None or version_key(pre[-1]) > version_key(newest)) else None
        out[engine] = (newest, None if newer == newest else newer)
    return out


def _pre_number(name: str) -> int:
    """The number of a pre-release (``rc24`` -> 24), which :func:`version_key` leaves out."""
    match = re.search(r"(?:rc|dev|alpha|beta)(\d+)$", name)
    return int(match.group(1)) if match else 0
