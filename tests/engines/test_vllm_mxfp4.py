"""vLLM's MXFP4 MoE layout per release (the ``mxfp4_moe`` fact, scripts/catalog/vllm_mxfp4.py) and the
weights the estimator derives from it, against the "Model loading took" lines of real start-up logs.

The expected figures are worked by hand from the cited source, not from the code under test:
``create_weights`` allocates per local expert ``w13`` = 2·I'·H'/2 bytes + 2·I'·H'/32 scale bytes and
``w2`` = H'·I'/2 + H'·I'/32, i.e. 3·H'·I' values at 17/32 byte, where H' and I' are the hidden size and
the per-rank intermediate size rounded up to the backend's multiples, plus biases ``w13_bias`` (2·I') and
``w2_bias`` (H') in bf16, turned to float32 on the Triton path; the unpadded figure the estimator had counts
the experts at 17/32 byte per value and the biases (2·I + H per expert) in bf16 split by tensor parallelism.
gpt-oss-120b: 36 MoE layers, 128 experts, hidden 2880, intermediate 2880 (config.json).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.catalog import version_key
from servespec.engines.vllm.memory import mxfp4_backend, mxfp4_padding_gib
from servespec.knowledge import models
from servespec.knowledge.memory import EstimateInput
from tests import vllm_logs

VLLM = get("vllm")
GIB = 1024**3
LOGS = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"


def _versions() -> list[str]:
    return list(VLLM.catalog.versions)


def test_every_catalogued_release_states_its_mxfp4_moe_layout() -> None:
    """An explicit fact for each release: supported exactly where the release has the mxfp4 method."""
    for version in _versions():
        facts = VLLM.catalog.release(version).facts
        fact = facts.mxfp4_moe
        assert fact is not None, f"{version}: no mxfp4_moe fact"
        assert fact.supported == ("mxfp4" in facts.quantization_methods), version
        assert fact.source.startswith(f"https://github.com/vllm-project/vllm/blob/v{version}/"), version
        if fact.supported:
            assert {"marlin", "triton"} <= set(fact.backends), version
            assert [c.min_capability for c in fact.by_capability][:2] == ["8.0", "9.0"], version
            for padding in fact.backends.values():
                assert f"/v{version}/" in padding.source
        else:
            assert not fact.backends and not fact.by_capability, version


def test_padding_multiples_per_backend_as_the_source_reads() -> None:
    """0.10.1 mxfp4.py L154-186: Marlin round_up(I, 128) and round_up(H, 256); FlashInfer 256/256; else I to 64.
    0.19.0 fused_moe/oracle/mxfp4.py L376-400: the same for Marlin and TRT-LLM, CUTLASS 128/128.
    0.27.0: TRT-LLM's intermediate multiple drops to 128."""
    first = VLLM.catalog.release("0.10.1").facts.mxfp4_moe
    assert first is not None
    assert (first.backends["marlin"].hidden_multiple, first.backends["marlin"].intermediate_multiple) == (256, 128)
    assert (first.backends["triton"].hidden_multiple, first.backends["triton"].intermediate_multiple) == (1, 64)
    assert first.backends["triton"].keeps_loaded_scales and first.backends["triton"].bias_float32  # L390, L408
    assert not first.backends["marlin"].keeps_loaded_scales and not first.backends["marlin"].bias_float32
    later = VLLM.catalog.release("0.19.0").facts.mxfp4_moe
    assert later is not None
    assert (
        later.backends["flashinfer_cutlass"].hidden_multiple,
        later.backends["flashinfer_cutlass"].intermediate_multiple,
    ) == (128, 128)
    assert later.backends["flashinfer_trtllm"].intermediate_multiple == 256
    newest = VLLM.catalog.release("0.27.0").facts.mxfp4_moe
    assert newest is not None and newest.backends["flashinfer_trtllm"].intermediate_multiple == 128


@pytest.mark.parametrize(
    ("version", "hopper"),
    [("0.10.1", "marlin"), ("0.11.2", "marlin"), ("0.12.0", "triton"), ("0.19.0", "triton"), ("0.34.0", "triton")],
)
def test_hopper_takes_triton_once_the_build_bundles_triton_kernels(version: str, hopper: str) -> None:
    """triton_kernels is bundled from 0.12.0 (cmake/external_projects/triton_kernels.cmake); before, a plain install
    lacks it and Hopper falls back to Marlin (log 150 on 0.10.1 says so: "leveraging the Marlin kernel")."""
    fact = VLLM.catalog.release(version).facts.mxfp4_moe
    assert fact is not None
    rows = {row.min_capability: row.backend for row in fact.by_capability}
    assert rows["8.0"] == "marlin" and rows["9.0"] == hopper


def _log(number: str) -> tuple[dict[str, Any], EstimateInput]:
    path = next(LOGS.glob(f"{number}-*.yaml"))
    data = YAML(typ="safe").load(path.read_text())
    settings = data.get("settings") or {}
    version = str(data["vllm_version"])
    facts, gpu = vllm_logs._facts(data), vllm_logs._gpu(data)
    assert facts is not None and gpu is not None
    inp = EstimateInput(
        engine="vllm",
        release=VLLM.select(version).release,
        model=facts,
        gpu=gpu,
        tensor_parallel=int(settings.get("tensor_parallel_size") or 1),
        quantization=settings.get("quantization"),
        max_model_len=int(settings.get("max_model_len") or 4096),
        options={k: settings[k] for k in vllm_logs._OPTIONS if settings.get(k) is not None},
        engine_version=version,
        kv_cache_dtype_option="kv_cache_dtype",
    )
    return data, inp


# (log, backend, extra bytes per GPU worked by hand)
HAND = [
    # 077: 0.10.1.1, A100 (8.0) -> Marlin; TP4: I' = round_up(720, 128) = 768, H' = round_up(2880, 256) = 3072.
    # values: 36*128*3*(3072*768 - 2880*720) * 17/32 = 2,098,151,424 B
    # biases: 36*(128*(2*768 + 3072)*2 - 128*(5760 + 2880)*2/4) = 22,560,768 B
    ("077", "marlin", 2_098_151_424 + 22_560_768),
    # 150: 0.10.1, H100 (9.0), no triton_kernels -> Marlin; TP1: I' = round_up(2880, 128) = 2944, H' = 3072.
    # values: 36*128*3*(3072*2944 - 2880*2880) * 17/32 = 5,504,827,392 B
    # biases: 36*128*((5888 + 3072) - (5760 + 2880))*2 = 2,949,120 B
    ("150", "marlin", 5_504_827_392 + 2_949_120),
    # 151: 0.14.1, H100 -> Triton; TP1: I' = round_up(2880, 64) = 2880, H unpadded; the loaded scales stay:
    # 36*128*3*2880*2880 / 32 = 3,583,180,800 B; biases bf16 -> float32: 36*128*8640*2 = 79,626,240 B
    ("151", "triton", 3_583_180_800 + 79_626_240),
]


@pytest.mark.parametrize(("number", "backend", "extra"), HAND)
def test_padding_bytes_worked_by_hand(number: str, backend: str, extra: int) -> None:
    _data, inp = _log(number)
    assert inp.model.experts == 128 and inp.model.hidden_size == 2880 and inp.model.moe_intermediate_size == 2880
    choice = mxfp4_backend(inp)
    assert choice is not None and choice.backend == backend
    gib, notes = mxfp4_padding_gib(inp)
    assert gib == pytest.approx(extra / GIB, rel=1e-9)
    assert notes and backend in notes[0]


LOADING_TOOK = {"077": 17.2217, "150": 65.9651, "151": 64.38, "173": 13.72}
"""GiB per GPU in each log's own "Model loading took" line (173: gpt-oss-20b on an A100, 0.19.0, Marlin)."""


@pytest.mark.parametrize("number", sorted(LOADING_TOOK))
def test_gpt_oss_weights_match_model_loading_took(number: str) -> None:
    """Within 1 % of vLLM's own figure (before the fact: 077 -11.8 %, 150 -7.9 %, 151 -5.6 %)."""
    _data, inp = _log(number)
    logged = LOADING_TOOK[number]
    assert f"Model loading took {logged}" in next(LOGS.glob(f"{number}-*.yaml")).read_text()
    plan = VLLM.estimate(inp)
    assert plan is not None
    assert plan.weights_gib == pytest.approx(logged, rel=0.01)


def test_gpt_oss_120b_on_one_h100_with_0_10_1_is_predicted_not_to_start() -> None:
    """Log 150 fails to start ("Available KV cache memory: -2.14 GiB"): the padded Marlin weights leave no KV cache."""
    _data, inp = _log("150")
    plan = VLLM.estimate(inp)
    assert plan is not None and not vllm_logs.fits(plan)


def test_a_gpu_outside_the_modelled_capabilities_says_so() -> None:
    """Compute capability 12.0 (consumer Blackwell) is in no range the fact models: no padding, and a note."""
    _data, inp = _log("151")
    assert inp.gpu is not None
    other = replace(inp, gpu=replace(inp.gpu, compute_capability=(12, 0)))
    assert mxfp4_padding_gib(other) == (0.0, ["MXFP4 MoE backend on this GPU not modelled: experts counted unpadded"])


def test_a_release_without_mxfp4_adds_nothing() -> None:
    _data, inp = _log("151")
    older = replace(inp, release=VLLM.select("0.10.0").release)
    assert mxfp4_padding_gib(older) == (0.0, [])
    assert version_key("0.10.0") < version_key("0.10.1") and models.catalogued("openai/gpt-oss-120b") is not None
