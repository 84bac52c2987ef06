"""Which metric names a restart changes: the engine release a host runs against the one it will run.

A dashboard or alert written against one release's names goes blank when an update moves to a
release that renamed them (vLLM 0.9.2 renamed ``vllm:gpu_cache_usage_perc`` to
``vllm:kv_cache_usage_perc``). The releases come from the two ``container.yaml`` files (``engine.name``,
``engine.version``); their names from :mod:`servespec.metrics.facts`, role by role, plus the served
metrics the new release no longer serves. Unknown on either side (no facts, an unreadable file): nothing is said.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from servespec.metrics.facts import ROLES, for_release
from servespec.plan.changes import container_fields


@dataclass(frozen=True)
class MetricNames:
    """How the metric names change between the release a host runs and the one it will run."""

    before: str
    """``engine release`` the host runs (``vllm 0.9.1``)."""
    after: str
    renamed: tuple[tuple[str, str | None, str | None], ...]
    """(role, name before, name after) for each role whose metric changes (None: the release has none)."""
    dropped: tuple[str, ...]
    """Served metrics of the old release the new one no longer serves (sorted)."""

    def to_json(self) -> dict[str, Any]:
        """A plain dict for JSON output."""
        return {
            "before": self.before,
            "after": self.after,
            "renamed": [{"role": role, "before": old, "after": new} for role, old, new in self.renamed],
            "dropped": list(self.dropped),
        }

    def describe(self) -> str:
        """``vllm 0.9.1 -> vllm 0.9.2: kv_cache_usage vllm:gpu_cache_usage_perc -> vllm:kv_cache_usage_perc; ...``."""
        return f"{self.before} -> {self.after}: {self.changes()}"

    def changes(self, limit: int = 5) -> str:
        """The renamed roles and the dropped metrics (at most ``limit`` named), ``; ``-separated."""
        parts = [f"{role} {old or 'none'} -> {new or 'none'}" for role, old, new in self.renamed]
        if self.dropped:
            shown = ", ".join(self.dropped[:limit])
            more = len(self.dropped) - limit
            parts.append(f"no longer served: {shown}" + (f" and {more} more" if more > 0 else ""))
        return "; ".join(parts)


def _release(files: Mapping[str, str]) -> tuple[str, str] | None:
    fields = container_fields(files)
    name, version = fields.get("engine.name"), fields.get("engine.version")
    return (name, version) if name and version and version != "null" else None


def metric_names(before: Mapping[str, str], after: Mapping[str, str]) -> MetricNames | None:
    """The metric-name change between the files a host runs and the files it will run (None: none or unknown)."""
    old, new = _release(before), _release(after)
    if old is None or new is None or old == new:
        return None
    try:
        was, will = for_release(*old), for_release(*new)
    except (KeyError, ValueError):  # an engine or version the registry does not know (host text is untrusted)
        return None
    if was is None or will is None or was.path is None or will.path is None:
        return None
    renamed = tuple(
        (role, was.roles.get(role), will.roles.get(role))
        for role in ROLES
        if was.roles.get(role) != will.roles.get(role)
    )
    dropped = tuple(sorted(was.served - will.served))
    if not renamed and not dropped:
        return None
    return MetricNames(f"{old[0]} {old[1]}", f"{new[0]} {new[1]}", renamed, dropped)
