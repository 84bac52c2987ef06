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


def engine_layout(version: str, config: dict[str, Any], tmp_path: Path) -> dict[str, Any] | None:
    """The release's own layout of ``config`` for the budget (None: the release has no V1 layout code)."""
    python = env_python("vllm", version)
    case = tmp_path / "case.json"
    case.write_text(
        json.dumps(
            {
                "config": config,
                "available_memory": BUDGET_GIB * GIB,
                "block_size": BLOCK,
                "max_model_len": CONTEXT,
                "max_num_batched_tokens": BATCHED,
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


def servespec_tokens(version: str, repo: str) -> int:
    model = catalogued(repo)
    assert model is not None
    inp = EstimateInput(
        engine="vllm",
        release=get("vllm").select(version).release,
        model=model,
        gpu=None,
        max_model_len=CONTEXT,
        options={"block_size": BLOCK, "max_num_batched_tokens": BATCHED},
    )
    return kv_tokens(inp, BUDGET_GIB, BATCHED)


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
