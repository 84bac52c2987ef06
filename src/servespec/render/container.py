"""What one engine container is: the typed description render writes as ``container.yaml``.

:class:`ContainerSpec` is the one definition. Render builds it
(:func:`servespec.render.common.container_description`), writes :meth:`ContainerSpec.to_json`
as ``container.yaml``, and the rollout stages the same mapping as ``container.json`` for the
role. It becomes Docker arguments in exactly two places:

- the controller side, :func:`docker_run`: the ``docker run`` a person types (the README);
- the role side, ``_run_args`` in ``playbooks/roles/servespec/library/servespec_container.py``:
  the keyword arguments of the Docker SDK's ``containers.run``, read from ``container.json``
  (the role runs on hosts without servespec installed, so it reads the mapping, not this class).

Every field says which it is in its metadata: :data:`DOCKER` (both sides translate it;
``tests/render/test_container_agreement.py`` checks that they agree) or a note naming who
else reads it (:func:`read_by`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Literal

from servespec.engines.kit import NativeUnit, Volume, host_and_port

DOCKER: Mapping[str, str] = MappingProxyType({"docker": "both"})
"""Field metadata: a Docker argument, translated by :func:`docker_run` and by the role's ``_run_args``."""

GPU_CAPABILITIES = ("gpu",)
"""What a GPU request asks for: ``docker run --gpus`` requests exactly ``[["gpu"]]`` unless told
otherwise (docker/cli ``opts/gpus.go``), and the role passes the same to ``DeviceRequest``."""


def read_by(reader: str) -> Mapping[str, str]:
    """Field metadata: not a Docker argument; ``reader`` says who reads it (or that it is informational)."""
    return MappingProxyType({"read_by": reader})


@dataclass(frozen=True)
class EngineRef:
    """The engine and release the container runs."""

    name: str
    version: str

    def to_json(self) -> dict[str, Any]:
        """The ``engine`` mapping of container.yaml."""
        return {"name": self.name, "version": self.version}


@dataclass(frozen=True)
class Port:
    """A published port: ``host_ip:host_port`` on the host to ``container_port`` (TCP) in the container."""

    host_ip: str
    host_port: int
    container_port: int

    def to_json(self) -> dict[str, Any]:
        """One entry of container.yaml's ``ports``."""
        return {"host_ip": self.host_ip, "host_port": self.host_port, "container_port": self.container_port}

    @property
    def mapping(self) -> str:
        """The port as ``docker run -p`` writes it (``[::1]:8000:8000`` for IPv6)."""
        return f"{host_and_port(self.host_ip, self.host_port)}:{self.container_port}"


@dataclass(frozen=True)
class Gpus:
    """The GPUs the container is given, by index on the host."""

    device_ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """container.yaml's ``gpus``."""
        return {"device_ids": list(self.device_ids), "capabilities": list(GPU_CAPABILITIES)}


@dataclass(frozen=True)
class Replica:
    """One of ``placement.replicas_per_host`` replicas: its container, GPUs and internal slot ports.

    The replica runs the host's description with these three fields replaced; the front proxy
    (``servespec_proxy``) balances over the replicas' live slots.
    """

    index: int
    name: str
    gpus: Gpus | None
    ports: tuple[int, int]
    pinning: Mapping[str, str] = field(default_factory=dict)
    """The replica's own NUMA pinning (``cpuset_mems``, ``cpuset_cpus``) from its GPUs; empty: none."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pinning", _frozen(self.pinning))

    def to_json(self) -> dict[str, Any]:
        """One entry of container.yaml's ``replicas`` (the pinning keys only when set)."""
        return {
            "index": self.index,
            "name": self.name,
            "gpus": self.gpus.to_json() if self.gpus is not None else None,
            "ports": list(self.ports),
            **{key: self.pinning[key] for key in ("cpuset_mems", "cpuset_cpus") if key in self.pinning},
        }


@dataclass(frozen=True)
class Healthcheck:
    """Where and how long the role's probe waits for the engine (``servespec_probe``, ``servespec_status``).

    Not a Docker HEALTHCHECK: the probe polls ``path`` on ``port`` once a second with a
    ``timeout_s`` request timeout, for at most ``start_period_s`` seconds.
    """

    path: str
    port: int
    timeout_s: int
    start_period_s: int
    host: str | None = None
    """The address to probe where 127.0.0.1 does not reach a host-network engine (None: left out)."""

    def to_json(self) -> dict[str, Any]:
        """container.yaml's ``healthcheck`` (``host`` only when set)."""
        out: dict[str, Any] = {
            "path": self.path,
            "port": self.port,
            "timeout_s": self.timeout_s,
            "start_period_s": self.start_period_s,
        }
        if self.host is not None:
            out["host"] = self.host
        return out


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class ContainerSpec:
    """Everything the rollout needs to start one host's engine container; secrets only as references."""

    deployment: str = field(metadata=read_by("the rollout and the role: the deployment's folders and container name"))
    model_name: str | None = field(
        metadata=read_by(
            "servespec_probe: the model the smoke test asks for (serving.model_name); None: a name /v1/models lists"
        )
    )
    host: str = field(metadata=read_by("informational: the host this description is for"))
    revision: str = field(metadata=read_by("the rollout: the revision a host should run (desired_state)"))
    engine: EngineRef = field(metadata=read_by("informational: the engine and release"))
    role: Literal["leader", "worker"] = field(metadata=read_by("the rollout: the servespec_role host variable"))
    replica: int = field(metadata=read_by("the rollout: the order hosts are applied in"))
    rank: int = field(metadata=read_by("the rollout: the order hosts are applied in"))
    image: str = field(metadata=DOCKER)
    image_archive: str | None = field(
        metadata=read_by("informational: engine.image_archive as written (the rollout reads it from the spec)")
    )
    name: str = field(metadata=DOCKER)
    entrypoint: tuple[str, ...] | None = field(metadata=DOCKER)
    """None: the image's own entrypoint. Never empty (Docker reads ``[]`` and "not set" differently)."""
    command: tuple[str, ...] = field(metadata=DOCKER)
    environment: Mapping[str, str] = field(metadata=DOCKER)
    secret_environment: Mapping[str, Mapping[str, str]] = field(
        metadata=read_by("the rollout: references it resolves into secrets.env (one of env_files)")
    )
    env_files: tuple[str, ...] = field(metadata=DOCKER)
    gpus: Gpus | None = field(metadata=DOCKER)
    ipc_mode: Literal["host"] | None = field(metadata=DOCKER)
    shm_size: str | None = field(metadata=DOCKER)
    network_mode: Literal["bridge", "host"] = field(metadata=DOCKER)
    ports: tuple[Port, ...] = field(metadata=DOCKER)
    """Empty on the host's network (Docker publishes nothing there)."""
    volumes: tuple[Volume, ...] = field(metadata=DOCKER)
    cpuset_mems: str | None = field(metadata=DOCKER)
    cpuset_cpus: str | None = field(metadata=DOCKER)
    healthcheck: Healthcheck = field(metadata=read_by("servespec_probe, servespec_status, servespec_preflight"))
    smoke_test: bool = field(metadata=read_by("servespec_probe: whether to send one completion request"))
    restart_policy: Literal["no", "always", "unless-stopped", "on-failure"] = field(metadata=DOCKER)
    labels: Mapping[str, str] = field(metadata=DOCKER)
    files: tuple[str, ...] = field(metadata=read_by("informational: the host's rendered files beside container.yaml"))
    native: NativeUnit | None = field(default=None, metadata=read_by("servespec_native: a host-native unit"))
    smoke_adapters: tuple[str, ...] = field(
        default=(), metadata=read_by("servespec_probe: adapter names the smoke test also asks for (model.adapters)")
    )
    """The ``model.adapters`` names the engine serves by name (left out of the mapping when empty)."""
    """A host-native engine's systemd unit (engines/kit.py); None for a container (left out of the mapping)."""
    replicas: tuple[Replica, ...] = field(
        default=(),
        metadata=read_by("servespec_container, servespec_proxy, servespec_probe: placement.replicas_per_host"),
    )
    """Empty for one replica per host (left out of the mapping); else each replica's name, GPUs and ports."""

    def __post_init__(self) -> None:
        if self.entrypoint is not None and not self.entrypoint:
            raise ValueError("entrypoint: None for the image's own, never empty")
        if self.network_mode == "host" and self.ports:
            raise ValueError("ports: a container on the host's network publishes none")
        # Read-only views, so that the frozen value cannot be changed through its mappings.
        object.__setattr__(self, "environment", _frozen(self.environment))
        object.__setattr__(self, "labels", _frozen(self.labels))
        secrets = {name: _frozen(ref) for name, ref in self.secret_environment.items()}
        object.__setattr__(self, "secret_environment", _frozen(secrets))

    def to_json(self) -> dict[str, Any]:
        """The mapping container.yaml (and the role's container.json) holds, keys in a fixed order.

        ``cpuset_mems`` and ``cpuset_cpus`` are left out when unset, as NUMA pinning adds them.
        """
        out: dict[str, Any] = {
            "deployment": self.deployment,
            "model_name": self.model_name,
            "host": self.host,
            "revision": self.revision,
            "engine": self.engine.to_json(),
            "role": self.role,
            "replica": self.replica,
            "rank": self.rank,
            "image": self.image,
            "image_archive": self.image_archive,
            "name": self.name,
            "entrypoint": list(self.entrypoint) if self.entrypoint is not None else None,
            "command": list(self.command),
            "environment": dict(self.environment),
            "secret_environment": {name: dict(ref) for name, ref in self.secret_environment.items()},
            "env_files": list(self.env_files),
            "gpus": self.gpus.to_json() if self.gpus is not None else None,
            "ipc_mode": self.ipc_mode,
            "shm_size": self.shm_size,
            "network_mode": self.network_mode,
            "ports": [port.to_json() for port in self.ports],
            "volumes": [volume.to_json() for volume in self.volumes],
        }
        if self.cpuset_mems is not None:
            out["cpuset_mems"] = self.cpuset_mems
        if self.cpuset_cpus is not None:
            out["cpuset_cpus"] = self.cpuset_cpus
        out.update(
            {
                "healthcheck": self.healthcheck.to_json(),
                "smoke_test": self.smoke_test,
                "restart_policy": self.restart_policy,
                "labels": dict(self.labels),
                "files": list(self.files),
            }
        )
        if self.native is not None:
            out["native"] = self.native.to_json()
        if self.smoke_adapters:
            out["smoke_adapters"] = list(self.smoke_adapters)
        if self.replicas:
            out["replicas"] = [replica.to_json() for replica in self.replicas]
        return out


def replica_description(spec: ContainerSpec, replica: Replica) -> ContainerSpec:
    """The host's description as one replica runs it, with its first slot port (placement.replicas_per_host).

    The controller's side of the role's ``replica_spec`` (module_utils/servespec_common.py): the
    replica's name, GPUs and NUMA pinning, its engine port published on 127.0.0.1 at its slot port
    (the front proxy owns ``serving.port``), and a ``servespec.replica`` label.
    """
    health = spec.healthcheck.port
    ports = tuple(
        Port("127.0.0.1", replica.ports[0], port.container_port) if port.host_port == health else port
        for port in spec.ports
    )
    return replace(
        spec,
        name=replica.name,
        gpus=replica.gpus,
        ports=ports,
        cpuset_mems=replica.pinning.get("cpuset_mems"),
        cpuset_cpus=replica.pinning.get("cpuset_cpus"),
        labels={**spec.labels, "servespec.replica": str(replica.index)},
        healthcheck=replace(spec.healthcheck, port=replica.ports[0], host=None),
        replicas=(),
    )


def docker_fields() -> tuple[str, ...]:
    """The ContainerSpec fields that are Docker arguments (both sides translate them)."""
    return tuple(f.name for f in fields(ContainerSpec) if f.metadata.get("docker"))


def docker_run(spec: ContainerSpec) -> list[str]:
    """The ``docker run`` a person would type for the container (secrets come from the env file).

    The controller side's one translation of a :class:`ContainerSpec` into Docker arguments;
    the role's is ``_run_args`` (servespec_container.py). ``--entrypoint`` takes one word, so
    the rest of a longer entrypoint goes after the image, before the command: the container
    runs the same argv.
    """
    argv = ["docker", "run", "-d", "--name", spec.name, "--restart", spec.restart_policy]
    argv += _each("-p", [port.mapping for port in spec.ports])
    if spec.network_mode == "host":
        argv += ["--network", "host"]
    if spec.gpus is not None:
        # Quoted inside the value: --gpus reads CSV, and a bare "device=0,1" would be two fields.
        argv += ["--gpus", '"device=' + ",".join(spec.gpus.device_ids) + '"']
    for flag, value in (
        ("--ipc", spec.ipc_mode),
        ("--shm-size", spec.shm_size),
        ("--cpuset-cpus", spec.cpuset_cpus),
        ("--cpuset-mems", spec.cpuset_mems),
    ):
        argv += _each(flag, [value] if value else [])
    argv += _each("-v", [volume.bind for volume in spec.volumes])
    argv += _each("--env-file", list(spec.env_files))
    argv += _each("-e", [f"{name}={value}" for name, value in spec.environment.items()])
    argv += _each("--label", [f"{name}={value}" for name, value in spec.labels.items()])
    entrypoint = list(spec.entrypoint or ())
    if entrypoint:
        argv += ["--entrypoint", entrypoint[0]]
    return [*argv, spec.image, *entrypoint[1:], *spec.command]


def _each(flag: str, values: list[str]) -> list[str]:
    """``flag`` before each of ``values`` (``-v A -v B``)."""
    return [word for value in values for word in (flag, value)]
