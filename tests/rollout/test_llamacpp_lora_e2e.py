"""A LoRA adapter on a real engine: llama.cpp's llama-server on a test host loads a GGUF adapter made at test time.

The adapter lies on the host inside the model roots; servespec mounts its folder read-only and
renders ``--lora``. llama.cpp applies its adapters to every request (it selects none by name:
ADP001 says so); a request's ``lora`` field sets the scale, so the test checks the adapter is
loaded from the path the spec names and changes the output at scale 1 against scale 0.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import DEMO_ARCH, get, in_checkout, post

pytestmark = pytest.mark.slow


def _spec(path: Path, archive: Path) -> Path:
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: tiny-lora}}
inventory: inventory.yaml
model:
  source: /srv/models/demo.gguf
  quantization: gguf
  gguf_type: F32
  max_model_len: 256
  architecture: {DEMO_ARCH}
  adapters: [{{name: demo-lora, source: /srv/adapters/demo-lora.gguf}}]
engine:
  name: llama.cpp
  version: b11434
  image: {images.llama_cpp_image()}
  image_archive: {in_checkout(archive, path.parent)}
  options: {{parallel: 1, threads: 1}}
placement: {{hosts: [host1]}}
serving: {{port: 8080, bind: 0.0.0.0}}
rollout: {{health_timeout: 2m}}
suppress:
  - {{rule: NET002, reason: test host}}
"""
    )
    return path


def _text(host: RemoteHost, scale: float) -> str:
    body = {"prompt": "hello", "max_tokens": 8, "temperature": 0, "logit_bias": {"2": -100}}
    status, answer = post(f"http://{host.address}:8080/v1/completions", {**body, "lora": [{"id": 0, "scale": scale}]})
    assert status == 200, answer
    return str(answer["choices"][0]["text"])


def test_a_gguf_lora_on_the_host_is_loaded_by_llama_cpp(
    tmp_path: Path, inventory: Path, clean_hosts: list[RemoteHost], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = images.archive(images.llama_cpp_image())
    script = str(REPO / "scripts" / "make_demo_gguf.py")
    model, adapter = tmp_path / "demo.gguf", tmp_path / "demo-lora.gguf"
    subprocess.run([sys.executable, script, str(model)], check=True)
    subprocess.run([sys.executable, script, "--lora", str(adapter)], check=True)
    host = clean_hosts[0]
    host.sh("mkdir -p /srv/models /srv/adapters")
    subprocess.run(["docker", "cp", str(model), f"{host.container}:/srv/models/demo.gguf"], check=True)
    subprocess.run(["docker", "cp", str(adapter), f"{host.container}:/srv/adapters/demo-lora.gguf"], check=True)
    monkeypatch.chdir(tmp_path)
    spec = _spec(tmp_path / "tiny.yaml", archive)

    checked = run_cli("validate", str(spec))
    assert "ADP001" in checked.output and "every request" in checked.output  # not selected by name
    applied = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert applied.exit_code == 0, applied.output
    status, loaded = get(f"http://{host.address}:8080/lora-adapters")
    assert status == 200 and [a["path"] for a in loaded] == ["/srv/adapters/demo-lora.gguf"], loaded
    assert _text(host, 1.0) != _text(host, 0.0)  # the adapter's weights reach the output
