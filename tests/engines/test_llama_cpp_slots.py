"""llama.cpp slots as llama-server runs them, partial offload as a plan, and MEM003 as information."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec.estimate import estimates
from servespec.findings import Severity
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet

ARCH = (
    "{params_b: 8.03, layers: 32, hidden_size: 4096, attention_heads: 32, kv_heads: 8, head_dim: 128, "
    "vocab_size: 128256, max_position_embeddings: 131072}"
)
MODEL = (
    "{source: /srv/models/m.gguf, quantization: gguf, gguf_type: Q4_K_M, max_model_len: 8192, architecture: "
    + ARCH
    + "}"
)


def _fleet(tmp_path: Path, engine: str, extra: str, model: str = MODEL, gpu: str = "NVIDIA L4", ram: int = 64) -> Fleet:
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n"
        f"  h1: {{address: 10.0.0.1, hardware: {{gpus: {{model: {gpu}, count: 1}}, driver_version: '570.86.15', "
        f"memory_gib: {ram}}}}}\n"
    )
    version = "b11434" if engine == "llama.cpp" else "0.32.15"
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        f"model: {model}\nengine:\n  name: {engine}\n  version: '{version}'\n{extra}placement: {{hosts: [h1]}}\n"
    )
    return load_fleet([tmp_path / "spec.yaml"])


def _argv(fleet: Fleet) -> list[str]:
    files = render_fleet(fleet).files
    text = next(v for k, v in files.items() if str(k).endswith("args.json"))
    return list(json.loads(text))


def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_no_parallel_is_automatic_slots_sharing_one_context(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "llama.cpp", "")
    argv = _argv(fleet)
    assert "--parallel" not in argv  # was always --parallel 4
    assert _value(argv, "--ctx-size") == "8192"  # was 8192 × 4
    plan = estimates(fleet, check_fleet(fleet))[0].plan
    assert plan is not None and plan.kv_tokens == 8192 and plan.max_sequences == 1.0
    assert "4 automatic slots share one unified KV cache" in " ".join(plan.notes)


def test_given_parallel_splits_the_context_per_slot(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "llama.cpp", "  options: {parallel: 3}\n")
    argv = _argv(fleet)
    assert _value(argv, "--parallel") == "3"
    assert _value(argv, "--ctx-size") == str(8192 * 3)
    plan = estimates(fleet, check_fleet(fleet))[0].plan
    assert plan is not None and plan.kv_tokens == 8192 * 3 and plan.max_sequences == 3.0


def test_parallel_in_extra_args_splits_too(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "llama.cpp", "  extra_args: [-np, '2']\n")
    assert _value(_argv(fleet), "--ctx-size") == str(8192 * 2)


def test_unified_kv_with_given_slots_shares_one_context(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "llama.cpp", "  options: {parallel: 8, kv_unified: true}\n")
    assert _value(_argv(fleet), "--ctx-size") == "8192"
    plan = estimates(fleet, check_fleet(fleet))[0].plan
    assert plan is not None and plan.kv_tokens == 8192


BIG = (
    "{source: /srv/models/big.gguf, quantization: gguf, gguf_type: Q8_0, max_model_len: 8192, architecture: "
    "{params_b: 70.6, layers: 80, hidden_size: 8192, attention_heads: 64, kv_heads: 8, head_dim: 128, "
    "vocab_size: 128256, max_position_embeddings: 131072}}"
)


@pytest.mark.parametrize(
    ("engine", "extra"),
    [
        ("llama.cpp", "  options: {n_gpu_layers: 20}\n"),
        ("llama.cpp", ""),  # --fit on (default) places what fits
        ("ollama", "  options: {modelfile.num_gpu: 20}\n"),
        ("ollama", ""),  # num_gpu -1: Ollama fits the layers
    ],
)
def test_partial_offload_is_a_plan_not_mem001(tmp_path: Path, engine: str, extra: str) -> None:
    model = BIG.replace("/srv/models/big.gguf", "'llama3.1:70b'") if engine == "ollama" else BIG
    fleet = _fleet(tmp_path, engine, extra, model=model, ram=256)
    findings = check_fleet(fleet)
    assert not [f for f in findings if f.rule in ("MEM001", "MEM002")], [f.message for f in findings]
    row = estimates(fleet, findings)[0]
    assert row.plan is not None and row.plan.offload is not None
    assert row.plan.offload.gpu_layers < 80
    assert json.loads(json.dumps(row.to_json()))["offload"]["host_total_gib"] == 256
    if "20" in extra:
        assert row.plan.offload.gpu_layers == 20


def test_offloaded_layers_that_do_not_fit_the_ram_are_a_finding(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "llama.cpp", "  options: {n_gpu_layers: 20}\n", model=BIG, ram=16)
    found = [f for f in check_fleet(fleet) if f.rule == "MEM001"]
    assert len(found) == 1
    assert "host memory" in found[0].message and "16 GiB of RAM" in found[0].message
    assert "tensor_parallel" not in (found[0].hint or "")
    assert found[0].path == "engine.options.n_gpu_layers"


def test_all_layers_on_one_small_gpu_does_not_suggest_gpus_the_host_lacks(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "llama.cpp", "  options: {n_gpu_layers: all}\n", model=BIG)
    found = [f for f in check_fleet(fleet) if f.rule == "MEM001"]
    assert found and "h1 has 1" in (found[0].hint or "")
    assert "host memory" in (found[0].hint or "")


THROUGHPUT = (
    "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
    "model: {source: Qwen/Qwen2.5-7B-Instruct, max_model_len: 32768}\n"
    "engine: {name: vllm, version: '0.11.0', options: {max_num_seqs: 1024}}\nplacement: {hosts: [h1]}\n"
)


def test_mem003_is_information_that_quotes_the_engine(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n"
        "  h1: {address: 10.0.0.1, hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 1}, "
        "driver_version: '570.86.15'}}\n"
    )
    (tmp_path / "spec.yaml").write_text(THROUGHPUT)
    found = [f for f in check_fleet(load_fleet([tmp_path / "spec.yaml"])) if f.rule == "MEM003"]
    assert len(found) == 1
    finding = found[0]
    assert finding.severity is Severity.INFO  # was a warning telling throughput recipes to lower max_num_seqs
    assert "sequences of the full 32768 tokens" in finding.message and "preempts" in finding.message
    assert "set max_num_seqs ≤" not in (finding.hint or "")
    assert "nothing to change for short requests" in (finding.hint or "")
