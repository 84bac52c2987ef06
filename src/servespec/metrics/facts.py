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
    port_option: str | None = None
    """The engine option whose value is the port the metrics are served on (XInference's worker
    exporter, ``metrics_exporter_port``), or None: the serving port."""
    format: str = "prometheus"
    """``prometheus`` (text exposition), or what else the path serves (TensorRT-LLM's JSON iteration
    stats): anything but ``prometheus`` is never parsed or scraped."""

    def port(self, options: dict[str, Any], serving_port: int) -> int | None:
        """The port the metrics are read on: the serving port, or the value of ``port_option`` (None: not a port)."""
        if self.port_option is None:
            return serving_port
        value = options.get(self.port_option)
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536 else None

    def off(self, options: dict[str, Any]) -> str:
        """Why the endpoint is not read with these engine options (a sentence), or "" when it is."""
        if self.path is None:
            return self.none_reason or f"{self.engine} serves no metrics"
        if self.format != "prometheus":
            return f"{self.engine} {self.version} serves {self.format} at {self.path}, not Prometheus text: not read"
        if self.port_option and self.port(options, 0) is None:
            return f"metrics are off: set engine.options.{self.port_option} to a port and apply"
        if self.enable_option and not options.get(self.enable_option):
            return f"metrics are off: set engine.options.{self.enable_option}: true and apply"
        return ""

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
        endpoint.get("port_option"),
        endpoint.get("format") or "prometheus",
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
