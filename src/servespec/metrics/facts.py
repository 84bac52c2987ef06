"""The metric names each engine release serves, and which of them answers each role.

Read from ``src/servespec/engines/<unit>/metrics.json`` (scripts/catalog/metrics.py extracts it
from each release's own source; the file's provenance names the artefact, tag and files). A
release version between catalogued ones resolves the way the option catalogs do
(:meth:`servespec.engines.catalog.Catalog.select`: the nearest earlier catalogued release).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from servespec.engines import get
from servespec.engines.catalog import version_key

ROLES = (
    "kv_cache_usage",
    "requests_running",
    "requests_waiting",
    "prompt_tokens",
    "generation_tokens",
    "ttft",
    "itl",
    "e2e_latency",
    "preemptions",
    "requests_finished",
    "requests_failed",
)
"""What the live view and the dashboards show, each answered by one metric of the release (or not at all)."""


@dataclass(frozen=True)
class Metric:
    """One metric family a release defines."""

    name: str
    type: str
    """gauge | counter | histogram | summary (a counter's name is its family name, without ``_total``)."""
    samples: tuple[str, ...]
    """The sample names it writes (``x_total`` for a prometheus-client counter; ``x_bucket``... for a histogram)."""
    source: str
    served: bool = True
    """False: defined but not served by the release's default engine or hidden behind an option."""


@dataclass(frozen=True)
class ReleaseMetrics:
    """The metric facts of one engine release."""

    engine: str
    version: str
    path: str | None
    """The HTTP path the engine serves them on (``/metrics``), or None when it serves none."""
    enable_option: str | None
    """The engine option that turns the endpoint on (llama.cpp ``metrics``), or None when always on."""
    metrics: dict[str, Metric] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    """Role -> metric name, only for roles the release has a metric for."""
    none_reason: str | None = None
    """Why an engine serves no metrics, and what to read instead (Ollama: ``/api/ps``)."""

    def metric(self, role: str) -> Metric | None:
        """The metric answering ``role`` in this release, or None when the release has none."""
        name = self.roles.get(role)
        return self.metrics.get(name) if name else None

    @property
    def served(self) -> frozenset[str]:
        """The names of every metric the release serves."""
        return frozenset(name for name, metric in self.metrics.items() if metric.served)

    @property
    def family(self) -> str:
        """A key shared by releases serving the same metric names for every role (one dashboard each)."""
        return ",".join(f"{role}={self.roles.get(role, '')}" for role in ROLES)


@functools.cache
def _document(engine: str) -> dict[str, Any] | None:
    resource = get(engine).folder.joinpath("metrics.json")
    if not resource.is_file():
        return None
    data: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
    return data


def _release(engine: str, data: dict[str, Any], version: str) -> ReleaseMetrics:
    endpoint = data.get("endpoint") or {}
    entry = data.get("releases", {}).get(version) or {}
    base = (entry.get("provenance") or {}).get("source", "")
    metrics = {
        name: Metric(
            name,
            fact["type"],
            tuple(fact.get("samples") or (name,)),
            f"{base}{fact['file']}#L{fact['line']}" if "file" in fact else str(fact.get("source", "")),
            bool(fact.get("served", True)),
        )
        for name, fact in (entry.get("metrics") or {}).items()
    }
    return ReleaseMetrics(
        engine,
        version,
        endpoint.get("path"),
        endpoint.get("enable"),
        metrics,
        dict(entry.get("roles") or {}),
        endpoint.get("none"),
    )


def versions(engine: str) -> tuple[str, ...]:
    """The releases of ``engine`` with metric facts, oldest first (empty when the engine has no metrics file)."""
    data = _document(engine)
    return tuple(sorted((data or {}).get("releases", {}), key=version_key))


def for_release(engine: str, version: str) -> ReleaseMetrics | None:
    """The metric facts for ``engine`` at ``version``: that release's, or the nearest earlier catalogued one's.

    None when servespec has no metric facts for the engine; an engine that serves no metrics at
    all (Ollama) gets a :class:`ReleaseMetrics` with ``path`` None and its ``none_reason``.
    """
    data = _document(engine)
    if data is None:
        return None
    releases = data.get("releases") or {}
    if not releases:
        return _release(engine, data, version) if data.get("endpoint", {}).get("none") else None
    selection = get(engine).select(version)
    chosen = selection.release.version if selection.release else version
    if chosen not in releases:
        earlier = [v for v in versions(engine) if version_key(v) <= version_key(chosen)]
        if not earlier:
            return None
        chosen = earlier[-1]
    return _release(engine, data, chosen)
