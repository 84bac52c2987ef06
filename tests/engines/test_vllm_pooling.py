"""vLLM pooling models (embedding, reranker, reward): which weights the release builds and how the pooling runner is
chosen per release (the ``pooling_models`` fact, scripts/catalog/vllm_pooling.py; engines/vllm/memory.py
``pooling_convert``, ``pooling_head_bytes``)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from servespec.engines import get
from servespec.engines.catalog import PoolingModels, version_key
from servespec.engines.vllm.memory import _engine_core, pooling_convert, pooling_head_bytes
from servespec.knowledge import gpus
from servespec.knowledge.memory import EstimateInput, GpuEstimate, weight_bytes
from servespec.knowledge.models import catalogued, facts_from_config

VLLM = get("vllm")
REPO = Path(__file__).resolve().parents[2]
SDISTS = Path.home() / ".cache" / "servespec" / "catalog-src" / "vllm-sdist"
EMBEDDING_8B_CHECKPOINT = 7_567_295_488  # gogongxt/python@ec996269 qwen3_embedding_8b.md: 398 tensors, no lm_head
RERANKER_8B_CHECKPOINT = 8_188_548_096  # gogongxt/python@ec996269 qwen3_reranker_8b.md: 399 tensors, lm_head included


def _input(repo: str, release: str, model: Any = None, **options: Any) -> EstimateInput:
    facts = model if model is not None else catalogued(repo)
    assert facts is not None, repo
    return EstimateInput(
        engine="vllm",
        release=VLLM.select(release).release,
        model=facts,
        gpu=gpus.resolve("H100-SXM5-80GB"),
        max_model_len=8192,
        engine_version=release,
        kv_cache_dtype_option="kv_cache_dtype",
        options=options,
    )


def _plan(inp: EstimateInput) -> GpuEstimate:
    plan = VLLM.estimate(inp)
    assert plan is not None
    return plan


@pytest.mark.parametrize("version", VLLM.catalog.versions)
def test_every_release_with_the_adapters_drops_the_lm_head(version: str) -> None:
    """adapters.py (0.6.5 on) converts a causal LM into a pooling model without its LM head: ``delattr`` of
    ``lm_head`` after construction up to 0.17, ``no_init_weights(targets=(..., ParallelLMHead))`` from 0.18; the
    fact cites the line at the release's tag. Releases before 0.6.5 have no adapters and no fact."""
    fact = VLLM.catalog.release(version).facts.pooling_models
    if version_key(version) < (0, 6, 5):
        assert fact is None
        return
    assert fact is not None and fact.drops_lm_head
    assert f"v{version}/vllm/model_executor/models/adapters.py#L" in fact.source
    assert fact.v0_fallback == ((0, 8, 0) <= version_key(version) < (0, 9, 2))
    assert fact.v0_long_context_unchunked == (version_key(version) < (0, 10, 2))  # V0's arg_utils gone in 0.10.2
    assert bool(fact.pooling_tasks) == (version_key(version) < (0, 13, 0))  # --task removed in 0.13.0
    assert bool(fact.suffix_defaults) == (version_key(version) >= (0, 10, 1))
    if fact.suffix_defaults:
        assert fact.suffix_defaults[-1] == ("Model", "pooling", "embed")
        assert ("ForSequenceClassification", "pooling", "classify") in fact.suffix_defaults
        assert "ChatGLMModel" in fact.generative_architectures


def test_the_embedding_checkpoint_loads_without_the_config_s_lm_head() -> None:
    """Qwen3-Embedding-8B's config names an untied Qwen3ForCausalLM (8,188,515,328 parameters counted), but its
    checkpoint has no lm_head: served as a pooling model the estimate loads exactly the checkpoint's 7,567,295,488,
    on every spelling of the release: ``--runner pooling`` (0.10.1 on), ``--task embed`` (0.6.5-0.12.0)."""
    element = 2  # bfloat16
    for release, options in (
        ("0.11.0", {"runner": "pooling"}),
        ("0.11.0", {"task": "embed"}),
        ("0.20.0", {"runner": "pooling", "convert": "embed"}),
        ("0.9.2", {"task": "embed"}),
        ("0.7.3", {"task": "embedding"}),
    ):
        inp = _input("Qwen/Qwen3-Embedding-8B", release, **options)
        assert pooling_convert(inp) == "embed", (release, options)
        loaded = weight_bytes(inp) - pooling_head_bytes(inp)
        assert loaded == EMBEDDING_8B_CHECKPOINT * element, (release, options)
    generate = _input("Qwen/Qwen3-Embedding-8B", "0.11.0")
    assert pooling_convert(generate) is None and pooling_head_bytes(generate) == 0
    assert weight_bytes(generate) == 8_188_515_328 * element


def test_the_pooling_estimate_has_less_weight_and_more_kv_cache() -> None:
    pooling = _plan(_input("Qwen/Qwen3-Embedding-8B", "0.11.0", runner="pooling"))
    generate = _plan(_input("Qwen/Qwen3-Embedding-8B", "0.11.0"))
    head_gib = 151_665 * 4096 * 2 / 2**30
    assert generate.weights_gib - pooling.weights_gib == pytest.approx(head_gib, abs=0.011)
    assert pooling.kv_cache_gib > generate.kv_cache_gib + head_gib - 0.01  # the sampler's logits are gone as well
    assert any("untied LM head" in note for note in pooling.notes)


def test_the_reranker_keeps_only_a_score_head() -> None:
    """Qwen3-Reranker-8B's checkpoint stores its untied head (8,188,548,096 parameters); converted to a classifier
    (``--convert classify`` / ``--task score``) vLLM deletes the LM head after reading two of its rows, so the estimate
    loads the checkpoint less 151,669 x 4,096."""
    facts = catalogued("Qwen/Qwen3-Reranker-8B")
    assert facts is not None and facts.params == RERANKER_8B_CHECKPOINT
    for release, options in (("0.11.0", {"runner": "pooling", "convert": "classify"}), ("0.10.0", {"task": "score"})):
        inp = _input("Qwen/Qwen3-Reranker-8B", release, **options)
        assert pooling_convert(inp) in ("classify", "embed")
        assert weight_bytes(inp) - pooling_head_bytes(inp) == (RERANKER_8B_CHECKPOINT - 151_669 * 4096) * 2
    classify = _input("Qwen/Qwen3-Reranker-8B", "0.11.0", runner="pooling", convert="classify")
    assert pooling_convert(classify) == "classify"


def test_a_tied_head_is_the_embedding_and_stays() -> None:
    inp = _input("Qwen/Qwen3-Embedding-0.6B", "0.11.0", runner="pooling")
    assert pooling_convert(inp) == "embed" and pooling_head_bytes(inp) == 0


def test_options_the_release_lacks_change_nothing() -> None:
    """``--runner`` arrived in 0.10.1 and ``--task`` left in 0.13.0: a spec naming the other option on a release
    without it is not a pooling model (ENG001 reports the option); 0.6.4 has no adapters."""
    assert pooling_convert(_input("Qwen/Qwen3-Embedding-8B", "0.10.0", runner="pooling")) is None
    assert pooling_convert(_input("Qwen/Qwen3-Embedding-8B", "0.20.0", task="embed")) is None
    assert pooling_convert(_input("Qwen/Qwen3-Embedding-8B", "0.6.4", task="embedding")) is None
    assert pooling_convert(_input("Qwen/Qwen3-Embedding-8B", "0.11.0", runner="generate", task="embed")) is None
    assert pooling_convert(_input("Qwen/Qwen3-Embedding-8B", "0.11.0", task="generate")) is None


def _config(architecture: str, tied: bool = False) -> Any:
    facts = catalogued("Qwen/Qwen3-Embedding-8B")
    assert facts is not None
    return replace(facts, architecture=architecture, tie_word_embeddings=tied)


def test_runner_auto_resolves_pooling_architectures_by_the_release_s_suffixes() -> None:
    """``--runner auto`` on 0.10.1+ resolves ``*ForSequenceClassification`` to classify, ``*RewardModel`` to reward
    (embed from 0.13.0, where the table changed), ``*Model`` to embed; the registry's generative ``ChatGLMModel``
    stays generative; a ``*ForCausalLM`` stays generative; releases before 0.10.1 are not resolved by name."""
    cases = [
        ("0.11.0", "Qwen3ForSequenceClassification", "classify"),
        ("0.11.0", "Qwen2ForRewardModel", "reward"),
        ("0.20.0", "Qwen2ForRewardModel", "embed"),
        ("0.11.0", "Qwen3Model", "embed"),
        ("0.11.0", "ChatGLMModel", None),
        ("0.11.0", "Qwen3ForCausalLM", None),
        ("0.9.2", "Qwen3Model", None),
    ]
    for release, architecture, convert in cases:
        inp = _input("", release, model=_config(architecture))
        assert pooling_convert(inp) == convert, (release, architecture)


def test_pooling_falls_back_to_v0_where_v1_refuses_it() -> None:
    """0.8.0-0.9.1's V1 engine falls back to V0 for a pooling task (arg_utils.py ``_is_v1_supported_oracle``);
    0.9.2 serves it on V1."""
    assert _engine_core(_input("Qwen/Qwen3-Embedding-8B", "0.8.5", task="embed")) == "v0"
    assert _engine_core(_input("Qwen/Qwen3-Embedding-8B", "0.8.5")) == "v1"
    assert _engine_core(_input("Qwen/Qwen3-Embedding-8B", "0.9.2", task="embed")) == "v1"


def test_the_v0_pooling_runner_skips_the_sampler_sort() -> None:
    """V0's PoolingModelRunner pools the dummy batch and samples nothing, so the profiling peak has no float32
    vocabulary sort: the activation term is the forward pass alone."""
    pooling = _plan(_input("Qwen/Qwen3-Embedding-0.6B", "0.7.3", task="embed"))
    generate = _plan(_input("Qwen/Qwen3-Embedding-0.6B", "0.7.3"))
    assert pooling.weights_gib == generate.weights_gib  # tied head: nothing dropped
    assert pooling.kv_cache_gib > generate.kv_cache_gib


def test_v0_profiles_a_long_pooling_prompt_whole() -> None:
    """V0 turns chunked prefill on by itself above 32K tokens but not for a pooling model (arg_utils.py ``and
    model_config.runner_type != "pooling"``, v0.8.0 L1628), so the profiling batch is the whole 40,960-token context;
    the generative run of the same model chunks at 32,768's default budget."""
    pooling = _input("Qwen/Qwen3-Embedding-0.6B", "0.7.3", task="embed")
    generate = _input("Qwen/Qwen3-Embedding-0.6B", "0.7.3")
    pooling, generate = replace(pooling, max_model_len=40960), replace(generate, max_model_len=40960)
    assert "max_num_batched_tokens 40960" in _plan(pooling).notes
    assert "max_num_batched_tokens 40960" not in _plan(generate).notes


def _reader() -> ModuleType:
    path = REPO / "scripts" / "catalog" / "vllm_pooling.py"
    spec = importlib.util.spec_from_file_location("vllm_pooling_reader", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reader_finds_each_form_and_fails_on_a_changed_one(tmp_path: Path) -> None:
    """The builder's ``ast`` readers on small stand-in sources (labelled: not vLLM's files): the ``delattr`` loop,
    the ``no_init_weights`` targets, the float32 score head, the task literal, the suffix table; a head kept or a
    model-dtype score is read as such."""
    import ast

    reader = _reader()
    deleted = ast.parse('for attr in ("lm_head", "logits_processor"):\n    delattr(self, attr)\n')
    assert reader.lm_head_drop(deleted) == 2
    never = ast.parse("with no_init_weights(self, f, targets=(LogitsProcessor, ParallelLMHead)):\n    pass\n")
    assert reader.lm_head_drop(never) == 1
    assert reader.lm_head_drop(ast.parse("self.lm_head = ParallelLMHead(v, h)\n")) is None
    score = "self.score = ReplicatedLinear(h, n, bias=False, params_dtype={})\n"
    assert reader.score_float32(ast.parse(score.format("torch.float32"))) == 1
    assert reader.score_float32(ast.parse(score.format("vllm_config.model_config.head_dtype"))) == 1
    assert reader.score_float32(ast.parse(score.format("vllm_config.model_config.dtype"))) is None
    config = ast.parse(
        'TaskOption = Literal["auto", "generate", "embed", "score", "transcription"]\n'
        '_SUFFIX_TO_DEFAULTS: list = [("ForCausalLM", ("generate", "none")), ("Model", ("pooling", "embed"))]\n'
    )
    assert reader.tasks(config) == (["embed", "score"], 1)
    assert reader.suffixes(config) == ([["ForCausalLM", "generate", "none"], ["Model", "pooling", "embed"]], 2)
    fallback = '        if model_config.task not in ["generate"]:\n            _raise_or_fallback(feature_name="x")\n'
    assert reader.v0_fallback(fallback) == 1
    assert reader.v0_fallback(fallback.replace('"generate"', '"generate", "embed"')) is None
    long_context = (
        "            if (is_gpu and not use_sliding_window and not use_spec_decode\n"
        '                    and model_config.runner_type != "pooling"):\n'
        "                self.enable_chunked_prefill = True\n"
    )
    assert reader.v0_no_auto_chunking(long_context) == 2
    assert reader.v0_no_auto_chunking(long_context.replace("self.enable_chunked_prefill = True", "pass")) is None


@pytest.mark.slow
def test_the_reader_reproduces_the_catalogued_facts_from_the_cached_sources() -> None:
    """scripts/catalog/vllm_pooling.py re-run on every release whose sdist is unpacked here gives the catalogued
    ``pooling_models`` (skipped where none is cached)."""
    reader = _reader()
    seen = 0
    for version in VLLM.catalog.versions:
        src = SDISTS / version / "src"
        if not src.is_dir():
            continue
        seen += 1
        fact = VLLM.catalog.release(version).facts.pooling_models
        found = reader.pooling(version, src)
        assert (PoolingModels.model_validate(found) if found is not None else None) == fact, version
    if not seen:
        pytest.skip("no vLLM sdist unpacked here")


def test_a_pasted_config_is_treated_the_same() -> None:
    """A config given inline (not from the catalog) takes the same path: an untied ``Qwen3Model`` on 0.11.0 with
    ``--runner auto`` is served as an embedding model without its LM head."""
    facts = facts_from_config(
        {
            "architectures": ["Qwen3Model"],
            "model_type": "qwen3",
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "num_hidden_layers": 4,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 1000,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
            "max_position_embeddings": 8192,
        },
        "stand-in/qwen3-model",
    )
    inp = _input("", "0.11.0", model=facts)
    assert pooling_convert(inp) == "embed"
    assert pooling_head_bytes(inp) == 1000 * 1024 * 2
