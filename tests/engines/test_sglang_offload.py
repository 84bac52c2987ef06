"""SGLang ``--cpu-offload-gb`` (facts.memory.cpu_offload, engines/sglang/offload.py).

Expected values are the arithmetic of the cited sources: ``maybe_offload_to_cpu`` moves the parameters of the layers
``make_layers`` builds, one by one, until ``cpu_offload_gb * 1024**3`` bytes per rank have moved; the embeddings and
LM head stay on the GPU."""

from __future__ import annotations

from dataclasses import replace

import pytest

from servespec import engines
from servespec.engines.catalog import EngineRelease
from servespec.engines.sglang import load_memory
from servespec.knowledge import gpus, models
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import GIB, EstimateInput, weights_per_gpu

SGLANG = engines.get("sglang")


def test_every_catalogued_sglang_release_has_the_offload_fact() -> None:
    """A release without it (or whose source the builder could not read) fails here."""
    versions = list(SGLANG.catalog.versions)
    assert len(versions) >= 92
    for version in versions:
        memory = SGLANG.catalog.release(version).facts.memory
        assert memory is not None and memory.cpu_offload is not None, f"{version}: no facts.memory.cpu_offload"
        fact = memory.cpu_offload
        assert fact.source.count(f"/v{version}/") == 2 and fact.source.count("#L") == 2
        assert fact.granularity == "parameter"
        assert "LlamaForCausalLM" in fact.architectures  # llama.py builds its layers with make_layers throughout


def _fact(version: str) -> tuple[str, ...]:
    memory = SGLANG.catalog.release(version).facts.memory
    assert memory is not None and memory.cpu_offload is not None
    return memory.cpu_offload.architectures


def test_which_models_offload_follows_the_releases() -> None:
    # qwen3.py (0.4.5.post2 on) subclasses qwen2.py's Qwen2Model, which builds its layers with make_layers
    assert "Qwen3ForCausalLM" not in _fact("0.4.5") and "Qwen3ForCausalLM" in _fact("0.4.5.post2")
    # 0.5.22 builds them through make_pp_layers, a helper around make_layers
    assert "Qwen3ForCausalLM" in _fact("0.5.21") and "Qwen3ForCausalLM" in _fact("0.5.22")
    # 0.5.21 on, MLA's kv_b_proj stays on the GPU (post_load_weights derives w_kc/w_vc from it)
    resident = [SGLANG.catalog.release(v).facts.memory.cpu_offload.resident for v in ("0.5.20", "0.5.21")]  # type: ignore[union-attr]
    assert resident == [(), ("mla_kv_b_proj", "kda_qkv_conv1d")]


def _estimate(
    version: str, tp: int, release: EngineRelease | None = None, name: str = "Qwen/Qwen3-14B", **options: object
) -> tuple[float, float, tuple[str, ...], EstimateInput]:
    model = models.catalogued(name)
    card = gpus.resolve("NVIDIA H100 80GB HBM3")
    assert model is not None and isinstance(card, GpuModel)
    inp = EstimateInput(
        engine="sglang",
        release=release or SGLANG.select(version).release,
        model=model,
        gpu=card,
        tensor_parallel=tp,
        max_model_len=4096,
        dtype="float16",
        engine_version=version,
        options={"mem_fraction_static": 0.85, **options},
    )
    found = SGLANG.estimate(inp)
    assert found is not None
    return found.kv_cache_gib, found.weights_gib, tuple(found.notes), inp


def _load_gib(inp: EstimateInput) -> float:
    """What the estimate adds for the model's build on the GPU without offloading (engines/sglang/load_memory.py)."""
    assert inp.release is not None
    found = load_memory.overhead(inp, inp.release.facts.memory)
    return found.gib if found is not None else 0.0


def _embeddings_gib(model: models.ModelFacts, tp: int) -> float:
    """The token embeddings and LM head of an untied model in 16 bits, split over the ranks."""
    assert model.vocab_size is not None and not model.tie_word_embeddings
    return 2 * model.vocab_size * model.hidden_size * 2 / tp / GIB


@pytest.mark.parametrize("tp", [1, 2])
def test_a_budget_above_the_layers_leaves_embeddings_and_head(tp: int) -> None:
    """48 GiB per rank moves every decoder layer of Qwen3-14B: the LM head and embeddings stay."""
    kv_off, weights_off, notes, inp = _estimate("0.5.10", tp, cpu_offload_gb=48)
    kv, weights, _, _ = _estimate("0.5.10", tp)
    assert weights - _load_gib(inp) == pytest.approx(weights_per_gpu(inp), abs=0.01)
    assert weights_off == pytest.approx(_embeddings_gib(inp.model, tp), abs=0.01)
    assert kv_off - kv == pytest.approx(weights - weights_off, abs=0.02)  # the moved weights become KV pool
    assert any(n.startswith("cpu_offload_gb 48:") and "or up to" not in n for n in notes)


def test_a_smaller_budget_moves_that_much_per_rank() -> None:
    """The budget is per rank: 4 GiB moves 4 GiB off each of the two GPUs (at least: whole parameters)."""
    _, weights_off, notes, _ = _estimate("0.5.10", 2, cpu_offload_gb=4)
    _, weights, _, inp = _estimate("0.5.10", 2)
    assert weights - _load_gib(inp) - weights_off == pytest.approx(4.0, abs=0.01)
    assert any("or up to one parameter more" in n for n in notes)


def test_a_release_whose_model_class_does_not_use_make_layers_moves_nothing() -> None:
    # 0.4.5's qwen3 is absent: a model class outside the fact's list keeps its weights on the GPU
    release = SGLANG.select("0.5.10").release
    assert release is not None and release.facts.memory is not None and release.facts.memory.cpu_offload is not None
    fact = release.facts.memory.cpu_offload.model_copy(update={"architectures": ("LlamaForCausalLM",)})
    memory = release.facts.memory.model_copy(update={"cpu_offload": fact})
    narrowed = replace(release, facts=release.facts.model_copy(update={"memory": memory}))
    _, weights_off, notes, _ = _estimate("0.5.10", 2, narrowed, cpu_offload_gb=48)
    _, weights, _, _ = _estimate("0.5.10", 2)
    assert weights_off == weights
    assert any("builds its layers without make_layers" in n for n in notes)


def test_no_budget_changes_nothing() -> None:
    with_zero = _estimate("0.5.10", 2, cpu_offload_gb=0)
    without = _estimate("0.5.10", 2)
    assert with_zero[:3] == without[:3]


def _builder():  # type: ignore[no-untyped-def]
    import importlib.util
    import sys
    from pathlib import Path

    scripts = Path(__file__).resolve().parents[2] / "scripts" / "catalog"
    sys.path.insert(0, str(scripts))
    try:
        spec = importlib.util.spec_from_file_location("sglang_memory_for_test", scripts / "sglang_memory.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(scripts))


_OFFLOADER = """class OffloaderV1:
    def maybe_offload_to_cpu(self, module):
        for p in module.parameters():
            if self._cpu_offload_bytes >= self._cpu_offload_max_bytes:
                break


def create_offloader_from_server_args(server_args):
    return OffloaderV1(cpu_offload_max_bytes=int(server_args.cpu_offload_gb * 1024**3))
"""
_COMMON = """def make_layers(n, layer_fn):
    return get_offloader().wrap_modules(layer_fn(i) for i in range(n))


def make_pp_layers(
    n,
    layer_fn,
) -> tuple:
    return make_layers(n, layer_fn)
"""


def test_the_builder_reads_which_models_build_their_layers_through_the_offloader() -> None:
    """A model file that calls make_layers or a helper around it, or imports a ...Model class from one that does."""
    builder = _builder()
    sources = {
        "sglang/srt/utils/offloader.py": _OFFLOADER,
        "sglang/srt/utils/common.py": _COMMON,
        "offload:sglang/srt/models/a.py": "self.layers = make_pp_layers(4, f)\nEntryClass = AForCausalLM\n",
        "offload:sglang/srt/models/b.py": "from sglang.srt.models.a import AModel\nEntryClass = [BForCausalLM]\n",
        "offload:sglang/srt/models/c.py": "from sglang.srt.models.a import AMLP as CMLP\nEntryClass = CForCausalLM\n",
        "offload:sglang/srt/models/d.py": "self.layers = nn.ModuleList(x)\nEntryClass = DForCausalLM\n",
    }
    fact = builder._cpu_offload("9.9.9", sources)
    assert fact["architectures"] == ["AForCausalLM", "BForCausalLM"]
    assert fact["granularity"] == "parameter" and fact["resident"] == []
    assert "utils/offloader.py#L9" in fact["source"] and "utils/offloader.py#L3" in fact["source"]
    # a release whose offloader reads its budget otherwise is not guessed at
    changed = {**sources, "sglang/srt/utils/offloader.py": _OFFLOADER.replace("* 1024**3", "* 1000**3")}
    with pytest.raises(ValueError, match="budget"):
        builder._cpu_offload("9.9.9", changed)
