"""``deploy render --monitoring DIR``: a Prometheus scrape configuration and Grafana dashboards per release family.

Written into DIR:

- ``prometheus.yml``: one scrape job per deployment (``servespec-<deployment>``) on the path the
  release serves its metrics on, with targets from ``targets/<deployment>.json`` (file_sd);
  a deployment whose engine serves no metrics (Ollama), or whose metrics are off (llama.cpp
  without ``engine.options.metrics``), gets no job, and the README says why.
- ``targets/<deployment>.json``: every replica's serving host (the replica leader), labelled
  ``deployment``, ``host``, ``replica``, ``engine``, ``release``, ``revision`` (the content hash
  the rendered files and the container's ``servespec.revision`` label carry).
- ``dashboards/<engine>-<family>.json``: one Grafana dashboard (grafana-foundation-sdk) per set of
  releases that name every role's metric alike; each panel queries only the metric the release
  names for its role (:mod:`servespec.metrics.facts`), so a dashboard never asks for a name the
  release lacks, and a role it has no metric for has no panel.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from servespec.engines.kit import host_and_port
from servespec.metrics.facts import Metric, ReleaseMetrics, for_release
from servespec.render import Rendered
from servespec.render.common import content_hash, targets

BY = "deployment, host, replica"


def _job(deployment: str) -> str:
    return f"servespec-{deployment}"


def _sample(metric: Metric, suffix: str = "") -> str:
    """The series name Prometheus stores for the metric (the sample as the engine writes it)."""
    return next((s for s in metric.samples if s.endswith(suffix)), metric.samples[0])


def panels(facts: ReleaseMetrics) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(title, unit, [(legend, PromQL)]) for every panel the release has metrics for."""
    out: list[tuple[str, str, list[tuple[str, str]]]] = []

    def gauge(role: str, how: str = "sum") -> list[tuple[str, str]]:
        metric = facts.metric(role)
        return [(role, f"{how} by ({BY}) ({_sample(metric)})")] if metric else []

    def rate(role: str) -> list[tuple[str, str]]:
        metric = facts.metric(role)
        if metric is None:
            return []
        series = _sample(metric, "_sum") if metric.type in ("histogram", "summary") else _sample(metric)
        return [(role, f"sum by ({BY}) (rate({series}[$__rate_interval]))")]

    def quantiles(role: str) -> list[tuple[str, str]]:
        metric = facts.metric(role)
        if metric is None or metric.type != "histogram":
            return []
        bucket = _sample(metric, "_bucket")
        inner = f"sum by (le, {BY}) (rate({bucket}[$__rate_interval]))"
        return [(f"{role} p{int(q * 100)}", f"histogram_quantile({q}, {inner})") for q in (0.5, 0.95)]

    candidates = [
        ("KV-cache use", "percentunit", gauge("kv_cache_usage", "avg")),
        ("Queue: running and waiting requests", "short", gauge("requests_running") + gauge("requests_waiting")),
        ("Throughput (tokens/s)", "short", rate("prompt_tokens") + rate("generation_tokens")),
        ("Time to first token", "s", quantiles("ttft")),
        ("Inter-token latency", "s", quantiles("itl")),
        ("End-to-end latency", "s", quantiles("e2e_latency")),
        ("Preemptions (/s)", "short", rate("preemptions")),
    ]
    out = [c for c in candidates if c[2]]
    errors = [("scrape failing", f'1 - max by ({BY}) (up{{job=~"servespec-.+"}})'), *rate("requests_failed")]
    out.append(("Errors", "short", errors))
    return out


def dashboard(engine: str, family: list[ReleaseMetrics]) -> dict[str, Any]:
    """The Grafana dashboard (as JSON) of releases that share every role's metric."""
    from grafana_foundation_sdk.builders.dashboard import Dashboard
    from grafana_foundation_sdk.builders.prometheus import Dataquery
    from grafana_foundation_sdk.builders.timeseries import Panel
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    facts = family[0]
    names = ", ".join(sorted({r.version for r in family}))
    board = Dashboard(f"servespec {engine} ({names})").uid(_uid(engine, facts)).tags(["servespec", engine])
    for title, unit, queries in panels(facts):
        panel = Panel().title(title).unit(unit)
        for ref, (legend, expr) in zip("ABCDEFGH", queries, strict=False):
            panel = panel.with_target(
                Dataquery().expr(expr).legend_format(f"{{{{host}}}} r{{{{replica}}}} {legend}").ref_id(ref)
            )
        board = board.with_panel(panel)
    data: dict[str, Any] = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    return data


def _uid(engine: str, facts: ReleaseMetrics) -> str:
    return f"servespec-{engine.replace('.', '')}-{hashlib.sha256(facts.family.encode()).hexdigest()[:8]}"


def render_monitoring(fleet: Any) -> Rendered:
    """The monitoring files of every deployment of the fleet (deterministic for the same specs)."""
    from ruamel.yaml import YAML

    out = Rendered()
    jobs: list[dict[str, Any]] = []
    notes: list[str] = []
    families: dict[tuple[str, str], dict[str, ReleaseMetrics]] = {}
    for deployment in fleet.deployments:
        engine = deployment.spec.engine
        facts = for_release(engine.name, str(engine.version))
        why = _why_not(engine, facts)
        if why or facts is None:
            notes.append(f"- {deployment.name}: not scraped: {why}")
            continue
        rows = []
        for target in targets(deployment):
            if target.rank != 0:
                continue  # only a replica's leader serves HTTP
            labels = {"deployment": deployment.name, "host": target.host.name, "replica": str(target.replica)}
            labels |= {"engine": engine.name, "release": facts.version, "revision": content_hash(target)}
            port = facts.port(engine.options, deployment.spec.serving.port) or deployment.spec.serving.port
            address = host_and_port(target.host.address, port)
            rows.append({"targets": [address], "labels": labels})
        out.files[f"targets/{deployment.name}.json"] = json.dumps(rows, indent=2, sort_keys=True) + "\n"
        jobs.append(_scrape_job(deployment.name, facts))
        families.setdefault((engine.name, facts.family), {})[facts.version] = facts
    config = {"global": {"scrape_interval": "15s", "evaluation_interval": "15s"}, "scrape_configs": jobs}
    out.files["prometheus.yml"] = _yaml(YAML, config)
    for (engine_name, _), releases in sorted(families.items()):
        family = [releases[v] for v in sorted(releases)]
        board = dashboard(engine_name, family)
        out.files[f"dashboards/{board['uid']}.json"] = json.dumps(board, indent=2, sort_keys=True) + "\n"
    out.files["README.md"] = _readme(notes)
    return out


def _why_not(engine: Any, facts: ReleaseMetrics | None) -> str:
    if facts is None:
        return f"servespec has no metric names for {engine.name} {engine.version}"
    return facts.off(engine.options).removesuffix(" and apply")


def _scrape_job(name: str, facts: ReleaseMetrics) -> dict[str, Any]:
    return {
        "job_name": _job(name),
        "metrics_path": facts.path,
        "file_sd_configs": [{"files": [f"targets/{name}.json"]}],
    }


def _yaml(factory: Any, data: dict[str, Any]) -> str:
    import io

    yaml = factory(typ="safe", pure=True)
    yaml.default_flow_style = False
    stream = io.StringIO()
    yaml.dump(data, stream)
    return "# Generated by deploy render --monitoring; file_sd targets in targets/.\n" + stream.getvalue()


def _readme(notes: list[str]) -> str:
    lines = [
        "# Monitoring (generated by `deploy render --monitoring`)",
        "",
        "Run Prometheus from this folder (`prometheus --config.file=prometheus.yml`): the file_sd target",
        "files are relative to it. Import `dashboards/*.json` into Grafana with a Prometheus data source.",
        "A deployment whose serving.api_key is set needs an `authorization` block with its key in its job.",
    ]
    return "\n".join([*lines, *([""] if notes else []), *notes]) + "\n"
