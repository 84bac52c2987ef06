"""What the GGUF engines (llama.cpp, Ollama) share: every KV cell allocated up front, layers placed by count.

Each unit's ``memory.py`` says how its KV cache is laid out (``KvCells``: slots, a unified
cache) and which layers go to the GPUs (``GpuLayers``: all, a count the spec gives, or as
many as fit when the engine fits them itself); ``knowledge.memory.estimate_gguf`` does the
arithmetic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from servespec.engines.base import Engine

if TYPE_CHECKING:
    from servespec.engines.catalog import EngineRelease


def integer(value: Any) -> int | None:
    """An option's value as an integer (``20``, ``"20"``, ``"-1"``), else None (``auto``, ``all``, bad values)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip(), 10)
    except ValueError:
        return None


def pad(tokens: int, step: int) -> int:
    """``GGML_PAD``: ``tokens`` rounded up to a multiple of ``step`` (as is for a step of 1 or less)."""
    return -(-tokens // step) * step if step > 1 else tokens


def switched_on(value: Any) -> bool:
    """Whether a boolean option's value turns it on (``true``, ``1``, ``on``, ``yes``)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "on", "yes", "enabled")


class GgufEngine(Engine):
    """An engine that loads GGUF files and allocates every KV cell at start-up (its memory.py: ``estimate``)."""

    def slots(self, options: dict[str, Any], release: EngineRelease | None = None) -> int:
        """Sequences served at once: the batch option when positive, else the release's default, else the profile's."""
        profile = self.profile
        value = integer(options.get(profile.batch_option)) if profile.batch_option else None
        if value is not None and value >= 1:
            return value
        default = integer(release.default(profile.batch_option)) if release is not None else None
        return default if default is not None and default >= 1 else (profile.batch_default or 1)
