"""SGLang (``python3 -m sglang.launch_server``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from servespec.engines.base import ClusterPorts, Engine
from servespec.engines.catalog import EngineRelease

if TYPE_CHECKING:
    from servespec.knowledge.memory import EstimateInput, GpuEstimate
    from servespec.render.common import EngineContainer, Target

DIST_PORT = 20000
"""SGLang ``--dist-init-addr`` port: servespec's choice (SGLang has no default; any port free on the leader works)."""


class Sglang(Engine):
    name = "sglang"
    package = __name__

    def render(self, target: Target) -> EngineContainer:
        from servespec.engines.sglang.render import context

        return context(target)

    def estimate(self, inp: EstimateInput) -> GpuEstimate | None:
        from servespec.engines.sglang.memory import estimate_sglang

        return estimate_sglang(inp, inp.gpu) if inp.gpu else None

    def cluster(self, release: EngineRelease | None) -> ClusterPorts:
        return ClusterPorts("torch", DIST_PORT, "--dist-init-addr")


ENGINE = Sglang()
