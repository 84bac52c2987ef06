"""vLLM V1's multimodal encoder profiling, worked by hand.

``profile_run`` runs the vision tower on dummy images of the most features the processor gives before the language
model's dummy run (the ``mm_encoder_profile`` release fact, scripts/catalog/vllm_mm_profile.py). Qwen2-VL-2B-Instruct:
``max_pixels`` 12845056 over 28-pixel merged patches is 16,384 tokens, 65,536 patches of 2 x 14 x 14 x 3 = 1176 pixel
values; width 1280, MLP 5120, 2D RoPE. Gemma 3 (SigLIP): 896 / 14 = 64, 4096 patches, 256 tokens per image.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.vllm.memory import mm_encoder_profile_gib
from servespec.knowledge import models, vision
from servespec.knowledge.memory import EstimateInput
from tests import vllm_logs

VLLM = get("vllm")
GIB = 1024**3
LOGS = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"

QWEN2_VL_PATCH = 1176 * (4 + 2) + 2 * (2 * 1280 + 10 * 1280)
"""Bytes per patch: float32 pixels and their bf16 copy; residual and normed input beside the rotary attention's ten
widths (above the MLP's 2 x 5120)."""


def _input(model: str, version: str, options: dict[str, object], **extra: object) -> EstimateInput:
    facts = models.catalogued(model)
    assert facts is not None
    fields: dict[str, object] = {"tensor_parallel": 1, "max_model_len": 4096, "engine_core": "v1", **extra}
    return EstimateInput(
        engine="vllm",
        release=VLLM.select(version).release,
        model=facts,
        gpu=None,
        dtype="bfloat16",
        options=options,
        **fields,  # type: ignore[arg-type]
    )


def test_dummy_images_of_the_processors() -> None:
    qwen2 = models.catalogued("Qwen/Qwen2-VL-2B-Instruct")
    assert qwen2 is not None and qwen2.vision_profile is not None
    q2 = qwen2.vision_profile
    assert (q2.tokens, q2.patches, q2.width, q2.mlp, q2.patch_volume) == (16384, 65536, 1280, 5120, 1176)
    qwen36 = models.catalogued("nvidia/Qwen3.6-35B-A3B-NVFP4")  # 4096 x 4096 over 32-pixel merged patches
    assert qwen36 is not None and qwen36.vision_profile is not None
    q36 = qwen36.vision_profile
    assert (q36.tokens, q36.patches, q36.width, q36.mlp) == (16384, 65536, 1152, 4304)
    gemma = models.catalogued("google/gemma-3-4b-it")
    assert gemma is not None and gemma.vision_profile is not None
    g3 = gemma.vision_profile
    assert (g3.tokens, g3.patches, g3.rotary) == (256, 4096, False)
    text_only = models.catalogued("meta-llama/Llama-3.1-8B-Instruct")
    assert text_only is not None and text_only.vision_profile is None
    # a prime count has no factor pair within 200:1, so the processor's search steps down (vLLM qwen2_vl.py)
    assert vision._qwen_tokens(211 * 28 * 28, 28) == 210


def test_one_large_image_of_qwen2_vl_by_hand() -> None:
    """0.10.2, max_num_batched_tokens 2048: the budget is raised to the item's 16,384 tokens, so one image."""
    inp = _input("Qwen/Qwen2-VL-2B-Instruct", "0.10.2", {"max_num_batched_tokens": 2048})
    peak, held, notes = mm_encoder_profile_gib(inp, 2048, 256)
    assert peak == pytest.approx(65536 * QWEN2_VL_PATCH / GIB)  # 2.31 GiB
    assert held == pytest.approx(16384 * 1536 * 2 / GIB)  # the merged output, text width
    assert "1 image(s) of 16384 tokens" in notes[0]
    # tensor parallelism splits the attention's projections, not the residual stream or the pixels
    split = dataclasses.replace(inp, tensor_parallel=2)
    assert mm_encoder_profile_gib(split, 2048, 256)[0] == pytest.approx(
        65536 * (1176 * 6 + 2 * (2 * 1280 + 5 * 1280)) / GIB
    )


def test_the_options_that_change_the_profiled_batch() -> None:
    base = _input("Qwen/Qwen2-VL-2B-Instruct", "0.10.2", {})
    one = mm_encoder_profile_gib(base, 2048, 256)[0]
    # a larger encoder budget fits two images; max_num_seqs 1 and one image per prompt cap it at one again
    two = dataclasses.replace(base, options={"max_num_encoder_input_tokens": 32768, "encoder_cache_size": 32768})
    assert mm_encoder_profile_gib(two, 2048, 256)[0] == pytest.approx(2 * one)
    capped = dataclasses.replace(two, options={**two.options, "limit_mm_per_prompt": {"image": 1}})
    assert mm_encoder_profile_gib(capped, 2048, 1)[0] == pytest.approx(one)
    # mm_processor_kwargs max_pixels shrinks the dummy image: 1003520 / 784 = 1280 tokens, 5120 patches
    small = dataclasses.replace(base, options={"mm_processor_kwargs": {"max_pixels": 1003520}})
    assert mm_encoder_profile_gib(small, 2048, 256)[0] == pytest.approx(5120 * QWEN2_VL_PATCH / GIB)
    for off in ({"skip_mm_profiling": True}, {"limit_mm_per_prompt": {"image": 0}}):
        assert mm_encoder_profile_gib(dataclasses.replace(base, options=off), 2048, 256)[0] == 0.0
    # language_model_only exists from 0.20: every modality's limit is 0 there
    lmo = _input("nvidia/Qwen3.6-35B-A3B-NVFP4", "0.24.0", {"language_model_only": True})
    assert mm_encoder_profile_gib(lmo, 8192, 1)[0] == 0.0
    assert mm_encoder_profile_gib(dataclasses.replace(lmo, options={}), 8192, 1)[0] > 2.0
    # V0 has no such pass (its own encoder-decoder profile is test_vllm_mllama_profile's)
    assert mm_encoder_profile_gib(dataclasses.replace(base, engine_core="v0"), 2048, 256)[0] == 0.0


def test_items_per_batch_follow_the_release() -> None:
    """Gemma 3, 8192 batched tokens: 8192 // 256 = 32 images from the budget; on 0.8.0 the default limit is one
    image per prompt (get_limit_per_prompt's default 1), so max_num_seqs 4 caps the batch at 4; from 0.8.4 the V1
    default is 999. With a budget of 8000, 0.8.x rounds up (cdiv: 32), 0.10+ down (31)."""
    gemma = "google/gemma-3-4b-it"
    per_image = 4096 * (588 * 6 + 2 * (2 * 1152 + 2 * 4304)) / GIB  # SigLIP: the MLP's working set is the larger
    assert mm_encoder_profile_gib(_input(gemma, "0.19.0", {}), 8192, 1024)[0] == pytest.approx(32 * per_image)
    assert mm_encoder_profile_gib(_input(gemma, "0.8.0", {}), 8192, 4)[0] == pytest.approx(4 * per_image)
    assert mm_encoder_profile_gib(_input(gemma, "0.8.5", {}), 8192, 4)[0] == pytest.approx(32 * per_image)
    assert mm_encoder_profile_gib(_input(gemma, "0.8.5", {}), 8000, 1024)[0] == pytest.approx(32 * per_image)
    assert mm_encoder_profile_gib(_input(gemma, "0.19.0", {}), 8000, 1024)[0] == pytest.approx(31 * per_image)


def test_the_multimodal_logs_the_encoder_pass_explains() -> None:
    """002 and 155 (Qwen3.6-35B-A3B NVFP4, RTX 5090, 0.24.0) were +40% without the encoder pass: its 2.25 GiB peak
    was missing (with prefix caching's align mode, two state blocks per request, their layout is the logged one).
    081 (Qwen2-VL-2B, 0.10.2) logs its activation peak, 2.65 GiB: the estimate is 2.31 GiB (the tower's other
    buffers, e.g. the patch convolution's, are not counted), which leaves it within 6% instead of 22%."""
    for name, limit in (("002-", 0.02), ("155-", 0.02), ("081-", 0.07)):
        row = vllm_logs.compare(next(LOGS.glob(f"{name}*.yaml")))
        assert row.predicted is not None and abs(row.error) < limit, (name, row.error)
        assert row.started and not row.failure_cause


def test_a_start_that_failed_after_the_kv_cache_on_software_is_scored_on_its_kv_figure() -> None:
    """113 (Qwen3.6-27B-FP8, 0.27.1, --language-model-only): the engine core died on a TypeError after logging its KV
    cache. It stays a failed start (not a memory failure to catch) and is scored on the logged tokens; without
    language_model_only the encoder pass would take 2.25 GiB of the budget."""
    path = next(LOGS.glob("113-*.yaml"))
    row = vllm_logs.compare(path)
    assert not row.started and row.failure_cause == "software" and not row.skipped
    assert row.predicted is not None and abs(row.error) < 0.02
    data = YAML(typ="safe").load(path.read_text())
    facts = vllm_logs._facts(data)
    assert facts is not None
    inp = _input("Qwen/Qwen3.6-27B", "0.27.1", {"language_model_only": True}, max_model_len=4096)
    assert mm_encoder_profile_gib(dataclasses.replace(inp, model=facts), 4096, 32) == (
        0.0,
        0.0,
        ["language_model_only: no multimodal encoder to profile"],
    )
    peak = mm_encoder_profile_gib(dataclasses.replace(inp, model=facts, options={}), 4096, 32)[0]
    assert peak == pytest.approx(65536 * (1536 * 6 + 2 * (2 * 1152 + 10 * 1152)) / GIB)
