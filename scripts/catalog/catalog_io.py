"""Writing release catalogs: one file per release, option definitions pooled per engine.

Every extractor (``scripts/catalog/<engine>.py``) builds a release as a plain dict in the
format of ``src/servespec/engines/FORMAT.md`` with inline option entries and hands it to
:func:`write_release`, which moves each entry into the engine's pool
(``releases/options.json``, keyed by :func:`servespec.engines.catalog.option_id`) and writes
the release file with ids. Output is canonical (sorted keys, two-space indent, one trailing
newline), so rebuilding from the same artefacts rewrites the same bytes.

This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))

from pydantic import BaseModel  # noqa: E402

from servespec.engines.catalog import POOL, ReleaseFacts, option_id  # noqa: E402

TOOL_VERSION = "servespec-catalog 1"
"""Recorded in every catalog's provenance; raise it when extraction changes what it records."""

UNITS = {
    "vllm": "vllm",
    "sglang": "sglang",
    "tgi": "tgi",
    "ollama": "ollama",
    "tensorrt-llm": "tensorrt_llm",
    "llama.cpp": "llama_cpp",
    "lmstudio": "lmstudio",
    "xinference": "xinference",
    "ktransformers": "ktransformers",
    "openllm": "openllm",
}
"""Engine name -> its unit's folder under src/servespec/engines/."""

OPTION_FIELDS = (
    "flag", "aliases", "env", "config_key", "type", "choices", "min", "max", "default",
    "bool_form", "nargs", "help", "deprecated",
)  # fmt: skip
"""The fields of an option entry (FORMAT.md); extractors may add more (``stability``, ``required``)."""


def releases_dir(engine: str) -> Path:
    return REPO / "src" / "servespec" / "engines" / UNITS[engine] / "releases"


def release_files(engine: str, wanted: list[str]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Each catalogued release file of ``engine`` (those whose stem is in ``wanted``; all when empty) and its data,
    for a fact builder that adds facts in place and writes the file back (:func:`write_facts`)."""
    for path in sorted(releases_dir(engine).glob("*.json")):
        if path.name != "options.json" and (not wanted or path.stem in wanted):
            yield path, json.loads(path.read_text())


def put_fact(facts: dict[str, Any], name: str, found: dict[str, Any] | None, model: type[BaseModel]) -> None:
    """``facts[name] = found`` once ``model`` accepts it; ``found`` None (the release has no such fact): dropped."""
    if found is None:
        facts.pop(name, None)
    else:
        model.model_validate(found)
        facts[name] = found


def write_facts(path: Path, data: dict[str, Any]) -> None:
    """A release file as the builders write it: sorted keys, two-space indent, a final newline."""
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_pool(engine: str) -> dict[str, dict[str, Any]]:
    path = releases_dir(engine) / POOL
    return dict(json.loads(path.read_text())["options"]) if path.is_file() else {}


def write_pool(engine: str, pool: dict[str, dict[str, Any]]) -> None:
    (releases_dir(engine) / POOL).write_text(_dump({"version": 1, "options": dict(sorted(pool.items()))}))


def check_option(key: str, entry: dict[str, Any]) -> None:
    missing = [name for name in OPTION_FIELDS if name not in entry]
    if missing:
        raise ValueError(f"option {key}: missing {', '.join(missing)}")


def write_release(engine: str, release: dict[str, Any], pool: dict[str, dict[str, Any]] | None = None) -> Path:
    """Write one release (inline options) as pooled; returns the file written.

    ``release`` needs ``version``, ``source``, ``provenance`` and ``options``; ``facts`` is
    validated against ReleaseFacts; ``notes`` is free. Pass ``pool`` to batch many releases
    (then call :func:`write_pool` once); without it the pool on disk is read and rewritten.
    """
    own = pool is None
    pool = read_pool(engine) if pool is None else pool
    if "provenance" not in release:
        raise ValueError(f"{engine} {release.get('version')}: no provenance")
    ReleaseFacts.model_validate(release.get("facts") or {})
    ids = {}
    for key, entry in release["options"].items():
        if isinstance(entry, str):
            ids[key] = entry  # already pooled
            continue
        check_option(key, entry)
        ident = option_id(entry)
        pool.setdefault(ident, entry)
        ids[key] = ident
    out = {"engine": engine, **{k: v for k, v in release.items() if k != "options"}, "options": ids}
    out.setdefault("facts", {})
    path = releases_dir(engine) / f"{release['version']}.json"
    path.write_text(_dump(out))
    if own:
        write_pool(engine, pool)
    return path


def prune_pool(engine: str) -> int:
    """Drop pool entries no release names; returns how many were dropped."""
    folder = releases_dir(engine)
    used = set()
    for path in folder.glob("*.json"):
        if path.name != POOL:
            used.update(v for v in json.loads(path.read_text())["options"].values() if isinstance(v, str))
    pool = read_pool(engine)
    kept = {k: v for k, v in pool.items() if k in used}
    write_pool(engine, kept)
    return len(pool) - len(kept)


def tagged_release(
    version: str,
    source: str,
    sources: list[str],
    tag: str,
    commit: str,
    files: list[str],
    method: str,
    kept: Any,
    options: dict[str, Any],
    facts: dict[str, Any],
    notes: dict[str, Any],
) -> dict[str, Any]:
    """A release read from a repository tag, in the shape :func:`write_release` takes.

    ``kept`` names facts and notes carried over from a hand-made file (None when there are none).
    """
    return {
        "version": version,
        "source": source,
        "sources": sources,
        "commit": commit,
        "extracted_by": method,
        "provenance": {
            "artifact": None,
            "sha256": None,
            "tag": tag,
            "commit": commit,
            "files": files,
            "method": method,
            "tool": TOOL_VERSION,
            **({"facts_and_notes": kept} if kept else {}),
        },
        "partial": False,
        "options": dict(sorted(options.items())),
        "facts": facts,
        "notes": notes,
    }


def keeps_facts(existing: dict[str, Any]) -> bool:
    """Whether a release file holds facts and notes made elsewhere (by hand) that a rebuild keeps."""
    provenance = existing.get("provenance") or {}
    return provenance.get("tool") != TOOL_VERSION or "facts_and_notes" in provenance
