"""How each vLLM release caches multi-head latent attention (the ``mla_kv_cache`` fact, scripts/catalog/vllm_mla.py).

0.5.1-0.6.6.post1: DeepseekV2Attention builds ``Attention(num_local_heads, 256, num_kv_heads=num_local_heads)`` and
pads keys (qk_nope + qk_rope = 192) and values (128) to 256; 0.7.0 passes ``qk_head_dim`` (values padded to 192);
from 0.7.1 ``ModelConfig.use_mla`` caches the ``kv_lora_rank + qk_rope_head_dim`` latent unless ``VLLM_MLA_DISABLE``
(0.7.1/0.7.2 also only for fp8 or compressed-tensors quantization, or none). The per-token figures below are worked
by hand from DeepSeek-V2-Lite's config (27 layers, 16 heads, kv_lora_rank 512, qk_rope 64, qk_nope 128, v 128).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from servespec.engines import get
from servespec.engines.catalog import version_key
from servespec.engines.vllm.memory import estimate, mla_kv_input, mla_latent
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput

VLLM = get("vllm")
VERSIONS = VLLM.catalog.versions
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "catalog"


def _input(version: str, repo: str = "deepseek-ai/DeepSeek-V2-Lite-Chat", **kw: Any) -> EstimateInput:
    facts = models.catalogued(repo)
    assert facts is not None, repo
    gpu = next(g for g in gpus.catalog() if g.id.startswith("L40"))
    base: dict[str, Any] = {"tensor_parallel": 2, "max_model_len": 8192, "dtype": "float16"}
    return EstimateInput(engine="vllm", release=VLLM.select(version).release, model=facts, gpu=gpu, **{**base, **kw})


@pytest.mark.parametrize("version", VERSIONS)
def test_every_release_has_its_mla_layout(version: str) -> None:
    """Every catalogued release carries the fact, read from its own source pinned to its tag."""
    fact = VLLM.catalog.release(version).facts.mla_kv_cache
    assert fact is not None, version
    key = version_key(version)
    assert f"/blob/v{version}/" in fact.source and ("#L" in fact.source or key < (0, 5, 1)), version
    assert fact.deepseek_v2 == (key >= (0, 5, 1)), version
    assert bool(fact.latent_model_types) == (key >= (0, 7, 1)), version
    if key >= (0, 7, 1):
        assert {"deepseek_v2", "deepseek_v3"} <= set(fact.latent_model_types), version
        assert fact.disable_env == "VLLM_MLA_DISABLE", version
    assert (fact.latent_quantizations is not None) == ((0, 7, 1) <= key < (0, 7, 3)), version
    assert fact.padded_head_size == (256 if (0, 5, 1) <= key < (0, 7) else None), version


def test_per_token_bytes_by_release() -> None:
    """DeepSeek-V2-Lite at TP 2 in float16, per GPU: 27 layers x 2 (K, V) x 8 local heads x 256 x 2 bytes = 221,184
    on 0.6.x; x 192 = 165,888 on 0.7.0 and with VLLM_MLA_DISABLE; (512 + 64) x 2 x 27 = 31,104 as a latent."""
    cases = [
        ("0.6.0", {}, 221_184),
        ("0.6.6.post1", {}, 221_184),
        ("0.7.0", {}, 165_888),
        ("0.7.1", {}, 31_104),
        ("0.7.1", {"VLLM_MLA_DISABLE": "1"}, 165_888),
        ("0.19.0", {}, 31_104),
        ("0.19.0", {"VLLM_MLA_DISABLE": "true"}, 165_888),
        ("0.19.0", {"VLLM_MLA_DISABLE": "0"}, 31_104),
    ]
    for version, env, expected in cases:
        found = estimate(_input(version, env=env))
        assert found is not None and found.kv_bytes_per_token == expected, (version, env)
        assert any("MLA" in note for note in found.notes), (version, env)


def test_latent_quantizations_and_text_model_types() -> None:
    """0.7.1/0.7.2 keep the latent only for fp8/compressed-tensors checkpoints; a multimodal model whose text config
    the release builds as DeepSeek-V2's (Kimi-VL) takes the latent as DeepSeek-V2 does."""
    assert mla_latent(_input("0.7.2", quantization="awq")) == (
        False,
        "the release's latent cache does not take awq quantization",
    )
    assert mla_latent(_input("0.7.3", quantization="awq")) == (True, "")
    assert mla_latent(_input("0.7.2", quantization="fp8")) == (True, "")
    kimi = _input("0.19.0", repo="moonshotai/Kimi-VL-A3B-Instruct")
    assert kimi.model.model_type == "kimi_vl" and mla_latent(kimi) == (True, "")
    plain = _input("0.19.0", repo="deepseek-ai/deepseek-coder-33b-base")
    assert mla_latent(plain) is None and mla_kv_input(plain)[0] is plain


def test_weights_are_counted_from_the_real_model() -> None:
    """Expanding the cache changes the KV bytes only, not the weights."""
    old = estimate(_input("0.6.3"))
    new = estimate(_input("0.7.1"))
    assert old is not None and new is not None and old.weights_gib == new.weights_gib


def _extractor() -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location("vllm_mla_script", SCRIPTS / "vllm_mla.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_extractor_rederives_the_catalogued_facts() -> None:
    """scripts/catalog/vllm_mla.py, re-run on every release whose sdist is unpacked here, yields the catalogued fact
    (skipped where none is)."""
    script = _extractor()
    sdists = importlib.import_module("vllm_mxfp4").SDISTS
    checked = 0
    for version in VERSIONS:
        src = sdists / version / "src"
        if not (src / "vllm").is_dir():
            continue
        path = SCRIPTS.parents[1] / "src/servespec/engines/vllm/releases" / f"{version}.json"
        assert script.mla_kv_cache(version, src) == json.loads(path.read_text())["facts"]["mla_kv_cache"], version
        checked += 1
    if not checked:
        pytest.skip("no vLLM sdist unpacked (scripts/catalog/vllm_mxfp4.py fetches them)")


def test_an_inline_mla_architecture_is_taken_for_deepseeks() -> None:
    """A spec's inline architecture has no model type: an MLA one follows DeepSeek's layout on every release (the
    latent from 0.7.1, the 256-padded heads before 0.7.0), and says so; another MLA model type (MiniCPM3's attention
    is its own class) keeps ``qk_nope + qk_rope`` on 0.6.x."""
    model = models.catalogued("deepseek-ai/DeepSeek-V2-Lite-Chat")
    assert model is not None
    inline = dataclasses.replace(model, model_type="inline")
    latent = mla_kv_input(dataclasses.replace(_input("0.33.0"), model=inline))[1]
    assert mla_latent(dataclasses.replace(_input("0.33.0"), model=inline)) == (True, "")
    assert latent and "inline" in latent[0]
    old = estimate(dataclasses.replace(_input("0.6.3"), model=inline))
    assert old is not None and old.kv_bytes_per_token == 221_184
    other = dataclasses.replace(model, model_type="minicpm3")
    assert mla_latent(dataclasses.replace(_input("0.19.0"), model=other)) == (
        False,
        "model type minicpm3 is not one the release caches as a latent (is_deepseek_mla)",
    )
    found = estimate(dataclasses.replace(_input("0.6.3"), model=other))
    assert found is not None and found.kv_bytes_per_token == 27 * 2 * 8 * 192 * 2
