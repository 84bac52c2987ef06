"""``deploy verify``: what each host runs, benchmarked against the spec's ``slo`` from the host itself.

The client is the role's ``servespec_bench`` module (module_utils/servespec_bench.py), run over SSH on
every placed host beside the engine: the figures hold no controller-to-host network latency, the host
needs nothing installed beyond the Python every module uses, and the token counts are the engine's own
(its tokenizer is the staged model's). ``apply --verify`` runs the same module after health and the smoke
test, with a miss failing the host (docs/verify.md). Nothing here restarts or changes anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import servespec.rollout.inventory as inventory
from servespec.knowledge import resolve
from servespec.rollout.runner import Report
from servespec.spec.fleet import DeploymentDoc, Fleet
from servespec.text import markdown_cell, printable


def slo_payload(deployment: DeploymentDoc) -> str:
    """The spec's slo as the bench module reads it: workload, targets, and the dataset's prompts (JSON)."""
    slo = deployment.spec.slo
    if slo is None:
        return ""
    workload = slo.workload.model_dump(exclude_none=True, exclude={"dataset"})
    payload: dict[str, Any] = {"workload": workload, "targets": slo.targets.model_dump(exclude_none=True)}
    if deployment.slo_prompts:
        payload["prompts"] = [{"prompt": p.prompt, "output_tokens": p.output_tokens} for p in deployment.slo_prompts]
    return json.dumps(payload, sort_keys=True)


@dataclass
class VerifyRow:
    """One host's run against the slo: its figures and one check per target, or why there is none."""

    deployment: str
    host: str
    revision: int | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    skipped: str = ""

    @property
    def ok(self) -> bool:
        """Every target met (a skipped worker host is fine; an error is not)."""
        return not self.error and all(check.get("ok") is True for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for ``--format json``."""
        return {
            "deployment": self.deployment,
            "host": self.host,
            "revision": self.revision,
            "ok": self.ok,
            "checks": self.checks,
            "figures": self.figures,
            "error": self.error or None,
            "skipped": self.skipped or None,
        }


def _row(deployment: str, host: str, result: Any) -> VerifyRow:
    if result is None or not result.touched:
        return VerifyRow(deployment, host, error="the host did not run the benchmark")
    report = result.reports.get(Report.VERIFIED)
    if not result.ok or not isinstance(report, dict):
        return VerifyRow(deployment, host, error=result.error or "the host returned no benchmark report")
    number = report.get("number")
    figures, checks = report.get("figures"), report.get("checks")
    return VerifyRow(
        deployment,
        host,
        number if isinstance(number, int) and not isinstance(number, bool) else None,
        figures if isinstance(figures, dict) else {},
        [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else [],
        skipped=str(report.get("skipped") or ""),
    )


def verify(fleet: Fleet) -> list[VerifyRow]:
    """Benchmark every placed host of every deployment with an slo (one run per deployment, hosts at once)."""
    rows: list[VerifyRow] = []
    for deployment in fleet.deployments:
        payload = slo_payload(deployment)
        if not payload:
            continue
        variables = {"servespec_deployment": deployment.name, "servespec_verify": payload}
        hosts = {view.name: (view, dict(variables)) for view in resolve.resolved(deployment).hosts}
        if not hosts:
            continue
        result = inventory.run_on("verify.yml", hosts, {}, None)
        rows += [_row(deployment.name, name, result.hosts.get(name)) for name in hosts]
    return rows


_SENSE = {"output_tokens_per_s": ">=", "requests_per_s": ">=", "output_tokens": ">="}


def _verdict(row: VerifyRow) -> str:
    if row.error:
        return "ERROR"
    if row.skipped:
        return "SKIPPED"
    return "PASS" if row.ok else "MISS"


def _check_text(check: dict[str, Any]) -> tuple[str, str, str, str]:
    name = str(check.get("target"))
    measured = check.get("measured")
    return (
        name,
        f"{_SENSE.get(name, '<=')} {check.get('limit')}",
        "-" if measured is None else str(measured),
        "met" if check.get("ok") is True else "missed",
    )


_FIGURES = ("requests", "completed", "failed", "seconds", "mean_prompt_tokens", "mean_output_tokens")


def _markdown(rows: list[VerifyRow]) -> str:
    lines = [
        "### servespec verify",
        "",
        "| deployment | host | revision | target | limit | measured | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        head = (row.deployment, row.host, "-" if row.revision is None else str(row.revision))
        why = f": {row.error or row.skipped}" if row.error or row.skipped else ""
        cells = [(*head, *_check_text(check)) for check in row.checks] or [(*head, "-", "-", "-", _verdict(row) + why)]
        lines += ["| " + " | ".join(markdown_cell(v) for v in values) + " |" for values in cells]
    return "\n".join(lines) + "\n"


def _text(row: VerifyRow) -> list[str]:
    revision = "" if row.revision is None else f" (revision {row.revision})"
    out = [f"{_verdict(row)} {row.deployment} on {row.host}{revision}"]
    for check in row.checks:
        name, limit, measured, result = _check_text(check)
        out.append(f"  {name} {measured} (target {limit}): {result}")
    if row.figures:
        shown = ", ".join(f"{key} {row.figures[key]}" for key in _FIGURES if row.figures.get(key) is not None)
        out.append(f"  run: {shown}")
        errors = row.figures.get("errors")
        if isinstance(errors, list) and errors:
            out.append(f"  errors: {'; '.join(str(e) for e in errors)}")
    if row.error or row.skipped:
        out.append(f"  {row.error or row.skipped}")
    return [printable(line) for line in out]


def verify_output(rows: list[VerifyRow], fmt: str) -> str:
    """What ``deploy verify`` prints in ``fmt`` (text, json, markdown); host values escaped."""
    if fmt == "json":
        return json.dumps({"version": 1, "hosts": [row.to_json() for row in rows]}, indent=2) + "\n"
    if fmt == "markdown":
        return _markdown(rows)
    return "\n".join(line for row in rows for line in _text(row)) + "\n"
