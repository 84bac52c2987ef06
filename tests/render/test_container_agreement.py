"""The README's ``docker run`` and the role's ``containers.run`` arguments start the same container.

A :class:`ContainerSpec` becomes Docker arguments in two places: ``docker_run`` on the
controller (the README) and ``_run_args`` in the role's servespec_container module (from
``to_json()``, as the host reads container.json). Here the ``docker run`` words are read
back into the Docker SDK's keyword arguments, flag by flag, as the docker CLI reads them
(docker/cli ``cli/command/container/opts.go``; ``--gpus``: ``opts/gpus.go``; ``--env-file``
before ``-e``: ``opts/envfile.go``), and compared with what the role passes. Every field of
ContainerSpec is either a Docker argument, which must reach both sides and agree, or names
who else reads it.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from servespec.engines.kit import NativeUnit, Volume
from servespec.render.container import (
    ContainerSpec,
    EngineRef,
    Gpus,
    Healthcheck,
    Port,
    Replica,
    docker_fields,
    docker_run,
    replica_description,
)
from tests.conftest import REPO
from tests.modules import role_module

ROLE = REPO / "playbooks" / "roles" / "servespec"
IMAGE_ENTRYPOINT = "<the image's entrypoint>"
LMS = "/home/lmstudio/.lmstudio/bin/lms"


@pytest.fixture
def role(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The role's servespec_container module, imported by path (its module_utils as Ansible provides them)."""
    pytest.importorskip("docker", reason="the role's module needs the Docker SDK (the rollout extra)")
    return role_module(monkeypatch, "servespec_container", "servespec_container_under_test")


@pytest.fixture
def spec(tmp_path: Path) -> ContainerSpec:
    """A container using every Docker argument; its env files exist, so both sides read them."""
    engine_env = tmp_path / "engine.env"
    engine_env.write_text("# engine settings\nPORT=8000\nSHARED=from-file\n")
    secrets = tmp_path / "secrets.env"
    secrets.write_text("HF_TOKEN=hf_example\n")
    return ContainerSpec(
        deployment="demo",
        model_name="Qwen/Qwen2.5-7B-Instruct",
        host="gpu-a",
        revision="0123456789ab",
        engine=EngineRef("vllm", "0.11.0"),
        role="leader",
        replica=0,
        rank=0,
        image="vllm/vllm-openai:v0.11.0",
        image_archive=None,
        name="servespec-demo",
        entrypoint=("/bin/bash", "-c", 'exec vllm serve "$@"', "vllm"),
        command=("--config", "/etc/servespec/config.yaml", "a word with spaces"),
        environment={"VLLM_LOGGING_LEVEL": "INFO", "SHARED": "from-environment"},
        secret_environment={"HF_TOKEN": {"from_env": "HF_TOKEN"}},
        env_files=(str(engine_env), str(secrets)),
        gpus=Gpus(("0", "1")),
        ipc_mode="host",
        shm_size="2g",
        network_mode="bridge",
        # One container port published twice: on IPv6 loopback and on IPv4 loopback.
        ports=(Port("::1", 8000, 8000), Port("127.0.0.1", 8000, 8000)),
        volumes=(
            Volume("/var/lib/servespec/models", "/root/.cache/huggingface", "rw"),
            Volume("/etc/servespec/demo", "/etc/servespec", "ro"),
        ),
        cpuset_mems="0",
        cpuset_cpus="0-47,96-143",
        healthcheck=Healthcheck(path="/health", port=8000, timeout_s=5, start_period_s=600),
        smoke_test=True,
        restart_policy="unless-stopped",
        labels={"servespec.deployment": "demo", "servespec.revision": "0123456789ab"},
        files=("config.yaml",),
    )


# docker run, read back -------------------------------------------------------------------------

PORT = re.compile(r"^(?:\[(?P<ip6>[^\]]+)\]|(?P<ip>[^:\[\]]*)):(?P<host_port>\d+):(?P<container_port>\d+)$")


def _env_file(path: str) -> dict[str, str]:
    """KEY=value lines, as the docker CLI reads an env file (comments and blank lines skipped)."""
    values = {}
    for line in Path(path).read_text().splitlines():
        line = line.lstrip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    return values


def _gpu_request(value: str) -> Any:
    """``--gpus`` as docker/cli opts/gpus.go reads it: CSV fields, ``device=`` IDs, capabilities [["gpu"]]."""
    from docker.types import DeviceRequest

    (fields_,) = list(csv.reader([value]))
    (field_,) = fields_
    key, _, ids = field_.partition("=")
    assert key == "device", value
    return DeviceRequest(device_ids=ids.split(","), capabilities=[["gpu"]])


def _port(kwargs: dict[str, Any], value: str) -> None:
    match = PORT.match(value)
    assert match, value
    binding = (match["ip6"] or match["ip"], int(match["host_port"]))
    kwargs["ports"].setdefault(f"{match['container_port']}/tcp", []).append(binding)


def _pair(value: str) -> tuple[str, str]:
    name, _, text = value.partition("=")
    return name, text


READERS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "--name": lambda kw, v: kw.update(name=v),
    "--restart": lambda kw, v: kw.update(restart_policy={"Name": v}),
    "-p": _port,
    "--network": lambda kw, v: kw.update(network_mode=v),
    "--gpus": lambda kw, v: kw.update(device_requests=[_gpu_request(v)]),
    "--ipc": lambda kw, v: kw.update(ipc_mode=v),
    "--shm-size": lambda kw, v: kw.update(shm_size=v),
    "--cpuset-cpus": lambda kw, v: kw.update(cpuset_cpus=v),
    "--cpuset-mems": lambda kw, v: kw.update(cpuset_mems=v),
    "-v": lambda kw, v: kw["volumes"].append(v),
    "--env-file": lambda kw, v: kw["env_files"].update(_env_file(v)),
    "-e": lambda kw, v: kw["env"].update([_pair(v)]),
    "--label": lambda kw, v: kw["labels"].update([_pair(v)]),
    "--entrypoint": lambda kw, v: kw.update(entrypoint=[v]),
}
"""Each docker run flag servespec writes, and the containers.run argument it sets."""


def from_docker_run(argv: list[str]) -> dict[str, Any]:
    """The Docker SDK ``containers.run`` keyword arguments a ``docker run`` command line means."""
    assert argv[:3] == ["docker", "run", "-d"], argv
    kwargs: dict[str, Any] = {
        "detach": True, "entrypoint": None, "ports": {}, "volumes": [], "labels": {}, "env_files": {}, "env": {}
    }  # fmt: skip
    words = iter(argv[3:])
    for word in words:
        if not word.startswith("-"):
            kwargs["image"] = word
            break
        assert word in READERS, f"docker run flag {word} is not read back: teach READERS what it means"
        READERS[word](kwargs, next(words))
    kwargs["command"] = list(words)
    # -e after the env files, to override them (docker/cli opts/envfile.go).
    kwargs["environment"] = {**kwargs.pop("env_files"), **kwargs.pop("env")}
    return _runs(kwargs)


def _runs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with entrypoint and command replaced by the argv the container runs.

    ``docker run --entrypoint`` takes one word, so the rest of an entrypoint comes after the
    image; the SDK takes the whole list. Both run entrypoint + command. Bridge networking is
    the default on both sides and written by neither.
    """
    out = dict(kwargs)
    entrypoint, command = out.pop("entrypoint"), out.pop("command")
    out["argv"] = [*(entrypoint or [IMAGE_ENTRYPOINT]), *command]
    return out


def role_args(role: ModuleType, spec: ContainerSpec) -> dict[str, Any]:
    """What the role passes to containers.run for the spec's container.json (no stand-in image)."""
    args: dict[str, Any] = role._run_args(spec.to_json(), {"standin_image": None})
    return _runs({"ports": {}, **args})


# The tests ---------------------------------------------------------------------------------------


def test_every_field_is_a_docker_argument_or_says_who_reads_it() -> None:
    for item in fields(ContainerSpec):
        kinds = {"docker", "read_by"} & set(item.metadata)
        assert len(kinds) == 1, f"ContainerSpec.{item.name}: mark it DOCKER, or read_by('who reads it')"
        assert item.metadata.get("docker") or item.metadata["read_by"].strip(), item.name


def test_readme_and_role_agree_on_every_field(role: ModuleType, spec: ContainerSpec) -> None:
    readme = from_docker_run(docker_run(spec))
    assert readme == role_args(role, spec)
    # The sample reaches every translated argument (a mistake in both would still have to show).
    assert readme["ports"] == {"8000/tcp": [("::1", 8000), ("127.0.0.1", 8000)]}
    assert readme["environment"]["SHARED"] == "from-environment"
    assert readme["environment"]["HF_TOKEN"] == "hf_example"
    assert readme["argv"][:2] == ["/bin/bash", "-c"]


VARIANTS: dict[str, Callable[[ContainerSpec], ContainerSpec]] = {
    "image": lambda s: replace(s, image="vllm/vllm-openai:v0.33.0"),
    "name": lambda s: replace(s, name="servespec-other"),
    "entrypoint": lambda s: replace(s, entrypoint=None),
    "command": lambda s: replace(s, command=("--port", "9000")),
    "environment": lambda s: replace(s, environment={"VLLM_HOST_IP": "10.0.0.1"}),
    "env_files": lambda s: replace(s, env_files=s.env_files[1:]),
    "gpus": lambda s: replace(s, gpus=Gpus(("3",))),
    "ipc_mode": lambda s: replace(s, ipc_mode=None),
    "shm_size": lambda s: replace(s, shm_size="8g"),
    "network_mode": lambda s: replace(s, network_mode="host", ports=()),
    "ports": lambda s: replace(s, ports=(Port("10.0.0.5", 8443, 8000),)),
    # A local .gguf directly in the model cache mounts the cache folder a second time.
    "volumes": lambda s: replace(s, volumes=(*s.volumes, Volume(s.volumes[0].host, s.volumes[0].host, "ro"))),
    "cpuset_mems": lambda s: replace(s, cpuset_mems="1"),
    "cpuset_cpus": lambda s: replace(s, cpuset_cpus="48-95"),
    "restart_policy": lambda s: replace(s, restart_policy="no"),
    "labels": lambda s: replace(s, labels={**s.labels, "servespec.role": "worker"}),
}
"""For each Docker argument, a change both sides must show."""


def test_every_docker_argument_has_a_variant() -> None:
    assert sorted(VARIANTS) == sorted(docker_fields())


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_docker_argument_reaches_both_sides(role: ModuleType, spec: ContainerSpec, name: str) -> None:
    changed = VARIANTS[name](spec)
    assert getattr(changed, name) != getattr(spec, name)
    readme, ran = from_docker_run(docker_run(changed)), role_args(role, changed)
    assert readme != from_docker_run(docker_run(spec)), f"{name}: the README's docker run does not show it"
    assert ran != role_args(role, spec), f"{name}: the role does not pass it to Docker"
    assert readme == ran


def test_fields_that_are_not_docker_arguments_change_neither_side(role: ModuleType, spec: ContainerSpec) -> None:
    """What the probe and the rollout read is not passed to Docker (a hidden argument would show here)."""
    changed = replace(
        spec,
        deployment="other",
        model_name=None,
        host="gpu-b",
        revision="ba9876543210",
        engine=EngineRef("vllm", "0.33.0"),
        role="worker",
        replica=1,
        rank=1,
        image_archive="images/vllm.tar",
        secret_environment={},
        healthcheck=Healthcheck(path="/v1/models", port=9000, timeout_s=1, start_period_s=1, host="10.0.0.5"),
        smoke_test=False,
        files=(),
        native=NativeUnit(
            "systemd", "servespec-other.service", "servespec-other.service", LMS, ((LMS, "daemon", "up"),), ()
        ),
        smoke_adapters=("sql-lora",),
        replicas=(Replica(0, "servespec-other-r0", None, (18000, 28000)),),
    )
    informational = {item.name for item in fields(ContainerSpec) if not item.metadata.get("docker")}
    assert {name for name in informational if getattr(changed, name) == getattr(spec, name)} == set()
    assert docker_run(changed) == docker_run(spec)
    assert role_args(role, changed) == role_args(role, spec)


def test_to_json_is_the_container_yaml_mapping(spec: ContainerSpec) -> None:
    data = spec.to_json()
    assert list(data) == [
        "deployment", "model_name", "host", "revision", "engine", "role", "replica", "rank", "image", "image_archive",
        "name", "entrypoint", "command", "environment", "secret_environment", "env_files", "gpus", "ipc_mode",
        "shm_size", "network_mode", "ports", "volumes", "cpuset_mems", "cpuset_cpus", "healthcheck", "smoke_test",
        "restart_policy", "labels", "files",
    ]  # fmt: skip
    assert data["gpus"] == {"device_ids": ["0", "1"], "capabilities": ["gpu"]}
    assert data["healthcheck"] == {"path": "/health", "port": 8000, "timeout_s": 5, "start_period_s": 600}
    assert data["ports"][0] == {"host_ip": "::1", "host_port": 8000, "container_port": 8000}
    unpinned = replace(spec, cpuset_mems=None, cpuset_cpus=None).to_json()
    assert "cpuset_mems" not in unpinned and "cpuset_cpus" not in unpinned
    assert replace(spec, healthcheck=replace(spec.healthcheck, host="10.0.0.5")).to_json()["healthcheck"]["host"]


def test_the_description_cannot_change_or_contradict_itself(spec: ContainerSpec) -> None:
    with pytest.raises(TypeError):
        spec.environment["X"] = "1"  # type: ignore[index]
    with pytest.raises(ValueError, match="publishes none"):
        replace(spec, network_mode="host")
    with pytest.raises(ValueError, match="never empty"):
        replace(spec, entrypoint=())


def test_each_replica_runs_the_same_on_both_sides(role: ModuleType, spec: ContainerSpec) -> None:
    """placement.replicas_per_host: the role's replica_spec and the README's replica docker run agree."""
    replicas = (
        Replica(0, "servespec-demo-r0", Gpus(("0",)), (18000, 28000), {"cpuset_mems": "0", "cpuset_cpus": "0-7"}),
        Replica(1, "servespec-demo-r1", Gpus(("1",)), (18001, 28001), {"cpuset_mems": "1"}),
    )
    spec = replace(spec, replicas=replicas)
    common = sys.modules["ansible.module_utils.servespec_common"]
    runs = []
    for replica in replicas:
        mapping = common.replica_spec(spec.to_json(), replica.index)
        ran = _runs({"ports": {}, **role._run_args(mapping, {"standin_image": None})})
        described = replica_description(spec, replica)
        assert from_docker_run(docker_run(described)) == ran, replica.name
        assert mapping["healthcheck"]["port"] == replica.ports[0] == described.healthcheck.port
        runs.append(ran)
    assert runs[0] != runs[1]
    assert runs[1]["name"] == "servespec-demo-r1"
    assert {binding for bindings in runs[1]["ports"].values() for binding in bindings} == {("127.0.0.1", 18001)}
