"""Rules on what `deploy discover` saw of a host at run time: model-cache space, busy GPUs, GPU runtime.

These facts come from the facts file's ``runtime`` part (contract §2.3), a snapshot taken
when discover ran: hosts declared by hand, and facts files without that part, are not
judged. Each message says the facts were collected, not that they are true now.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from servespec import hostpaths
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.knowledge.memory import GIB, EstimateInput, weight_bytes
from servespec.rules.base import Rule, placements, refusal
from servespec.spec.fleet import DeploymentDoc, Fleet, HostView
from servespec.spec.source import KeyPath

_HF_CACHE = "https://huggingface.co/docs/huggingface_hub/guides/manage-cache"
_DF = "https://pubs.opengroup.org/onlinepubs/9799919799/utilities/df.html"
_SMI = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"
_TOOLKIT = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
_CDI = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
_DEVICE_REQUESTS = "https://github.com/moby/moby/pull/38828"
_VLLM_FREE_MEMORY = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/worker/gpu_worker.py#L183"

CONTAINER_PREFIX = "servespec-"
"""Engine containers are named ``servespec-<deployment>`` (render.common.container_description);
an update keeps the running one aside as ``servespec-<deployment>-previous``."""
DEVICE_REQUESTS_DOCKER = (19, 3)
"""Docker Engine 19.03 (API 1.40) added ``HostConfig.DeviceRequests``, what ``--gpus`` sends (moby#38828)."""


def _when(host: HostView) -> str:
    """``on <date>`` of the host's facts file, or "" when it records none."""
    stamp = host.facts_collected_at
    return f" on {stamp[:10]}" if stamp and re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", stamp) else ""


def _needs_gpus(host: HostView) -> bool:
    """Whether engine containers get GPUs on ``host``: it has some (llama.cpp and Ollama run on CPU-only hosts)."""
    return bool(resolve.host_gpus(host).count)


def _host_key(deployment: DeploymentDoc, host: HostView) -> KeyPath:
    """The ``placement.hosts`` entry naming ``host``, else ``placement``."""
    hosts = deployment.spec.placement.hosts
    if hosts and host.name in hosts:
        return ("placement", "hosts", hosts.index(host.name))
    return ("placement",)


def download_gib(known: resolve.Resolved) -> float | None:
    """GiB the model's weights take in the host's model cache, at least; None when unknown.

    The checkpoint as stored (``dtype: auto``) and the spec's quantization: a model quantized
    at load is downloaded at its full size, so this is a lower bound of what is fetched.
    A local model source is mounted from its folder, never downloaded: None.
    """
    spec = known.deployment.spec
    if hostpaths.is_local_path(str(spec.model.source)):
        return None
    facts = known.model.facts
    if facts is None:
        return None
    size = weight_bytes(
        EstimateInput(
            engine=spec.engine.name,
            release=known.release,
            model=facts,
            gpu=None,
            dtype="auto",
            quantization=spec.model.quantization,
            gguf_type=spec.model.gguf_type,
        )
    )
    return size / GIB


class ModelCacheTooSmall(Rule):
    """The model's weights must fit the free space of the host's model cache.

    Engines download a hub model into ``/var/lib/servespec/models`` on each host (mounted as
    the engine's cache: Hugging Face's ``HF_HOME``, Ollama's models folder). Each host of
    a replica fetches the whole checkpoint. When the weights are larger than the space
    ``df`` reported free there, the download fails part way with "No space left on
    device" and the engine never becomes healthy. Several deployments on one host share
    the cache: different models add up (the same source and revision is stored once).

    The size is the checkpoint's at least: parameters counted from the architecture at
    the checkpoint's dtype, or at the quantization's bits (a model quantized at load is
    larger on disk). Local model sources are mounted, not downloaded, and are not
    checked. A warning: free space changes, and weights already in the cache (a model
    deployed before the facts were collected) need no room again.

    Fix: free space under ``/var/lib/servespec/models`` (or grow that volume), place the
    deployment on a host with room, or pick a smaller or quantized checkpoint; then run
    ``deploy discover`` again.

    Source: Hugging Face Hub, manage the cache (files are stored whole under the cache
    folder): https://huggingface.co/docs/huggingface_hub/guides/manage-cache ; free space
    as ``df -P`` reports it (POSIX df, "Available"):
    https://pubs.opengroup.org/onlinepubs/9799919799/utilities/df.html
    """

    id = "MEM006"
    name = "memory.model-cache-space"
    severity = Severity.WARNING
    summary = "model weights larger than the free space of the host's model cache"
    sources = (_HF_CACHE, _DF)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        needed: dict[int, dict[tuple[str, str], float]] = {}  # per host: GiB of each distinct (source, revision)
        for deployment, host in placements(fleet):
            free = host.runtime.model_cache_free_gib if host.runtime else None
            size = download_gib(resolve.resolved(deployment)) if free is not None else None
            if free is None or size is None:
                continue
            models = needed.setdefault(id(host), {})
            model = (str(deployment.spec.model.source), str(deployment.spec.model.revision or ""))
            if model in models:
                continue  # stored once: an earlier deployment already counted it
            others = sum(models.values())
            models[model] = size
            if size + others <= free:
                continue
            together = f", {others + size:.1f} GiB with the other models placed there" if others else ""
            yield self.report(
                deployment.document,
                f"the weights need at least {size:.1f} GiB in {host.name}'s model cache{together}; "
                f"its facts file saw {free:.1f} GiB free{_when(host)}",
                ("model", "source"),
                hint="free space under /var/lib/servespec/models or use another host, then run deploy discover again",
            )


class GpusBusy(Rule):
    """The GPUs a deployment uses should not be running another process.

    ``deploy discover`` records which GPUs ran compute processes (``nvidia-smi
    --query-compute-apps``) and, for each, whether it ran in a servespec engine
    container. A GPU another process holds has less free memory than the memory
    rules assume: the engine fails to start (vLLM: "Free memory on device ... is less
    than desired GPU memory utilization") or competes with it. ``gpu_ids: auto``
    uses GPUs 0, 1, ... in order. The deployment's own engine (``servespec-<name>``, and
    ``-previous`` during an update) does not count. A facts file written before discover
    recorded containers lists busy GPUs only: then every process counts, the deployment's
    own engine included, and the message says so. The apply preflight refuses GPUs that
    run other processes.

    A warning: processes come and go, and the facts file is a snapshot.

    Fix: choose free GPUs with ``resources.gpu_ids``, stop the other process, or place
    the deployment elsewhere; then run ``deploy discover`` again.

    Source: nvidia-smi, ``--query-compute-apps`` (the processes using each GPU):
    https://docs.nvidia.com/deploy/nvidia-smi/index.html ; vLLM's start-up memory check:
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/worker/gpu_worker.py#L183
    """

    id = "PAR005"
    name = "parallel.busy-gpus"
    severity = Severity.WARNING
    summary = "gpu_ids (or the GPUs auto picks) ran another process when facts were collected"
    sources = (_SMI, _VLLM_FREE_MEMORY)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            runtime = host.runtime
            count = resolve.host_gpus(host).count
            if runtime is None or not count:
                continue
            own = {f"{CONTAINER_PREFIX}{deployment.name}", f"{CONTAINER_PREFIX}{deployment.name}-previous"}
            if runtime.gpu_processes is not None:
                holders: dict[int, set[str]] = {}
                for process in runtime.gpu_processes:
                    if process.container not in own:
                        holders.setdefault(process.gpu, set()).add(
                            f"container {process.container}" if process.container else "another process"
                        )
                caveat = ""
            elif runtime.busy_gpus is not None:
                holders = {gpu: {"a compute process"} for gpu in runtime.busy_gpus}
                caveat = " (this facts file cannot tell the deployment's own engine from others)"
            else:
                continue
            ids = resolve.resolved(deployment).gpu_ids
            busy = [gpu for gpu in ids if gpu in holders]
            if not busy:
                continue
            who = ", ".join(sorted({name for gpu in busy for name in holders[gpu]}))
            free = [gpu for gpu in range(count) if gpu not in holders]
            need = len(ids)
            hint = (
                f"use free GPUs: gpu_ids: {free[:need]}"
                if len(free) >= need
                else "stop the other process or place the deployment elsewhere"
            ) + ", then run deploy discover again"
            yield self.report(
                deployment.document,
                f"GPU(s) {busy} on {host.name} ran {who} when its facts were collected{_when(host)}{caveat}",
                ("resources", "gpu_ids"),
                hint=hint,
            )


def _docker_version(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"(\d{1,4})\.(\d{1,4})", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


class NoGpuContainerRuntime(Rule):
    """A host that runs a GPU engine needs Docker with NVIDIA's container support.

    The engine container asks Docker for its GPUs (``--gpus device=...``: a
    ``DeviceRequests`` entry of the container's host config, added in Docker 19.03,
    API 1.40). Docker hands such requests to the NVIDIA Container Toolkit; without the
    toolkit it refuses: "could not select device driver "" with capabilities: [[gpu]]".
    ``deploy discover`` records Docker's version, whether ``docker info`` lists the
    ``nvidia`` runtime (what ``nvidia-ctk runtime configure --runtime=docker`` registers)
    and whether CDI spec directories are configured (the toolkit's other way in, ``nvidia-ctk
    cdi generate``). The apply preflight refuses a host with neither, as this rule does;
    older Docker cannot request devices at all.

    Hosts without GPUs (llama.cpp or Ollama on CPU) and facts files that do not record the
    runtime are not checked.

    Fix: install the NVIDIA Container Toolkit and run ``sudo nvidia-ctk runtime configure
    --runtime=docker`` then restart Docker (or generate CDI specs), or upgrade Docker to
    19.03 or newer; then run ``deploy discover`` again.

    Source: NVIDIA Container Toolkit, installing and configuring Docker:
    https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html ;
    CDI support: https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html ;
    Docker's DeviceRequests (19.03): https://github.com/moby/moby/pull/38828
    """

    id = "HW006"
    name = "hardware.container-runtime"
    severity = Severity.ERROR
    evidence = (
        refusal(_TOOLKIT, note="docker run --gpus fails: could not select device driver with capabilities [[gpu]]."),
    )
    summary = "a GPU engine on a host whose Docker has no NVIDIA runtime or CDI (or predates --gpus)"
    sources = (_TOOLKIT, _CDI, _DEVICE_REQUESTS)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            runtime = host.runtime
            if runtime is None or not _needs_gpus(host):
                continue
            version = _docker_version(runtime.docker_version)
            if version is not None and version < DEVICE_REQUESTS_DOCKER:
                yield self.report(
                    deployment.document,
                    f"{host.name} ran Docker {version[0]}.{version[1]:02d} when its facts were collected{_when(host)}, "
                    "which cannot give containers GPUs (--gpus needs 19.03)",
                    _host_key(deployment, host),
                    hint="upgrade Docker on the host, then run deploy discover again",
                )
            elif runtime.nvidia_runtime is False and runtime.cdi is False:
                yield self.report(
                    deployment.document,
                    f"{host.name}'s Docker had no NVIDIA runtime and no CDI specs when its facts were "
                    f"collected{_when(host)}: the engine container cannot get its GPUs",
                    _host_key(deployment, host),
                    hint="install the NVIDIA Container Toolkit and run 'nvidia-ctk runtime configure "
                    "--runtime=docker', then run deploy discover again",
                )
