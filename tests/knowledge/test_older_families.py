"""Issue 23 item 4: the older decoder families (OPT, GPT-2, GPT-NeoX, GPT-J, gpt_bigcode, Falcon, BLOOM, MPT) read from
their own config field names and sized as transformers and vLLM build them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from servespec.knowledge.config_fields import MissingFieldsError, missing_message
from servespec.knowledge.memory import kv_bytes_per_token
from servespec.knowledge.models import UnsizedArchitectureError, catalogued, facts_from_config
from tests.conftest import REPO

COUNTS = json.loads((REPO / "tests" / "data" / "transformers_param_counts.json").read_text())["cases"]

# (case in transformers_param_counts.json, model class transformers built): the configuration classes' defaults, then
# the layout switches of other released shapes (built the same way, scripts in the file's "about")
FAMILY_CASES = [
    ("OPTConfig", "OPTForCausalLM"),
    ("OPTConfig(opt-350m)", "OPTForCausalLM"),
    ("GPT2Config", "GPT2LMHeadModel"),
    ("GPTNeoXConfig", "GPTNeoXForCausalLM"),
    ("GPTNeoXConfig(pythia-160m)", "GPTNeoXForCausalLM"),
    ("GPTJConfig", "GPTJForCausalLM"),
    ("GPTBigCodeConfig", "GPTBigCodeForCausalLM"),
    ("GPTBigCodeConfig(multi_query=False)", "GPTBigCodeForCausalLM"),
    ("FalconConfig", "FalconForCausalLM"),
    ("FalconConfig(falcon-40b)", "FalconForCausalLM"),
    ("FalconConfig(falcon-rw-1b)", "FalconForCausalLM"),
    ("BloomConfig", "BloomForCausalLM"),
    ("MptConfig", "MptForCausalLM"),
]


@pytest.mark.parametrize(("case", "model"), FAMILY_CASES, ids=[case for case, _ in FAMILY_CASES])
def test_each_family_counts_exactly_what_transformers_builds(case: str, model: str) -> None:
    """The count from the config transformers' to_dict() writes equals the sum of the parameters' numel of the model it
    builds on the meta device (transformers 5.24.0), to the parameter: biases, LayerNorm biases, OPT's two extra
    position rows and word_embed_proj_dim projections, GPT-J's LM-head bias, BLOOM's embedding LayerNorm."""
    entry = COUNTS[case]
    assert entry["model"] == model
    assert facts_from_config(entry["config"], case).params == entry["params"]


def test_the_family_names_are_read_not_the_llama_ones() -> None:
    """GPT-2's n_layer / n_embd / n_head / n_positions / n_inner and MPT's n_layers / d_model / n_heads / max_seq_len
    are the sizes (transformers attribute_map); a null n_inner is 4 x n_embd (GPT2Block)."""
    gpt2 = facts_from_config(COUNTS["GPT2Config"]["config"], "gpt2")
    assert (gpt2.layers, gpt2.hidden_size, gpt2.attention_heads, gpt2.head_dim) == (12, 768, 12, 64)
    assert (gpt2.max_position_embeddings, gpt2.intermediate_size, gpt2.tie_word_embeddings) == (1024, 3072, True)
    mpt = facts_from_config(COUNTS["MptConfig"]["config"], "mpt")
    assert (mpt.layers, mpt.hidden_size, mpt.attention_heads, mpt.max_position_embeddings) == (24, 2048, 16, 2048)
    # BLOOM's n_embed keyword wins over hidden_size, as BloomConfig.__post_init__ takes it
    bloom = facts_from_config({**COUNTS["BloomConfig"]["config"], "n_embed": 1024, "n_head": 16}, "bloom")
    assert (bloom.hidden_size, bloom.head_dim, bloom.intermediate_size) == (1024, 64, 4096)


def test_a_wider_mlp_and_a_second_embedding_width_are_counted() -> None:
    """GPT-2 with n_inner given and OPT whose word_embed_proj_dim differs (opt-350m's 512): each piece counted once."""
    base = COUNTS["GPT2Config"]["config"]
    wide = facts_from_config({**base, "n_inner": 4096}, "gpt2-wide").params
    assert wide - COUNTS["GPT2Config"]["params"] == 12 * (2 * 768 * 1024 + 1024)  # c_fc and c_proj, c_fc's bias
    opt350 = facts_from_config(COUNTS["OPTConfig(opt-350m)"]["config"], "opt-350m")
    assert (opt350.embed_dim, opt350.final_norm, opt350.position_embeddings) == (512, False, 2050)


def _kv(config: dict[str, Any]) -> float:
    return kv_bytes_per_token(facts_from_config(config, "kv"), 2.0, 1, 1)


def test_kv_bytes_per_token_with_multi_query_heads() -> None:
    """2 x layers x KV heads x head_dim x 2 bytes, the KV heads as vLLM counts them (config/model.py
    get_total_num_kv_heads, v0.11.0): multi-query gpt_bigcode and Falcon-7B cache one head, Falcon-40B's new decoder
    architecture its num_kv_heads, MPT attn_config.kv_n_heads, the rest every head."""
    assert _kv(COUNTS["GPT2Config"]["config"]) == 2 * 12 * 12 * 64 * 2
    assert _kv(COUNTS["GPTBigCodeConfig"]["config"]) == 2 * 12 * 1 * 64 * 2
    assert _kv(COUNTS["GPTBigCodeConfig(multi_query=False)"]["config"]) == 2 * 12 * 12 * 64 * 2
    assert _kv(COUNTS["FalconConfig"]["config"]) == 2 * 32 * 1 * 64 * 2
    assert _kv(COUNTS["FalconConfig(falcon-40b)"]["config"]) == 2 * 60 * 8 * 64 * 2
    assert _kv(COUNTS["FalconConfig(falcon-rw-1b)"]["config"]) == 2 * 24 * 32 * 64 * 2
    mpt = COUNTS["MptConfig"]["config"]
    assert _kv(mpt) == 2 * 24 * 16 * 128 * 2
    grouped = {**mpt, "attn_config": {**mpt["attn_config"], "kv_n_heads": 4}}
    assert _kv(grouped) == 2 * 24 * 4 * 128 * 2
    # a grouped Wqkv is narrower in vLLM's MPT: q, then k and v of 4 heads
    assert facts_from_config(mpt, "m").params - facts_from_config(grouped, "g").params == 24 * 2 * 2048 * 12 * 128


@pytest.mark.parametrize(
    ("repo", "log_blocks", "log_kv_gib"),
    [("facebook/opt-125m", 11422, 6.27), ("openai-community/gpt2", 18426, 10.12)],
)
def test_catalogued_models_cache_what_vllm_logged(repo: str, log_blocks: int, log_kv_gib: float) -> None:
    """The KV bytes per token of the catalogued config times the blocks vLLM 0.6.4.post1 allocated (16 tokens each)
    give the kv_cache_size it logged (tests/data/vllm_logs/005 and 120); the weights equal transformers' model."""
    facts = catalogued(repo)
    assert facts is not None
    per_token = kv_bytes_per_token(facts, 2.0, 1, 1)
    assert per_token == 36_864
    assert log_blocks * 16 * per_token / 2**30 == pytest.approx(log_kv_gib, abs=0.005)
    expected = COUNTS["OPTConfig" if repo.startswith("facebook") else "GPT2Config"]["params"]
    assert facts.params == expected  # the class defaults are these models' shapes


@pytest.mark.parametrize(
    ("config", "named", "not_named"),
    [
        ({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_positions": 1024}, ["n_layer"], ["n_embd"]),
        ({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12}, ["n_positions"], ["n_layer"]),
        ({"model_type": "opt", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
          "max_position_embeddings": 2048}, ["ffn_dim"], ["hidden_size"]),
        ({"model_type": "mpt", "n_layers": 24, "n_heads": 16}, ["d_model"], ["n_layers"]),
        ({"model_type": "gpt_neox", "hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8},
         ["intermediate_size"], []),
        ({"model_type": "bloom", "hidden_size": 1024, "n_head": 16}, ["n_layer"], ["n_head"]),
    ],
)  # fmt: skip
def test_a_config_missing_a_field_names_it_as_its_family_spells_it(
    config: dict[str, Any], named: list[str], not_named: list[str]
) -> None:
    with pytest.raises(MissingFieldsError) as err:
        facts_from_config(config, "x")
    message = missing_message(err.value)
    for field in named:
        assert f"'{field}'" in message, message
    for field in not_named:
        assert f"'{field}'" not in message, message
    assert f"model_type '{config['model_type']}'" in message


def test_gpt2_with_cross_attention_is_refused_naming_the_field() -> None:
    """GPT2LMHeadModel with add_cross_attention builds a second attention per block; vLLM asserts it off (gpt2.py)."""
    with pytest.raises(UnsizedArchitectureError, match="add_cross_attention"):
        facts_from_config({**COUNTS["GPT2Config"]["config"], "add_cross_attention": True}, "x")


def test_a_lock_keeps_mpts_attention_config() -> None:
    """models.lock.yaml keeps attn_config: a locked MPT config with grouped KV heads gives the same facts."""
    from servespec.knowledge.lock import locked_config

    mpt = COUNTS["MptConfig"]["config"]
    grouped = {**mpt, "attn_config": {**mpt["attn_config"], "kv_n_heads": 4}}
    assert facts_from_config(locked_config(grouped), "m") == facts_from_config(grouped, "m")
    assert facts_from_config(locked_config(grouped), "m").kv_heads == 4


def test_a_gguf_header_of_these_architectures_keeps_its_kv_heads() -> None:
    """A GGUF header's config names the model_type by its llama.cpp arch (``falcon``, ``mpt``) and the KV heads as
    num_key_value_heads (head_count_kv): that count stands, as llama.cpp caches it (Falcon-40B: 8, not
    multi-query's 1)."""
    falcon = {"model_type": "falcon", "num_hidden_layers": 60, "hidden_size": 8192, "num_attention_heads": 128,
              "num_key_value_heads": 8, "intermediate_size": 32768, "vocab_size": 65024}  # fmt: skip
    assert facts_from_config(falcon, "falcon-40b.gguf").kv_heads == 8
    falcon7 = {
        **falcon,
        "num_hidden_layers": 32,
        "hidden_size": 4544,
        "num_attention_heads": 71,
        "num_key_value_heads": 1,
    }
    assert facts_from_config(falcon7, "falcon-7b.gguf").kv_heads == 1
    mpt = {"model_type": "mpt", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 32}  # fmt: skip
    assert facts_from_config(mpt, "mpt-7b.gguf").kv_heads == 32


def test_context_lengths_default_as_the_configuration_classes_do() -> None:
    """Falcon-7B's config.json names no max_position_embeddings: FalconConfig's 2048 is what vLLM derives its
    max_model_len from; GPT-NeoX, GPT-J (n_positions) and MPT (max_seq_len) default to 2048 too."""
    shapes = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4}
    for model_type in ("falcon", "gptj", "mpt"):
        assert facts_from_config({"model_type": model_type, **shapes}, model_type).derived_max_len == 2048
    neox = {"model_type": "gpt_neox", **shapes, "intermediate_size": 256}
    assert facts_from_config(neox, "neox").derived_max_len == 2048
    assert facts_from_config({**neox, "max_position_embeddings": 4096}, "neox").derived_max_len == 4096


def test_falcons_first_refinedweb_configs_read_as_vllm_reads_them() -> None:
    """tiiuae/falcon-7b and -40b first shipped RefinedWebModel / RefinedWeb configs (n_layer, n_head, n_head_kv), which
    vLLM still reads through its RWConfig (transformers_utils/configs/falcon.py, v0.11.0): the same model as the
    FalconConfig of that shape, falcon-40b's new decoder architecture set by its hidden size of 8192."""
    seven = {"model_type": "RefinedWebModel", "hidden_size": 4544, "n_layer": 32, "n_head": 71, "multi_query": True,
             "parallel_attn": True, "bias": False, "vocab_size": 65024}  # fmt: skip
    facts = facts_from_config(seven, "falcon-7b")
    assert (facts.layers, facts.attention_heads, facts.kv_heads) == (32, 71, 1)
    assert facts.params == COUNTS["FalconConfig"]["params"]
    forty = {"model_type": "RefinedWeb", "hidden_size": 8192, "n_layer": 60, "n_head": 128, "n_head_kv": 8,
             "parallel_attn": True, "bias": False, "vocab_size": 65024}  # fmt: skip
    facts = facts_from_config(forty, "falcon-40b")
    assert (facts.layers, facts.kv_heads, facts.norms_per_layer) == (60, 8, 2)
    assert facts.params == COUNTS["FalconConfig(falcon-40b)"]["params"]
    # neither new nor multi-query: every head is a KV head, whatever n_head_kv / num_kv_heads say
    assert facts_from_config({**seven, "multi_query": False}, "rw").kv_heads == 71
    plain = {**COUNTS["FalconConfig"]["config"], "multi_query": False, "num_kv_heads": 1}
    assert facts_from_config(plain, "falcon").kv_heads == 71
    with pytest.raises(MissingFieldsError) as err:
        facts_from_config({key: value for key, value in forty.items() if key != "n_layer"}, "x")
    assert "'n_layer'" in missing_message(err.value)


def test_a_family_field_of_the_wrong_type_is_named_as_the_file_spells_it() -> None:
    """GPT-2's n_embd as a string: the error names n_embd (the file's field), never hidden_size, and quotes no value."""
    from servespec.knowledge.config_fields import ConfigFieldError

    config = {**COUNTS["GPT2Config"]["config"], "n_embd": "768"}
    with pytest.raises(ConfigFieldError, match="'n_embd'") as err:
        facts_from_config(config, "x")
    assert "hidden_size" not in str(err.value) and "768" not in str(err.value)
    with pytest.raises(ConfigFieldError, match="'n_layer'"):
        facts_from_config({**COUNTS["GPT2Config"]["config"], "n_layer": 0}, "x")
