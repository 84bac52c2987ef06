"""Print the rollout's commands: a rollout as it happens (a live per-host view, or JSON lines), its outcome, status.

Also the confirmation before apply and the hosts a plan could not read.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from servespec.plan.report import plan_text
from servespec.report import cell
from servespec.text import printable

if TYPE_CHECKING:
    from servespec.plan import Action
    from servespec.rollout.state import HostOutcome, Status

_INTERESTING = {"runner_on_start", "runner_on_ok", "runner_on_failed", "runner_on_unreachable", "runner_on_skipped"}


def json_events() -> Callable[[dict[str, Any]], None]:
    """An event handler printing one JSON object per task event (for CI logs); no task output."""

    def handle(event: dict[str, Any]) -> None:
        if event.get("event") not in _INTERESTING:
            return
        data = event.get("event_data") or {}
        record = {
            "event": event["event"].removeprefix("runner_on_"),
            "host": data.get("host"),
            "task": data.get("task"),
            "play": data.get("play"),
        }
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()

    return handle


class LiveView:
    """A rich table of hosts and the task each is on, refreshed from runner events."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self._rows: dict[str, tuple[str, str]] = {}
        self._live = Live(self._table(), console=Console(stderr=True), refresh_per_second=4, transient=False)

    def _table(self) -> Any:
        from rich.table import Table

        table = Table(title="rollout", show_header=True)
        table.add_column("host")
        table.add_column("state")
        table.add_column("task")
        for host, (state, task) in sorted(self._rows.items()):
            table.add_row(cell(host), cell(state), cell(task))
        return table

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(*exc)  # type: ignore[arg-type]

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("event") not in _INTERESTING:
            return
        data = event.get("event_data") or {}
        host = data.get("host")
        if not host:
            return
        state = {"runner_on_start": "running", "runner_on_ok": "ok", "runner_on_skipped": "ok"}.get(
            event["event"], "failed"
        )
        self._rows[host] = (state, str(data.get("task", "")))
        self._live.update(self._table())


def outcome_table(outcomes: list[Any], title: str = "apply") -> None:
    """Print the per-host result table (host, old -> new revision, result, last engine log lines)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("deployment", "host", "revision", "result", "detail"):
        table.add_column(column)
    for row in outcomes:
        revision = (
            "-"
            if row.old is None and row.new is None
            else f"{row.old if row.old is not None else '-'} -> {row.new if row.new is not None else '-'}"
        )
        detail = row.error
        if row.logs:
            detail += "\n" + "\n".join(row.logs[-5:])
        table.add_row(cell(row.deployment), cell(row.host), cell(revision), cell(row.result), _detail(detail))
    Console(stderr=True, width=160).print(table)


def _detail(text: str) -> Any:
    """The detail cell: one escaped line per line of the error and the log tail."""
    from rich.text import Text

    return Text("\n").join(cell(line) for line in text.split("\n"))


@contextmanager
def shown_events(fmt: str) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """The rollout's event handler while it runs: a live view (text on a terminal), JSON lines (json), else none."""
    if fmt == "text" and sys.stderr.isatty():
        with LiveView() as view:
            yield view
    else:
        yield json_events() if fmt == "json" else None


def confirm_plan(fmt: str, *, check: bool, yes: bool) -> Callable[[list[Action]], bool]:
    """Apply's confirmation: show the plan (text), then ask before changing hosts (unless ``yes``; never ``check``)."""

    def confirm(actions: list[Action]) -> bool:
        if fmt == "text":
            click.echo(plan_text(actions), nl=False, err=True)
        if check:
            click.echo("check mode: nothing was changed", err=True)
            return False
        changes = [a for a in actions if a.kind in ("create", "update")]
        if not changes:
            return False
        return yes or click.confirm(f"apply {len(changes)} change(s)?", err=True)

    return confirm


def print_outcomes(outcomes: list[Any], fmt: str) -> None:
    """Apply's per-host results: one JSON object (json), else :func:`outcome_table`."""
    if fmt == "json":
        click.echo(json.dumps({"version": 1, "hosts": [o.__dict__ for o in outcomes]}))
    else:
        outcome_table(outcomes)


def print_status(rows: list[Status], fmt: str) -> None:
    """`deploy status`: the rows as JSON or a table on stdout, then each row's error on stderr."""
    if fmt == "json":
        click.echo(json.dumps({"version": 1, "hosts": [row.to_json() for row in rows]}, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="status")
        many = any(row.replicas for row in rows)
        for column in (
            "deployment",
            "host",
            "revision",
            "healthy",
            "since",
            "endpoint",
            *(("replicas",) if many else ()),
        ):
            table.add_column(column)
        for row in rows:
            health = "unreachable" if not row.reachable else "error" if row.error else "yes" if row.healthy else "no"
            cells: tuple[Any, ...] = (
                row.deployment,
                row.host,
                row.revision or "-",
                health,
                row.since or "-",
                row.endpoint,
            )
            if many:
                cells += ("\n".join(replica_line(replica) for replica in row.replicas) or "-",)
            table.add_row(*(cell(value) for value in cells))
        Console(width=160).print(table)
    for row in rows:
        if row.error:
            click.echo(f"{row.deployment} on {row.host}: {printable(row.error)}", err=True)


def replica_line(replica: dict[str, Any]) -> str:
    """One replica of ``deploy status``: ``r0 running rev abc123 port 18080 healthy``."""
    health = "healthy" if replica.get("healthy") else "not healthy"
    port = f" port {replica['port']}" if replica.get("port") else ""
    return f"r{replica['index']} {replica.get('status')} rev {replica.get('revision') or '-'}{port} {health}"


def print_unread(unread: list[HostOutcome]) -> None:
    """The hosts a plan could not read (it has no action for them: incomplete, not "nothing to do")."""
    for row in unread:
        click.echo(f"{row.deployment} on {row.host}: {row.result}, not planned ({printable(row.error)})", err=True)
    if unread:
        click.echo(f"plan incomplete: {len(unread)} host(s) could not be read", err=True)
