"""GGUF start-up logs whose KV cache is not on a catalogued discrete GPU (unified memory, host memory, a card the
catalogue lacks): answered with the KV bytes only where the device provably cannot change them
(tests/vllm_logs.py ``_device_free_kv``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput
from tests.vllm_logs import OTHER_LOGS, _kv_device, compare_other

HOST_LOGS = {
    "llama.cpp/001-qwen3-0.6b-q4km-jetson-orin-ngl0": "unified-memory",
    "llama.cpp/002-gemma-4-e4b-q8-apple-m4-iswa": "unified-memory",
    "llama.cpp/014-qwen3-4b-q6k-gtx1660ti-ngl0": "host",
    "ollama/011-llama2-7b-apple-m3-max-0.1.32": "unified-memory",
}


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((OTHER_LOGS / f"{name}.yaml").read_text())
    return data


def _write(tmp_path: Path, engine: str, name: str, data: dict[str, Any]) -> Path:
    folder = tmp_path / engine
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with path.open("w") as out:
        YAML().dump(data, out)
    return path


@pytest.mark.parametrize(("name", "kind"), sorted(HOST_LOGS.items()))
def test_logs_off_a_catalogued_gpu_are_answered_to_the_byte_and_labelled(name: str, kind: str) -> None:
    row = compare_other(OTHER_LOGS / f"{name}.yaml")
    assert _kv_device(_load(name)) == kind
    assert not row.skipped and row.predicted == row.observed, row
    assert any(label.startswith("KV cache in") and "do not depend on the device" in label for label in row.assumed)


def test_a_log_on_a_catalogued_gpu_keeps_the_plain_comparison() -> None:
    data = _load("llama.cpp/016-qwen2.5-14b-q4km-rtx3090-32768-np4")
    assert _kv_device(data) == ""
    row = compare_other(OTHER_LOGS / "llama.cpp/016-qwen2.5-14b-q4km-rtx3090-32768-np4.yaml")
    assert not any(label.startswith("KV cache in") for label in row.assumed), row.assumed
    with pytest.raises(ValueError, match="kv_device 'apple'"):
        _kv_device({**data, "kv_device": "apple"})


def _qwen3_4b() -> models.ModelFacts:
    config = {
        "model_type": "qwen3",
        "num_hidden_layers": 36,
        "hidden_size": 2560,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 9728,
        "vocab_size": 151936,
        "max_position_embeddings": 40960,
    }
    return models.facts_from_config(config, "qwen3-4b-test")


@pytest.mark.parametrize(
    ("engine", "version", "options"),
    [
        ("llama.cpp", "b10001", {"parallel": 2, "n_gpu_layers": -1}),
        ("ollama", "0.30.7", {"num_parallel": 2}),
        ("ollama", "0.6.2", {"num_parallel": 1}),
    ],
)
def test_the_same_spec_lays_out_the_same_kv_bytes_on_every_device(
    engine: str, version: str, options: dict[str, Any]
) -> None:
    """The independence the device-free answers rest on, in the estimator itself: one spec on the host, on a 4 GiB
    card (most layers, and their KV, left in host memory) and on the largest catalogued card lays out one KV cache
    over all devices, while the share on the GPU does change with the card."""
    facts = _qwen3_4b()
    release = get(engine).select(version).release
    assert release is not None
    inp = EstimateInput(
        engine=engine,
        release=release,
        model=facts,
        gpu=None,
        gguf_type="Q6_K",
        max_model_len=16384,
        options=options,
        host_memory_gib=64.0,
        host_memory_total_gib=64.0,
        engine_version=version,
        kv_cache_dtype_option="kv_cache_type" if engine == "ollama" else "cache_type_k",
    )
    cards = sorted(gpus.catalog(), key=lambda card: card.memory_mib)
    plans = [get(engine).estimate(replace(inp, gpu=device)) for device in (None, cards[0], cards[-1])]
    totals = {round(plan.kv_cache_bytes_all_devices) for plan in plans}
    assert len(totals) == 1 and totals.pop() > 0, [plan.kv_cache_bytes_all_devices for plan in plans]
    on_gpu = {round(plan.kv_cache_bytes) for plan in plans[1:]}
    assert len(on_gpu) == 2, "the small card should hold only part of the KV cache: the test would not test placement"


def test_a_context_chosen_by_fit_stays_unanswered(tmp_path: Path) -> None:
    """--fit reduces an unset context to the device's free memory: the log is not answered on another device's
    behalf, whether the range is known (a catalogued release: fit_min to n_ctx_train) or not (an older build)."""
    data = _load("llama.cpp/002-gemma-4-e4b-q8-apple-m4-iswa")
    data["log"] += "llama_params_fit_impl: context size reduced from 131072 to 65536 -> need 512 MiB less memory\n"
    data.pop("context_from")
    older = compare_other(_write(tmp_path, "llama.cpp", "901-fit-older.yaml", data))
    assert older.predicted is None and "--fit reduced" in older.skipped and "unknown" in older.skipped, older
    catalogued = compare_other(_write(tmp_path, "llama.cpp", "902-fit.yaml", {**data, "engine_version": "b10001"}))
    assert catalogued.predicted is None and "depends on what the device decides" in catalogued.skipped, catalogued
    assert "context 4096-131072" in catalogued.skipped, catalogued
    given = compare_other(_write(tmp_path, "llama.cpp", "903-given.yaml", {**data, "context_from": "given"}))
    assert given.predicted == given.observed, given  # the same log with the context the user gave is answered


def test_an_ollama_vram_default_context_is_answered_only_when_every_tier_gives_one_figure(tmp_path: Path) -> None:
    """Ollama 0.30.7 picks num_ctx by total VRAM (4096, 32768 or 262144), lowered to n_ctx_train: Llama 2's 4096
    makes every tier one context, a 131072-token model does not."""
    data = _load("ollama/011-llama2-7b-apple-m3-max-0.1.32")
    data.update(engine_version="0.30.7", context_from="vram_default")
    data["settings"] = {**data["settings"], "num_ctx": 4096, "parallel": 1}
    small = compare_other(_write(tmp_path, "ollama", "901-vram-4096.yaml", data))
    assert small.predicted == 2 * small.observed, small  # 4096 cells where the log's runner had 2048
    data["gguf"] = {**data["gguf"], "n_ctx_train": 131072}
    large = compare_other(_write(tmp_path, "ollama", "902-vram-131072.yaml", data))
    assert large.predicted is None and "context 4096-131072" in large.skipped, large
    lowered = compare_other(_write(tmp_path, "ollama", "903-sched.yaml", {**data, "context_from": "scheduler"}))
    assert lowered.predicted is None and "scheduler lowered" in lowered.skipped, lowered


def test_settings_a_device_may_decide_are_varied(tmp_path: Path) -> None:
    """Ollama 0.6.2 pads the cells to 256 with flash attention and to 32 without, and loads 4 automatic slots only
    where they fit in VRAM: left unlogged, each is varied, and a context where they differ is not answered."""
    data = _load("ollama/011-llama2-7b-apple-m3-max-0.1.32")
    data["engine_version"] = "0.6.2"
    data["settings"] = {**data["settings"], "num_ctx": 3000, "parallel": 1, "flash_attention": None}
    padded = compare_other(_write(tmp_path, "ollama", "901-fa.yaml", data))
    assert padded.predicted is None and "flash attention on or off" in padded.skipped, padded
    data["settings"]["num_ctx"] = 4096  # a multiple of 256: both paddings give it
    even = compare_other(_write(tmp_path, "ollama", "902-fa-4096.yaml", data))
    assert even.predicted == 2 * even.observed and any("flash attention" in a for a in even.assumed), even
    # the runner's logged --ctx-size is num_ctx x slots: the slots change only how each slot's share is padded
    data["settings"] = {**data["settings"], "parallel": None, "flash_attention": False}
    slots = compare_other(_write(tmp_path, "ollama", "903-auto-slots.yaml", data))
    assert slots.predicted == 2 * slots.observed and any("1 or 4 automatic slots" in a for a in slots.assumed), slots
    data["settings"]["num_ctx"] = 3000  # 4 slots of 750 cells pad to 4 x 768, 1 slot to 3008
    uneven = compare_other(_write(tmp_path, "ollama", "904-auto-slots-3000.yaml", data))
    assert uneven.predicted is None and "1 or 4 automatic slots" in uneven.skipped, uneven


ARCH = (
    "{params_b: 8.03, layers: 32, hidden_size: 4096, attention_heads: 32, kv_heads: 8, head_dim: 128, "
    "vocab_size: 128256, max_position_embeddings: 131072}"
)


def _host_fleet(tmp_path: Path, engine: str, version: str, model: str, options: str, gpu: str = "Apple M4") -> Any:
    from servespec.spec.fleet import load_fleet

    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n"
        f"  mac: {{address: 10.0.0.1, hardware: {{gpus: {{model: {gpu}, count: 1}}, memory_gib: 32}}}}\n"
    )
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        f"model: {model}\nengine: {{name: {engine}, version: '{version}', options: {options}}}\n"
        "placement: {hosts: [mac]}\n"
    )
    return load_fleet([tmp_path / "spec.yaml"])


def _row(fleet: Any) -> Any:
    from servespec.estimate import estimates
    from servespec.rules.runner import check_fleet

    return estimates(fleet, check_fleet(fleet))[0]


def test_deploy_estimate_answers_the_kv_cache_on_an_uncatalogued_gpu_when_no_device_changes_it(tmp_path: Path) -> None:
    """`deploy estimate` on an Apple M4 host (not catalogued, never stood in for by an NVIDIA card): no memory plan,
    but the KV cache llama-server lays out for the spec's context and slots, labelled, in text and JSON."""
    from servespec.estimate import context_line

    model = "{source: /srv/models/m.gguf, quantization: gguf, gguf_type: Q4_K_M, max_model_len: 8192, architecture: "
    row = _row(_host_fleet(tmp_path, "llama.cpp", "b11434", model + ARCH + "}", "{parallel: 2}"))
    assert row.plan is None and row.kv_without_device is not None
    # 2 slots x 8192 cells x 32 layers x (K + V) x 8 heads x 128 x 2 bytes (f16)
    assert row.kv_without_device.kv_bytes == 2 * 8192 * 32 * 2 * 8 * 128 * 2
    out = row.to_json()["kv_cache_all_devices"]
    assert out["device"] == "not catalogued: Apple M4" and out["gib"] == 2.0 and "llama-kv-cache.cpp" in out["basis"]
    assert "no device changes" in str(context_line(row))


@pytest.mark.parametrize(
    ("engine", "version", "model", "options", "why"),
    [
        # the context unset: llama-server's --fit shrinks n_ctx_train (131072) to what the device leaves free
        ("llama.cpp", "b11434", "{source: /srv/models/m.gguf, quantization: gguf, gguf_type: Q4_K_M, ", "{}", "fit"),
        # the context unset: Ollama 0.30.7's default num_ctx follows the GPUs' total VRAM
        ("ollama", "0.30.7", "{source: 'llama3.1:8b', quantization: gguf, gguf_type: Q4_K_M, ", "{}", "vram"),
        # flash attention unset: Ollama 0.6.2 pads 3000 cells to 3072 with it (256) and to 3008 without (32)
        (
            "ollama",
            "0.6.2",
            "{source: 'llama3.1:8b', quantization: gguf, gguf_type: Q4_K_M, max_model_len: 3000, ",
            "{num_parallel: 1}",
            "flash attention",
        ),
    ],
)
def test_deploy_estimate_leaves_a_context_chosen_from_memory_unanswered(
    tmp_path: Path, engine: str, version: str, model: str, options: str, why: str
) -> None:
    row = _row(_host_fleet(tmp_path, engine, version, model + "architecture: " + ARCH + "}", options))
    assert row.plan is None and row.kv_without_device is not None, why
    assert row.kv_without_device.kv_bytes is None and "depends on the device" in row.kv_without_device.why, why
    cause = "flash attention" if why == "flash attention" else "the context the release chooses from memory"
    assert cause in row.kv_without_device.why, row.kv_without_device.why
    assert row.to_json()["kv_cache_all_devices"]["bytes"] is None


def test_a_catalogued_gpu_host_keeps_its_memory_plan(tmp_path: Path) -> None:
    model = "{source: /srv/models/m.gguf, quantization: gguf, gguf_type: Q4_K_M, max_model_len: 8192, architecture: "
    row = _row(_host_fleet(tmp_path, "llama.cpp", "b11434", model + ARCH + "}", "{parallel: 2}", gpu="NVIDIA L4"))
    assert row.plan is not None and row.kv_without_device is None and "kv_cache_all_devices" not in row.to_json()
    assert round(row.plan.kv_cache_bytes_all_devices) == 2 * 8192 * 32 * 2 * 8 * 128 * 2  # the same bytes on an L4


def test_an_ollama_log_on_a_vram_default_release_is_read_for_the_default_it_logs(tmp_path: Path) -> None:
    """Without a recorded context_from, an Ollama release that picks num_ctx by VRAM is taken at its default unless
    the logged default ("vram-based default context ... default_num_ctx=N") differs from the runner's context."""
    from tests.vllm_logs import _context_source

    data = _load("ollama/011-llama2-7b-apple-m3-max-0.1.32")
    data.pop("context_from")
    data.update(engine_version="0.30.7")
    data["settings"] = {**data["settings"], "num_ctx": 2048, "parallel": 1, "ollama_context_length": "0"}
    assert _context_source(data) == "vram_default"  # the excerpt does not show which applied
    line = 'level=INFO source=routes.go:2031 msg="vram-based default context" total_vram="{}" default_num_ctx={}\n'
    asked = {**data, "log": data["log"] + line.format("128.0 GiB", 262144)}
    assert _context_source(asked) == "given"  # 262144 lowered to n_ctx_train is 4096, the runner had 2048
    row = compare_other(_write(tmp_path, "ollama", "901-asked.yaml", asked))
    assert row.predicted == row.observed, row
    defaulted = {**data, "log": data["log"] + line.format("8.0 GiB", 2048)}
    assert _context_source(defaulted) == "vram_default"
    assert _context_source({**defaulted, "settings": {**data["settings"], "ollama_context_length": "2048"}}) == "given"
    assert _context_source({**data, "engine_version": "0.1.32"}) == "given"  # no VRAM default in that release
    # a CPU-only log (no GPU named) keeps its KV cache in host memory; an Apple name is unified memory
    assert _kv_device({"gpu": None, "observed": {}}) == "host"
    assert _kv_device({"gpu": "Apple M2 Ultra", "observed": {}}) == "unified-memory"
    assert _kv_device({"gpu": "NVIDIA GeForce RTX 4060 Ti", "observed": {}}) == "uncatalogued"
