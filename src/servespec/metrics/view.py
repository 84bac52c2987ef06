"""A ``/metrics`` text, parsed with prometheus-client's text parser, read as per-role numbers.

One look is a :class:`Snapshot` (every sample by name, with the time it was taken); the view
between two looks of the same endpoint has the gauges of the later look, counters as rates
(tokens/s) or increases (preemptions), and histogram quantiles of only the observations made
between the looks (bucket increases, interpolated as Prometheus' ``histogram_quantile`` does).
A role is read only through the metric the release names for it (:mod:`servespec.metrics.facts`),
so a metric the release lacks is never looked for, and a role it has no metric for stays None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from servespec.metrics.facts import Metric, ReleaseMetrics

Labels = tuple[tuple[str, str], ...]


class MetricsTextError(ValueError):
    """A ``/metrics`` answer that is not Prometheus text exposition."""


@dataclass(frozen=True)
class Snapshot:
    """Every sample of one ``/metrics`` answer: sample name -> [(labels, value)], and when it was read."""

    samples: dict[str, list[tuple[Labels, float]]]
    at: float

    @property
    def names(self) -> frozenset[str]:
        """The sample names in the answer."""
        return frozenset(self.samples)


def parse(text: str, at: float = 0.0) -> Snapshot:
    """Parse a Prometheus text exposition (prometheus-client's parser); a malformed text is a MetricsTextError."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, list[tuple[Labels, float]]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = tuple(sorted(sample.labels.items()))
                samples.setdefault(sample.name, []).append((labels, float(sample.value)))
    except (ValueError, TypeError, IndexError) as err:
        raise MetricsTextError(f"not Prometheus text exposition: {str(err)[:120]}") from None
    return Snapshot(samples, at)


def parsed_name(metric: Metric, sample: str) -> str:
    """The name prometheus-client's parser gives a sample: it writes ``_total`` on every counter sample."""
    return sample + "_total" if metric.type == "counter" and not sample.endswith("_total") else sample


def _values(snapshot: Snapshot, metric: Metric) -> list[float]:
    """A gauge's or counter's values; a histogram's or summary's ``_sum`` (TGI counts tokens in one)."""
    sums = [s for s in metric.samples if s.endswith("_sum")] if metric.type in ("histogram", "summary") else []
    name = sums[0] if sums else parsed_name(metric, metric.samples[0])
    return [value for _, value in snapshot.samples.get(name, [])]


def _total(snapshot: Snapshot, metric: Metric) -> float | None:
    """The sum over label sets of the metric's (first) sample."""
    values = _values(snapshot, metric)
    return sum(values) if values else None


def _mean(snapshot: Snapshot, metric: Metric) -> float | None:
    values = _values(snapshot, metric)
    return sum(values) / len(values) if values else None


def _buckets(snapshot: Snapshot, metric: Metric) -> dict[float, float]:
    """Cumulative bucket counts by upper bound, summed over every other label."""
    name = next((s for s in metric.samples if s.endswith("_bucket")), None)
    out: dict[float, float] = {}
    for labels, value in snapshot.samples.get(name or "", []):
        bound = dict(labels).get("le")
        if bound is not None:
            key = math.inf if bound in ("+Inf", "Inf") else float(bound)
            out[key] = out.get(key, 0.0) + value
    return out


def quantile(q: float, buckets: dict[float, float]) -> float | None:
    """``histogram_quantile(q, ...)`` over cumulative bucket counts; None without observations."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank, lower, below = q * buckets[bounds[-1]], 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower  # in the +Inf bucket: the highest finite bound, as Prometheus answers
            width = count - below
            return lower + (bound - lower) * ((rank - below) / width if width else 1.0)
        lower, below = bound, count
    return lower


@dataclass(frozen=True)
class View:
    """The numbers ``deploy status --metrics`` shows for one endpoint (None: the release has no metric for it)."""

    values: dict[str, float | None] = field(default_factory=dict)
    interval_s: float | None = None
    missing: tuple[str, ...] = ()
    """Roles whose metric the release names but the answer lacked (an option off, or no request yet)."""

    def to_json(self) -> dict[str, Any]:
        """JSON: the values by name, the interval between the looks, and what was missing."""
        return {"values": self.values, "interval_s": self.interval_s, "missing": list(self.missing)}


QUANTILES = {"ttft_p50_ms": ("ttft", 0.5), "ttft_p95_ms": ("ttft", 0.95), "itl_p50_ms": ("itl", 0.5)}
QUANTILES |= {"itl_p95_ms": ("itl", 0.95), "e2e_p95_ms": ("e2e_latency", 0.95)}
RATES = {"prompt_tokens_per_s": "prompt_tokens", "generation_tokens_per_s": "generation_tokens"}
GAUGES = {"kv_cache_usage": "kv_cache_usage", "requests_running": "requests_running"}
GAUGES |= {"requests_waiting": "requests_waiting"}
INCREASES = {
    "preemptions": "preemptions",
    "requests_finished": "requests_finished",
    "requests_failed": "requests_failed",
}


def _present(snapshot: Snapshot, metric: Metric) -> bool:
    return any(parsed_name(metric, name) in snapshot.samples for name in metric.samples)


def view(release: ReleaseMetrics, now: Snapshot, before: Snapshot | None = None) -> View:
    """The per-role numbers of ``now``, with rates and quantiles since ``before`` when given."""
    values: dict[str, float | None] = {}
    missing = sorted({r for r in release.roles if not _present(now, release.metrics[release.roles[r]])})
    for key, role in GAUGES.items():
        metric = release.metric(role)
        reader = _mean if role == "kv_cache_usage" else _total
        values[key] = reader(now, metric) if metric else None
    span = now.at - before.at if before is not None else None
    for key, role in (RATES | INCREASES).items():
        metric = release.metric(role)
        values[key] = _increase(now, before, metric) if metric and before is not None else None
        if key in RATES and values[key] is not None and span:
            values[key] = values[key] / span  # type: ignore[operator]
        elif key in RATES:
            values[key] = None
    for key, (role, q) in QUANTILES.items():
        metric = release.metric(role)
        values[key] = _quantile_between(now, before, metric, q) if metric and before is not None else None
    return View(values, span, tuple(missing))


def _increase(now: Snapshot, before: Snapshot | None, metric: Metric) -> float | None:
    late, early = _total(now, metric), _total(before, metric) if before else None
    if late is None or early is None or late < early:  # absent, or the counter restarted between the looks
        return None
    return late - early


def _quantile_between(now: Snapshot, before: Snapshot | None, metric: Metric, q: float) -> float | None:
    late, early = _buckets(now, metric), _buckets(before, metric) if before else {}
    delta = {bound: count - early.get(bound, 0.0) for bound, count in late.items()}
    if any(value < 0 for value in delta.values()):
        return None  # restarted between the looks
    seconds = quantile(q, delta)
    return None if seconds is None else seconds * 1000.0
