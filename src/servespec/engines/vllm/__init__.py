"""vLLM (``vllm serve``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from servespec.engines.base import ClusterPorts, Engine, EngineCheck
from servespec.engines.catalog import EngineRelease

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


class Vllm(Engine):
    name = "vllm"
    package = __name__

    def layout(self, known: Known) -> Layout:
        from servespec.engines.vllm.parallel import layout

        return layout(known)

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.vllm import parallel
        from servespec.engines.vllm.checks import checks

        yield from checks(known)
        yield from parallel.checks(known)

    def cluster(self, release: EngineRelease | None, options: Mapping[str, Any] | None = None) -> ClusterPorts:
        if native_multinode(release, options):
            return ClusterPorts("torch", MASTER_PORT, "--master-port")
        return ClusterPorts("ray", RAY_PORT, "--port")


ENGINE = Vllm()
