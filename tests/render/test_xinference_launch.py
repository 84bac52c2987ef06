"""The role's servespec_launch against the STAND-IN server: health first, one launch, none the second time."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

from tests.modules import role_module

STANDIN = Path(__file__).resolve().parents[1] / "hosts" / "standin" / "servespec-standin"


class ModuleExitError(Exception):
    def __init__(self, failed: bool, result: dict[str, Any]) -> None:
        super().__init__(result)
        self.failed, self.result = failed, result


class FakeModule:
    """AnsibleModule's surface the module uses: params, check_mode, exit_json/fail_json."""

    params: ClassVar[dict[str, Any]] = {}

    def __init__(self, **_: Any) -> None:
        self.check_mode = False

    def exit_json(self, **result: Any) -> None:
        raise ModuleExitError(False, result)

    def fail_json(self, **result: Any) -> None:
        raise ModuleExitError(True, result)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server() -> Iterator[int]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(STANDIN), "xinference-local", "--host", "0.0.0.0", "--port", str(port)]
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


def _revision(root: Path, port: int, body: dict[str, Any], files: tuple[str, ...] = ("launch.json",)) -> None:
    folder = root / "demo" / "revisions" / "1"
    (folder / ".servespec").mkdir(parents=True)
    container = {
        "name": "servespec-demo",
        "files": list(files),
        "ports": [{"host_ip": "127.0.0.1", "host_port": port, "container_port": port}],
        "healthcheck": {"path": "/status", "port": port, "timeout_s": 5, "start_period_s": 30},
    }
    (folder / ".servespec" / "container.json").write_text(json.dumps(container))
    (folder / "launch.json").write_text(json.dumps(body))


def _run(module: ModuleType, root: Path) -> ModuleExitError:
    FakeModule.params = {"deployment": "demo", "number": 1, "timeout": 20, "state_root": str(root)}
    with pytest.raises(ModuleExitError) as done:
        module.main()
    return done.value


def _launches(port: int) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/servespec-standin/record", timeout=5) as response:
        launches: list[dict[str, Any]] = json.loads(response.read())["launches"]
        return launches


@pytest.fixture
def launch(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = role_module(monkeypatch, "servespec_launch", "servespec_launch_under_test")
    monkeypatch.setattr(module, "AnsibleModule", FakeModule)
    monkeypatch.setattr(module, "_container_id", lambda name: "container-1")
    return module


def test_the_request_is_sent_once_as_rendered(tmp_path: Path, server: int, launch: ModuleType) -> None:
    body = {"model_uid": "chat", "model_name": "qwen2.5-instruct", "model_engine": "vLLM", "max_num_seqs": 8}
    _revision(tmp_path, server, body)
    first = _run(launch, tmp_path)
    assert (first.failed, first.result["changed"]) == (False, True)
    assert _launches(server) == [body]
    second = _run(launch, tmp_path)
    assert (second.failed, second.result["changed"]) == (False, False)  # listed, same request, same container
    assert _launches(server) == [body]


def test_another_request_under_the_same_uid_relaunches(tmp_path: Path, server: int, launch: ModuleType) -> None:
    body = {"model_uid": "chat", "model_name": "qwen2.5-instruct", "model_engine": "vLLM"}
    _revision(tmp_path, server, body)
    assert _run(launch, tmp_path).result["changed"] is True
    changed = {**body, "max_num_seqs": 4}
    (tmp_path / "demo" / "revisions" / "1" / "launch.json").write_text(json.dumps(changed))
    assert _run(launch, tmp_path).result["changed"] is True
    assert _launches(server) == [body, changed]


def test_revisions_without_a_launch_request_send_nothing(tmp_path: Path, server: int, launch: ModuleType) -> None:
    _revision(tmp_path, server, {}, files=("config.yaml",))
    assert _run(launch, tmp_path).result == {"changed": False, "msg": "no launch request in this revision"}
    assert _launches(server) == []


def test_a_request_without_model_uid_fails(tmp_path: Path, server: int, launch: ModuleType) -> None:
    _revision(tmp_path, server, {"model_name": "x"})
    done = _run(launch, tmp_path)
    assert done.failed and "model_uid" in done.result["msg"]
