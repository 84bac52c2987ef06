"""The engine's model store stays in the persisted cache, or the mount follows it (issue 12 item 10).

A setting that moves the store (``OLLAMA_MODELS``, ``HF_HOME``, ``HF_HUB_CACHE``, vLLM/SGLang
``--download-dir``, TGI ``--huggingface-hub-cache``, llama.cpp ``LLAMA_CACHE``) gets the host's
model cache mounted at its path; one that cannot be a mount point is ENG006 at the setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec import engines
from servespec.engines import get
from servespec.findings import Finding, Severity
from servespec.render import render_fleet
from servespec.render.common import MODEL_CACHE
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.golden.regen import GOLDEN

SOURCES = {
    "vllm": ("0.11.0", "meta-llama/Llama-3.1-8B-Instruct"),
    "sglang": ("0.5.23", "meta-llama/Llama-3.1-8B-Instruct"),
    "tgi": ("3.3.7", "meta-llama/Llama-3.1-8B-Instruct"),
    "tensorrt-llm": ("1.2.1", "meta-llama/Llama-3.1-8B-Instruct"),
    "ollama": ("0.32.15", "llama3.1:8b"),
    "llama.cpp": ("b11434", "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M"),
    "xinference": ("2.12.0", "Qwen/Qwen2.5-7B-Instruct"),
    "ktransformers": ("0.7.2", "meta-llama/Llama-3.1-8B-Instruct"),
    "openllm": ("0.6.30", "Qwen/Qwen3-8B"),
    "lmstudio": ("07b7252", "qwen2.5-7b-instruct"),
}
"""Every registered engine needs a row in each table here (a test fails for one without)."""
DEFAULT_STORE = {
    "vllm": "/root/.cache/huggingface",
    "sglang": "/root/.cache/huggingface",
    "tgi": "/data",
    "tensorrt-llm": "/root/.cache/huggingface",
    "ollama": "/root/.ollama",
    # --hf-repo downloads go to the Hugging Face cache layout (common/hf-cache.cpp), not ~/.cache/llama.cpp
    "llama.cpp": "/root/.cache/huggingface",
    "xinference": "/root/.xinference",
    "ktransformers": "/root/.cache/huggingface",
    "openllm": "/root/.cache/huggingface",
    # host-native: lms keeps its models in the lmstudio user's own folder, no container mounts the cache
    "lmstudio": None,
}
CACHE_MODE = {
    "vllm": "ro",
    "sglang": "ro",
    "tgi": "ro",
    "tensorrt-llm": "ro",
    "ollama": "rw",
    "llama.cpp": "rw",
    "xinference": "rw",
    "ktransformers": "ro",
    "openllm": "ro",
    "lmstudio": None,
}
"""Read-only where servespec stages the weights (issue 20: the engine cannot plant links for the role's modules)."""
STORE_VARIABLE = {
    "vllm": "HF_HOME",
    "sglang": "HF_HUB_CACHE",
    "tgi": "HUGGINGFACE_HUB_CACHE",
    "tensorrt-llm": "HF_HOME",
    "ollama": "OLLAMA_MODELS",
    "llama.cpp": "LLAMA_CACHE",
    "xinference": "XINFERENCE_HOME",
    "ktransformers": "HF_HUB_CACHE",
    "openllm": "BENTOML_HF_CACHE_DIR",
    "lmstudio": None,
}


def _row(table: dict[str, Any], engine: str) -> Any:
    assert engine in table, f"no row for {engine}: every registered engine has one in this test's tables"
    return table[engine]


def _spec(tmp_path: Path, engine: str, extra: str = "") -> Path:
    version, source = _row(SOURCES, engine)
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\n"
        "kind: Deployment\n"
        "metadata: {name: store}\n"
        f"model: {{source: {source}, max_model_len: 4096}}\n"
        "engine:\n"
        f"  name: {engine}\n"
        f'  version: "{version}"\n' + extra + "placement: {hosts: [l4-a]}\n"
        "rollout: {health_timeout: 20m}\n"
    )
    return path


def _files(path: Path) -> dict[str, str]:
    return render_fleet(load_fleet([path], GOLDEN / "inventory.yaml")).host_files("store", "l4-a")


def _volumes(path: Path) -> list[dict[str, Any]]:
    return list(YAML(typ="safe").load(_files(path)["container.yaml"])["volumes"])


def _cache_mounts(path: Path) -> list[str]:
    return [v["container"] for v in _volumes(path) if v["host"] == MODEL_CACHE]


def _store_findings(path: Path) -> list[Finding]:
    return [f for f in check_fleet(load_fleet([path], GOLDEN / "inventory.yaml")) if f.rule == "ENG006"]


@pytest.mark.parametrize("engine", engines.names())
def test_the_cache_is_mounted_at_the_engines_default_store(engine: str, tmp_path: Path) -> None:
    store = _row(DEFAULT_STORE, engine)
    assert _cache_mounts(_spec(tmp_path, engine)) == ([store] if store else [])
    assert (store is None) == (get(engine).profile.model_store is None)


@pytest.mark.parametrize("engine", engines.names())
def test_the_mount_follows_the_store_variable(engine: str, tmp_path: Path) -> None:
    variable, store, mode = _row(STORE_VARIABLE, engine), _row(DEFAULT_STORE, engine), _row(CACHE_MODE, engine)
    if variable is None:  # no store setting to follow (the row says why)
        assert store is None and mode is None and get(engine).profile.model_store is None
        return
    store_settings = get(engine).profile.model_store
    assert store_settings is not None and variable in store_settings.env
    path = _spec(tmp_path, engine, f"  env: {{{variable}: /srv/models}}\n")
    assert _store_findings(path) == []
    assert _cache_mounts(path) == [store, "/srv/models"]
    volume = next(v for v in _volumes(path) if v["container"] == "/srv/models")
    assert volume["mode"] == mode


def test_ollama_models_option_renders_the_variable_and_the_mount(tmp_path: Path) -> None:
    path = _spec(tmp_path, "ollama", "  options: {models: /models}\n")
    assert "OLLAMA_MODELS=/models" in _files(path)["ollama.env"]
    assert _cache_mounts(path) == ["/root/.ollama", "/models"]


@pytest.mark.parametrize("engine", engines.names())
def test_the_mount_follows_the_store_option(engine: str, tmp_path: Path) -> None:
    # Each option the profile says moves the store (vLLM/SGLang download_dir, TGI huggingface_hub_cache, ...).
    store = get(engine).profile.model_store
    for option in store.options if store else ():
        path = _spec(tmp_path, engine, f"  options: {{{option}: /weights}}\n")
        assert _store_findings(path) == [], option
        assert _cache_mounts(path) == [_row(DEFAULT_STORE, engine), "/weights"], option


@pytest.mark.parametrize(
    "extra", ['  extra_args: ["--download-dir", "/weights"]\n', '  extra_args: ["--download-dir=/weights"]\n']
)
def test_the_mount_follows_the_store_option_in_extra_args(extra: str, tmp_path: Path) -> None:
    path = _spec(tmp_path, "vllm", extra)
    assert _store_findings(path) == []
    assert _cache_mounts(path) == [DEFAULT_STORE["vllm"], "/weights"]


def test_a_store_inside_the_default_mount_needs_no_other_mount(tmp_path: Path) -> None:
    path = _spec(tmp_path, "vllm", "  env: {HF_HUB_CACHE: /root/.cache/huggingface/hub}\n")
    assert _cache_mounts(path) == ["/root/.cache/huggingface"]
    assert _store_findings(path) == []


def test_two_settings_naming_one_path_mount_it_once(tmp_path: Path) -> None:
    path = _spec(tmp_path, "vllm", "  env: {HF_HOME: /srv/hf}\n  options: {download_dir: /srv/hf/}\n")
    assert _cache_mounts(path) == ["/root/.cache/huggingface", "/srv/hf"]


@pytest.mark.parametrize(
    ("engine", "extra", "needle"),
    [
        ("ollama", "  env: {OLLAMA_MODELS: models}\n", "OLLAMA_MODELS"),
        ("ollama", "  env: {OLLAMA_MODELS: ~/models}\n", "OLLAMA_MODELS"),
        ("vllm", '  extra_args: ["--download-dir", "weights"]\n', "extra_args"),
        ("vllm", "  env: {HF_HOME: /usr/share/hf}\n", "HF_HOME"),
        ("tgi", "  options: {huggingface_hub_cache: /etc/hub}\n", "huggingface_hub_cache"),
        ("sglang", "  env: {HF_HOME: /}\n", "HF_HOME"),
        ("vllm", "  env: {HF_HOME: '/srv/a:/b'}\n", "HF_HOME"),
    ],
)
def test_a_store_that_cannot_be_mounted_is_eng006_at_the_setting(
    engine: str, extra: str, needle: str, tmp_path: Path
) -> None:
    path = _spec(tmp_path, engine, extra)
    [finding] = _store_findings(path)
    assert finding.severity is Severity.WARNING
    assert "downloads the model again" in finding.message
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if needle in text)
    assert finding.line == line
    assert _cache_mounts(path) == [DEFAULT_STORE[engine]]


def test_a_store_over_the_local_model_folder_is_eng006(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: store}\n"
        "model: {source: /models/llama, max_model_len: 4096}\n"
        'engine: {name: vllm, version: "0.11.0", env: {HF_HOME: /models}}\n'
        "placement: {hosts: [l4-a]}\n"
    )
    [finding] = _store_findings(path)
    assert "model folder" in finding.message
