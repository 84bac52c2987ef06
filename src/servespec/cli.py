"""The `deploy` command line. Thin: every command is a library call plus printing.

Imports of the pipeline stages are made inside the commands, so `deploy validate` never
loads Ansible, docker or jinja2 and starts fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _paths_argument(func: F) -> F:
    return click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=False))(func)


def _inventory_option(func: F) -> F:
    return click.option(
        "-i",
        "--inventory",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Inventory file; overrides each spec's own `inventory:`.",
    )(func)


def _strict_option(func: F) -> F:
    return click.option("--strict", is_flag=True, help="Treat warnings as errors.")(func)


class _Group(click.Group):
    """Resolves `lint` as an alias of `validate`."""

    aliases: ClassVar[dict[str, str]] = {"lint": "validate"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="servespec")
def main() -> None:
    """servespec: validate, render and roll out LLM inference servers from one spec."""


@main.command()
@_paths_argument
@_inventory_option
@_strict_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif", "github"]),
    default="text",
    show_default=True,
    help="Output format.",
)
def validate(paths: tuple[Path, ...], inventory: Path | None, strict: bool, fmt: str) -> None:
    """Check specs and inventories against every rule (alias: lint). Never touches a host.

    PATHS are files or directories (searched for *.yaml and *.yml). All documents are
    checked together as one fleet. Exit 0: clean or warnings only; 1: errors; 2: usage.
    """
    from servespec.report import render, text_summary
    from servespec.rules.runner import check_fleet, summarize
    from servespec.spec.fleet import UsageError, load_fleet

    try:
        fleet = load_fleet(list(paths), inventory)
    except UsageError as err:
        raise click.UsageError(str(err)) from None
    findings = check_fleet(fleet, strict=strict)
    summary = summarize(findings, len(fleet.files))
    sys.stdout.write(render(fmt, findings, summary))
    if fmt == "text":
        click.echo(text_summary(summary), err=True)
    sys.exit(EXIT_FINDINGS if summary["errors"] else EXIT_OK)


@main.command()
@click.argument("rule_id", required=False)
def explain(rule_id: str | None) -> None:
    """Show what RULE checks, why, how to fix it and its upstream source. No RULE: list all."""
    from servespec.rules import ALL_RULES, RULES_BY_ID

    if rule_id is None:
        for rule in ALL_RULES:
            click.echo(f"{rule.id:8} {rule.severity.value:8} {rule.summary}")
        return
    found = RULES_BY_ID.get(rule_id.upper())
    if found is None:
        raise click.UsageError(f"unknown rule {rule_id!r}; `deploy explain` lists them all")
    click.echo(f"{found.id} ({found.name}), default severity: {found.severity.value}\n")
    click.echo(found.explain())
    click.echo("\nSources:")
    for source in found.sources:
        click.echo(f"  {source}")


@main.command()
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("schemas"),
    show_default=True,
    help="Directory to write the JSON Schemas into.",
)
def schema(output: Path) -> None:
    """Write the JSON Schema of every file kind (deployment, inventory, facts)."""
    from servespec.spec.schemas import write_schemas

    for path in write_schemas(output):
        click.echo(str(path))


if __name__ == "__main__":  # pragma: no cover
    main()
