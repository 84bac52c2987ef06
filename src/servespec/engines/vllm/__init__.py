"""vLLM (``vllm serve``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from servespec.engines.base import ClusterPorts, Engine, EngineCheck
from servespec.engines.catalog import EngineRelease, version_key

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.engines.layout import Layout

RAY_PORT = 6379
"""Ray's own default head port, passed explicitly to vLLM's Ray cluster (``ray start --head --port``:
https://docs.ray.io/en/latest/cluster/cli.html#ray-start)."""
MASTER_PORT = 29500
"""vLLM ``--master-port``: servespec's choice, passed explicitly to every rank (any port free on the
leader works; the 0.33.0 catalog records vLLM's own default as 29501)."""


def native_multinode(release: EngineRelease | None, options: Mapping[str, Any] | None = None) -> bool:
    """Whether a multi-node replica spans its hosts with vLLM's own ``--nnodes``, else on a Ray cluster.

    Releases before ``--nnodes`` need Ray. From it on, a replica whose options ask for
    ``distributed_executor_backend: ray`` runs on Ray too: vLLM refuses ``--nnodes`` above 1 with any
    backend but mp, uni or external_launcher ("nnodes > 1 can only be set when distributed executor
    backend is mp, uni or external_launcher.": ParallelConfig.__post_init__,
    https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/parallel.py).
    """
    if release is None or release.option("nnodes") is None:
        return False
    return (options or {}).get("distributed_executor_backend") != "ray"


DFLASH_FROM = "0.20.0"
"""The first catalogued release whose ``SpeculativeMethod`` takes ``dflash``
(https://github.com/vllm-project/vllm/blob/v0.20.0/vllm/config/speculative.py#L53; not in v0.19.1's)."""


class Vllm(Engine):
    name = "vllm"
    package = __name__
    adapter_option = "lora_modules"
    # vllm/config/speculative.py SpeculativeMethod (v0.11.0 L32-L35: "mtp"; v0.8.5 takes eagle and eagle3,
    # engine/arg_utils.py L1428-L1433, and knows MTP only as the deepseek_mtp model type)
    # "dflash": DFlashModelTypes, in SpeculativeMethod from 0.20.0 (vllm/config/speculative.py L53, v0.20.0;
    # absent in 0.19.1): DFLASH_FROM below
    speculative_methods = MappingProxyType(
        {
            "eagle": "eagle",
            "eagle3": "eagle3",
            "mtp": "mtp",
            "ngram": "ngram",
            "draft": "draft_model",
            "dflash": "dflash",
        }
    )
    speculative_checked = MappingProxyType({"mtp": "0.11.0"})
    # 0.11.0 has the V1 engine only: "Draft model speculative decoding is not supported yet" (engine/arg_utils.py
    # L1485-L1489); 0.8.5 falls back to V0 for it, 0.33.0's V1 runs it (config/speculative.py L1496)
    speculative_refused = MappingProxyType(
        {
            "draft": (
                "0.11.0",
                "0.33.0",
                "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/engine/arg_utils.py#L1485-L1489",
            )
        }
    )

    def layout(self, known: Known) -> Layout:
        from servespec.engines.vllm.parallel import layout

        return layout(known)

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.vllm import parallel
        from servespec.engines.vllm.checks import checks

        yield from checks(known)
        yield from parallel.checks(known)

    def speculative_problem(self, known: Known) -> str:
        why = super().speculative_problem(known)
        speculative, release = known.deployment.spec.model.speculative, known.release
        if why or speculative is None or release is None:
            return why
        title = known.profile.title
        if release.option("speculative_config") is None and release.option("speculative_model") is None:
            return f"{title} {release.version} has no speculative decoding option"
        if release.option("speculative_config") is None and speculative.method == "mtp":
            return f"{title} {release.version} takes a draft model only (--speculative-model), not MTP"
        if speculative.method == "dflash" and version_key(release.version) < version_key(DFLASH_FROM):
            return f"{title} {release.version} has no dflash method (SpeculativeMethod has it from {DFLASH_FROM})"
        return ""

    def cluster(self, release: EngineRelease | None, options: Mapping[str, Any] | None = None) -> ClusterPorts:
        if native_multinode(release, options):
            return ClusterPorts("torch", MASTER_PORT, "--master-port")
        return ClusterPorts("ray", RAY_PORT, "--port")


ENGINE = Vllm()
