"""SGLang (``python3 -m sglang.launch_server``)."""

from __future__ import annotations

from servespec.engines.base import ClusterPorts, Engine
from servespec.engines.catalog import EngineRelease

DIST_PORT = 20000
"""SGLang ``--dist-init-addr`` port: servespec's choice (SGLang has no default; any port free on the leader works)."""


class Sglang(Engine):
    name = "sglang"
    package = __name__

    def cluster(self, release: EngineRelease | None) -> ClusterPorts:
        return ClusterPorts("torch", DIST_PORT, "--dist-init-addr")


ENGINE = Sglang()
