"""One spec switched across every engine and platform: a valid configuration for each, or findings that say why not."""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.findings import Severity
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.golden.regen import ENGINE_VERSIONS, GOLDEN

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: switch}}
model:
  source: meta-llama/Llama-3.1-8B-Instruct
  revision: 0123456789abcdef0123456789abcdef01234567
  max_model_len: 8192
engine: {{name: {engine}, version: {version}}}
placement: {{hosts: [l4-a]}}
serving: {{port: 9000}}
"""
EXPECTED_ERRORS = {
    "vllm": [],
    "tgi": [],
    "tensorrt-llm": [],
    # SGLang's default mem_fraction_static on a 22.5 GiB L4 (about 0.70: memory_hook.py reserves
    # ~6.7 GiB for a 4096-token chunk) leaves 0.65 GiB less KV room than one 8192-token sequence
    # needs: within the estimator's measured error (knowledge/data/estimator_band.yaml), so MEM002
    # is a "may not fit" warning, not an error.
    "sglang": [],
    # llama.cpp and Ollama load GGUF, not a Hugging Face safetensors repo.
    "llama.cpp": ["HW003"],
    "ollama": ["HW003"],
    # XInference launches only a model of its built-in registry (it names the registered id: Meta-Llama-3.1-...)
    # and only with engine.options.model_engine chosen.
    "xinference": ["ENG003", "ENG003"],
    # Without --kt-weight-path every expert stays on the GPU: SGLang's arithmetic with sglang-kt's
    # own defaults (a smaller reserve than SGLang 0.5.23's on an L4: it fits).
    "ktransformers": [],
    # lms loads the downloaded model whose key matches (GGUF through its llama.cpp engine).
    "lmstudio": [],
    # No bento of openllm-models serves this id (one serves Meta-Llama-3.1-8B-Instruct); no published image.
    "openllm": ["ENG003", "ENG003"],
}


@pytest.mark.parametrize("engine", engines.names())
def test_switching_engine_renders_or_explains(engine: str, tmp_path: Path) -> None:
    assert engine in EXPECTED_ERRORS, f"EXPECTED_ERRORS has no row for {engine}: say which errors the switch gives"
    path = tmp_path / "switch.yaml"
    path.write_text(SPEC.format(engine=engine, version=ENGINE_VERSIONS[engine]))
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    errors = [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    assert [f.rule for f in errors] == EXPECTED_ERRORS[engine], [f.to_text() for f in errors]
    assert all(f.hint for f in errors), "every finding says how to fix it"
    if not errors:
        files = render_fleet(fleet).files
        assert "switch/l4-a/container.yaml" in files


def test_switched_spec_renders_on_sglang_with_more_memory(tmp_path: Path) -> None:
    path = tmp_path / "switch.yaml"
    text = SPEC.format(engine="sglang", version='"0.5.23"')
    path.write_text(text.replace('version: "0.5.23"}', 'version: "0.5.23", options: {mem_fraction_static: 0.9}}'))
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert [f for f in check_fleet(fleet) if f.severity is Severity.ERROR] == []
    assert "switch/l4-a/config.yaml" in render_fleet(fleet).files


def test_switched_spec_is_capped_on_sglang_defaults(tmp_path: Path) -> None:
    """SGLang starts with a pool shorter than one sequence and caps max_req_len (profile short_kv_cache): a warning
    that says so, not a refusal."""
    path = tmp_path / "switch.yaml"
    path.write_text(SPEC.format(engine="sglang", version=ENGINE_VERSIONS["sglang"]))
    found = [f for f in check_fleet(load_fleet([path], GOLDEN / "inventory.yaml")) if f.rule == "MEM002"]
    assert [f.severity for f in found] == [Severity.WARNING]
    assert found[0].message.startswith("the engine starts but caps the longest request")


def test_switched_spec_fits_on_the_ktransformers_releases_own_defaults(tmp_path: Path) -> None:
    """sglang-kt 0.7.2's own server_args.py (facts.memory of its catalog) keeps the older table: on a
    GPU under 35 GiB, chunked_prefill_size 2048 and cuda_graph_max_bs 24 (tp < 4), so it reserves
    512 + 2048 * 1.5 + 24 * 2 + 128 MiB (fraction 0.837 on an L4) where SGLang 0.5.23 reserves
    512 + 4096 * 1.5 + 48 * 2 + 128: the 8192-token sequence fits."""
    path = tmp_path / "switch.yaml"
    path.write_text(SPEC.format(engine="ktransformers", version=ENGINE_VERSIONS["ktransformers"]))
    found = [f for f in check_fleet(load_fleet([path], GOLDEN / "inventory.yaml")) if f.rule.startswith("MEM")]
    assert found == []
