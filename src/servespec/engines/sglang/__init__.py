"""SGLang (``python3 -m sglang.launch_server``)."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
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
    # srt/speculative/spec_info.py SpeculativeAlgorithm (0.5.23: EAGLE, EAGLE3, STANDALONE, NGRAM; NEXTN an alias
    # of EAGLE that drafts with the model's own MTP layers); NGRAM and STANDALONE read in 0.5.5.post3 and 0.5.23
    speculative_methods = MappingProxyType(
        {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN", "ngram": "NGRAM", "draft": "STANDALONE"}
    )
    speculative_checked = MappingProxyType({"ngram": "0.5.5.post3", "draft": "0.5.5.post3", "eagle3": "0.5.5.post3"})

    def speculative_problem(self, known: Known) -> str:
        why = super().speculative_problem(known)
        release = known.release
        if why or release is None or release.option("speculative_algorithm") is not None:
            return why
        return f"{known.profile.title} {release.version} has no --speculative-algorithm"

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
