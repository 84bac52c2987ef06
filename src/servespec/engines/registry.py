"""The registry's table: every engine's name and its unit's package, in the order the contract lists them.

A leaf (it imports nothing), so the spec grammar (``spec/models.py``: ``engine.name``) reads the
names without importing the engines package's units or anything they need; the registry
(:mod:`servespec.engines`) imports a unit from this table on first use. Adding an engine is
one line here.
"""

from __future__ import annotations

UNITS: dict[str, str] = {
    "vllm": "vllm",
    "tgi": "tgi",
    "ollama": "ollama",
    "tensorrt-llm": "tensorrt_llm",
    "sglang": "sglang",
    "llama.cpp": "llama_cpp",
    "xinference": "xinference",
    "ktransformers": "ktransformers",
    "lmstudio": "lmstudio",
    "openllm": "openllm",
}
"""Every engine's name -> its unit's package under ``servespec.engines``, in the order the contract lists them."""


def names() -> tuple[str, ...]:
    """The engines' names, in registry order (no unit is imported)."""
    return tuple(UNITS)
