"""Ollama before 0.10: OLLAMA_NUM_PARALLEL unset loads ``defaultParallel`` slots where the model fits in VRAM, else 1.

server/sched.go (v0.5.0-v0.9.6): ``var defaultParallel = 4`` (2 from 0.6.7); ``pickBestFullFitByLibrary``
tries ``defaultParallel`` then 1 for a whole fit in VRAM, ``pickBestPartialFitByLibrary`` falls
back to 1; on a CPU-only host ``defaultParallel`` is taken as it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.estimate import estimates
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet

QWEN_7B = (
    "{source: 'qwen2.5:7b', quantization: gguf, gguf_type: Q4_K_M, max_model_len: 8192, architecture: "
    "{params_b: 7.6, layers: 28, hidden_size: 3584, attention_heads: 28, kv_heads: 4, head_dim: 128, "
    "max_position_embeddings: 32768}}"
)
LLAMA_70B = (
    "{source: 'llama3.1:70b', quantization: gguf, gguf_type: Q4_K_M, max_model_len: 8192, architecture: "
    "{params_b: 70.6, layers: 80, hidden_size: 8192, attention_heads: 64, kv_heads: 8, head_dim: 128, "
    "max_position_embeddings: 131072}}"
)


def _fleet(tmp_path: Path, version: str, model: str, gpus: str, options: str = "{}") -> Fleet:
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n"
        f"  h1: {{address: 10.0.0.1, hardware: {{gpus: {gpus}, driver_version: '570.86.15', memory_gib: 256}}}}\n"
    )
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        f"model: {model}\nengine: {{name: ollama, version: '{version}', options: {options}}}\n"
        "placement: {hosts: [h1]}\n"
    )
    return load_fleet([tmp_path / "spec.yaml"])


def _plan(fleet: Fleet):  # type: ignore[no-untyped-def]
    plan = estimates(fleet, check_fleet(fleet))[0].plan
    assert plan is not None
    return plan


@pytest.mark.parametrize(("version", "slots"), [("0.5.0", 4), ("0.6.6", 4), ("0.6.7", 2), ("0.9.6", 2)])
def test_the_release_fact_names_defaultparallel(version: str, slots: int) -> None:
    fact = engines.get("ollama").catalog.release(version).facts.auto_parallel
    assert fact is not None and fact.value == slots and f"/v{version}/server/sched.go#L" in fact.source


def test_from_0_10_the_option_default_decides() -> None:
    assert engines.get("ollama").catalog.release("0.10.0").facts.auto_parallel is None


def test_a_model_that_fits_gets_the_automatic_slots(tmp_path: Path) -> None:
    plan = _plan(_fleet(tmp_path, "0.6.0", QWEN_7B, "{model: NVIDIA H100 80GB HBM3, count: 1}"))
    assert plan.max_sequences >= 4 and any("4 automatic slot(s) × 8192" in note for note in plan.notes)
    one = _plan(_fleet(tmp_path, "0.6.0", QWEN_7B, "{model: NVIDIA H100 80GB HBM3, count: 1}", "{num_parallel: 1}"))
    assert plan.kv_cache_gib == pytest.approx(4 * one.kv_cache_gib, rel=0.02)


def test_a_model_that_does_not_fit_whole_falls_back_to_one_slot(tmp_path: Path) -> None:
    plan = _plan(_fleet(tmp_path, "0.9.0", LLAMA_70B, "{model: NVIDIA L4, count: 1}"))
    assert any("2 automatic slots do not fit in VRAM, so Ollama loads 1" in note for note in plan.notes)
    assert plan.offload is not None  # and the rest of the layers in host memory


def test_a_cpu_host_takes_defaultparallel(tmp_path: Path) -> None:
    plan = _plan(_fleet(tmp_path, "0.9.0", QWEN_7B, "{count: 0}"))
    assert any("2 automatic slot(s)" in note for note in plan.notes)
