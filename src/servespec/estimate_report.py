"""Print `deploy estimate`: the memory plan per GPU as a table (text) or JSON, and the findings it shows."""

from __future__ import annotations

import json
from typing import Any

import click

from servespec.estimate import HostEstimate, context_line, shown
from servespec.findings import Finding, Severity
from servespec.report import cell
from servespec.text import printable


def errors_shown(findings: list[Finding]) -> bool:
    """Whether one of the findings an estimate shows is an error (the command then exits 1)."""
    return any(f.severity is Severity.ERROR for f in shown(findings))


def print_estimates(fmt: str, rows: list[HostEstimate], findings: list[Finding]) -> None:
    """The estimate in ``fmt``: JSON on stdout; or the table on stdout and the findings on stderr."""
    if fmt == "json":
        body = {
            "version": 1,
            "estimates": [row.to_json() for row in rows],
            "findings": [f.to_json() for f in shown(findings)],
        }
        click.echo(json.dumps(body, indent=2))
    else:
        print_estimate_table(rows)
        for finding in shown(findings):
            click.echo(finding.to_text(), err=True)


def print_estimate_table(rows: list[Any]) -> None:
    """The memory plan per GPU as a rich table, then the context each plan assumes (escaped)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Memory plan per GPU (GiB)", show_lines=False)
    for column in (
        "deployment",
        "host",
        "engine",
        "GPU",
        "total",
        "weights",
        "overhead",
        "KV cache",
        "KV tokens",
        "max seqs",
    ):
        table.add_column(column, justify="right" if column not in ("deployment", "host", "engine", "GPU") else "left")
    for row in rows:
        spec = row.deployment.spec
        engine = f"{spec.engine.name} {spec.engine.version}"
        gpu = f"{row.gpu_name} {row.gpu_indices}" if row.gpu_indices else row.gpu_name
        plan = row.plan
        if plan is None:
            table.add_row(cell(row.deployment.name), cell(row.host.name), cell(engine), cell(gpu), *["?"] * 6)
            continue
        values = (plan.total_gib, plan.weights_gib, plan.overhead_gib, plan.kv_cache_gib)
        table.add_row(
            cell(row.deployment.name),
            cell(row.host.name),
            cell(engine),
            cell(gpu),
            *(f"{v:.1f}" for v in values),
            f"{plan.kv_tokens:,}",
            f"{plan.max_sequences:.1f}",
        )
    Console(width=140).print(table)
    for row in rows:  # the context each plan assumes, and why (the spec's, or the engine's default)
        line = context_line(row)
        if line:
            click.echo(printable(line))
