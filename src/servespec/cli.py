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
@_paths_argument
@_inventory_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def estimate(paths: tuple[Path, ...], inventory: Path | None, fmt: str) -> None:
    """The memory plan per GPU: weights, overhead, KV cache, tokens and sequences that fit.

    Follows each engine's own arithmetic (vLLM gpu_memory_utilization, SGLang
    mem_fraction_static, TGI cuda_memory_fraction, TensorRT-LLM free_gpu_memory_fraction,
    llama.cpp/Ollama context allocation). Exit 1 when a memory rule reports an error.
    """
    import json

    from servespec.estimate import estimates
    from servespec.findings import Severity
    from servespec.rules.runner import check_fleet
    from servespec.spec.fleet import UsageError, load_fleet

    try:
        fleet = load_fleet(list(paths), inventory)
    except UsageError as err:
        raise click.UsageError(str(err)) from None
    findings = check_fleet(fleet)
    rows = estimates(fleet, findings)
    if fmt == "json":
        click.echo(json.dumps({"version": 1, "estimates": [row.to_json() for row in rows]}, indent=2))
    else:
        _print_estimates(rows)
        for finding in findings:
            if finding.rule.startswith(("MEM", "REF003", "SS", "REF00")):
                click.echo(finding.to_text(), err=True)
    failed = any(f.severity is Severity.ERROR and f.rule.startswith(("MEM", "SS", "REF")) for f in findings)
    sys.exit(EXIT_FINDINGS if failed or not fleet.deployments else EXIT_OK)


def _print_estimates(rows: list[Any]) -> None:
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
            table.add_row(row.deployment.name, row.host.name, engine, gpu, *["?"] * 6)
            continue
        values = (plan.total_gib, plan.weights_gib, plan.overhead_gib, plan.kv_cache_gib)
        table.add_row(
            row.deployment.name,
            row.host.name,
            engine,
            gpu,
            *(f"{v:.1f}" for v in values),
            f"{plan.kv_tokens:,}",
            f"{plan.max_sequences:.1f}",
        )
    Console(width=140).print(table)


@main.command()
@_paths_argument
@_inventory_option
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Directory to write DEPLOYMENT/HOST/ files into.",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 and list the files that are stale.")
def render(paths: tuple[Path, ...], inventory: Path | None, output: Path, check: bool) -> None:
    """Write every host's engine configuration (container.yaml, native config files, README).

    Output is deterministic: the same specs render the same bytes on any machine.
    Specs with error findings are not rendered (run `deploy validate` to see them).
    """
    from servespec.findings import Severity
    from servespec.render import render_fleet, stale_files, write
    from servespec.rules.runner import check_fleet
    from servespec.spec.fleet import UsageError, load_fleet

    try:
        fleet = load_fleet(list(paths), inventory)
    except UsageError as err:
        raise click.UsageError(str(err)) from None
    errors = [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    if errors:
        for finding in errors:
            click.echo(finding.to_text(), err=True)
        click.echo(f"not rendered: {len(errors)} error(s); fix them first", err=True)
        sys.exit(EXIT_FINDINGS)
    rendered = render_fleet(fleet)
    if check:
        stale = stale_files(rendered, output)
        for name in stale:
            click.echo(f"stale: {output / name}")
        if stale:
            click.echo(
                f"{len(stale)} file(s) differ from what the specs render; run deploy render -o {output}", err=True
            )
            sys.exit(EXIT_FINDINGS)
        click.echo(f"{output}: up to date ({len(rendered.files)} files)", err=True)
        return
    written = write(rendered, output)
    click.echo(f"rendered {len(written)} file(s) into {output}", err=True)


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
