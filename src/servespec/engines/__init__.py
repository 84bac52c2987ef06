"""The engines servespec deploys, one unit (package) each, and the explicit registry of them.

Adding an engine: a package here with ``profile.yaml``, ``releases/``, ``templates/`` and an
:class:`~servespec.engines.base.Engine` subclass, one line in :data:`ENGINES` (the spec's
``engine.name`` accepts exactly the registry's names), and the regenerated schemas, docs
and goldens.
"""

from __future__ import annotations

from servespec.engines import (
    ktransformers,
    llama_cpp,
    lmstudio,
    ollama,
    openllm,
    sglang,
    tensorrt_llm,
    tgi,
    vllm,
    xinference,
)
from servespec.engines.base import Engine

ENGINES: tuple[Engine, ...] = (
    vllm.ENGINE,
    tgi.ENGINE,
    ollama.ENGINE,
    tensorrt_llm.ENGINE,
    sglang.ENGINE,
    llama_cpp.ENGINE,
    xinference.ENGINE,
    ktransformers.ENGINE,
    lmstudio.ENGINE,
    openllm.ENGINE,
)
"""Every engine, in the order the contract lists them."""

_BY_NAME = {engine.name: engine for engine in ENGINES}


def get(name: str) -> Engine:
    """The engine called ``name`` (a spec's ``engine.name``, validated by the loader)."""
    return _BY_NAME[name]


def names() -> tuple[str, ...]:
    """The engines' names, in registry order."""
    return tuple(_BY_NAME)
