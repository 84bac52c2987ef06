"""``deploy status --metrics``: read each host's engine ``/metrics`` twice and show the view between the looks.

The controller reads the same endpoint ``deploy status`` prints (``http://<address>:<serving.port>``)
plus the path the release serves its metrics on; the spec's ``serving.api_key`` (``from_env``) is
sent as a bearer token where set, never printed. A release whose metrics need an option
(llama.cpp ``--metrics``: ``engine.options.metrics: true``) and a spec without it, an engine that
serves no metrics (Ollama: its ``GET /api/ps`` lists loaded models instead), or an engine servespec
has no metric facts for are said per row, not guessed at.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from servespec.metrics.facts import ReleaseMetrics, for_release
from servespec.metrics.view import MetricsTextError, Snapshot, View, parse, view

Fetch = Callable[[str, dict[str, str]], str]
LIMIT = 8 << 20
"""The most bytes of one /metrics answer read (vLLM's with many adapters is well under 1 MiB)."""


@dataclass(frozen=True)
class MetricsRow:
    """One host (and replica) of ``deploy status --metrics``."""

    deployment: str
    host: str
    replica: int
    engine: str
    release: str | None
    """The release whose metric names were used (the nearest catalogued one), or None."""
    view: View | None = None
    note: str = ""
    """Why there are no numbers (metrics off, none served, unreachable), or ""."""
    error: bool = False

    def to_json(self) -> dict[str, Any]:
        """The row as JSON."""
        data = {"deployment": self.deployment, "host": self.host, "replica": self.replica, "engine": self.engine}
        data |= {"release": self.release, "note": self.note, "error": self.error}
        return data | (self.view.to_json() if self.view else {"values": {}, "interval_s": None, "missing": []})


def http_get(url: str, headers: dict[str, str]) -> str:
    """GET ``url`` (http only) and return its text; an HTTP or network error raises OSError."""
    if not url.startswith("http://") and not url.startswith("https://"):
        raise OSError(f"not an http URL: {url[:60]}")
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as reply:
        return bytes(reply.read(LIMIT)).decode("utf-8", "replace")


def _headers(deployment: Any) -> dict[str, str]:
    key = deployment.spec.serving.api_key
    value = os.environ.get(key.from_env) if key is not None and key.from_env else None
    return {"Authorization": f"Bearer {value}"} if value else {}


def _why_none(deployment: Any, facts: ReleaseMetrics | None) -> str:
    engine = deployment.spec.engine
    if facts is None:
        return f"servespec has no metric names for {engine.name} {engine.version}"
    return facts.off(engine.options)


def _url(endpoint: str, facts: ReleaseMetrics, options: dict[str, Any]) -> str:
    """The metrics URL: the serving endpoint, on the release's metrics port where it has its own."""
    if not facts.path:
        return ""
    port = facts.port(options, 0)
    if facts.port_option and port:
        endpoint = f"{endpoint.rsplit(':', 1)[0]}:{port}"
    return f"{endpoint}{facts.path}"


Plan = tuple[MetricsRow, str, dict[str, str], ReleaseMetrics | None]
"""One host's row as far as known before looking, the URL to look at ("" when none), headers, metric facts."""


def _plans(fleet: Any, rows: list[Any]) -> list[Plan]:
    by_name = {d.name: d for d in fleet.deployments}
    plans: list[Plan] = []
    for row in rows:
        deployment = by_name[row.deployment]
        engine = deployment.spec.engine
        facts = for_release(engine.name, str(engine.version))
        note = _why_none(deployment, facts) if row.reachable else "host unreachable"
        base = MetricsRow(row.deployment, row.host, 0, engine.name, facts.version if facts else None, note=note)
        url = _url(row.endpoint, facts, engine.options) if facts else ""
        plans.append((base, url if not note else "", _headers(deployment), facts))
    return plans


def _look_all(plans: list[Plan], fetch: Fetch) -> dict[int, Snapshot | str]:
    return {i: _look(fetch, url, headers) for i, (_, url, headers, _) in enumerate(plans) if url}


def _rows(plans: list[Plan], first: dict[int, Snapshot | str], second: dict[int, Snapshot | str]) -> list[MetricsRow]:
    out = []
    for i, (base, url, _, facts) in enumerate(plans):
        if not url or facts is None:
            out.append(base)
            continue
        before, now = first[i], second[i]
        if isinstance(now, str) or isinstance(before, str):
            out.append(_with(base, note=str(now if isinstance(now, str) else before), error=True))
        else:
            out.append(_with(base, view=view(facts, now, before)))
    return out


def read(fleet: Any, rows: list[Any], interval: float = 2.0, fetch: Fetch = http_get) -> list[MetricsRow]:
    """Two looks at every reachable host's metrics, ``interval`` seconds apart, as one row per host."""
    plans = _plans(fleet, rows)
    first = _look_all(plans, fetch)
    if first:
        time.sleep(interval)
    return _rows(plans, first, _look_all(plans, fetch))


def watch(
    fleet: Any,
    rows: list[Any],
    show: Callable[[list[MetricsRow]], None],
    interval: float = 2.0,
    rounds: int | None = None,
    fetch: Fetch = http_get,
) -> None:
    """``deploy top``: every ``interval`` seconds, ``show`` the view since the previous look; Ctrl-C ends it."""
    plans = _plans(fleet, rows)
    before, done = _look_all(plans, fetch), 0
    try:
        while rounds is None or done < rounds:
            time.sleep(interval)
            now = _look_all(plans, fetch)
            show(_rows(plans, before, now))
            before, done = now, done + 1
    except KeyboardInterrupt:
        return


def _look(fetch: Fetch, url: str, headers: dict[str, str]) -> Snapshot | str:
    """One parsed look, or what went wrong as a sentence."""
    try:
        return parse(fetch(url, headers), at=time.monotonic())
    except urllib.error.HTTPError as err:
        return f"{url}: HTTP {err.code}"
    except OSError as err:
        return f"{url}: {getattr(err, 'reason', err)}"
    except MetricsTextError as err:
        return f"{url}: {err}"


def _with(row: MetricsRow, **changes: Any) -> MetricsRow:
    return replace(row, **changes)
