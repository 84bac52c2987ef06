"""vLLM pipeline stages: the release's layer split, which stage holds the vocabulary tables, and the binding stage
(engines/vllm/memory.py ``stage_layers`` / ``stage_tables_gib`` / ``binding_stage``; the ``pipeline_stages`` fact
built by scripts/catalog/vllm_pipeline.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from servespec.engines import get
from servespec.engines.vllm.memory import binding_stage, stage_layers, stage_tables_gib
from servespec.knowledge import gpus
from servespec.knowledge.memory import EstimateInput
from servespec.knowledge.models import catalogued


def _inp(repo: str, release: str, pipeline: int, **env: str) -> EstimateInput:
    model = catalogued(repo)
    assert model is not None, repo
    return EstimateInput(
        engine="vllm",
        release=get("vllm").select(release).release,
        model=model,
        gpu=gpus.resolve("H100-SXM5-80GB"),
        pipeline_parallel=pipeline,
        max_model_len=8192,
        engine_version=release,
        kv_cache_dtype_option="kv_cache_dtype",
        env=env,
    )


def test_94_layers_over_four_stages_give_the_remainder_to_the_middle_stages() -> None:
    """get_pp_indices (v0.27.1 vllm/distributed/utils.py L158-160): 94 // 4 = 23 each, the 2 left to partitions[-2]
    and partitions[-3]."""
    assert stage_layers(_inp("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "0.27.1", 4)) == [23, 24, 24, 23]


def test_the_partition_variable_overrides_the_split_and_a_wrong_one_is_not_used() -> None:
    inp = _inp("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "0.27.1", 4, VLLM_PP_LAYER_PARTITION="20,30,30,14")
    assert stage_layers(inp) == [20, 30, 30, 14]
    bad = replace(inp, env={"VLLM_PP_LAYER_PARTITION": "20,30,30,15"})  # sums to 95: the release refuses it
    assert stage_layers(bad) is None


def test_qwen3_moe_holds_embedding_and_untied_head_on_every_stage_in_0_27_1() -> None:
    """qwen3_moe.py builds embed_tokens and lm_head unguarded (v0.27.1 L466, L578): 2 tables on every stage."""
    inp = _inp("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "0.27.1", 4)
    table = 151936 * 4096 * 2 / 2**30
    assert [round(stage_tables_gib(inp, i), 4) for i in range(4)] == [round(2 * table, 4)] * 4
    found = binding_stage(inp, 55.09, 75.0)
    assert found is not None and found[0] in (1, 2)  # a 24-layer stage binds


@pytest.mark.parametrize("tied", [False, True])
def test_guarded_model_places_embedding_first_and_head_last(tied: bool) -> None:
    """qwen2.py (v0.27.1 L363-373, L462-473): the embedding on the first stage, and on the last when tied; an untied
    head on the last only."""
    inp = _inp("Qwen/Qwen3-32B", "0.27.1", 4)
    inp = replace(inp, model=replace(inp.model, tie_word_embeddings=tied))
    table = inp.model.vocab_size * inp.model.hidden_size * 2 / 2**30  # type: ignore[operator]
    held = [round(stage_tables_gib(inp, i) / table, 6) for i in range(4)]
    assert held == [1, 0, 0, 1]  # tied: the last rank builds embed_tokens as its head; untied: its own head
    assert stage_layers(inp) == [16, 16, 16, 16]


def test_releases_before_0_8_2_give_the_remainder_to_the_last_stage() -> None:
    """v0.6.3.post1 vllm/distributed/utils.py L79-81 (and 0.5.x's ``if pp_rank == pp_size - 1: end_layer =
    num_hidden_layers``): 23 each, the last stage to the end."""
    assert stage_layers(_inp("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "0.6.3.post1", 4)) == [23, 23, 23, 25]


def test_without_the_fact_the_even_share_stands() -> None:
    inp = _inp("Qwen/Qwen3-32B", "0.27.1", 2)
    assert inp.release is not None
    facts = inp.release.facts.model_copy(update={"pipeline_stages": None})
    bare = replace(inp, release=replace(inp.release, facts=facts))
    assert stage_layers(bare) is None and binding_stage(bare, 30.0, 70.0) is None
    assert binding_stage(inp, 30.0, 70.0) is not None  # the same input with the fact is sized per stage


def test_the_binding_stage_decides_the_estimate_of_an_uneven_split() -> None:
    """The 24-layer stage holding both tables binds: fewer KV tokens than the even share's, by its heavier
    weights (log 209's layout)."""
    inp = replace(_inp("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "0.27.1", 4), gpu=gpus.resolve("H200"))
    plan = get("vllm").estimate(inp)
    assert inp.release is not None
    facts = inp.release.facts.model_copy(update={"pipeline_stages": None})
    even = get("vllm").estimate(replace(inp, release=replace(inp.release, facts=facts)))
    assert plan is not None and even is not None
    assert plan.weights_gib > even.weights_gib + 2.0  # 2 x 1.16 GiB of tables less 1/4 of both, 1 more layer
    assert plan.kv_tokens < even.kv_tokens
    assert any("stage 1 binds" in note for note in plan.notes)
