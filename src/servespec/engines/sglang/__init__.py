"""SGLang (``python3 -m sglang.launch_server``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from servespec.engines.base import ClusterPorts, Engine, EngineCheck
from servespec.engines.catalog import EngineRelease

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.engines.layout import Layout
    from servespec.knowledge.models import ModelFacts
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

    def kv_unmodelled(self, model: ModelFacts, release: EngineRelease | None = None) -> str:
        """A hybrid linear-attention model: SGLang gives part of the KV budget to the layers' recurrent states
        (engines/sglang/mamba.py); not sized where the model's kind of layer, or the release's split
        (``facts.memory.mamba_split`` missing or ``unread``), is not modelled."""
        why = super().kv_unmodelled(model, release)
        if why or not model.linear_layers:
            return why
        from servespec.engines.sglang import mamba

        lead = (
            f"{self.name}'s KV pool is not sized for this model: the release splits the memory left after "
            "mem_fraction_static between the linear-attention layers' state pool and the KV pool, and "
        )
        tail = " (engines/sglang/mamba.py): no memory plan, MEM rules skipped"
        kind = mamba.kind_unmodelled(model)
        if kind:
            return lead + kind + tail
        if release is None:
            return lead + "the split is per release, and the release is not known" + tail
        memory = release.facts.memory
        if memory is None or memory.mamba_split is None:
            return (
                lead + f"{release.version}'s catalog has no facts.memory.mamba_split (SGLang before 0.5.2 has no "
                "state pool for such layers)" + tail
            )
        if memory.mamba_split.variant == "unread":
            return (
                lead + f"{release.version}'s split (its KV-cache configurator's, with a padding slot) is not "
                f"modelled: {memory.mamba_split.source}" + tail
            )
        return ""

    def layout(self, known: Known) -> Layout:
        from servespec.engines.sglang.parallel import layout

        return layout(known)

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.sglang import parallel
        from servespec.engines.sglang.checks import checks

        yield from checks(known)
        yield from parallel.checks(known)

    def host_checks(self, known: Known, host: HostView) -> Iterator[EngineCheck]:
        """Upstream SGLang has kt-kernel's ``--kt-*`` options too: their thread pools are checked as KTransformers'."""
        if known.release is None or known.release.option("kt_cpuinfer") is None:
            return iter(())
        from servespec.engines.sglang.kt_pools import host_checks

        return host_checks(known, host)

    def cluster(self, release: EngineRelease | None, options: Mapping[str, Any] | None = None) -> ClusterPorts:
        return ClusterPorts("torch", DIST_PORT, "--dist-init-addr")

    def runs_on_cpu(self, options: Mapping[str, Any]) -> bool:
        """``--device cpu``: each tensor-parallel rank is a sub-NUMA cluster of the CPUs, not a GPU, and a head
        count the ranks do not divide is padded (``adjust_config_with_unaligned_cpu_tp``, called where
        ``self.device == "cpu"`` in sglang/srt/model_executor/model_runner.py; sglang/srt/configs/update_config.py
        of 0.5.23: "Support the case where the num_attention_heads is not divisible by the TP size")."""
        return options.get("device") == "cpu"


ENGINE = Sglang()
