"""Text Generation Inference (``text-generation-launcher``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import Engine, EngineCheck

if TYPE_CHECKING:
    from servespec.knowledge.memory import EstimateInput, GpuEstimate
    from servespec.knowledge.resolve import Resolved
    from servespec.render.common import EngineContainer, Target


class Tgi(Engine):
    name = "tgi"
    package = __name__

    def render(self, target: Target) -> EngineContainer:
        from servespec.engines.tgi.render import context

        return context(target)

    def estimate(self, inp: EstimateInput) -> GpuEstimate | None:
        from servespec.engines.tgi.memory import estimate_tgi

        return estimate_tgi(inp, inp.gpu) if inp.gpu else None

    def checks(self, known: Resolved) -> Iterator[EngineCheck]:
        from servespec.engines.tgi.checks import checks

        return checks(known)


ENGINE = Tgi()
