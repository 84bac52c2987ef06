"""Printing ``deploy status --metrics``: a table, or JSON (``{"version": 1, "hosts": [...]}``)."""

from __future__ import annotations

import json

import click

from servespec.metrics.live import MetricsRow
from servespec.text import printable

COLUMNS = (
    ("kv_cache_usage", "KV %", 100.0),
    ("requests_running", "running", 1.0),
    ("requests_waiting", "waiting", 1.0),
    ("prompt_tokens_per_s", "prompt tok/s", 1.0),
    ("generation_tokens_per_s", "gen tok/s", 1.0),
    ("ttft_p50_ms", "TTFT p50 ms", 1.0),
    ("ttft_p95_ms", "TTFT p95 ms", 1.0),
    ("itl_p95_ms", "ITL p95 ms", 1.0),
    ("preemptions", "preempted", 1.0),
)


def _cell(value: float | None, scale: float) -> str:
    return "-" if value is None else f"{value * scale:.1f}"


def print_metrics(rows: list[MetricsRow], fmt: str) -> None:
    """The rows as JSON or a table on stdout; a row without numbers says why (on stderr for errors)."""
    if fmt == "json":
        click.echo(json.dumps({"version": 1, "hosts": [row.to_json() for row in rows]}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="metrics (between two looks; '-': none in this interval, or the release has no such metric)")
    for column in ("deployment", "host", "replica", "engine", *(title for _, title, _ in COLUMNS)):
        table.add_column(column)
    for row in rows:
        values = row.view.values if row.view else {}
        cells = [_cell(values.get(key), scale) for key, _, scale in COLUMNS]
        release = f"{row.engine} {row.release}" if row.release else row.engine
        table.add_row(*(printable(v) for v in (row.deployment, row.host, str(row.replica), release, *cells)))
    Console(width=200).print(table)
    for row in rows:
        if row.note:
            click.echo(f"{row.deployment} on {row.host}: {printable(row.note)}", err=True)


def show_refreshing(rows: list[MetricsRow]) -> None:
    """``deploy top``: clear the terminal (when it is one) and print the table again."""
    import sys

    if sys.stdout.isatty():
        click.clear()
    print_metrics(rows, "table")
