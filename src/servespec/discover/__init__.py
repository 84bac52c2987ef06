"""Collect each host's hardware facts: parsers of command outputs, facts files, and what stops `deploy discover`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from servespec.findings import Severity

if TYPE_CHECKING:
    from servespec.findings import Finding
    from servespec.spec.fleet import Fleet


def inventory_errors(fleet: Fleet) -> list[Finding]:
    """The errors that stop discover: those in the inventory file itself, but a missing facts file (REF002).

    A missing facts file, or errors inside one, are what discover is for.
    """
    return [
        f for f in fleet.findings if f.severity is Severity.ERROR and f.rule != "REF002" and f.file == fleet.files[0]
    ]


def outputs_problem(outputs: Path) -> str | None:
    """Why ``outputs`` is no folder of saved outputs (one sub-folder per host), or None when it is one."""
    from servespec.text import printable

    if not outputs.is_dir() or not any(p.is_dir() for p in outputs.iterdir()):
        return f"{printable(str(outputs))}: expected one sub-folder of saved outputs per host"
    return None
