"""SGLang with a hybrid linear-attention model (``facts.memory.mamba_split``, engines/sglang/mamba.py).

SGLang gives part of the memory left after ``mem_fraction_static`` to the recurrent states of the Gated DeltaNet
layers before it sizes the full-attention KV pool (``profile_max_num_token`` / ``handle_max_mamba_cache``). The
figures below are the arithmetic of each release's source at the lines its catalog cites, and a Qwen3.5-9B
start-up at TP2 on two RTX 4090 (2026-04, not pinned to a public link): "4.48 GB" of states for 186 requests
beside a 5.00 GB KV pool of 327,310 tokens."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import SglangMambaSplit
from servespec.engines.sglang import mamba
from servespec.engines.versions import version_key
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.knowledge.models import _catalog
from tests.render.test_engine_parsers import env_python

SGLANG = engines.get("sglang")
STATE_SCRIPT = Path(__file__).resolve().parents[1] / "parsers" / "sglang_mamba_state.py"

QWEN35_9B_TP2_STATE = 25_755_648
"""One request's states of Qwen3.5-9B at TP2 (SGLang's own ``mamba_cache_per_req``, test_sglang_own_state_bytes):
24 linear layers × (conv 8192 / 2 × 3 bf16 + temporal 32 / 2 × 128 × 128 float32)."""


def _inp(model_id: str, version: str, tp: int = 2, **options: object) -> EstimateInput:
    card = gpus.resolve("NVIDIA GeForce RTX 4090")
    model = models.catalogued(model_id)
    assert card is not None and model is not None
    return EstimateInput(
        engine="sglang",
        release=SGLANG.select(version).release,
        model=model,
        gpu=card,
        tensor_parallel=tp,
        max_model_len=32768,
        engine_version=version,
        options={"mem_fraction_static": 0.8, **options},
    )


def _split(version: str) -> SglangMambaSplit | None:
    memory = SGLANG.catalog.release(version).facts.memory
    assert memory is not None
    return memory.mamba_split


def _between(version: str, first: str, last: str | None = None) -> bool:
    key = version_key(version)
    return version_key(first) <= key and (last is None or key <= version_key(last))


def test_the_fact_is_on_exactly_the_releases_whose_source_has_the_split() -> None:
    """0.5.2 brought Qwen3-Next's fixed 512-request states; 0.5.3.post2 the ratio split (default 0.2, then 0.9);
    0.5.16 moved it into the KV-cache configurator (same arithmetic; its pre-capture reserve off by default); 0.5.17
    on count the pool's padding slot, and 0.5.18 on keep a multimodal reserve back first."""
    versions = SGLANG.catalog.versions
    assert len(versions) >= 92
    for version in versions:
        fact = _split(version)
        if not _between(version, "0.5.2"):
            assert fact is None, version
            continue
        assert fact is not None, version
        assert f"/v{version}/" in fact.source and "#L" in fact.source
        if _between(version, "0.5.2", "0.5.3.post1"):
            assert (fact.variant, fact.fixed_requests, fact.requests_option) == (
                "fixed_requests",
                512,
                "max_running_requests",
            ), version
        else:
            assert fact.variant == "ratio" and fact.ratio_option == "mamba_full_memory_ratio", version
            assert fact.ratio_default == (0.2 if version == "0.5.3.post2" else 0.9), version
            order = (
                "radix_off"
                if _between(version, "0.5.3.post2", "0.5.6.post2")
                else "radix_off_or_option"
                if _between(version, "0.5.7", "0.5.8.post1")
                else "option_then_requests"
            )
            assert fact.explicit_size == order, version
            assert fact.padding_slot == _between(version, "0.5.17"), version
            assert fact.multimodal_reserve_mb == (100 if _between(version, "0.5.18") else None), version
        assert fact.conv_dtype == "bfloat16" and fact.ssm_dtype_default == "float32", version
        assert fact.ssm_dtype_from_config == _between(version, "0.5.9"), version
        assert fact.dtype_source is not None and "#L" in fact.dtype_source


def test_one_requests_state_is_what_the_log_allocated() -> None:
    """The log's pool holds 186 + 1 slots (MambaPool allocates ``size + 1``): conv 0.10 + ssm 4.38 = "4.48 GB"."""
    inp = _inp("Qwen/Qwen3.5-9B", "0.5.10")
    fact = _split("0.5.10")
    assert fact is not None
    assert mamba.state_bytes(inp, fact) == QWEN35_9B_TP2_STATE
    conv = 24 * 187 * (8192 // 2) * 3 * 2
    ssm = 24 * 187 * (32 // 2) * 128 * 128 * 4
    assert (round(conv / GIB, 2), round(ssm / GIB, 2)) == (0.10, 4.38)
    assert conv + ssm == 187 * QWEN35_9B_TP2_STATE


@pytest.mark.parametrize(("version", "slots", "held"), [("0.5.10", 186, 0.0), ("0.5.23", 187, 100 / 1024)])
def test_the_ratio_gives_the_logs_request_count_and_pool(version: str, slots: int, held: float) -> None:
    """The memory the logged pools add up to (by each release's arithmetic: 0.5.23 also holds the padding slot and a
    multimodal model's 100 MiB), split at 0.9: 186 requests' states and 327,310 tokens of 16 KiB (8 full-attention
    layers × 2 KV heads × 256 × K and V × bf16 at TP2). The log's release is not known: both agree with it."""
    inp = _inp("Qwen/Qwen3.5-9B", version)
    rest = (327_310 * 16_384 + slots * QWEN35_9B_TP2_STATE) / GIB + held
    found = mamba.split(inp, _split(version), rest)
    assert isinstance(found, mamba.Split)
    assert found.requests == 186
    assert int((rest - found.gib) * GIB) // 16_384 == 327_310


@pytest.mark.parametrize("version", ["0.5.4", "0.5.10", "0.5.15.post1", "0.5.16", "0.5.17"])
def test_the_pool_is_what_the_rest_leaves_after_the_states(version: str) -> None:
    whole = SGLANG.estimate(_inp("Qwen/Qwen3-8B", version))  # a full-attention model is estimated as before
    assert whole is not None and whole.kv_tokens > 0
    found = SGLANG.estimate(_inp("Qwen/Qwen3.5-9B", version))
    assert found is not None and found.kv_bytes_per_token == 16_384
    note = next(n for n in found.notes if n.startswith("recurrent states of "))
    requests = int(note.split()[3])
    states = requests * QWEN35_9B_TP2_STATE / GIB
    rest = found.kv_cache_bytes / GIB + states
    assert requests == int(rest * 0.9 / 1.9 * GIB // QWEN35_9B_TP2_STATE)
    assert found.kv_tokens == int(found.kv_cache_bytes // 16_384)
    assert found.kv_tokens < rest * GIB / 16_384 * 0.6  # about half the rest: not the whole of it as KV
    assert found.max_sequences <= requests


def test_explicit_sizes_follow_each_releases_order() -> None:
    def requests(version: str, **options: object) -> int:
        found = SGLANG.estimate(_inp("Qwen/Qwen3.5-9B", version, **options))
        assert found is not None
        return int(next(n for n in found.notes if n.startswith("recurrent states of ")).split()[3])

    auto = requests("0.5.4")
    assert requests("0.5.4", max_mamba_cache_size=40) == auto  # 0.5.4: the option is ignored with the radix cache on
    assert requests("0.5.4", disable_radix_cache=True) == 512
    assert requests("0.5.4", disable_radix_cache=True, max_running_requests=64) == 64
    assert requests("0.5.8", max_mamba_cache_size=40) == 40
    assert requests("0.5.10", max_mamba_cache_size=40) == 40
    assert requests("0.5.10", disable_radix_cache=True) == auto  # no --max-running-requests: the ratio
    assert requests("0.5.10", disable_radix_cache=True, max_running_requests=64) == 64
    assert requests("0.5.10", mamba_full_memory_ratio=0.45) < auto


def test_qwen3_next_on_0_5_2_takes_512_requests_states() -> None:
    found = SGLANG.estimate(_inp("Qwen/Qwen3-Next-80B-A3B-Instruct", "0.5.2", tp=8))
    assert found is not None
    assert any(n.startswith("recurrent states of 512 requests (set)") for n in found.notes)


def test_from_0_5_17_the_padding_slot_and_from_0_5_18_the_multimodal_reserve_come_off() -> None:
    """v0.5.17 kv_cache_configurator.py ``_handle_max_mamba_cache``: ``int((budget - per_req) // per_req)`` slots
    and ``(slots + 1) × per_req`` off the rest; v0.5.18 ``mm_runtime_reservation_gb``: 100 MiB
    (``SGLANG_VLM_CACHE_SIZE_MB``) off a multimodal model's rest first (Qwen3.5 is one)."""
    rest = 10.0
    per = QWEN35_9B_TP2_STATE
    old = mamba.split(_inp("Qwen/Qwen3.5-9B", "0.5.16"), _split("0.5.16"), rest)
    padded = mamba.split(_inp("Qwen/Qwen3.5-9B", "0.5.17"), _split("0.5.17"), rest)
    reserved = mamba.split(_inp("Qwen/Qwen3.5-9B", "0.5.23"), _split("0.5.23"), rest)
    assert isinstance(old, mamba.Split) and isinstance(padded, mamba.Split) and isinstance(reserved, mamba.Split)
    budget = rest * 0.9 / 1.9 * GIB
    assert old.requests == int(budget // per) and old.gib == old.requests * per / GIB
    assert padded.requests == int((budget - per) // per) and padded.gib == (padded.requests + 1) * per / GIB
    held = rest - 100 / 1024
    assert reserved.requests == int((held * 0.9 / 1.9 * GIB - per) // per)
    assert reserved.gib == (reserved.requests + 1) * per / GIB + 100 / 1024
    text_only = mamba.split(_inp("Qwen/Qwen3-Next-80B-A3B-Instruct", "0.5.23", tp=4), _split("0.5.23"), rest)
    assert isinstance(text_only, mamba.Split) and "multimodal reserve" not in text_only.note


def test_what_is_not_modelled_is_declined_and_said() -> None:
    qwen = models.catalogued("Qwen/Qwen3.5-9B")
    granite = models.catalogued("ibm-granite/granite-4.0-h-micro")
    assert qwen is not None and granite is not None and granite.linear_kind == "mamba2"
    assert SGLANG.kv_unmodelled(qwen, SGLANG.select("0.5.23").release) == ""
    assert SGLANG.kv_unmodelled(qwen, SGLANG.select("0.5.10").release) == ""
    assert "mamba2" in SGLANG.kv_unmodelled(granite, SGLANG.select("0.5.10").release)
    assert SGLANG.estimate(_inp("ibm-granite/granite-4.0-h-micro", "0.5.10")) is None
    assert SGLANG.estimate(_inp("Qwen/Qwen3.5-9B", "0.5.10", speculative_algorithm="NEXTN")) is None
    assert SGLANG.estimate(_inp("Qwen/Qwen3.5-9B", "0.5.23", enable_unified_memory=True)) is None
    assert SGLANG.estimate(_inp("Qwen/Qwen3.5-9B", "0.5.23", mm_feature_transport="cuda_ipc")) is None
    assert SGLANG.estimate(_inp("Qwen/Qwen3.5-9B", "0.5.23")) is not None


@pytest.mark.parsers
@pytest.mark.slow
@pytest.mark.parametrize(("model_id", "tp"), [("Qwen/Qwen3.5-9B", 2), ("Qwen/Qwen3-Next-80B-A3B-Instruct", 4)])
def test_sglang_own_state_bytes(model_id: str, tp: int) -> None:
    """SGLang 0.5.23's own ``mamba_cache_per_req`` (configs/mamba_utils.py, unchanged in the shape it computes since
    0.5.9) for the catalogued config equals servespec's."""
    python = env_python("sglang", "0.5.23")
    config = _catalog()[model_id.lower()]["config"]
    ask = json.dumps({"tp": tp, "config": config.get("text_config", config)})
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    done = subprocess.run(
        [str(python), str(STATE_SCRIPT)], input=ask, capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    own = json.loads(done.stdout.strip().splitlines()[-1])["per_req"]
    fact = _split("0.5.15")
    assert fact is not None
    assert mamba.state_bytes(_inp(model_id, "0.5.15", tp=tp), fact) == own


def test_a_release_without_the_fact_says_so() -> None:
    qwen = models.catalogued("Qwen/Qwen3.5-9B")
    assert qwen is not None
    assert "0.4.0's catalog has no facts.memory.mamba_split" in SGLANG.kv_unmodelled(
        qwen, SGLANG.select("0.4.0").release
    )
    assert "release is not known" in SGLANG.kv_unmodelled(qwen)
    assert SGLANG.kv_unmodelled(models.catalogued("Qwen/Qwen3-8B")) == ""  # type: ignore[arg-type]
