"""Show a rollout as it happens (a live per-host view, or JSON lines) and report its outcome."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from servespec.plan import Action
from servespec.report import cell
from servespec.text import printable


def _markdown(text: object) -> str:
    """A markdown table cell: escaped, with ``|`` (a new column) and ``<`` (HTML) made literal."""
    return printable(str(text)).replace("|", "\\|").replace("<", "&lt;")


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


def _line(text: str) -> str:
    """One printed line, escaped; a line GitHub would run as a workflow command (``::`` after
    leading spaces, as a diff's context line can be) has its first colon written as ``\\x3a``."""
    text = printable(text)
    stripped = text.lstrip()
    if stripped.startswith("::"):
        return text[: len(text) - len(stripped)] + "\\x3a" + stripped[1:]
    return text


def _diff_lines(diff: str) -> list[str]:
    """A unified diff's lines, escaped; a line break inside a file name the host reported is escaped too.

    Every line of a diff starts with its marker (`` ``, ``+``, ``-``, ``@``, ``\\``); a piece
    that does not was cut from the line before by a line break in a name, so it is joined back.
    """
    lines: list[str] = []
    for piece in diff.rstrip("\n").split("\n"):
        if lines and not piece.startswith((" ", "+", "-", "@", "\\")):
            lines[-1] += "\\n" + printable(piece)
        else:
            lines.append(_line(piece))
    return lines


def plan_text(actions: list[Action], *, diffs: bool = True) -> str:
    """The plan as a person reads it: one line per host, then the diffs."""
    lines = []
    for action in actions:
        revision = f"revision {action.current}" if action.current is not None else "nothing deployed"
        restart = ", restarts the engine" if action.restart else ""
        lines.append(
            printable(f"{action.kind:9} {action.deployment} on {action.host} ({revision}): {action.reason}{restart}")
        )
    if diffs:
        for action in actions:
            for text in action.diffs.values():
                lines += _diff_lines(text)
    return "\n".join(lines) + "\n"


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


def plan_markdown(actions: list[Action], estimates: list[Any]) -> str:
    """A short pull-request comment: one row per host, then the memory plan per GPU."""
    counts: dict[str, int] = {}
    for action in actions:
        counts[action.kind] = counts.get(action.kind, 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "nothing to do"
    lines = [
        "### servespec plan",
        "",
        f"**{summary}**",
        "",
        "| deployment | host | action | revision | why |",
        "|---|---|---|---|---|",
    ]
    for action in actions:
        revision = str(action.current) if action.current is not None else "-"
        files = f" ({', '.join(sorted(action.diffs))})" if action.diffs else ""
        cells = (action.deployment, action.host, action.kind, revision, action.reason + files)
        lines.append("| " + " | ".join(_markdown(value) for value in cells) + " |")
    rows = [row for row in estimates if row.plan is not None]
    if rows:
        lines += [
            "",
            "#### Memory per GPU",
            "",
            "| deployment | host | GPU | weights GiB | KV cache GiB | KV tokens | full-length sequences |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            plan = row.plan
            lines.append(
                f"| {_markdown(row.deployment.name)} | {_markdown(row.host.name)} | {_markdown(row.gpu_name)} | "
                f"{plan.weights_gib:.1f} | {plan.kv_cache_gib:.1f} | {plan.kv_tokens:,} | {plan.max_sequences:.1f} |"
            )
    return "\n".join(lines) + "\n"
