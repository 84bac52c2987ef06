"""The render driver: a deployment's targets, and each engine container wrapped into its description.

:func:`targets` resolves every value a unit reads into its :class:`~servespec.engines.kit.Target`;
an engine's ``render`` (``servespec/engines/<name>/render.py``) turns one into an
:class:`~servespec.engines.kit.EngineContainer` (command, environment, native files) with the
engine kit (``engines/kit.py``); this module wraps that into a
:class:`~servespec.render.container.ContainerSpec` (``container.yaml``), the single
description the rollout starts a container from.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import posixpath
import re
from pathlib import PurePosixPath
from typing import Any, Literal

from servespec import hostpaths
from servespec.engines.kit import (
    CONFIG_DIR,
    AdapterPath,
    EngineContainer,
    RenderError,
    Target,
    Volume,
    engine_host,
    loadable_adapters,
    resolve_timeout,
)
from servespec.knowledge import resolve
from servespec.knowledge.served import served_names
from servespec.render.container import ContainerSpec, EngineRef, Gpus, Healthcheck, Port, Replica
from servespec.spec.fleet import DeploymentDoc
from servespec.spec.front_proxy import replica_name, replica_ports
from servespec.text import printable

HOST_CONFIG_ROOT = "/etc/servespec"
HOST_STATE_ROOT = "/var/lib/servespec"
MODEL_CACHE = f"{HOST_STATE_ROOT}/models"
FORMAT_VERSION = 1


def targets(deployment: DeploymentDoc) -> list[Target]:
    """Every host of the deployment with its replica, rank and leader."""
    known = resolve.resolved(deployment)
    hosts = list(known.hosts)
    group = deployment.spec.placement.hosts_per_replica
    options = {s.key: s.value for s in known.settings if s.valid and not s.from_extra_args}
    names = served_names(deployment)
    roots = hostpaths.model_roots(deployment)
    ids = known.replica_gpu_ids[0]
    out = []
    for index, host in enumerate(hosts):
        replica, rank = divmod(index, group)
        leader = hosts[replica * group]
        gpu_ids = [] if resolve.host_gpus(host).count == 0 else list(ids)  # one replica's (replicas_per_host)
        target = Target(
            deployment,
            host,
            replica,
            rank,
            leader,
            group,
            options,
            known.release,
            known,
            gpu_ids,
            list(names),
            roots,
            adapter_paths(deployment, roots),
            draft_path(deployment, roots),
        )
        out.append(target)
    return out


COMMIT = re.compile(r"[0-9a-f]{40}")


def hub_snapshot(cache: str, repo: str, commit: str) -> str:
    """A Hub repo's snapshot folder at a commit in a huggingface_hub cache (file_download.py ``repo_folder_name``:
    ``models--{org}--{name}``, then ``snapshots/{commit}``; huggingface_hub v2.4.0)."""
    return posixpath.join(cache, "models--" + repo.replace("/", "--"), "snapshots", commit)


def adapter_paths(deployment: DeploymentDoc, roots: list[str]) -> list[AdapterPath]:
    """``model.adapters`` as the engine reads them inside its container (:func:`beside_path`)."""
    return [
        beside_path(deployment, roots, adapter.name, str(adapter.source), adapter.revision, f"model.adapters[{index}]")
        for index, adapter in enumerate(deployment.spec.model.adapters)
    ]


def draft_path(deployment: DeploymentDoc, roots: list[str]) -> AdapterPath | None:
    """``model.speculative.draft`` as the engine reads it (:func:`beside_path`), or None."""
    speculative = deployment.spec.model.speculative
    if speculative is None or speculative.draft is None:
        return None
    draft = str(speculative.draft)
    return beside_path(deployment, roots, "draft", draft, speculative.draft_revision, "model.speculative.draft")


def beside_path(
    deployment: DeploymentDoc, roots: list[str], name: str, source: str, revision: str | None, where: str
) -> AdapterPath:
    """A checkpoint loaded beside the model (an adapter, a draft) as the engine reads it inside its container.

    A host path must lie inside the model roots (the renderer's own check, as for ``model.source``:
    SEC004) and is mounted read-only at the same path (:func:`model_volumes`). A Hub repository at a
    commit is staged into the host's model cache like the weights (rollout/staging.py
    ``beside_vars``), so the engine reads its snapshot folder; a branch, or an engine whose cache is
    not staged, leaves the Hub id to the engine (vLLM's ``get_adapter_absolute_path`` downloads one).
    """
    from servespec.knowledge import store

    if hostpaths.is_local_path(source):
        problem = hostpaths.local_source_problem(source, roots)
        if problem:
            raise UnsafeModelPathError(f"{where}.source: {problem}" if "adapters" in where else f"{where}: {problem}")
        return AdapterPath(name, source, source, local=True, staged=False)
    # staged only where the weights are: an engine reading its model from its profile's Hub cache (cache_mode)
    model_store = resolve.resolved(deployment).profile.model_store
    stages = model_store is not None and model_store.hub_cache is not None
    stages = stages and not hostpaths.is_local_path(str(deployment.spec.model.source))
    env = {str(k): str(v) for k, v in deployment.spec.engine.env.items()}
    cache = store.hub_cache_inside(deployment, env) if stages else None
    if cache is not None and COMMIT.fullmatch(str(revision or "")):
        return AdapterPath(name, hub_snapshot(cache, source, str(revision)), source, local=False, staged=True)
    return AdapterPath(name, source, source, local=False, staged=False)


def content_hash(target: Target) -> str:
    """sha256 of everything the rendered files depend on: the spec document, the host, the release."""
    payload = {
        "format": FORMAT_VERSION,
        "spec": target.deployment.document.data,
        "host": target.host.spec.model_dump(mode="json"),
        "hardware": target.host.hardware.model_dump(mode="json") if target.host.hardware else None,
        "release": target.release.version if target.release else None,
        "replica": [target.replica, target.rank, target.leader.name, target.hosts_in_replica],
    }
    template = target.deployment.chat_template
    if template is not None:  # the file's text is rendered too: a changed template is a new revision
        payload["chat_template"] = hashlib.sha256(template.encode("utf-8")).hexdigest()
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def header(target: Target, digest: str, *, per_host: bool = True) -> str:
    """The generated-file comment: origin (and host, for per-host files) and content hash; no timestamps.

    It lands inside ``#`` and ``<!-- -->`` comments, so every name in it is escaped: no line
    break, control or bidi character (text.printable), and no ``<``/``>`` to close a comment.
    """

    def inert(text: str) -> str:
        return printable(text).replace("<", "\\x3c").replace(">", "\\x3e")

    source = inert(PurePosixPath(target.deployment.document.file).name)
    host = f", host {inert(target.host.name)}" if per_host else ""
    return (
        f"Generated by servespec from {source} (deployment {inert(target.deployment.name)}{host}); "
        f"do not edit. Content sha256:{inert(digest)}"
    )


class UnsafeModelPathError(RenderError):
    """A local model source that may not be mounted into a container."""


def local_model_folder(source: str, roots: list[str]) -> str:
    """The host folder a local model source mounts, refusing anything outside the model roots.

    SEC004 reports such specs; this is the renderer's own check, so that nothing that
    skips validation can mount ``/var/run`` (docker.sock) or ``/etc`` into an engine.
    """
    problem = hostpaths.local_source_problem(source, roots)
    if problem:
        raise UnsafeModelPathError(f"model.source: {problem}")
    return hostpaths.mounted_folder(source)


def cache_mode(target: Target) -> Literal["ro", "rw"]:
    """How the engine mounts the host's model cache: read-only when servespec stages its weights.

    The role's weights modules write the cache as root on the host; an engine container that could
    write it too could plant links for them (issue 20). An engine that reads a Hub model from its
    profile's Hub cache (``model_store.hub_cache``) gets it staged (rollout/staging.py stages only
    through a read-only cache mount), and huggingface_hub reads a fully cached model from a
    read-only cache (file_download.py, v2.4.0: "the cache may be mounted read-only"). An engine that
    fetches its model itself (llama.cpp's GGUF, Ollama's registry), or serves a host path, keeps
    the cache read-write: the modules walk it without following links either way.
    """
    model_store = target.profile.model_store
    staged = model_store is not None and model_store.hub_cache is not None
    return "ro" if staged and not hostpaths.is_local_path(str(target.spec.model.source)) else "rw"


def model_volumes(target: Target, container_cache: str) -> list[Volume]:
    """The host model cache, and a local model path (under a model root) mounted read-only at the same path.

    The cache is also mounted wherever the spec moves the engine's model store (``OLLAMA_MODELS``,
    ``HF_HOME``, ``--download-dir``: :func:`servespec.knowledge.store.mounts`), so a new container
    finds the model there instead of downloading it again.
    """
    from servespec.knowledge import store

    mode = cache_mode(target)
    volumes = [Volume(MODEL_CACHE, container_cache, mode)]
    volumes += [Volume(MODEL_CACHE, path, mode) for path in store.mounts(target.deployment, container_cache)]
    source = str(target.spec.model.source)
    if hostpaths.is_local_path(source):
        folder = local_model_folder(source, target.model_roots)
        volumes.append(Volume(folder, folder, "ro"))
    for adapter in [*target.adapters, *([target.draft] if target.draft else [])]:
        folder = hostpaths.mounted_folder(adapter.path) if adapter.local else ""
        inside = any(v.host == v.container and (folder + "/").startswith(v.container + "/") for v in volumes)
        if folder and not inside:
            volumes.append(Volume(folder, folder, "ro"))
    return volumes


def numa_pinning(target: Target, gpu_ids: list[int] | None = None) -> dict[str, str]:
    """cpuset_mems (and cpuset_cpus when the facts list the node's CPUs) for ``numa: auto`` or a node.

    ``gpu_ids``: one replica's GPUs (placement.replicas_per_host); default the target's.
    """
    chosen = target.spec.resources.numa
    hardware = target.host.hardware
    if chosen == "off" or hardware is None or not hardware.gpu_numa_nodes:
        return {}
    if chosen == "auto":
        ids = target.gpu_ids if gpu_ids is None else gpu_ids
        nodes = {hardware.gpu_numa_nodes[i] for i in ids if i < len(hardware.gpu_numa_nodes)}
        if len(nodes) != 1 or -1 in nodes:
            return {}  # GPUs on several nodes (TOPO001) or unknown: leave placement to the kernel
        node = nodes.pop()
    else:
        node = int(chosen)
    pinning = {"cpuset_mems": str(node)}
    cpus = (hardware.numa_cpus or {}).get(node)
    if cpus:
        pinning["cpuset_cpus"] = cpus
    return pinning


def container_description(target: Target, engine: EngineContainer, digest: str) -> ContainerSpec:
    """Everything the rollout needs to run the engine (written as container.yaml)."""
    spec = target.spec
    deployment = target.deployment.name
    gpu_ids = target.gpu_ids
    multi_gpu = len(gpu_ids) > 1 or target.multi_node
    pinning = numa_pinning(target)
    environment = _environment(target, engine)
    secrets = secret_environment(target, engine, environment)
    return ContainerSpec(
        deployment=deployment,
        model_name=spec.serving.model_name,
        host=target.host.name,
        revision=digest[:12],
        engine=EngineRef(spec.engine.name, spec.engine.version),
        role=target.role,
        replica=target.replica,
        rank=target.rank,
        image=spec.engine.image or target.profile.image_for(spec.engine.version),
        image_archive=spec.engine.image_archive,
        name=f"servespec-{deployment}",
        entrypoint=tuple(engine.entrypoint) if engine.entrypoint else None,
        command=tuple(engine.command),
        environment=environment,
        secret_environment=secrets,
        env_files=(
            *(f"{HOST_CONFIG_ROOT}/{deployment}/{name}" for name in engine.env_files),
            *([f"{HOST_CONFIG_ROOT}/{deployment}/secrets.env"] if secrets else []),
        ),
        gpus=Gpus(tuple(str(i) for i in gpu_ids)) if gpu_ids else None,
        ipc_mode="host" if multi_gpu else None,
        shm_size=None if multi_gpu or engine.native else "2g",
        network_mode="host" if target.multi_node else "bridge",
        # Host networking publishes nothing: the engine listens on serving.bind itself (engine_host).
        ports=()
        if target.multi_node
        else tuple(Port(str(spec.serving.bind), port, port) for port in (spec.serving.port, *engine.ports) if port),
        volumes=()
        if engine.native  # a host-native unit mounts nothing
        else (
            *model_volumes(target, engine.container_model_cache),
            *engine.volumes,
            Volume(f"{HOST_CONFIG_ROOT}/{deployment}", CONFIG_DIR, "ro"),
        ),
        cpuset_mems=pinning.get("cpuset_mems"),
        cpuset_cpus=pinning.get("cpuset_cpus"),
        healthcheck=Healthcheck(
            path=target.profile.health_path,
            port=spec.serving.port,
            timeout_s=5,
            start_period_s=resolve_timeout(target),
            host=health_host(target),
        ),
        smoke_test=bool(spec.rollout.smoke_test) and target.role == "leader",
        restart_policy="unless-stopped",
        labels={
            "servespec.deployment": deployment,
            "servespec.host": target.host.name,
            "servespec.revision": digest[:12],
            "servespec.role": target.role,
        },
        files=tuple(sorted(engine.files)),
        native=engine.native,
        smoke_adapters=served_adapters(target),
        replicas=host_replicas(target),
    )


def host_replicas(target: Target) -> tuple[Replica, ...]:
    """``placement.replicas_per_host``'s replicas on the target's host (none for one replica per host).

    Replica ``i`` takes the ``i``-th equal part of ``resources.gpu_ids`` in order (none on a
    CPU-only host), the container ``servespec-<deployment>-r<i>`` and the internal slot ports
    :func:`~servespec.spec.front_proxy.replica_ports`.
    """
    known = target.known
    count = target.spec.placement.replicas_per_host
    if count < 2:
        return ()
    on_gpus = bool(target.gpu_ids)
    deployment, port = target.deployment.name, target.spec.serving.port
    return tuple(
        Replica(
            index,
            replica_name(deployment, index),
            Gpus(tuple(str(i) for i in ids)) if on_gpus else None,
            replica_ports(port, index),
            numa_pinning(target, ids) if on_gpus else {},
        )
        for index, ids in enumerate(known.replica_gpu_ids)
    )


def secret_environment(
    target: Target, engine: EngineContainer, environment: dict[str, str]
) -> dict[str, dict[str, str]]:
    """What the secrets env file is resolved from: the unit's references (hub token, API key), then engine.secret_env.

    Only references travel here; values are read on the controller while applying
    (rollout/local_files.py). A spec name the unit already sets, in its secrets or its
    environment, is refused: Docker would let one of the two win without a word (ENG003
    reports it first).
    """
    own = dict(engine.secret_env)
    for name, reference in target.spec.engine.secret_env.items():
        if name in own or name in environment:
            raise RenderError(
                f"engine.secret_env.{name}: {target.profile.title} sets {name} itself; choose another name"
            )
        own[name] = reference.model_dump(exclude_none=True)
    return dict(sorted(own.items()))


def served_adapters(target: Target) -> tuple[str, ...]:
    """The adapter names the rendered engine serves by name (what the smoke test asks for besides the model)."""
    if not target.known.engine.adapters_by_name or target.role != "leader":
        return ()
    return tuple(adapter.name for adapter in loadable_adapters(target))


DEFAULT_PROBE_REACHES = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::"))
"""Listen addresses the role's probe reaches without being told: it probes 127.0.0.1 by default
(module_utils ``base_url``), and the wildcards are reachable on loopback."""


def health_host(target: Target) -> str | None:
    """The address for a host-network engine the role's probe cannot reach on 127.0.0.1, else None.

    A bridge-network container publishes its port on ``serving.bind`` (the role reads the
    address from ``ports``). A multi-node member runs on the host's network with
    ``ports: []`` and listens on ``serving.bind`` itself (:func:`engine_host`), so the
    address is named (``healthcheck.host``). It is left out where 127.0.0.1 reaches the
    engine (the default bind and the wildcards), so those descriptions stay as they were.
    """
    if not target.multi_node:
        return None
    address = engine_host(target)
    try:
        reached = ipaddress.ip_address(address) in DEFAULT_PROBE_REACHES
    except ValueError:  # a host name: name it
        reached = False
    return None if reached else address


MODULES_CACHE = "/tmp/servespec-hf-modules"  # inside the engine container, not on the host
"""Where transformers writes a model's remote code (``HF_MODULES_CACHE``) when the cache is read-only.

Its default is ``$HF_HOME/modules`` (transformers ``utils/hub.py``), inside the read-only cache
mount, so a ``trust_remote_code`` model could not load; the container's own file system takes it."""


def _environment(target: Target, engine: EngineContainer) -> dict[str, str]:
    """The engine module's variables overridden by the spec's ``engine.env``, sorted by name."""
    own = dict(engine.environment)
    if not engine.native and cache_mode(target) == "ro":
        own.setdefault("HF_MODULES_CACHE", MODULES_CACHE)
    spec_env = {name: _env_text(value) for name, value in target.spec.engine.env.items()}
    return dict(sorted({**own, **spec_env}.items()))


def _env_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
