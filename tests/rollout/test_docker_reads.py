"""The role's read-only modules read the Docker engine without the Docker SDK (issue 13 item 4).

servespec_status, servespec_preflight and servespec_probe imported the SDK (docker, requests,
urllib3, ...) in every run: about 0.3 CPU-seconds on a test host, in each phase, on every host.
module_utils/servespec_docker.py speaks the Engine API over the unix socket with the standard
library. Here it answers as the SDK does on this machine's engine, and the modules no longer
import the SDK.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.modules import ROLE, load_file

READERS = ("servespec_status", "servespec_preflight", "servespec_probe")


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    return load_file(ROLE / "module_utils" / "servespec_docker.py", "servespec_docker_under_test")


@pytest.fixture
def stopped_container() -> Iterator[str]:
    """A created (never started) container of the base image on this machine's engine."""
    docker = pytest.importorskip("docker")
    try:
        docker.from_env().ping()
    except Exception:
        pytest.skip("no Docker engine here")
    name = f"servespec-reads-{uuid.uuid4().hex[:8]}"
    image = "servespec-base:bookworm"
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True, check=False).returncode:
        pytest.skip(f"{image} is not built (tests/hosts/images.py)")
    subprocess.run(["docker", "create", "--name", name, image, "true"], capture_output=True, check=True)
    yield name
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


def test_the_engine_reads_agree_with_the_sdk(engine: ModuleType, stopped_container: str) -> None:
    import docker

    client = docker.from_env()
    engine.ping()
    attrs = engine.container(stopped_container)
    assert attrs is not None
    sdk = client.containers.get(stopped_container)
    assert attrs["State"] == sdk.attrs["State"] and attrs["State"]["Status"] == sdk.status == "created"
    assert attrs.get("RestartCount") == sdk.attrs.get("RestartCount")
    assert engine.container(f"{stopped_container}-absent") is None
    names = engine.container_names()  # others may create containers meanwhile: compare one that stays
    assert stopped_container in names and stopped_container in {c.name for c in client.containers.list(all=True)}
    assert not any(name.startswith("/") for name in names)
    assert engine.image_present("servespec-base:bookworm")
    assert not engine.image_present("servespec-base:no-such-tag")
    assert engine.info()["Runtimes"].keys() == client.info()["Runtimes"].keys()
    with pytest.raises(engine.EngineError):
        engine.top(stopped_container)  # not running: the engine says so, as the SDK raises


def test_an_unreachable_engine_is_an_engine_error(engine: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(engine.EngineError, match="not reachable"):
        engine.ping()


def test_another_transport_goes_through_the_sdk(engine: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.1:2376")

    class Client:
        def info(self) -> dict[str, object]:
            return {"Runtimes": {"sdk": {}}}

    monkeypatch.setattr(engine, "_sdk", Client)
    assert engine.info() == {"Runtimes": {"sdk": {}}}


@pytest.mark.parametrize("library", READERS)
def test_the_read_only_modules_do_not_import_the_sdk(library: str) -> None:
    source = (ROLE / "library" / f"{library}.py").read_text()
    assert "import docker" not in source
    assert "servespec_docker" in source


def test_the_engine_reads_import_no_sdk() -> None:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('m', {str(ROLE / 'module_utils' / 'servespec_docker.py')!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "assert 'docker' not in sys.modules and 'requests' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
