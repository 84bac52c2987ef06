"""vLLM's own KV-cache layout as the oracle for servespec's (issue 23, item 2).

The ``parsers`` tier (also slow): in the per-release environments of ``scripts/parser-envs``,
``tests/parsers/kv_layout.py`` builds each layer's ``KVCacheSpec`` from a real model config (the
built-in catalog's config.json) and lays the cache out with the release's own code
(``vllm/v1/core/kv_cache_utils.py``; ``kv_cache_planning.py`` in 0.2x+) for a fixed KV budget.
servespec's :func:`servespec.engines.vllm.memory.kv_tokens` must report the same tokens for the
same budget, block size, context and batched tokens. Missing environments fail in CI, skip elsewhere::

    scripts/parser-envs vllm-0.8.5 vllm-0.11.0 vllm-0.33.0
    .venv/bin/python -m pytest -m parsers tests/engines/test_vllm_kv_oracle.py
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from servespec.engines import get
from servespec.engines.vllm.memory import kv_tokens
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.knowledge.models import _catalog, catalogued
from tests.render.test_engine_parsers import env_python

pytestmark = [pytest.mark.parsers, pytest.mark.slow]

KV_LAYOUT = Path(__file__).resolve().parents[1] / "parsers" / "kv_layout.py"
BUDGET_GIB = 20
"""The KV budget both sides lay out (bytes given to the engine: exactly 20 GiB)."""
CONTEXT = 8192
BATCHED = 8192
BLOCK = 16

MODELS = {
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",  # full attention, GQA 8 x 128
    "gpt-oss-120b": "openai/gpt-oss-120b",  # 18 sliding (window 128) + 18 full
    "gemma-3-1b": "google/gemma-3-1b-it",  # 5:1 sliding (window 512) : full, 26 layers
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",  # MLA: one 512 + 64 latent per token per layer
}
RELEASES = ("0.6.0", "0.8.5", "0.11.0", "0.33.0")
NO_V1_LAYOUT = 3  # kv_layout.py's exit status for a release without vllm/v1/core/kv_cache_utils.py


def engine_layout(
    version: str,
    config: dict[str, Any],
    tmp_path: Path,
    context: int = CONTEXT,
    batched: int = BATCHED,
    in_flight: int | None = None,
) -> dict[str, Any] | None:
    """The release's own layout of ``config`` for the budget (None: the release has no V1 layout code).

    ``in_flight``: 0.2x+'s ``VllmConfig.max_in_flight_tokens`` (None: one batch of ``batched``)."""
    python = env_python("vllm", version)
    case = tmp_path / "case.json"
    case.write_text(
        json.dumps(
            {
                "config": config,
                "available_memory": BUDGET_GIB * GIB,
                "block_size": BLOCK,
                "max_model_len": context,
                "max_num_batched_tokens": batched,
                "max_in_flight_tokens": in_flight,
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    done = subprocess.run(
        [str(python), str(KV_LAYOUT), str(case)], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    if done.returncode == NO_V1_LAYOUT:
        return None
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["vllm"] == version
    return found


def servespec_tokens(version: str, repo: str, context: int = CONTEXT, batched: int = BATCHED) -> int:
    model = catalogued(repo)
    assert model is not None
    inp = EstimateInput(
        engine="vllm",
        release=get("vllm").select(version).release,
        model=model,
        gpu=None,
        max_model_len=context,
        options={"block_size": BLOCK, "max_num_batched_tokens": batched},
    )
    return kv_tokens(inp, BUDGET_GIB, batched)


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("name", list(MODELS))
def test_kv_tokens_match_the_release(name: str, version: str, tmp_path: Path) -> None:
    repo = MODELS[name]
    found = engine_layout(version, _catalog()[repo.lower()]["config"], tmp_path)
    if found is None:
        pytest.skip(f"vLLM {version} has no V1 KV-cache layout (vllm/v1/core/kv_cache_utils.py): V0 block manager")
    assert set(found["block_size"]) == {BLOCK}
    ours = servespec_tokens(version, repo)
    print(f"vllm {version} {name}: engine {found['tokens']} tokens, servespec {ours} ({found})")
    assert ours == found["tokens"], f"engine {found['tokens']} tokens, servespec {ours}: {found}"


LONG = 32768
SMALL_BATCH = 2048
"""A context the sliding windows' reservation (window + one step's tokens) stays well below."""
IN_FLIGHT = {"0.33.0": 2 * SMALL_BATCH}
"""The release's default ``max_in_flight_tokens`` on one GPU: 0.33.0 turns async scheduling on unless an
option rules it out (vllm/config/vllm.py L1685-1719, v0.33.0), which makes ``max_concurrent_batches`` 2
(L588-598); a sliding-window layer then reserves ``window - 1 + 2 x max_num_batched_tokens`` tokens per
request (vllm/v1/kv_cache_interface.py L918-944). 0.11.0 reserves one step (``max_num_batched_tokens``)."""


MEASURED_BEFORE_THE_FACT = {
    "gpt-oss-120b": "engine 515,787 tokens vs servespec 546,003 (+5.86 %)",
    "gemma-3-1b": "engine 2,839,084 tokens vs servespec 3,562,514 (+25.48 %)",
}
"""0.33.0 at 32K context, 2,048 batched tokens, 20 GiB, block 16, before the release catalogs carried
``hybrid_kv_cache.in_flight_window`` (0.26+, scripts/catalog/vllm.py ``_in_flight_window``): servespec
reserved one step, as the engine does only with async scheduling off. Kept as the measured finding."""


def _long_cases() -> list[Any]:
    return [
        pytest.param(name, version, id=f"{name}-{version}")
        for name in ("gpt-oss-120b", "gemma-3-1b")
        for version in ("0.11.0", "0.33.0")
    ]


@pytest.mark.parametrize(("name", "version"), _long_cases())
def test_sliding_reservation_at_long_context(name: str, version: str, tmp_path: Path) -> None:
    repo = MODELS[name]
    found = engine_layout(
        version, _catalog()[repo.lower()]["config"], tmp_path, LONG, SMALL_BATCH, IN_FLIGHT.get(version)
    )
    assert found is not None
    ours = servespec_tokens(version, repo, LONG, SMALL_BATCH)
    print(f"vllm {version} {name} {LONG}/{SMALL_BATCH}: engine {found['tokens']} tokens, servespec {ours} ({found})")
    assert ours == found["tokens"], f"engine {found['tokens']} tokens, servespec {ours}: {found}"


GEMMA4 = {
    "gemma-4-26b-a4b": "google/gemma-4-26B-A4B",  # 25 sliding of 8 x 256, 5 full of 2 x 512: full blocks of 32
    "gemma-4-31b": "google/gemma-4-31B-it",  # 50 sliding of 16 x 256, 10 full of 4 x 512
    "gemma-4-e4b": "google/gemma-4-E4B-it",  # 20 sliding of 2 x 256, 4 full of 2 x 512 (sliding blocks of 32)
}
"""Gemma 4 (vLLM 0.19.0+): full and sliding layers of different bytes per token, so the release doubles the block size
of the kind with the smaller page (``unify_kv_cache_spec_page_size``), and shared-KV layers get no spec."""


@pytest.mark.parametrize("name", list(GEMMA4))
def test_gemma4_unified_pages_match_the_release(name: str, tmp_path: Path) -> None:
    """0.33.0 (the one parser environment with Gemma 4's layout code; 0.19.0 is the first release with the model): the
    tokens it reports for 20 GiB at 32K context; measured equal at 408,422, 102,105 and 968,032 tokens."""
    repo = GEMMA4[name]
    found = engine_layout(
        "0.33.0", _catalog()[repo.lower()]["config"], tmp_path, LONG, SMALL_BATCH, IN_FLIGHT["0.33.0"]
    )
    assert found is not None
    assert set(found["block_size"]) == {BLOCK, 2 * BLOCK}  # the page sizes were unified
    ours = servespec_tokens("0.33.0", repo, LONG, SMALL_BATCH)
    print(f"vllm 0.33.0 {name}: engine {found['tokens']} tokens, servespec {ours} ({found})")
    assert ours == found["tokens"], f"engine {found['tokens']} tokens, servespec {ours}: {found}"


LINEAR_MODELS = {
    "qwen3-next-80b": "Qwen/Qwen3-Next-80B-A3B-Thinking",  # 36 Gated DeltaNet + 12 full, bf16 state
    "qwen3.6-35b": "nvidia/Qwen3.6-35B-A3B-NVFP4",  # 30 + 10, the config's float32 recurrent state (0.17+)
}
LINEAR_CONTEXT = 131072


def _linear_cases() -> list[Any]:
    # 0.11.0 does not know Qwen3.5's architecture (qwen3_5 arrives later): Qwen3-Next only there
    cases = [
        pytest.param(name, version, False, id=f"{name}-{version}")
        for name in LINEAR_MODELS
        for version in ("0.11.0", "0.33.0")
        if not (name == "qwen3.6-35b" and version == "0.11.0")
    ]
    return [*cases, pytest.param("qwen3.6-35b", "0.33.0", True, id="qwen3.6-35b-0.33.0-prefix-caching-h100")]


@pytest.mark.parametrize(("name", "version", "caching"), _linear_cases())
def test_linear_attention_layout_matches_the_release(name: str, version: str, caching: bool, tmp_path: Path) -> None:
    """A hybrid Gated DeltaNet model, prefix caching off (mamba_cache_mode none: one state block per request), and
    on 0.33.0 with it on, on an H100 (align mode, the FlashInfer GDN prefill's checkpoint block: the case passes the
    ``num_prefill_checkpoint_blocks`` the catalog read from qwen_gdn_linear_attn.py).

    The release's own code gives the state's shapes and dtypes (its MambaStateShapeCalculator and
    MambaStateDtypeCalculator, and the Qwen3.5 config class where it maps the architecture), the groups, the pages
    and the token figure, for the attention block servespec computes. That block is not the engine's output here
    (the release picks it in HybridAttentionMambaModelConfig / Platform._align_hybrid_block_size, which need the
    built model and its attention backend): the release's own state page checks it instead, as the smallest
    multiple of 16 tokens whose attention page holds the state (hybrid_kv_cache.linear_state_block, from source)."""
    from dataclasses import replace

    from servespec.engines.vllm.memory import state_block

    repo = LINEAR_MODELS[name]
    model = catalogued(repo)
    assert model is not None
    release = get("vllm").select(version).release
    from servespec.knowledge import gpus

    inp = EstimateInput(
        engine="vllm",
        release=release,
        model=model,
        gpu=gpus.resolve("H100-SXM5-80GB") if caching else None,
        max_model_len=LINEAR_CONTEXT,
        options={"max_num_batched_tokens": BATCHED, "enable_prefix_caching": caching},
    )
    fact = release.facts.hybrid_kv_cache
    assert fact is not None
    found_block = state_block(inp, fact, BLOCK)
    assert found_block is not None and found_block[1] == (2 + (fact.checkpoint_blocks or 0) if caching else 1)
    block = found_block[0]
    multiple = (fact.checkpoint_alignment or 16) if caching else 16
    ours = kv_tokens(replace(inp, options={**inp.options, "block_size": BLOCK}), BUDGET_GIB, BATCHED)
    python = env_python("vllm", version)
    case = tmp_path / "case.json"
    case.write_text(
        json.dumps(
            {
                "config": _catalog()[repo.lower()]["config"],
                "available_memory": BUDGET_GIB * GIB,
                "block_size": block,
                "max_model_len": LINEAR_CONTEXT,
                "max_num_batched_tokens": BATCHED,
                "mamba_cache_mode": "align" if caching else "none",
                "num_prefill_checkpoint_blocks": fact.checkpoint_blocks if caching else 0,
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    done = subprocess.run(
        [str(python), str(KV_LAYOUT), str(case)], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["vllm"] == version
    per_token = 2 * model.kv_heads * model.head_dim * 2  # bf16 attention page for one token and layer
    state = found["state_bytes"][0]
    assert (block - multiple) * per_token < state <= block * per_token, (block, state)
    print(f"vllm {version} {name}: block {block}, engine {found['tokens']} tokens, servespec {ours} ({found})")
    assert ours == found["tokens"], f"engine {found['tokens']} tokens, servespec {ours}: {found}"
