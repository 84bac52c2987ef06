"""deploy plan shows what adapters and a speculative draft take beside the weights, and its delta (issue 24)."""

from __future__ import annotations

from pathlib import Path

from servespec.plan import Desired, Observed, plan
from servespec.plan.footprint import footprints
from servespec.plan.report import restarts_text
from servespec.plan.sizing import Footprint, GpuMemory
from servespec.spec.fleet import load_fleet


def test_adding_a_draft_shows_its_share_and_the_kv_it_costs() -> None:
    before = GpuMemory(0, "NVIDIA L4", 14.96, 3.97, 32496, 1.32, 24576)
    after = GpuMemory(0, "NVIDIA L4", 14.96, 1.67, 10928, 0.44, 24576, beside_gib=2.3)
    files = {"container.yaml": "image: a\n"}
    observed = Observed("d", "h", current=1, good=1, digest="a", status="good", files=files)
    (action,) = plan(
        [Desired("d", "h", "b", {"container.yaml": "image: b\n"}, Footprint((after,)))],
        [observed],
        [Desired("d", "h", "a", files, Footprint((before,)))],
    )
    assert action.memory is not None
    (gpu,) = action.memory.to_json()["gpus"]
    assert gpu["delta"]["beside_gib"] == 2.3 and gpu["delta"]["kv_cache_gib"] == -2.3
    assert "beside_gib" not in gpu["before"]  # nothing beside the model before: the key is left out
    assert "adapters/draft 0.0 -> 2.3 (+2.3) GiB" in restarts_text([action])


def test_the_footprint_carries_the_estimates_share(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {ssh_user: root}\nhosts:\n"
        "  h1: {address: 10.0.0.1, hardware: {gpus: {model: NVIDIA L4, count: 1}}}\n"
    )
    (tmp_path / "d.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        "model:\n  source: meta-llama/Llama-3.1-8B-Instruct\n  max_model_len: 8192\n"
        "  speculative: {method: draft, draft: meta-llama/Llama-3.2-1B-Instruct, num_tokens: 4}\n"
        "engine: {name: vllm, version: '0.8.5'}\nplacement: {hosts: [h1]}\n"
    )
    (gpu,) = footprints(load_fleet([tmp_path / "d.yaml"]))[("d", "h1")].gpus
    assert gpu.beside_gib == 2.3
