"""Staged weights on real test hosts: the model is in the host's cache before the running revision stops.

The Hub is the stand-in of tests/rollout/hub_standin.py (the knowledge tests' server, grown to serve
whole repositories), listening on this machine and reached by the hosts over the test network
(the compose network's gateway); the spec points the container at it with ``engine.env.HF_ENDPOINT``
as a mirror would be named. The engine is the STAND-IN image (vLLM's rendered command line, no
inference, declared GPUs that the host does not have): what is under test is the rollout's order
and the host's model cache, not loading.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.rollout.conftest import PROJECT, RemoteHost, images
from tests.rollout.hub_standin import Hub, Repo, serve
from tests.rollout.test_standin_engines import _inventory

pytestmark = pytest.mark.slow

OLD = "4" * 40
NEW = "5" * 40
WEIGHTS = os.urandom(3 << 20)
FILES = {"config.json": b'{"model_type": "qwen2"}', "tokenizer.json": b"{}", "model.safetensors": WEIGHTS}
KEY = "staged-weights-key"
CACHE = "/var/lib/servespec/models/hub/models--acme--tiny"


def _gateway() -> str:
    """This machine's address on the test hosts' network."""
    out = subprocess.run(
        ["docker", "network", "inspect", f"{PROJECT}_default", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture
def hub(test_hosts: list[RemoteHost]) -> Iterator[Hub]:
    repos = {"acme/tiny": Repo({OLD: FILES, NEW: {**FILES, "model.safetensors": WEIGHTS[::-1]}}, {"main": NEW})}
    gateway = _gateway()
    with serve(repos, bind=gateway) as running:
        yield running


def _spec(path: Path, hub: Hub | None, archive: str, *, revision: str, seqs: int, model: str = "") -> Path:
    """The stand-in vLLM spec; without ``hub`` the container names no HF_ENDPOINT (an air-gapped host)."""
    arch = "{params_b: 0.5, layers: 24, hidden_size: 896, attention_heads: 14, kv_heads: 2, "
    arch += "max_position_embeddings: 32768}"
    env = f'\n  env: {{HF_ENDPOINT: "{hub.url}"}}' if hub is not None else ""
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: staged}}
inventory: inventory.yaml
model:
  source: acme/tiny
  revision: "{revision}"
  max_model_len: 4096
  architecture: {arch}{model}
engine:
  name: vllm
  version: "0.11.0"
  image_archive: {archive}
  options: {{max_num_seqs: {seqs}}}{env}
resources: {{gpu_ids: [0]}}
placement: {{hosts: [host1]}}
serving: {{port: 8000, bind: 0.0.0.0, api_key: {{from_env: STAGED_KEY}}}}
rollout: {{health_timeout: 2m}}
suppress:
  - {{rule: SEC003, reason: "test spec"}}
"""
    )
    return path


def _apply(spec: Path) -> tuple[int, str]:
    result = run_cli("apply", str(spec), "--yes", "--format", "json", "--standin-image", "servespec-standin:latest")
    return result.exit_code, result.output


def _started(host: RemoteHost) -> str:
    data = host.container_json("servespec-staged")
    return str(data["State"]["StartedAt"]) if data and data["State"]["Running"] else ""


def _current(host: RemoteHost) -> int | None:
    text = host.sh("cat /var/lib/servespec/staged/state.json 2>/dev/null || true", check=False)
    return json.loads(text)["current"] if text.strip() else None


def _staged(host: RemoteHost, commit: str) -> str:
    """sha256 of the staged weights file of ``commit`` as the engine would open it ('' when absent)."""
    out = host.sh(f"sha256sum {CACHE}/snapshots/{commit}/model.safetensors 2>/dev/null || true", check=False)
    return out.split()[0] if out.strip() else ""


def _setup(tmp_path: Path, host: RemoteHost, ssh_key: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    images.standin_image()
    from tests.rollout.helpers import in_checkout

    _inventory(tmp_path / "inventory.yaml", host, ssh_key)
    monkeypatch.setenv("STAGED_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return in_checkout(images.archive("servespec-standin:latest"), tmp_path)


def test_weights_are_staged_before_the_old_container_stops_cached_and_resumed(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = clean_hosts[0]
    archive = _setup(tmp_path, host, ssh_key, monkeypatch)
    spec = tmp_path / "staged.yaml"

    _spec(spec, hub, archive, revision=OLD, seqs=16)
    code, output = _apply(spec)
    assert code == 0, output
    assert KEY not in output
    assert _staged(host, OLD) == hashlib.sha256(WEIGHTS).hexdigest()
    assert len(hub.downloads("model.safetensors")) == 1
    assert "weights acme/tiny@444444444444: 0/3 files cached" in output  # the progress line of the check

    # An update of a cached model downloads nothing.
    _spec(spec, hub, archive, revision=OLD, seqs=8)
    code, output = _apply(spec)
    assert code == 0, output
    assert _current(host) == 2
    assert len(hub.downloads("model.safetensors")) == 1
    assert "3/3 files cached" in output
    started = _started(host)

    # A new revision whose download is cut short: the host fails while the old container still serves.
    _spec(spec, hub, archive, revision=NEW, seqs=8)
    hub.cut_next("model.safetensors")
    code, output = _apply(spec)
    assert code == 1, output
    assert "the next apply resumes it" in output
    assert _current(host) == 2 and _started(host) == started, "the running revision was stopped before staging"
    assert _staged(host, NEW) == ""  # no partial file is ever where the engine looks
    kept = int(host.sh(f"stat -c %s {CACHE}/blobs/*.incomplete").strip())
    assert 0 < kept < len(WEIGHTS)

    # Applied again, the download resumes where it stopped, then the new revision starts.
    code, output = _apply(spec)
    assert code == 0, output
    assert hub.downloads("model.safetensors")[-1] == f"bytes={kept}-"
    assert _staged(host, NEW) == hashlib.sha256(WEIGHTS[::-1]).hexdigest()
    assert _current(host) not in (None, 2) and _started(host) not in ("", started)
    assert host.sh(f"ls {CACHE}/blobs | grep -c incomplete || true").strip() == "0"


def test_a_full_model_cache_is_refused_in_preflight(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = clean_hosts[1]
    archive = _setup(tmp_path, host, ssh_key, monkeypatch)
    # A real 1 MiB file system as the model cache (the weights are 3 MiB).
    host.sh("mkdir -p /var/lib/servespec/models && mount -t tmpfs -o size=1m tmpfs /var/lib/servespec/models")
    try:
        spec = _spec(tmp_path / "staged.yaml", hub, archive, revision=OLD, seqs=16)
        spec.write_text(spec.read_text().replace("hosts: [host1]", "hosts: [host2]"))
        code, output = _apply(spec)
        assert code == 1, output
        assert "not enough disk for the weights of acme/tiny at 444444444444" in output
        assert "3.0 MiB to download" in output and "free there" in output
        assert hub.downloads("model.safetensors") == []
        assert host.container_json("servespec-staged") is None  # nothing was started
    finally:
        host.sh("umount /var/lib/servespec/models", check=False)


def test_an_air_gapped_host_gets_the_model_archive_once(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """model.archive: no Hub and no mirror; the files come from the controller, unpacked once per archive."""
    import io
    import tarfile

    host = clean_hosts[2]
    image_archive = _setup(tmp_path, host, ssh_key, monkeypatch)
    (tmp_path / "weights").mkdir()
    with tarfile.open(tmp_path / "weights" / "tiny.tar.gz", "w:gz") as tar:
        for name, data in FILES.items():
            info = tarfile.TarInfo(f"tiny/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    def spec_for(seqs: int) -> Path:
        archive = "\n  archive: weights/tiny.tar.gz"
        spec = _spec(tmp_path / "gapped.yaml", None, image_archive, revision=OLD, seqs=seqs, model=archive)
        spec.write_text(spec.read_text().replace("hosts: [host1]", "hosts: [host3]"))
        return spec

    code, output = _apply(spec_for(16))
    assert code == 0, output
    assert _staged(host, OLD) == hashlib.sha256(WEIGHTS).hexdigest()
    assert "from the archive tiny.tar.gz" in output
    marker = f"{CACHE}/snapshots/{OLD}/.servespec-archive.json"
    unpacked_at = host.sh(f"stat -c %Y.%y {marker}").strip()
    assert host.sh("ls -A /var/lib/servespec/incoming/models--acme--tiny").strip() == ""  # gone once unpacked
    assert ".servespec-incoming" not in host.sh(f"ls -A {CACHE}")  # nothing copied into the cache engines mount

    code, output = _apply(spec_for(8))  # another revision, same archive: nothing copied, nothing unpacked
    assert code == 0, output
    assert _current(host) == 2
    assert "already unpacked, nothing copied" in output
    assert host.sh(f"stat -c %Y.%y {marker}").strip() == unpacked_at
