"""What the GGUF engines (llama.cpp, Ollama) share: slots of context allocated up front."""

from __future__ import annotations

from typing import TYPE_CHECKING

from servespec.engines.base import Engine

if TYPE_CHECKING:
    from servespec.knowledge.memory import EstimateInput, GpuEstimate


class GgufEngine(Engine):
    """An engine that loads GGUF files and allocates every slot's context at start-up."""

    def estimate(self, inp: EstimateInput) -> GpuEstimate:
        from servespec.knowledge.memory import estimate_gguf

        return estimate_gguf(inp, self.slots(inp.options))

    def slots(self, options: dict[str, object]) -> int:
        """Sequences served at once: the batch option when positive, else the engine's default."""
        from servespec.knowledge.memory import number

        profile = self.profile
        value = int(number(options, profile.batch_option, 0)) if profile.batch_option else 0
        return value if value >= 1 else (profile.batch_default or 1)
