"""Print what `deploy discover` did: each facts file written, or why a host's was not."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import click

from servespec.text import printable


def print_written(paths: Iterable[Path]) -> None:
    """Each facts file written (``--from-outputs``)."""
    for path in paths:
        click.echo(f"wrote {printable(str(path))}", err=True)


def print_collected(hosts: Iterable[str], failed: Mapping[str, str], destination: Path) -> None:
    """Per host: the facts file written into ``destination``, or why it was not collected."""
    for name in hosts:
        if name in failed:
            click.echo(
                f"{name}: not collected ({printable(failed[name])}); its facts file was left as it was", err=True
            )
        else:
            click.echo(f"wrote {printable(str(destination / (name + '.json')))}", err=True)
