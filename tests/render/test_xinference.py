"""XInference renders a server container and a launch request; switching engine.name to and from vLLM/SGLang."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from servespec import engines
from servespec.knowledge import resolve
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.golden.regen import GOLDEN

INVENTORY = GOLDEN / "inventory.yaml"
REVISION = "0123456789abcdef0123456789abcdef01234567"
MODEL = f"model: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {REVISION}, max_model_len: 8192}}\n"


def _spec(tmp_path: Path, engine: str, extra: str = "") -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n" + MODEL + engine
        + "resources: {tensor_parallel: 2}\nplacement: {hosts: [h100-a]}\n" + extra
    )  # fmt: skip
    return path


def _errors(path: Path) -> list[tuple[str, str]]:
    fleet = load_fleet([path], INVENTORY)
    return [(f.rule, f.path or "") for f in check_fleet(fleet) if f.severity.value == "error"]


def test_the_launch_request_carries_the_registry_model_and_the_forwarded_options(tmp_path: Path) -> None:
    engine = (
        "engine: {name: xinference, version: '2.12.0', options: {model_engine: vLLM, gpu_idx: [0, 1], "
        "vllm: {max_num_seqs: 32, enable_prefix_caching: true}}}\n"
    )
    path = _spec(tmp_path, engine, "serving: {model_name: chat, port: 9000}\n")
    assert _errors(path) == []
    rendered = render_fleet(load_fleet([path], INVENTORY))
    files = rendered.host_files("d", "h100-a")
    assert json.loads(files["launch.json"]) == {
        "model_uid": "chat",
        "model_name": "qwen2.5-instruct",
        "model_format": "pytorch",
        "model_size_in_billions": 7,
        "quantization": "none",
        "model_type": "LLM",
        "replica": 1,
        "n_gpu": 2,
        "model_engine": "vLLM",
        "gpu_idx": [0, 1],
        "max_model_len": 8192,
        "max_num_seqs": 32,
        "enable_prefix_caching": True,
    }
    container = rendered.containers[("d", "h100-a")]
    assert container.image == "xprobe/xinference:v2.12.0"
    assert list(container.command) == ["xinference-local", "--host", "0.0.0.0", "--port", "9000"]
    assert container.healthcheck.path == "/status" and container.files == ("launch.json",)


def test_the_memory_plan_is_the_bundled_vllms_with_xinferences_defaults(tmp_path: Path) -> None:
    path = _spec(tmp_path, "engine: {name: xinference, version: '2.12.0', options: {model_engine: vLLM}}\n")
    known = resolve.resolved(load_fleet([path], INVENTORY).deployments[0])
    host = known.hosts[0]
    ours = known.estimate_on(host)
    gpu = resolve.host_gpus(host).model
    inp = known.estimate_input(gpu, gpu_count=2)
    assert ours is not None and inp is not None
    vllm = engines.get("vllm")
    bundled = vllm.select("0.21.0").release
    # XInference's own defaults: max_num_seqs 256 and gpu_memory_utilization 0.9 (vllm/core.py _sanitize_model_config)
    theirs = vllm.estimate(
        dataclasses.replace(
            inp,
            engine="vllm",
            release=bundled,
            options={"block_size": 16, "gpu_memory_utilization": 0.9, "max_num_seqs": 256},
            kv_cache_dtype_option="kv_cache_dtype",
        )
    )
    assert theirs is not None
    assert (ours.weights_gib, ours.kv_cache_gib, ours.kv_tokens) == (
        theirs.weights_gib,
        theirs.kv_cache_gib,
        theirs.kv_tokens,
    )
    assert ours.kv_tokens > 0


@pytest.mark.parametrize(("wrapped", "version"), [("vllm", "0.21.0"), ("sglang", "0.5.6")])
def test_switching_engine_name_gives_a_valid_spec_or_findings_that_say_why(
    tmp_path: Path, wrapped: str, version: str
) -> None:
    # a plain spec of the wrapped engine: on XInference only model_engine is missing, and it says so
    plain = _spec(tmp_path, f"engine: {{name: {wrapped}, version: '{version}'}}\n")
    assert _errors(plain) == []
    switched = _spec(tmp_path, "engine: {name: xinference, version: '2.12.0'}\n")
    assert _errors(switched) == [("ENG003", "engine.options.model_engine")]
    named = "SGLang" if wrapped == "sglang" else "vLLM"
    assert (
        _errors(
            _spec(tmp_path, f"engine: {{name: xinference, version: '2.12.0', options: {{model_engine: {named}}}}}\n")
        )
        == []
    )
    # the wrapped engine's options, flat: ENG001 names the block they belong in
    option = "max_num_seqs" if wrapped == "vllm" else "mem_fraction_static"
    flat = _spec(
        tmp_path,
        f"engine: {{name: xinference, version: '2.12.0', options: {{model_engine: {named}, {option}: 0.5}}}}\n",
    )
    fleet = load_fleet([flat], INVENTORY)
    hints = [f.hint for f in check_fleet(fleet) if f.rule == "ENG001"]
    assert hints == [f"did you mean '{wrapped}.{option}'?"]
    # and back: XInference's options are unknown to the engine itself
    back = _spec(tmp_path, f"engine: {{name: {wrapped}, version: '{version}', options: {{model_engine: {named}}}}}\n")
    assert ("ENG001", "engine.options.model_engine") in _errors(back)
