"""``deploy discover``: collect every inventory host's outputs over Ansible and write facts files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import servespec.rollout.inventory as inventory
from servespec.rollout.runner import EventHandler, Report
from servespec.spec.fleet import HostView, InventoryDoc

MAX_OUTPUT_CHARS = 8 << 20
"""Largest command output kept from a host (lspci -vvv of a large server is about a megabyte)."""


def discover(inventory_doc: InventoryDoc, destination: Path, *, on_event: EventHandler | None = None) -> dict[str, str]:
    """Collect every inventory host's outputs over Ansible and write ``<host>.json`` facts files.

    Only the file names :data:`servespec.discover.facts.OUTPUT_FILES` documents are kept, as
    text of at most :data:`MAX_OUTPUT_CHARS` each; whatever else a host sends (other names,
    ``../`` or absolute paths, other types) is dropped. Returns the hosts that could not be
    read, with why.
    """
    import tempfile

    from servespec.discover.facts import OUTPUT_FILES, write_facts

    hosts: dict[str, tuple[HostView, dict[str, Any]]] = {name: (view, {}) for name, view in inventory_doc.hosts.items()}
    result = inventory.run_on("discover.yml", hosts, {}, on_event)
    failed = {name: r.error for name, r in result.hosts.items() if not r.ok}
    with tempfile.TemporaryDirectory(prefix="servespec-discover-") as tmp:
        for name in hosts:
            host = result.hosts.get(name)
            outputs = host.reports.get(Report.OUTPUTS, {}).get("outputs") if host and host.ok else None
            if outputs is None:
                failed.setdefault(name, "no answer")
                continue
            folder = Path(tmp) / name
            folder.mkdir()
            for file_name in OUTPUT_FILES:  # fixed names: the host chooses none of the paths written
                text = outputs.get(file_name) if isinstance(outputs, dict) else None
                if isinstance(text, str) and len(text) <= MAX_OUTPUT_CHARS:
                    (folder / file_name).write_text(text, encoding="utf-8", errors="replace")
        write_facts(Path(tmp), destination)
    return failed
