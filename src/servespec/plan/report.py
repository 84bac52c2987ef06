"""The text `deploy plan` prints: one line per host, the restarts (why, memory before -> after per GPU), diffs.

:func:`plan_output` is the whole of what ``deploy plan`` prints on stdout in each format:
:func:`plan_text` (one line per host), :func:`restarts_text` between it and the diffs; or
:func:`plan_markdown` then :func:`restarts_markdown` for a pull-request comment; or JSON.
Every value shown is escaped (:func:`servespec.text.printable`; ``|`` and ``<`` in markdown
cells): host names and the values of changed fields come from the hosts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from servespec.plan import Action
from servespec.plan.sizing import Download, GpuChange, GpuMemory
from servespec.text import markdown_cell, printable


def _number(value: float | int, digits: int) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:.{digits}f}"


def _pair(before: GpuMemory | None, after: GpuMemory | None, name: str, digits: int = 1) -> str:
    """``7.5 -> 15.0 (+7.5)``, ``- -> 7.5``, or one value when it is the same on both sides."""
    old = getattr(before, name) if before else None
    new = getattr(after, name) if after else None
    if old is None and new is None:
        return "-"
    if old is None or new is None:
        return f"{'-' if old is None else _number(old, digits)} -> {'-' if new is None else _number(new, digits)}"
    if round(old - new, 2) == 0:
        return _number(new, digits)
    delta = new - old
    shown = f"{delta:+,}" if isinstance(delta, int) else f"{delta:+.{digits}f}"
    return f"{_number(old, digits)} -> {_number(new, digits)} ({shown})"


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def download_text(found: Download | None) -> str:
    """``15.0 GiB (16,060,522,496 bytes): revision a -> b ...``; ``unknown`` when the size is."""
    if found is None:
        return "-"
    size = "unknown" if found.size_bytes is None else "nothing" if found.size_bytes == 0 else _gib(found.size_bytes)
    if found.size_bytes:
        size += f" ({found.size_bytes:,} bytes)"
    image = f"; image {found.image}" if found.image else ""
    return f"{size}: {found.why}{image}"


def _plan_key(gpu: GpuChange) -> tuple[Any, ...]:
    """What two GPUs must share to be shown as one: the model and both sides' numbers."""
    return (
        gpu.model,
        gpu.before.values() if gpu.before else None,
        gpu.after.values() if gpu.after else None,
    )


def _groups(gpus: Sequence[GpuChange]) -> list[tuple[str, GpuChange]]:
    """Consecutive GPUs with the same model and plan on both sides, as one label (``GPU 0-3 NVIDIA ...``)."""
    groups: list[tuple[list[int], GpuChange]] = []
    for gpu in gpus:
        if groups and gpu.index == groups[-1][0][-1] + 1 and _plan_key(gpu) == _plan_key(groups[-1][1]):
            groups[-1][0].append(gpu.index)
        else:
            groups.append(([gpu.index], gpu))
    out = []
    for indices, gpu in groups:
        span = str(indices[0]) if len(indices) == 1 else f"{indices[0]}-{indices[-1]}"
        out.append((f"GPU {span} {gpu.model}" if gpu.model != "CPU" else "CPU (host memory)", gpu))
    return out


def _memory_line(gpu: GpuChange) -> str:
    before, after = gpu.before, gpu.after
    beside = any(g is not None and g.beside_gib for g in (before, after))
    return (
        f"weights {_pair(before, after, 'weights_gib')} GiB, "
        + (f"adapters/draft {_pair(before, after, 'beside_gib')} GiB, " if beside else "")
        + f"KV cache {_pair(before, after, 'kv_cache_gib')} GiB, "
        f"{_pair(before, after, 'max_sequences')} sequences of {_pair(before, after, 'context_tokens')} tokens"
    )


def _shown(action: Action) -> bool:
    return action.restart or action.kind == "remove"


def restarts_text(actions: list[Action]) -> str:
    """Per restarting (or removed) host: why, each GPU's memory before -> after, the download ("" when none)."""
    lines: list[str] = []
    for action in (a for a in actions if _shown(a)):
        why = action.restart_reason or action.reason
        lines.append(f"{action.kind} {action.deployment} on {action.host}: {why}")
        if action.strategy is not None:
            lines.append(f"  rollout: {action.strategy.describe()}")
        memory = action.memory
        if memory is not None:
            for label, gpu in _groups(memory.gpus):
                lines.append(f"  {label}: {_memory_line(gpu)}")
            if memory.note:
                lines.append(f"  memory: {memory.note}")
        if action.download is not None and action.restart:
            lines.append(f"  download: {download_text(action.download)}")
        if action.metric_names is not None:
            lines.append(f"  metric names: {action.metric_names.describe()}")
        if action.verify:
            lines.append(f"  verify (apply --verify, after health): {action.verify}; a miss restores the host")
    if not lines:
        return ""
    return "\n".join(printable(line) for line in ["restarts:", *lines]) + "\n"


def restarts_markdown(actions: list[Action]) -> str:
    """The pull-request comment's section: one row per restarting host and GPU group ("" when none)."""
    rows: list[tuple[Any, ...]] = []
    for action in (a for a in actions if _shown(a)):
        why = action.restart_reason or action.reason
        fetched = download_text(action.download) if action.restart else "-"
        memory = action.memory
        groups = _groups(memory.gpus) if memory is not None else []
        if not groups:
            note = memory.note if memory is not None and memory.note else "-"
            rows.append((action.deployment, action.host, action.kind, note, "-", "-", "-", "-", fetched, why))
        for label, gpu in groups:
            before, after = gpu.before, gpu.after
            rows.append(
                (
                    action.deployment,
                    action.host,
                    action.kind,
                    label,
                    _pair(before, after, "weights_gib"),
                    _pair(before, after, "kv_cache_gib"),
                    _pair(before, after, "max_sequences"),
                    _pair(before, after, "context_tokens"),
                    fetched,
                    why + (f" ({memory.note})" if memory is not None and memory.note else ""),
                )
            )
    if not rows:
        return ""
    lines = [
        "",
        "#### Restarts: memory before -> after, downloads",
        "",
        "| deployment | host | action | GPU | weights GiB | KV cache GiB | sequences | context | download | why |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(markdown_cell(value) for value in row) + " |" for row in rows]
    sections = (strategy_markdown(actions), metric_names_markdown(actions), verify_markdown(actions))
    return "\n".join(lines) + "\n" + "".join(sections)


def verify_markdown(actions: list[Action]) -> str:
    """The hosts ``apply --verify`` benchmarks after health, and against what ("" when none)."""
    verified = [a for a in actions if a.verify]
    if not verified:
        return ""
    lines = ["", "#### apply --verify: benchmarked after health (a miss restores the host)", ""]
    lines += ["| deployment | host | slo |", "|---|---|---|"]
    lines += ["| " + " | ".join(markdown_cell(v) for v in (a.deployment, a.host, a.verify)) + " |" for a in verified]
    return "\n".join(lines) + "\n"


def metric_names_markdown(actions: list[Action]) -> str:
    """One row per host whose update changes metric names that dashboards and alerts query ("" when none)."""
    changed = [(a, a.metric_names) for a in actions if a.metric_names is not None]
    if not changed:
        return ""
    lines = [
        "",
        "#### Metric names that change (dashboards and alerts querying the old names go blank)",
        "",
        "| deployment | host | release | change |",
        "|---|---|---|---|",
    ]
    for action, names in changed:
        cells = (action.deployment, action.host, f"{names.before} -> {names.after}", names.changes())
        lines.append("| " + " | ".join(markdown_cell(value) for value in cells) + " |")
    return "\n".join(lines) + "\n"


def strategy_markdown(actions: list[Action]) -> str:
    """``rollout.strategy: auto``: one row per restarting host, surge or in place and why ("" when none)."""
    chosen = [(a, a.strategy) for a in actions if a.strategy is not None]
    if not chosen:
        return ""
    lines = [
        "",
        "#### Rollout: surge or in place (strategy auto)",
        "",
        "| deployment | host | path | why |",
        "|---|---|---|---|",
    ]
    for action, strategy in chosen:
        path = "surge" if strategy.path == "surge" else "in place"
        why = f"{strategy.reason}; {strategy.replicas_text()}" if strategy.replicas else strategy.reason
        cells = (action.deployment, action.host, path, why)
        lines.append("| " + " | ".join(markdown_cell(value) for value in cells) + " |")
    return "\n".join(lines) + "\n"


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
        lines.append("| " + " | ".join(markdown_cell(value) for value in cells) + " |")
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
                "| " + " | ".join(markdown_cell(v) for v in (row.deployment.name, row.host.name, row.gpu_name)) + " | "
                f"{plan.weights_gib:.1f} | {plan.kv_cache_gib:.1f} | {plan.kv_tokens:,} | {plan.max_sequences:.1f} |"
            )
    return "\n".join(lines) + "\n"


def plan_output(actions: list[Action], fmt: str, estimates: Callable[[], list[Any]]) -> str:
    """What `deploy plan` prints on stdout in ``fmt`` (text, json, markdown), ending with a newline.

    ``estimates`` gives the memory plan per GPU (:func:`servespec.estimate.estimates`), which
    only the markdown comment shows.
    """
    if fmt == "json":
        return json.dumps({"version": 1, "actions": [a.to_json() for a in actions]}, indent=2) + "\n"
    if fmt == "markdown":
        return plan_markdown(actions, estimates()) + restarts_markdown(actions)
    # The restarts go between the one line per host and the diffs.
    head, whole = plan_text(actions, diffs=False), plan_text(actions)
    return head + restarts_text(actions) + whole[len(head) :]
