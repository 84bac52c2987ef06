"""Host set-up, spec writers and HTTP probes shared by the rollout tests and bench/rollout_scaling.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def container_address(container: str) -> str:
    """The IP address of a test host container on its Docker network."""
    return subprocess.run(
        ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", container],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def ssh_ready(address: str) -> bool:
    """Whether sshd at ``address`` answers with its banner (it needs about a second after start)."""
    try:
        with socket.create_connection((address, 22), timeout=1) as conn:
            return conn.recv(4).startswith(b"SSH")
    except OSError:
        return False


def write_inventory(path: Path, hosts: list[tuple[str, str]], key: Path) -> Path:
    """An inventory of CPU-only test hosts, given as (name, address), reached as root with ``key``."""
    lines = [
        "apiVersion: servespec/v1",
        "kind: Inventory",
        f"defaults: {{ssh_user: root, ssh_key: {key}, become: false}}",
        "hosts:",
    ]
    for name, address in hosts:
        lines += [
            f"  {name}:",
            f"    address: {address}",
            "    hardware: {gpus: {count: 0}, cpus: 2, memory_gib: 8}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def in_checkout(archive: Path, folder: Path) -> str:
    """``archive`` made available inside ``folder`` (a hard link, else a copy), as a path relative to it.

    apply reads engine.image_archive only inside the spec's checkout (issue 9), and the
    image cache lives outside the tests' temporary folders.
    """
    target = folder / archive.name
    if not target.exists():
        try:
            os.link(archive, target)
        except OSError:  # another file system
            shutil.copyfile(archive, target)
    return archive.name


DEMO_ARCH = (
    "{params_b: 0.0001, layers: 2, hidden_size: 64, intermediate_size: 128, attention_heads: 4, kv_heads: 2, "
    "head_dim: 16, vocab_size: 300, max_position_embeddings: 2048}"
)
DEMO_MODEL = "/srv/models/demo.gguf"
"""Where :func:`stage_demo_model` puts the demo GGUF on a test host."""


def demo_model_yaml(length: int, source: str = DEMO_MODEL) -> str:
    """A spec's ``model:`` block for the demo GGUF (F32, random weights), as llama.cpp tests write it."""
    return (
        f"model:\n  source: {source}\n  quantization: gguf\n  gguf_type: F32\n  max_model_len: {length}\n"
        f"  architecture: {DEMO_ARCH}\n"
    )


def stage_demo_model(hosts: list[Any], folder: Path) -> None:
    """Make the demo GGUF (scripts/make_demo_gguf.py, under 1 MiB) in ``folder``; copy it to each host (DEMO_MODEL)."""
    model = folder / "demo.gguf"
    if not model.is_file():
        subprocess.run([sys.executable, str(Path(__file__).resolve().parents[2] / "scripts" / "make_demo_gguf.py"),
                        str(model)], check=True)  # fmt: skip
    for host in hosts:
        host.sh(f"mkdir -p {Path(DEMO_MODEL).parent}")
        subprocess.run(["docker", "cp", str(model), f"{host.container}:{DEMO_MODEL}"], check=True)


def standin_spec(
    path: Path,
    name: str,
    hosts: list[str],
    archive: Path,
    *,
    env: str = "{}",
    timeout: str = "1m",
    unavailable: int = 1,
) -> Path:
    """A llama.cpp-shaped deployment whose image is the STAND-IN (fast to start; no inference)."""
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: {name}}}
inventory: inventory.yaml
model:
  source: /srv/models/demo.gguf
  quantization: gguf
  max_model_len: 256
  architecture: {DEMO_ARCH}
engine:
  name: llama.cpp
  version: b11434
  image: servespec-standin:latest
  image_archive: {in_checkout(archive, path.parent)}
  env: {env}
placement: {{hosts: [{", ".join(hosts)}]}}
serving: {{port: 8080, bind: 0.0.0.0, api_key: {{from_env: E2E_KEY}}}}
rollout: {{max_unavailable: {unavailable}, health_timeout: {timeout}}}
"""
    )
    return path


def get(url: str, key: str | None = None, timeout: float = 3) -> tuple[int, Any]:
    """GET a JSON endpoint; (status, body) with status 0 when unreachable."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, None
    except (urllib.error.URLError, OSError, ValueError):
        return 0, None


def post(url: str, body: dict[str, Any], key: str | None = None, timeout: float = 60) -> tuple[int, Any]:
    """POST JSON; (status, body)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, None
    except (urllib.error.URLError, OSError, ValueError):
        return 0, None


def serves(address: str, key: str | None, port: int = 8080) -> bool:
    """Whether the llama-server there completes a prompt to its length (the demo GGUF is random weights:
    the end-of-sequence token is banned so the answer always runs to max_tokens)."""
    status, body = post(
        f"http://{address}:{port}/v1/completions",
        {"prompt": "hello", "max_tokens": 4, "temperature": 0, "logit_bias": {"2": -100}},
        key,
    )
    return status == 200 and body["choices"][0]["finish_reason"] == "length"


def current_revision(host: Any, deployment: str) -> int | None:
    """The revision a test host's state.json says ``deployment`` runs (None: nothing deployed)."""
    text = host.sh(f"cat /var/lib/servespec/{deployment}/state.json 2>/dev/null || true", check=False)
    return json.loads(text)["current"] if text.strip() else None


def standin_record(address: str, port: int) -> dict[str, Any]:
    """What the STAND-IN engine at ``address:port`` recorded: its argv, environment and requests."""
    with urllib.request.urlopen(f"http://{address}:{port}/servespec-standin/record", timeout=5) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data
