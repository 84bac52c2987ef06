"""Every engine's rendered container travels the real rollout path (stand-in image, no GPU).

The hosts declare GPU facts they do not have (an 8-GPU H100 box), so GPU engines validate
and render as on real hardware; ``--standin-image`` then runs each container with the
STAND-IN image, which records the command line and environment it was started with. The
test asserts those equal what was rendered. It says nothing about inference: the
llama.cpp end-to-end test covers a real engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from servespec import engines
from servespec.engines.kit import CHAT_TEMPLATE_FIELD, CHAT_TEMPLATE_FILE, CHAT_TEMPLATE_PATH
from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import in_checkout, standin_record

SPECS = {
    "vllm": ('"0.11.0"', "Qwen/Qwen2.5-3B-Instruct", 8000, "{max_num_seqs: 16}", "[0]"),
    "tgi": ('"3.3.7"', "Qwen/Qwen2.5-3B-Instruct", 8081, "{max_batch_prefill_tokens: 4096}", "[1]"),
    "sglang": ('"0.5.23"', "Qwen/Qwen2.5-3B-Instruct", 30000, "{mem_fraction_static: 0.8}", "[2]"),
    "tensorrt-llm": (
        '"1.2.1"',
        "Qwen/Qwen2.5-3B-Instruct",
        8001,
        "{kv_cache_config.free_gpu_memory_fraction: 0.8}",
        "[3]",
    ),
    "ollama": ('"0.32.15"', "qwen2.5:3b", 11434, "{num_parallel: 2}", "[4]"),
    "llama.cpp": ("b11434", "/srv/models/demo.gguf", 8082, "{parallel: 1}", "[5]"),
}
NOT_STARTED = {
    "lmstudio": "host-native (a systemd unit running lms): no container for the stand-in image to replace",
    "xinference": "its server starts empty and the role then sends launch.json (after_start), which the stand-in "
    "does not answer",
    "ktransformers": "not yet run through the stand-in path: add a row once its run is checked",
    "openllm": "not yet run through the stand-in path: add a row once its run is checked",
}
"""Registered engines this test does not start, each with the reason (a new engine needs a row or a reason)."""
TOOL_SECRET = "standin-tool-secret-0123"
"""engine.secret_env's value: in the container's environment, in no rendered file, argv or output."""
CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}\n{% endfor %}"


def test_every_engine_has_a_row_or_a_reason() -> None:
    assert not set(SPECS) & set(NOT_STARTED)
    assert set(SPECS) | set(NOT_STARTED) == set(engines.names())


def _inventory(path: Path, host: RemoteHost, key: Path) -> Path:
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Inventory
defaults: {{ssh_user: root, ssh_key: {key}, become: false}}
hosts:
  {host.name}:
    address: {host.address}
    hardware:  # STAND-IN facts: the test host has no GPUs; --standin-image drops GPU requests
      gpus: {{model: NVIDIA H100 80GB HBM3, count: 8}}
      interconnect: nvswitch
      gpu_numa_nodes: [0, 0, 0, 0, 1, 1, 1, 1]
      driver_version: "580.95.05"
"""
    )
    return path


def _spec(engine: str, archive: str) -> str:
    version, source, port, options, gpus = SPECS[engine]
    arch = "{params_b: 3.1, layers: 36, hidden_size: 2048, attention_heads: 16, kv_heads: 2, "
    arch += "max_position_embeddings: 32768}"
    profile = engines.get(engine).profile
    gguf = f"\n  quantization: gguf\n  architecture: {arch}" if profile.loads_gguf else ""
    key = "\n  api_key: {from_env: STANDIN_KEY}" if profile.auth is not None else ""
    template = "\n  chat_template: chat.jinja" if CHAT_TEMPLATE_FIELD in profile.spec_options else ""
    noauth = (
        '\n  - {rule: NET002, reason: "the test controller reaches the stand-in over the test network"}'
        if not key
        else ""
    )
    return f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: standin-{engine.replace(".", "")}}}
inventory: inventory.yaml
model:
  source: {source}
  max_model_len: 4096{gguf}
engine:
  name: {engine}
  version: {version}
  image_archive: {archive}
  options: {options}
  env: {{SERVESPEC_MARKER: "{engine}"}}
  secret_env: {{EXA_API_KEY: {{from_env: STANDIN_TOOL_KEY}}}}
resources: {{gpu_ids: {gpus}}}
placement: {{hosts: [host1]}}
serving:
  port: {port}
  bind: 0.0.0.0{key}{template}
rollout: {{health_timeout: 2m}}
suppress:
  - {{rule: SEC003, reason: "test spec"}}{noauth}
"""


@pytest.mark.slow
def test_rendered_containers_start_exactly_as_rendered(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images.standin_image()
    archive = images.archive("servespec-standin:latest")
    host = clean_hosts[0]
    host.sh("mkdir -p /srv/models && echo stand-in > /srv/models/demo.gguf")
    _inventory(tmp_path / "inventory.yaml", host, ssh_key)
    for engine in SPECS:
        (tmp_path / f"{engine}.yaml").write_text(_spec(engine, in_checkout(archive, tmp_path)))
    (tmp_path / "chat.jinja").write_text(CHAT_TEMPLATE)
    monkeypatch.setenv("STANDIN_KEY", "standin-secret-value")
    monkeypatch.setenv("STANDIN_TOOL_KEY", TOOL_SECRET)
    monkeypatch.chdir(tmp_path)
    result = run_cli("apply", ".", "--yes", "--format", "json", "--standin-image", "servespec-standin:latest")
    assert result.exit_code == 0, result.output
    assert "standin-secret-value" not in result.output and TOOL_SECRET not in result.output
    rendered = tmp_path / "rendered"
    assert run_cli("render", ".", "-o", str(rendered)).exit_code == 0
    for path in rendered.rglob("*"):  # engine.secret_env: a reference in the files, the value only in the env file
        assert not path.is_file() or TOOL_SECRET not in path.read_text(), path
    for engine, (_, _, port, _, _) in SPECS.items():
        name = f"standin-{engine.replace('.', '')}"
        container = YAML(typ="safe").load((rendered / name / "host1" / "container.yaml").read_text())
        record = standin_record(host.address, port)
        assert record["standin"] is True
        assert record["argv"] == (container["entrypoint"] or []) + container["command"], engine
        env = record["env"]
        assert env["SERVESPEC_MARKER"] == engine
        for key, value in container["environment"].items():
            assert env[key] == value
        assert env["EXA_API_KEY"] == TOOL_SECRET, engine
        assert not any(TOOL_SECRET in word for word in record["argv"]), engine
        for secret in container["secret_environment"]:
            assert env[secret] == (TOOL_SECRET if secret == "EXA_API_KEY" else "standin-secret-value")
        if CHAT_TEMPLATE_FILE in container["files"]:  # mounted read-only where the rendered option names it
            assert CHAT_TEMPLATE_PATH in record["argv"] or CHAT_TEMPLATE_PATH in host.sh(
                f"cat /etc/servespec/{name}/config.yaml 2>/dev/null || true"
            ), engine
            assert host.sh(f"cat /etc/servespec/{name}/{CHAT_TEMPLATE_FILE}") == CHAT_TEMPLATE, engine
            inspected = host.container_json(container["name"])
            assert inspected is not None, engine
            mounts = {mount["Destination"]: mount for mount in inspected["Mounts"]}
            assert mounts["/etc/servespec"]["RW"] is False, engine  # the template's folder, read-only
        secrets = host.sh(f"stat -c %a /etc/servespec/{name}/secrets.env 2>/dev/null || true").strip()
        assert secrets == ("600" if container["secret_environment"] else ""), engine
