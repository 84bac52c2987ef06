"""An unset model.max_model_len is the engine's default for the release.

Nothing is rendered, and the estimate is sized with that default and says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec import engines
from servespec.estimate import estimates
from servespec.knowledge.memory import default_context
from servespec.knowledge.models import ModelFacts
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet

LLAMA_8B = (
    "{params_b: 8.03, layers: 32, hidden_size: 4096, attention_heads: 32, kv_heads: 8, head_dim: 128, "
    "vocab_size: 128256, max_position_embeddings: 131072}"
)


def _fleet(tmp_path: Path, engine: str, version: str, model: str, gpu: str = "NVIDIA L40S", count: int = 1) -> Fleet:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n"
        f"  h1: {{address: 10.0.0.1, hardware: {{gpus: {{model: {gpu}, count: {count}}}, "
        "driver_version: '570.86.15', memory_gib: 256}}\n"
    )
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        f"model: {model}\nengine: {{name: {engine}, version: '{version}'}}\nplacement: {{hosts: [h1]}}\n"
    )
    return load_fleet([tmp_path / "spec.yaml"])


def _rendered(fleet: Fleet) -> str:
    return "\n".join(text for text in render_fleet(fleet).files.values() if isinstance(text, str))


HF = "{source: meta-llama/Llama-3.1-8B-Instruct, architecture: " + LLAMA_8B + "}"


GGUF_8B = "quantization: gguf, gguf_type: Q4_K_M, architecture: " + LLAMA_8B + "}"
UNSET_CONTEXT: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "vllm": [("0.11.0", HF, ("max-model-len", "max_model_len"))],
    "sglang": [("0.5.23", HF, ("context-length", "context_length"))],
    "tgi": [
        ("2.0.4", HF, ("MAX_TOTAL_TOKENS", "max-total-tokens")),
        ("3.3.7", HF, ("MAX_TOTAL_TOKENS", "max-total-tokens")),
    ],
    "tensorrt-llm": [("1.2.1", HF, ("max_seq_len",))],
    "ollama": [
        (
            "0.32.15",
            "{source: 'llama3.1:8b', quantization: gguf, architecture: " + LLAMA_8B + "}",
            ("OLLAMA_CONTEXT_LENGTH", "num_ctx"),
        )
    ],
    "llama.cpp": [("b11434", "{source: /srv/models/m.gguf, " + GGUF_8B, ("--ctx-size",))],
    "xinference": [
        ("2.12.0", "{source: Qwen/Qwen2.5-7B-Instruct, architecture: " + LLAMA_8B + "}", ("max_model_len", "context"))
    ],
    "ktransformers": [("0.7.2", HF, ("context-length", "context_length"))],
    "lmstudio": [("07b7252", "{source: qwen2.5-7b-instruct, " + GGUF_8B, ("context-length", "contextLength"))],
    "openllm": [
        ("0.6.30", "{source: Qwen/Qwen3-8B, architecture: " + LLAMA_8B + "}", ("max-model-len", "max_model_len"))
    ],
}
"""Every registered engine: releases whose rendered files must not name a context length when the spec sets none."""


@pytest.mark.parametrize("engine", engines.names())
def test_unset_context_renders_nothing(tmp_path: Path, engine: str) -> None:
    # before: the model's maximum (131072) was written, overriding the engine's own default
    assert engine in UNSET_CONTEXT, f"no row for {engine} in UNSET_CONTEXT"
    for number, (version, model, words) in enumerate(UNSET_CONTEXT[engine]):
        text = _rendered(_fleet(tmp_path / str(number), engine, version, model))
        assert text
        for word in words:
            assert word not in text, (version, word)
        assert "131072" not in text


def test_tgi_2_caps_the_default_at_4096_and_says_so(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "tgi", "2.0.4", HF)
    rows = estimates(fleet, check_fleet(fleet))
    plan = rows[0].plan
    assert plan is not None
    assert plan.context_tokens == 4096  # was 131072 (max_position_embeddings)
    assert plan.context_basis.startswith("engine default for tgi 2.0.4: 4096")
    assert rows[0].to_json()["context"] == {"tokens": 4096, "basis": plan.context_basis}
    assert plan.max_sequences == pytest.approx(plan.kv_tokens / 4096, abs=0.01)


def test_tgi_3_default_is_what_the_kv_cache_holds_at_most_the_model(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "tgi", "3.3.7", HF, gpu="NVIDIA L4")
    plan = estimates(fleet, check_fleet(fleet))[0].plan
    assert plan is not None
    assert plan.context_tokens == min(plan.kv_tokens, 131072)
    assert "KV cache" in plan.context_basis


def test_vllm_default_is_the_derived_length_and_mem002_names_it(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.11.0", HF, gpu="NVIDIA L4")
    findings = check_fleet(fleet)
    plan = estimates(fleet, findings)[0].plan
    assert plan is not None and plan.context_tokens == 131072
    mem002 = [f for f in findings if f.rule == "MEM002"]
    assert mem002 and "engine default for vllm 0.11.0: 131072" in mem002[0].message


def _facts(max_len: int = 32768) -> ModelFacts:
    return ModelFacts("m", "qwen2", 28, 3584, 28, 4, 128, max_position_embeddings=max_len)


@pytest.mark.parametrize(
    ("version", "vram", "tokens"),
    [
        ("0.5.0", 48.0, 2048),  # api/types.go NumCtx 2048
        ("0.6.7", 48.0, 4096),  # OLLAMA_CONTEXT_LENGTH 4096
        ("0.15.4", 48.0, 4096),
        ("0.15.5", 22.5, 4096),  # an L4: below the 23 GiB tier
        ("0.15.5", 24.0, 32768),
        ("0.32.15", 96.0, 32768),  # 262144 lowered to the model's n_ctx_train
    ],
)
def test_ollama_default_by_release_and_vram(version: str, vram: float, tokens: int) -> None:
    release = engines.get("ollama").select(version).release
    assert release is not None
    found, why = default_context(release.facts.context_default, _facts(), vram)
    assert found == tokens, why


def test_ollama_vram_tier_follows_the_host(tmp_path: Path) -> None:
    model = (
        "{source: 'qwen2.5:7b', quantization: gguf, architecture: {params_b: 7.6, layers: 28, hidden_size: 3584, "
        "attention_heads: 28, kv_heads: 4, head_dim: 128, max_position_embeddings: 131072}}"
    )
    small = _fleet(tmp_path / "a", "ollama", "0.32.15", model, gpu="NVIDIA L4")
    mid = _fleet(tmp_path / "b", "ollama", "0.32.15", model, gpu="NVIDIA L40S", count=2)  # one seen: 44.7 GiB
    big = _fleet(tmp_path / "c", "ollama", "0.32.15", model, gpu="NVIDIA H100 80GB HBM3")
    plans = [estimates(f, check_fleet(f))[0].plan for f in (small, mid, big)]
    assert [p.context_tokens for p in plans if p] == [4096, 32768, 131072]
    assert all(p and "chosen by VRAM" in p.context_basis for p in plans)


@pytest.mark.parametrize("engine", [e.name for e in engines.ENGINES])
def test_every_catalogued_release_has_its_context_default(engine: str) -> None:
    unit = engines.get(engine)
    for version in unit.catalog.files:
        release = unit.catalog.release(version)
        assert release.facts.context_default is not None, version
        assert release.facts.context_default.source.startswith("https://"), version
        if engine == "llama.cpp":
            assert release.facts.server_slots is not None, version


def test_spec_context_is_used_as_given(tmp_path: Path) -> None:
    model = HF.replace("{source", "{max_model_len: 8192, source")
    fleet = _fleet(tmp_path, "tgi", "2.0.4", model)
    plan = estimates(fleet, check_fleet(fleet))[0].plan
    assert plan is not None and (plan.context_tokens, plan.context_basis) == (8192, "model.max_model_len")
    assert fleet.deployments[0].spec.model.max_model_len == 8192
    assert "8192" in _rendered(fleet)


def test_estimate_json_states_the_context(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "sglang", "0.5.23", HF)
    row = estimates(fleet, check_fleet(fleet))[0].to_json()
    context = json.loads(json.dumps(row))["context"]
    assert context["tokens"] == 131072
    assert context["basis"].startswith("engine default for sglang 0.5.23: 131072")
