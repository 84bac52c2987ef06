"""REF rules: names and files a spec refers to must exist."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.rules.base import Rule
from servespec.spec.fleet import Fleet

_CONTRACT = "docs/contract.md"


class UnknownHost(Rule):
    """Every host in ``placement.hosts`` must be defined in the deployment's inventory.

    A deployment placed on a host the inventory does not define could never be rolled
    out there; the finding suggests the closest inventory host name.

    Source: servespec contract v1, §1.1 (placement) and §1.2 (inventory): docs/contract.md
    """

    id = "REF001"
    name = "ref.unknown-host"
    severity = Severity.ERROR
    summary = "host named in placement.hosts not in the inventory"
    hint = "add the host to the inventory or fix the name"
    sources = (_CONTRACT,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            inventory = deployment.inventory
            if inventory is None or deployment.spec.placement.hosts is None:
                continue
            for index, host in enumerate(deployment.spec.placement.hosts):
                if host in inventory.hosts:
                    continue
                close = difflib.get_close_matches(host, list(inventory.hosts), n=1, cutoff=0.6)
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else f"hosts in {inventory.file}: " + ", ".join(sorted(inventory.hosts))
                )
                yield self.report(
                    deployment.document,
                    f"host {host!r} is not in the inventory {inventory.file}",
                    ("placement", "hosts", index),
                    hint=hint,
                )


class MissingFile(Rule):
    """Files a spec refers to must exist and be readable.

    Reported while loading for: the ``inventory`` file of a deployment, an inventory
    host's ``facts`` file, and a model's ``config`` file. Paths are relative to the file
    that names them. A facts file is written by ``deploy discover``; run it again, or
    declare the host's ``hardware`` by hand.

    Source: servespec contract v1, §1.1 and §1.2: docs/contract.md
    """

    id = "REF002"
    name = "ref.missing-file"
    severity = Severity.ERROR
    summary = "inventory, facts or model config file missing or unreadable"
    hint = "fix the path"
    sources = (_CONTRACT,)
    reported_by = "loader"

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            config = deployment.spec.model.config
            if config is None:
                continue
            path = deployment.document.path.parent / config
            if not path.is_file():
                yield self.report(deployment.document, f"model config file {config!r} not found", ("model", "config"))
