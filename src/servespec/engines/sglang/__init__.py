"""SGLang (``python3 -m sglang.launch_server``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import ClusterPorts, Engine, EngineCheck
from servespec.engines.catalog import EngineRelease

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.spec.fleet import HostView

DIST_PORT = 20000
"""SGLang ``--dist-init-addr`` port: servespec's choice (SGLang has no default; any port free on the leader works)."""


class Sglang(Engine):
    name = "sglang"
    package = __name__
    adapter_option = "lora_paths"

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.sglang.checks import checks

        return checks(known)

    def host_checks(self, known: Known, host: HostView) -> Iterator[EngineCheck]:
        """Upstream SGLang has kt-kernel's ``--kt-*`` options too: their thread pools are checked as KTransformers'."""
        if known.release is None or known.release.option("kt_cpuinfer") is None:
            return iter(())
        from servespec.engines.sglang.kt_pools import host_checks

        return host_checks(known, host)

    def cluster(self, release: EngineRelease | None) -> ClusterPorts:
        return ClusterPorts("torch", DIST_PORT, "--dist-init-addr")


ENGINE = Sglang()
