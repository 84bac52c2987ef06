"""The engines servespec deploys, one unit (package) each, and the explicit registry of them.

Adding an engine: a package here with ``profile.yaml``, ``releases/``, ``templates/`` and an
:class:`~servespec.engines.base.Engine` subclass, one line in :data:`~servespec.engines.registry.UNITS` (the spec's
``engine.name`` accepts exactly the registry's names, a test checks), and the regenerated
schemas, docs and goldens.

A unit is imported on first use (:func:`get`), so a command loads only the engines its
specs name; :data:`ENGINES` imports them all (docs, tests, the render environment).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from servespec.engines.registry import UNITS
from servespec.engines.registry import names as names  # re-exported: the registry's names, no unit imported

if TYPE_CHECKING:
    from servespec.engines.base import Engine

    ENGINES: tuple[Engine, ...]
    """Every engine, in registry order (imports every unit)."""

_LOADED: dict[str, Engine] = {}


def get(name: str) -> Engine:
    """The engine called ``name`` (a spec's ``engine.name``, validated by the loader); imports its unit once."""
    engine = _LOADED.get(name)
    if engine is None:
        module = importlib.import_module(f"{__name__}.{UNITS[name]}")
        engine = _LOADED[name] = module.ENGINE
    return engine


def __getattr__(attribute: str) -> Any:
    # ENGINES: every engine, in registry order (imports every unit; docs, tests, the render environment).
    if attribute == "ENGINES":
        return tuple(get(name) for name in UNITS)
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
