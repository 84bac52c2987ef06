"""Gemma 4 on vLLM 0.19.0, the first release with the model (model_executor/models/gemma4.py; 0.18.1 has none).

Worked by hand from 0.19.0's source, not from the code under test: each layer's spec is a ``FullAttentionSpec`` or
``SlidingWindowSpec`` of its own head size and KV heads (bf16: 2 × heads × head size × 2 bytes per token), the
shared-KV layers get none (gpu_model_runner.py ``get_kv_cache_spec``: ``kv_sharing_target_layer_name``); two page
sizes are unified by multiplying the smaller page's block size (kv_cache_utils.py L914-L951); layers are grouped by
the smallest kind's count unless the largest is within 1.5× of it (L1046); the log reports
``num_blocks // groups × min block_size`` tokens (``_report_kv_cache_config``, L1297-L1306). The 0.33.0 layout is
checked against vLLM's own code in tests/engines/test_vllm_kv_oracle.py.
"""

from __future__ import annotations

import pytest

from servespec.engines import get
from servespec.engines.vllm.memory import kv_tokens
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.knowledge.models import catalogued

BUDGET_GIB = 20
CONTEXT = 32768
BATCHED = 2048


def _tokens(repo: str) -> int:
    model = catalogued(repo)
    release = get("vllm").select("0.19.0").release
    assert model is not None and release is not None and release.version == "0.19.0"
    inp = EstimateInput(
        engine="vllm",
        release=release,
        model=model,
        gpu=None,
        max_model_len=CONTEXT,
        options={"block_size": 16, "max_num_batched_tokens": BATCHED},
    )
    return kv_tokens(inp, BUDGET_GIB, BATCHED)


@pytest.mark.parametrize(
    ("repo", "page", "group_size", "groups", "smallest_block"),
    [
        # 26B-A4B: sliding pages 16 × 8192 B, full 16 × 4096 B -> full blocks of 32; 25 : 5 layers -> groups of 5
        ("google/gemma-4-26B-A4B", 16 * 8192, 5, 6, 16),
        # 31B: sliding 16 × 16384 B, full 16 × 8192 B; 50 : 10 -> groups of 10
        ("google/gemma-4-31B-it", 16 * 16384, 10, 6, 16),
        # E4B: 20 sliding of 2048 B (blocks of 32), 4 full of 4096 B; 18 shared layers get no spec; groups of 4
        ("google/gemma-4-E4B-it", 16 * 4096, 4, 6, 16),
    ],
)
def test_gemma4_blocks_per_group(repo: str, page: int, group_size: int, groups: int, smallest_block: int) -> None:
    blocks = BUDGET_GIB * GIB // (page * group_size)
    assert _tokens(repo) == blocks // groups * smallest_block
