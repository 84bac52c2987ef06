"""Whether an engine is still maintained upstream (ENG007 reads it from an engine's ``unmaintained``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unmaintained:
    """An engine whose upstream publishes no more releases, and what does the same job."""

    last_release: str
    released: str
    """The last release's date (``YYYY-MM-DD``), as its package index records the upload."""
    evidence: str
    """What shows that upstream stopped (no release since, the repository's own words)."""
    replacement: str
    """The engine (``engine.name``) that serves the same models the same way."""
    replacement_how: str
    """How a deployment moves there, one sentence."""
    sources: tuple[str, ...]
