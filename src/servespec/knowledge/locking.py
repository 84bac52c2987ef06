"""``deploy lock``: resolve every deployment's model once and write the folders' ``models.lock.yaml``.

The lock file's format and reading live in :mod:`servespec.knowledge.lock`; this module walks
the model-facts chain (:mod:`servespec.knowledge.sources`), which itself reads the lock, so the
two stay apart (no import cycle).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servespec.knowledge.lock import LockEntry, locked_config, printable_source, read_lock, write
from servespec.spec.files import LOCK_FILE
from servespec.spec.grammars import MAX_INT


@dataclass(frozen=True)
class LockOutcome:
    """What ``deploy lock`` did: the lock files written (as shown to users) and the models it could not resolve."""

    written: tuple[str, ...]
    findings: tuple[Any, ...]
    locked: int
    skipped: int


def _bytes(count: int | None) -> int | None:
    """A weight byte count the lock can hold, else None (unknown)."""
    return count if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_INT else None


def _entry(found: Any) -> LockEntry:
    origin = {"gguf": "dir"}.get(found.origin, found.origin)
    return LockEntry(
        revision=found.revision,
        config=locked_config(found.config or {}),
        weight_bytes=_bytes(found.facts.weight_bytes if found.facts is not None else None),
        resolved_from=origin,
        repo=found.repo if found.repo and found.repo != found.facts.name else None,
    )


def lock_fleet(fleet: Any) -> LockOutcome:
    """Resolve every deployment's model once (model directory, GGUF, HF cache, the Hub) and write the lock files.

    One ``models.lock.yaml`` per folder holding specs, with the models of the specs in it
    (entries of models no spec named this time are kept: delete the file to start afresh).
    A spec with ``model.config`` is skipped (its config is already committed). A model that
    resolves nowhere is a REF005 finding at its ``model.source``; its previous entry, when
    the folder's lock had one that still agrees with the spec, is kept, so that an
    unreachable Hub never empties a committed lock.
    """
    from pathlib import PurePath

    from servespec.findings import Severity
    from servespec.knowledge import sources
    from servespec.spec.paths import default_root

    folders: dict[Path, tuple[str, Path, dict[str, LockEntry]]] = {}
    findings: list[Any] = []
    locked = skipped = 0
    with sources.hub_access():
        for deployment in fleet.deployments:
            document, model = deployment.document, deployment.spec.model
            if model.config:
                skipped += 1
                continue
            shown = str(PurePath(document.file).parent / LOCK_FILE)
            root = document.root or default_root(document.path)
            entries = folders.setdefault(document.path.parent, (shown, root, {}))[2]
            if model.source in entries:
                continue
            found = sources.for_lock(deployment)
            if found.facts is not None:
                entries[model.source] = _entry(found)
                locked += 1
                for warning in found.warnings:
                    findings.append(document.finding("REF005", warning, ("model", "source"), severity=Severity.WARNING))
                continue
            old = read_lock(document.path.parent, root).lock
            previous = old.models.get(model.source) if old else None
            if previous is not None and not sources.revision_conflict(model.revision, previous.revision):
                entries[model.source] = previous
            message = found.problem or f"model {printable_source(model.source)} resolves nowhere"
            findings.append(
                document.finding(
                    "REF005",
                    f"not locked: {message}",
                    ("model", "source"),
                    hint="make the model readable here (HF cache, model directory) or the Hub reachable, then run "
                    "deploy lock again",
                )
            )
    written = []
    for folder, (shown, root, entries) in folders.items():
        old = read_lock(folder, root).lock
        kept = {source: entry for source, entry in (old.models.items() if old else ()) if source not in entries}
        if entries:  # models of specs not named this time stay locked
            write(folder, {**kept, **entries})
            written.append(shown)
    return LockOutcome(tuple(written), tuple(findings), locked, skipped)
