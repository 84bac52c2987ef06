"""MEM001/MEM002 verdicts: an error only where the shortfall is a proof.

- A shortfall within the estimator's measured error for the model's class (knowledge/data/
  estimator_band.yaml, measured by bench/estimator_accuracy.py) is a "may not fit" warning.
- A hybrid model's per-request KV need uses the layout the release's capacity uses; where the
  release's hybrid-manager layout is not modelled for the model (a linear-attention state page the
  release aligns otherwise), the need is bounded below by the least any layout needs, and only a
  shortfall beyond that bound (and the band) is an error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from servespec.engines.catalog import version_key
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.knowledge.memory import GIB
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

FLEET = Path(__file__).parent / "cases" / "_fleet"
GPT_OSS = Path(__file__).resolve().parent.parent / "data" / "hybrid" / "openai--gpt-oss-120b.config.json"


def _write(tmp_path: Path, model: str, engine: str, host: str, extra: str = "") -> Path:
    shutil.copytree(FLEET, tmp_path, dirs_exist_ok=True)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\ninventory: inventory.yaml\n"
        f"model:\n{model}engine: {engine}\n{extra}placement: {{hosts: [{host}]}}\n"
    )
    return spec


def _mem(spec: Path) -> list[Finding]:
    return [f for f in check_fleet(load_fleet([spec])) if f.rule in ("MEM001", "MEM002")]


def _plan(spec: Path) -> tuple[resolve.Resolved, object]:
    fleet = load_fleet([spec])
    known = resolve.resolved(fleet.deployments[0])
    return known, known.estimate_on(known.hosts[0])


def _gpt_oss(tmp_path: Path, version: str, options: str = "gpu_memory_utilization: 0.95") -> Path:
    """gpt-oss-120b at 131072 tokens on one H100. At the default 0.9 its weights as vLLM pads them (64.2 GiB on
    Triton, 65.9 on Marlin: logs 151 and 150, both failed starts on one H100) leave less than one sequence, so
    the layout tests give the KV cache 0.95 of the GPU."""
    shutil.copy(GPT_OSS, tmp_path / "config.json")
    model = "  source: openai/gpt-oss-120b\n  config: config.json\n  max_model_len: 131072\n"
    engine = f'{{name: vllm, version: "{version}", options: {{{options}}}}}'
    return _write(tmp_path, model, engine, "nvs8", "resources: {gpu_ids: [0]}\n")


@pytest.mark.parametrize("version", ["0.9.2", "0.11.0", "0.12.0", "0.16.0", "0.24.0", "0.32.0", "0.33.0", "0.34.0"])
def test_gpt_oss_120b_fits_where_the_release_layout_is_known(tmp_path: Path, version: str) -> None:
    """Every release with the hybrid manager has its layout derived from its source (scripts/catalog/vllm.py):
    one sequence is sized with the same layout as the capacity. Was (0.12-0.32, layout not catalogued):
    MEM002 "may not fit ... 9.00 GiB with every layer at full length"."""
    spec = _gpt_oss(tmp_path, version)
    _, plan = _plan(spec)
    # 9.00 GiB with every layer at full length; 4.79 GiB (0.24.0) with one batch per sliding layer, 5.07 from 0.26
    # where a sliding layer reserves two batches under async scheduling (hybrid_kv_cache.in_flight_window).
    assert plan.one_sequence_gib < 5.5  # type: ignore[attr-defined]
    assert plan.one_sequence_floor_gib is None  # type: ignore[attr-defined]
    # Before 0.17 the sampler warm-up sorts 1024 x 201088 logits (7.1 GiB): even at 0.95 less than one 131072
    # sequence is left (log 150, 0.10.1: "Available KV cache memory: -2.14 GiB" at 0.9). What MEM002 reports is
    # then the windowed layout's need, never every layer at full length; from 0.17 it fits.
    findings = _mem(spec)
    for finding in findings:
        assert finding.rule == "MEM002" and "9.00 GiB" not in finding.message, finding.message
    if version_key(version) >= (0, 17):
        assert findings == [] and plan.one_sequence_gib < plan.kv_cache_gib  # type: ignore[attr-defined]


QWEN3_NEXT = GPT_OSS.parent / "Qwen--Qwen3-Next-80B-A3B-Instruct.config.json"


def _qwen3_next(tmp_path: Path, version: str, options: str = "") -> Path:
    shutil.copy(QWEN3_NEXT, tmp_path / "config.json")
    model = "  source: Qwen/Qwen3-Next-80B-A3B-Instruct\n  config: config.json\n  max_model_len: 262144\n"
    engine = f'{{name: vllm, version: "{version}"{options}}}'
    return _write(tmp_path, model, engine, "nvs8", "resources: {tensor_parallel: 8}\n")


PREFIX_CACHING = ", options: {enable_prefix_caching: true}"


def test_a_linear_attention_layout_the_release_makes_otherwise_is_hedged(tmp_path: Path) -> None:
    """vLLM 0.14.0 with prefix caching sets a Gated DeltaNet layer's blocks to the attention block and aligns that
    to the chunk size, which the estimator does not model (hybrid_kv_cache.linear_state_blocks ``mamba_block``):
    sized with every attention layer at full length and a floor, as a warning at most; 0.11.0's rule
    (16 x cdiv, HybridAttentionMambaModelConfig) is sized, and so is 0.33.0's default (prefix caching on, its
    align-mode prefill checkpoints on Hopper)."""
    _, plan = _plan(_qwen3_next(tmp_path, "0.14.0", PREFIX_CACHING))
    assert plan.one_sequence_floor_gib is not None  # type: ignore[attr-defined]
    assert any("chunk size" in note for note in plan.notes)  # type: ignore[attr-defined]
    _, newest = _plan(_qwen3_next(tmp_path, "0.33.0"))
    assert newest.one_sequence_floor_gib is None  # type: ignore[attr-defined]
    _, sized = _plan(_qwen3_next(tmp_path, "0.11.0"))
    assert sized.one_sequence_floor_gib is None  # type: ignore[attr-defined]
    assert any("hybrid KV-cache layout" in note for note in sized.notes)  # type: ignore[attr-defined]


def test_an_unmodelled_layout_short_of_room_is_a_warning_naming_the_floor(tmp_path: Path) -> None:
    """0.14.0 with prefix caching, Qwen3-Next: 3.00 GiB for one 262144-token sequence, about 2.5 GiB left at
    utilization 0.36; the need rests on a layout the estimator does not model, so "may not fit" with the floor,
    not an error."""
    options = ", options: {gpu_memory_utilization: 0.36, enable_prefix_caching: true}"
    found = _mem(_qwen3_next(tmp_path, "0.14.0", options))
    assert [(f.rule, f.severity) for f in found] == [("MEM002", Severity.WARNING)], [f.message for f in found]
    assert "not modelled" in found[0].message and "any layout needs at least" in found[0].message


LLAMA_8B = "  source: meta-llama/Llama-3.1-8B-Instruct\n  max_model_len: {length}\n"


def _llama(tmp_path: Path, length: int) -> Path:
    return _write(tmp_path, LLAMA_8B.format(length=length), '{name: vllm, version: "0.11.0"}', "l4")


def test_kv_shortfall_within_the_measured_band_is_a_warning(tmp_path: Path) -> None:
    from servespec.knowledge.error_band import error_band

    known, plan = _plan(_llama(tmp_path, 8192))
    band = error_band(known.model.facts).gib
    assert band > 0.2
    per_token = plan.kv_bytes_per_token  # type: ignore[attr-defined]
    free = plan.kv_cache_gib  # type: ignore[attr-defined]
    within = int((free + band / 2) * GIB / per_token)  # a context half a band beyond the room left
    beyond = int((free + band * 2) * GIB / per_token)
    near = _mem(_llama(tmp_path, within))
    assert [(f.rule, f.severity) for f in near] == [("MEM002", Severity.WARNING)]
    assert near[0].message.startswith("may not fit") and "measured error" in near[0].message
    far = _mem(_llama(tmp_path, beyond))
    assert [(f.rule, f.severity) for f in far] == [("MEM002", Severity.ERROR)]


def _inline(params_b: float) -> str:
    return (
        "  source: acme/inline\n  max_model_len: 2048\n  architecture:\n"
        f"    params_b: {params_b}\n    layers: 32\n    hidden_size: 4096\n    attention_heads: 32\n"
        "    kv_heads: 8\n    vocab_size: 128256\n"
    )


def test_weights_shortfall_within_the_measured_band_is_a_warning(tmp_path: Path) -> None:
    from servespec.knowledge.error_band import error_band

    engine = '{name: vllm, version: "0.11.0"}'
    known, plan = _plan(_write(tmp_path, _inline(8.0), engine, "l4"))
    band = error_band(known.model.facts).gib
    budget = plan.total_gib - plan.overhead_gib  # type: ignore[attr-defined]
    per_billion = plan.weights_gib / 8.0  # type: ignore[attr-defined]
    near = _mem(_write(tmp_path, _inline(round((budget + band / 2) / per_billion, 3)), engine, "l4"))
    assert [(f.rule, f.severity) for f in near] == [("MEM001", Severity.WARNING)], [f.message for f in near]
    far = _mem(_write(tmp_path, _inline(round((budget + band * 3) / per_billion, 3)), engine, "l4"))
    assert [(f.rule, f.severity) for f in far] == [("MEM001", Severity.ERROR)]


def test_disabling_the_hybrid_manager_sizes_every_layer_at_full_length(tmp_path: Path) -> None:
    """--disable-hybrid-kv-cache-manager on a release with the fact: the layout is known, full for every layer."""
    spec = _gpt_oss(tmp_path, "0.11.0", "gpu_memory_utilization: 0.95, disable_hybrid_kv_cache_manager: true")
    _, plan = _plan(spec)
    assert plan.one_sequence_gib == pytest.approx(9.0, abs=0.01)  # type: ignore[attr-defined]
    assert plan.one_sequence_floor_gib is None  # type: ignore[attr-defined]
    # 9.00 GiB needed where 65.9 GiB of Marlin-padded weights and 0.11.0's sorting sampler warm-up (7.1 GiB) leave
    # no KV budget even at 0.95: a shortfall beyond the measured band for the class, so an error
    assert [f.severity for f in _mem(spec)] == [Severity.ERROR]


def test_a_format_whose_width_only_its_config_fixes_is_never_a_memory_error(tmp_path: Path) -> None:
    """compressed-tensors named without the checkpoint's config read: sized as 16-bit, so only a warning."""
    engine = '{name: vllm, version: "0.11.0"}'
    model = _inline(70.0) + "  quantization: {method}\n"
    found = _mem(_write(tmp_path, model.format(method="compressed-tensors"), engine, "l4"))
    assert found and all(f.severity is Severity.WARNING for f in found), [f.message for f in found]
    assert "quantization_config was not read" in found[0].message
    # a name that fixes the width still proves the shortfall
    fp8 = _mem(_write(tmp_path, model.format(method="fp8"), engine, "l4"))
    assert [(f.rule, f.severity) for f in fp8] == [("MEM001", Severity.ERROR)]
