"""Issue 23: what SGLang's model load takes beyond the checkpoint's bytes (engines/sglang/load_memory.py).

Between the two free-memory readings around ``load_model`` the model is built on the GPU: its parameters as the
caching allocator holds them (knowledge/torch_allocator.py) and the rotary embedding's ``cos_sin_cache``, kept in
float32 on CUDA from 0.4.2.post1 (``facts.memory.rope_cache``, scripts/catalog/sglang_memory.py ``rope_cache``)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.sglang import load_memory
from servespec.knowledge import gpus, load_replay, models
from servespec.knowledge.memory import GIB, EstimateInput
from tests import vllm_logs

SGLANG = get("sglang")
ROOT = Path(__file__).resolve().parents[2]


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sglang_memory", ROOT / "scripts" / "catalog" / "sglang_memory.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KEEP = "        cache = self._compute_cos_sin_cache()\n"
DICT = "_ROPE_DICT: Dict[Tuple, RotaryEmbedding] = {}\n"


@pytest.mark.parametrize(
    ("body", "cuda", "hip"),
    [
        ("        cache = cache.to(dtype)\n", "model", "model"),
        (
            "        # NOTE(ByronHsu): cache needs to be in FP32 for numerical stability\n"
            "        if not _is_cuda_available:\n            cache = cache.to(dtype)\n",
            "float32",
            "model",
        ),
        (
            "        if not (_is_cuda or _is_hip or _is_xpu or envs.SGLANG_ROPE_CACHE_FP32.get()):\n"
            "            cache = cache.to(dtype)\n",
            "float32",
            "float32",
        ),
    ],
)
def test_the_builder_reads_how_the_release_keeps_the_rope_cache(body: str, cuda: str, hip: str) -> None:
    path = "sglang/srt/layers/rotary_embedding.py"
    fact = _builder().rope_cache("9.9.9", {path: DICT + KEEP + body})
    assert (fact["cuda"], fact["hip"], fact["shared"]) == (cuda, hip, True)
    assert fact["source"].startswith("https://github.com/sgl-project/sglang/blob/v9.9.9/python/" + path + "#L2 ")


def test_the_builder_refuses_what_it_does_not_read() -> None:
    builder = _builder()
    path = "sglang/srt/layers/rotary_embedding.py"
    assert builder.rope_cache("0.4.0", {path: "class MRotaryEmbedding:\n"}) is None  # vLLM's rotary embedding
    with pytest.raises(ValueError, match="no known shape"):
        builder.rope_cache("9.9.9", {path: DICT + KEEP + "        cache = cache.half()\n"})
    with pytest.raises(ValueError, match="guard"):
        builder.rope_cache(
            "9.9.9", {path: DICT + KEEP + "        if not _is_npu:\n            cache = cache.to(dtype)\n"}
        )
    with pytest.raises(ValueError, match="_ROPE_DICT"):
        builder.rope_cache("9.9.9", {path: KEEP + "        cache = cache.to(dtype)\n"})


def test_the_catalogue_follows_the_releases() -> None:
    def fact(version: str) -> tuple[str, str] | None:
        memory = SGLANG.select(version).release.facts.memory
        assert memory is not None
        return None if memory.rope_cache is None else (memory.rope_cache.cuda, memory.rope_cache.hip)

    assert fact("0.4.0") is None
    assert fact("0.4.2") == ("model", "model")
    assert fact("0.4.3.post4") == ("float32", "model")
    assert fact("0.5.23") == ("float32", "float32")


def _input(model: models.ModelFacts, version: str, tp: int, gpu: str = "NVIDIA L4", **options: float) -> EstimateInput:
    return EstimateInput(
        engine="sglang",
        release=SGLANG.select(version).release,
        model=model,
        gpu=gpus.resolve(gpu),
        tensor_parallel=tp,
        max_model_len=4096,
        options=dict(options),
        engine_version=version,
    )


def _aligned() -> models.ModelFacts:
    """A Llama whose every tensor is a multiple of 2 MiB from 10 MiB up (no allocator rounding), tied embeddings."""
    qwq = models.catalogued("Qwen/QwQ-32B")
    assert qwq is not None
    return replace(
        qwq,
        architecture="LlamaForCausalLM",
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        intermediate_size=14336,
        vocab_size=128256,
        max_position_embeddings=40960,
        tie_word_embeddings=True,
        layers=4,
    )


def test_without_rounding_the_overhead_is_the_rope_cache_as_the_release_keeps_it() -> None:
    model = _aligned()
    fp32 = load_memory.overhead(_input(model, "0.4.3.post4", 1), SGLANG.select("0.4.3.post4").release.facts.memory)
    in_dtype = load_memory.overhead(_input(model, "0.4.2", 1), SGLANG.select("0.4.2").release.facts.memory)
    assert fp32 is not None and in_dtype is not None
    # the rope's temporaries open the small pool's first 2 MiB segment, which the norms (4 x 2 + 1 of 8 KiB) then hold
    small_rest = 2 * 1024 * 1024 - 9 * 4096 * 2
    assert fp32.gib * GIB - small_rest == 40960 * 128 * 4  # float32 cos/sin, one for all layers
    assert in_dtype.gib * GIB - small_rest == 40960 * 128 * 2  # cache.to(dtype) in a freed 10 MiB segment
    assert "rotary_embedding.py#L81" in fp32.note and "CUDACachingAllocator" in fp32.note


def test_what_is_not_replayed_gets_no_overhead() -> None:
    model = _aligned()
    memory = SGLANG.select("0.4.3.post4").release.facts.memory
    assert load_memory.overhead(_input(model, "0.4.0", 1), SGLANG.select("0.4.0").release.facts.memory) is None
    assert (
        load_memory.overhead(_input(replace(model, architecture="DeepseekV3ForCausalLM"), "0.4.3.post4", 1), memory)
        is None
    )
    assert load_memory.overhead(_input(replace(model, quant_method="fp8"), "0.4.3.post4", 1), memory) is None
    assert load_memory.overhead(_input(replace(model, rope_type="yarn"), "0.4.3.post4", 1), memory) is None
    assert load_memory.overhead(_input(model, "0.4.3.post4", 1), memory) is not None


def test_qwq_32b_at_tp4_on_l4_loads_what_sglang_logged() -> None:
    """tests/data/startup_logs/sglang/001: 0.4.3.post4 logs ``mem usage=15.54 GB`` (GiB) per rank for a checkpoint
    share of 15.26 GiB; the replayed load (its 17.5, 12.5, 135 and 67.5 MiB tensors in 18, 14, 136 and 68 MiB
    segments, the float32 cache of 40960 x 128 and its temporaries) gives the rest; no constant comes from the log."""
    path = ROOT / "tests" / "data" / "startup_logs" / "sglang" / "001-qwq-32b-tp4-4xl4.yaml"
    data = YAML(typ="safe").load(path.read_text())
    facts = vllm_logs._other_facts(data)
    gpu = gpus.resolve(str(data["gpu"]))
    assert facts is not None and gpu is not None
    found = vllm_logs._estimate_sglang(data, facts, gpu)
    assert abs(found.weights_gib - data["observed"]["weights_gb"]) < 0.01
    assert any(note.startswith("model load: +0.28") for note in found.notes)


def _aligned_moe() -> models.ModelFacts:
    """:func:`_aligned` as a Qwen3-MoE: 8 experts of width 1024 (w13 128 MiB, w2 64 MiB), a 64 KiB router."""
    aligned = _aligned()
    return replace(aligned, architecture="Qwen3MoeForCausalLM", experts=8, active_experts=2, moe_intermediate_size=1024)


def test_a_moe_layer_is_built_as_fused_experts_then_the_router() -> None:
    """qwen3_moe.py builds ``FusedMoE`` (``w13_weight``, ``w2_weight``) then the ``ReplicatedLinear`` router; the
    router and norms share the small pool's one 2 MiB segment, every other tensor fills its own."""
    model = _aligned_moe()
    assert model.is_moe
    inp = _input(model, "0.4.3.post4", 1, gpu="NVIDIA H100 80GB HBM3")
    events, params = load_replay.events(inp, 2, 4)
    names = [name for name, size in events if size is not None and name.startswith("0.")]
    assert names == ["0.qkv", "0.o", "0.w13", "0.w2", "0.gate", "0.norm1", "0.norm2"]
    mib = 1024 * 1024
    per_layer = (48 + 32 + 128 + 64) * mib + 8 * 4096 * 2 + 2 * 4096 * 2
    assert params == 128256 * 4096 * 2 + 4 * per_layer + 4096 * 2
    found = load_memory.overhead(inp, SGLANG.select("0.4.3.post4").release.facts.memory)
    assert found is not None
    small = 4 * (8 * 4096 * 2 + 2 * 4096 * 2) + 4096 * 2  # routers and norms, after the rope's freed temporaries
    assert round(found.gib * GIB) == 40960 * 128 * 4 + 2 * mib - small


def test_qwen3_moe_per_rank_tensors_keep_one_kv_head_where_ranks_outnumber_them() -> None:
    """Qwen3-30B-A3B (4 KV heads) at TP8: ``QKVParallelLinear`` keeps one KV head per rank, 3 MiB of qkv_proj."""
    model = models.catalogued("Qwen/Qwen3-30B-A3B")
    assert model is not None and model.kv_heads == 4
    inp = _input(model, "0.5.4", 8, gpu="NVIDIA H100 80GB HBM3")
    sizes = dict((name, size) for name, size in load_replay.events(inp, 2, 4)[0] if size is not None)
    assert sizes["5.qkv"] == (4 * 128 + 2 * 128) * 2048 * 2
    assert sizes["5.w13"] == 128 * 2 * (768 // 8) * 2048 * 2 and sizes["5.w2"] == 128 * 2048 * (768 // 8) * 2
    assert sizes["5.gate"] == 128 * 2048 * 2
    found = load_memory.overhead(inp, SGLANG.select("0.5.4").release.facts.memory)
    assert found is not None and found.gib > 40960 * 128 * 4 / GIB  # the float32 cache and the segments' rests


def test_a_moe_layout_not_replayed_gets_no_overhead() -> None:
    model = _aligned_moe()
    memory = SGLANG.select("0.4.3.post4").release.facts.memory
    h100 = "NVIDIA H100 80GB HBM3"
    assert load_memory.overhead(_input(model, "0.4.3.post4", 1, gpu=h100), memory) is not None
    # ROCm: aiter re-lays the experts after loading (not replayed)
    assert load_memory.overhead(_input(model, "0.4.3.post4", 1, gpu="AMD Instinct MI300X"), memory) is None
    for other in (
        replace(model, shared_intermediate_size=1024),  # a shared expert: another block's layout
        replace(model, architecture="MixtralForCausalLM"),
        replace(model, quant_method="fp8"),
        replace(model, moe_intermediate_size=1020),  # not split evenly over 8 ranks
    ):
        tp = 8 if other.moe_intermediate_size == 1020 else 1
        assert load_memory.overhead(_input(other, "0.4.3.post4", tp, gpu=h100), memory) is None
