"""The `deploy` command line. Thin: every command is a library call plus printing.

Imports of the pipeline stages are made inside the commands, so `deploy validate` never
loads Ansible, docker or jinja2 and starts fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _paths_argument(func: F) -> F:
    func = _model_roots_option(_root_option(func))
    return click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=False))(func)


def _root_option(func: F) -> F:
    # Kept in the context, not passed to the command: every command that loads files gets
    # --root from here, and _load reads it (contract §5).
    def remember(ctx: click.Context, _: click.Parameter, value: Path | None) -> None:
        ctx.meta["servespec.root"] = value

    return click.option(
        "--root",
        type=click.Path(path_type=Path, file_okay=False),
        expose_value=False,
        callback=remember,
        help="Directory that files referenced by specs and inventories, and every PATH itself, must stay inside "
        "(default: the checkout holding each PATH as named, symlinks not followed: the nearest folder with .git; "
        "else the current directory when PATH lies inside it; else PATH's folder).",
    )(func)


def _model_roots_option(func: F) -> F:
    # In effect for the whole command (the click context closes the block when it ends): the
    # controller reads local model folders under these only (knowledge.controller_roots).
    def remember(ctx: click.Context, _: click.Parameter, value: tuple[str, ...]) -> None:
        from servespec.knowledge.controller_roots import operator_roots

        ctx.with_resource(operator_roots(tuple(str(Path(root).absolute()) for root in value) or None))

    return click.option(
        "--model-roots",
        multiple=True,
        metavar="DIR",
        type=click.Path(file_okay=False),
        expose_value=False,
        callback=remember,
        help="Folder on this machine whose local model sources (config.json, weight headers) may be read; "
        "repeatable (default: the inventory's defaults.model_roots, but only those inside the checkout when the "
        "inventory is the checkout's own file).",
    )(func)


def _inventory_option(func: F) -> F:
    return click.option(
        "-i",
        "--inventory",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Inventory file; overrides each spec's own `inventory:`.",
    )(func)


_format_option = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format."
)


def _strict_option(func: F) -> F:
    return click.option("--strict", is_flag=True, help="Treat warnings as errors.")(func)


def _hub_option(func: F) -> F:
    return click.option(
        "--hub",
        is_flag=True,
        help="Ask the Hugging Face Hub (HF_ENDPOINT; token: model.hub_token's variable, else HF_TOKEN) for models "
        "no local source, lock file or the catalog has. Off by default; HF_HUB_OFFLINE=1 forbids it.",
    )(func)


def _hub(enabled: bool) -> Any:
    """The Hub allowed for the block when ``enabled`` (knowledge.sources.hub_access), else nothing."""
    import contextlib

    if not enabled:
        return contextlib.nullcontext()
    from servespec.knowledge.sources import hub_access

    return hub_access()


class _Group(click.Group):
    """Resolves `lint` as an alias of `validate`; turns unexpected errors into one escaped line (exit 1 or 2)."""

    aliases: ClassVar[dict[str, str]] = {"lint": "validate"}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def invoke(self, ctx: click.Context) -> Any:
        import os

        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as err:
            if os.environ.get("SERVESPEC_DEBUG"):
                raise
            _exit_on_error(err)


def _exit_on_error(err: Exception) -> None:
    """One escaped line for an error no command handled: a refused render or write (exit 1), or a bug (exit 2).

    A bug exits with the contract's "cannot complete" code, never 1: CI must tell a crash
    from findings.
    """
    from servespec.text import printable

    if _is_refusal(err):
        # One printed line per line of the message (a list of refused files), each escaped.
        for line in f"error: {err}".split("\n"):
            click.echo(printable(line), err=True)
        sys.exit(EXIT_FINDINGS)
    # Not a usage error: the input was accepted and servespec itself failed.
    click.echo(
        f"error: internal error: {type(err).__name__}: {printable(str(err))}; this is a bug in servespec, "
        "please report it (set SERVESPEC_DEBUG=1 for the traceback)",
        err=True,
    )
    sys.exit(EXIT_USAGE)


def _is_refusal(err: Exception) -> bool:
    """Whether ``err`` is servespec refusing to render or write something (imported only once one happened)."""
    from servespec.outdir import OutputError
    from servespec.render.environment import RenderError

    return isinstance(err, (RenderError, OutputError))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="servespec")
def main() -> None:
    """servespec: validate, render and roll out LLM inference servers from one spec."""


@main.command()
@_paths_argument
@_inventory_option
@_strict_option
@_hub_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif", "github"]),
    default="text",
    show_default=True,
    help="Output format.",
)
def validate(paths: tuple[Path, ...], inventory: Path | None, strict: bool, hub: bool, fmt: str) -> None:
    """Check specs and inventories against every rule (alias: lint). Never touches a host.

    PATHS are files or directories (searched for *.yaml and *.yml). All documents are
    checked together as one fleet. Exit 0: clean or warnings only; 1: errors; 2: usage.
    """
    from servespec.report import render, text_summary
    from servespec.rules.runner import check_fleet, summarize

    fleet = _load(paths, inventory)
    with _hub(hub):
        findings = check_fleet(fleet, strict=strict)
    summary = summarize(findings, len(fleet.files))
    sys.stdout.write(render(fmt, findings, summary))
    if fmt == "text":
        click.echo(text_summary(summary), err=True)
    sys.exit(EXIT_FINDINGS if summary["errors"] else EXIT_OK)


@main.command()
@_paths_argument
@_inventory_option
@_hub_option
@_format_option
def estimate(paths: tuple[Path, ...], inventory: Path | None, hub: bool, fmt: str) -> None:
    """The memory plan per GPU: weights, overhead, KV cache, tokens and sequences that fit.

    Follows each engine's own arithmetic (vLLM gpu_memory_utilization, SGLang
    mem_fraction_static, TGI cuda_memory_fraction, TensorRT-LLM free_gpu_memory_fraction,
    llama.cpp/Ollama context allocation). The findings shown (memory, layout, references,
    schema) are the same in text and JSON; exit 1 when one of them is an error.
    """
    import json

    from servespec.estimate import estimates, shown
    from servespec.findings import Severity
    from servespec.rules.runner import check_fleet

    fleet = _load(paths, inventory)
    with _hub(hub):
        findings = check_fleet(fleet)
        rows = estimates(fleet, findings)
    if fmt == "json":
        body = {
            "version": 1,
            "estimates": [row.to_json() for row in rows],
            "findings": [f.to_json() for f in shown(findings)],
        }
        click.echo(json.dumps(body, indent=2))
    else:
        _print_estimates(rows)
        for finding in shown(findings):
            click.echo(finding.to_text(), err=True)
    failed = any(f.severity is Severity.ERROR for f in shown(findings))
    sys.exit(EXIT_FINDINGS if failed or not fleet.deployments else EXIT_OK)


def _cell(text: object) -> Any:
    """A table cell shown as the literal text (`servespec.report.cell`, shared with the rollout's tables)."""
    from servespec.report import cell

    return cell(text)


def _print_estimates(rows: list[Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from servespec.text import printable

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
            table.add_row(_cell(row.deployment.name), _cell(row.host.name), _cell(engine), _cell(gpu), *["?"] * 6)
            continue
        values = (plan.total_gib, plan.weights_gib, plan.overhead_gib, plan.kv_cache_gib)
        table.add_row(
            _cell(row.deployment.name),
            _cell(row.host.name),
            _cell(engine),
            _cell(gpu),
            *(f"{v:.1f}" for v in values),
            f"{plan.kv_tokens:,}",
            f"{plan.max_sequences:.1f}",
        )
    Console(width=140).print(table)
    from servespec.estimate import context_line

    for row in rows:  # the context each plan assumes, and why (the spec's, or the engine's default)
        line = context_line(row)
        if line:
            click.echo(printable(line))


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
    from servespec.render import render_fleet, stale_files, write
    from servespec.text import printable

    fleet, _ = _checked(paths, inventory, stopped=lambda n: f"not rendered: {n} error(s); fix them first")
    rendered = render_fleet(fleet)
    shown = printable(str(output))
    if check:
        stale = stale_files(rendered, output)
        for name in stale:
            click.echo(f"stale: {printable(str(output / name))}")
        if stale:
            click.echo(
                f"{len(stale)} file(s) differ from what the specs render; run deploy render -o {shown}",
                err=True,
            )
            sys.exit(EXIT_FINDINGS)
        click.echo(f"{shown}: up to date ({len(rendered.files)} files)", err=True)
        return
    written = write(rendered, output)
    click.echo(f"rendered {len(written)} file(s) into {shown}", err=True)


def _load(paths: tuple[Path, ...] | list[Path], inventory: Path | None = None) -> Any:
    """Load the fleet; a missing path is a usage error (exit 2)."""
    from servespec.spec.fleet import UsageError, load_fleet

    try:
        return load_fleet(list(paths), inventory, click.get_current_context().meta.get("servespec.root"))
    except UsageError as err:
        raise click.UsageError(str(err)) from None


def _stop_on_errors(findings: list[Any], stopped: Callable[[int], str]) -> None:
    """Print the error findings and exit 1 when there are any, ending with ``stopped(count)``."""
    from servespec.findings import Severity

    errors = [f for f in findings if f.severity is Severity.ERROR]
    if errors:
        for finding in errors:
            click.echo(finding.to_text(), err=True)
        click.echo(stopped(len(errors)), err=True)
        sys.exit(EXIT_FINDINGS)


def _checked(
    paths: tuple[Path, ...],
    inventory: Path | None,
    stopped: Callable[[int], str] = lambda n: f"stopped: {n} error(s); nothing was changed",
) -> tuple[Any, list[Any]]:
    """Load and validate; stop with exit 1 when a spec has errors (nothing is touched then)."""
    from servespec.rules.runner import check_fleet

    fleet = _load(paths, inventory)
    findings = check_fleet(fleet)
    _stop_on_errors(findings, stopped)
    return fleet, findings


def _load_valid(paths: tuple[Path, ...], inventory: Path | None) -> Any:
    """The fleet of :func:`_checked`, for commands that do not show warnings."""
    return _checked(paths, inventory)[0]


def _stopped_after_changes(err: Exception, changed: list[str]) -> NoReturn:
    """Exit 1 after a rollout error that came once ``changed`` deployments had changed hosts (outcomes shown)."""
    click.echo(
        f"error: {err}; stopped after {', '.join(changed)} changed (outcomes above); nothing later was", err=True
    )
    sys.exit(EXIT_FINDINGS)


def _events(fmt: str) -> Any:
    from servespec.rollout.progress import json_events

    return json_events() if fmt == "json" else None


@main.command()
@_paths_argument
@_inventory_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Output format (markdown: a pull-request comment with the memory plan).",
)
@click.option(
    "--previous",
    "previous",
    multiple=True,
    type=click.Path(path_type=Path, exists=False),
    help="The specs the hosts were deployed from (files or folders, e.g. a worktree of the base branch; "
    "repeatable): the memory 'before' of a host whose running revision they render. Inventory: -i, else "
    "each spec's own.",
)
def plan(paths: tuple[Path, ...], inventory: Path | None, fmt: str, previous: tuple[Path, ...]) -> None:
    """Show what `apply` would change on each host, with unified diffs of the rendered files.

    Each restart says why (the rendered fields that changed), what it does to memory per
    GPU (weights, KV cache, sequences, context: before -> after) and what it downloads.
    """
    import json

    from servespec.plan import sized
    from servespec.plan.footprint import footprints
    from servespec.plan.report import restarts_markdown, restarts_text
    from servespec.rollout import RolloutError, plan_fleet
    from servespec.rollout.progress import plan_markdown, plan_text
    from servespec.text import printable

    fleet, findings = _checked(paths, inventory)
    earlier = _previous_desired(previous, inventory) if previous else []
    try:
        planned = plan_fleet(fleet)
    except RolloutError as err:
        click.echo(f"error: {err}; nothing was read", err=True)
        sys.exit(EXIT_FINDINGS)
    actions = sized(planned.actions, footprints(fleet), earlier)
    if fmt == "json":
        click.echo(json.dumps({"version": 1, "actions": [a.to_json() for a in actions]}, indent=2))
    elif fmt == "markdown":
        from servespec.estimate import estimates

        click.echo(plan_markdown(actions, estimates(fleet, findings)) + restarts_markdown(actions), nl=False)
    else:
        # The restarts go between the one line per host and the diffs.
        head, whole = plan_text(actions, diffs=False), plan_text(actions)
        click.echo(head + restarts_text(actions) + whole[len(head) :], nl=False)
    # A host that could not be read has no action: the plan is incomplete, not "nothing to do".
    for row in planned.unread:
        click.echo(f"{row.deployment} on {row.host}: {row.result}, not planned ({printable(row.error)})", err=True)
    if planned.unread:
        click.echo(f"plan incomplete: {len(planned.unread)} host(s) could not be read", err=True)
        sys.exit(EXIT_FINDINGS)


def _previous_desired(paths: tuple[Path, ...], inventory: Path | None) -> list[Any]:
    """What the ``--previous`` specs render for each host, with footprints (read before any host is)."""
    from servespec.findings import Severity
    from servespec.plan.footprint import desired
    from servespec.rules.runner import check_fleet

    fleet = _load(paths, inventory)
    errors = [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    if errors:
        click.echo(
            f"warning: the --previous specs have {len(errors)} error(s) (deploy validate lists them); "
            "their estimates may be missing",
            err=True,
        )
    return desired(fleet)


@main.command()
@_paths_argument
@_inventory_option
@_format_option
@click.option("--yes", is_flag=True, help="Apply without asking.")
@click.option("--check", is_flag=True, help="Read host state and show the plan; change nothing.")
@click.option("--standin-image", hidden=True, help="Test only: run every engine container with this stand-in image.")
@click.option(
    "--secrets-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder from_file secrets may be read from (default: the inventory's defaults.secrets_dir).",
)
def apply(
    paths: tuple[Path, ...],
    inventory: Path | None,
    fmt: str,
    yes: bool,
    check: bool,
    standin_image: str | None,
    secrets_dir: Path | None,
) -> None:
    """Validate, render and roll out; a host that fails is restored to its last good revision.

    Hosts are updated `rollout.max_unavailable` replicas at a time; the rollout stops at
    the first failed batch. Unchanged hosts are not touched. Exit 1 when a host failed.
    """
    import tempfile

    from servespec.rollout import ApplyOptions, RolloutError, StoppedAfterChangesError
    from servespec.rollout import apply as run_apply
    from servespec.rollout.progress import LiveView, outcome_table, plan_text

    fleet = _load_valid(paths, inventory)

    def confirm(actions: list[Any]) -> bool:
        if fmt == "text":
            click.echo(plan_text(actions), nl=False, err=True)
        if check:
            click.echo("check mode: nothing was changed", err=True)
            return False
        changes = [a for a in actions if a.kind in ("create", "update")]
        if not changes:
            return False
        return yes or click.confirm(f"apply {len(changes)} change(s)?", err=True)

    def report(outcomes: list[Any]) -> None:
        if fmt == "json":
            import json

            click.echo(json.dumps({"version": 1, "hosts": [o.__dict__ for o in outcomes]}))
        else:
            outcome_table(outcomes)

    options = ApplyOptions(
        confirm=confirm,
        on_event=_events(fmt),
        standin_image=standin_image,
        secrets_dir=secrets_dir,
        check_only=check,
    )
    with tempfile.TemporaryDirectory(prefix="servespec-apply-") as workdir:
        try:
            if fmt == "text" and sys.stderr.isatty():
                with LiveView() as view:
                    options.on_event = view
                    _, outcomes = run_apply(fleet, options, Path(workdir))
            else:
                _, outcomes = run_apply(fleet, options, Path(workdir))
        except StoppedAfterChangesError as err:
            # Earlier deployments rolled out before this one could not: show what they did.
            report(err.outcomes)
            _stopped_after_changes(err, err.changed)
        except RolloutError as err:
            click.echo(f"error: {err}; nothing was changed", err=True)
            sys.exit(EXIT_FINDINGS)
    report(outcomes)
    failed = [o for o in outcomes if o.result not in ("ok", "unchanged")]
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


@main.command()
@_paths_argument
@_inventory_option
@_format_option
def status(paths: tuple[Path, ...], inventory: Path | None, fmt: str) -> None:
    """Per host: the running revision, whether it is healthy, and since when."""
    import json

    from servespec.rollout import RolloutError
    from servespec.rollout import status as read_status
    from servespec.text import printable

    fleet = _load_valid(paths, inventory)
    try:
        rows = read_status(fleet)
    except RolloutError as err:
        click.echo(f"error: {err}; nothing was read", err=True)
        sys.exit(EXIT_FINDINGS)
    if fmt == "json":
        click.echo(json.dumps({"version": 1, "hosts": [row.to_json() for row in rows]}, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="status")
        for column in ("deployment", "host", "revision", "healthy", "since", "endpoint"):
            table.add_column(column)
        for row in rows:
            health = "unreachable" if not row.reachable else "error" if row.error else "yes" if row.healthy else "no"
            cells = (row.deployment, row.host, row.revision or "-", health, row.since or "-", row.endpoint)
            table.add_row(*(_cell(value) for value in cells))
        Console(width=160).print(table)
    for row in rows:
        if row.error:
            click.echo(f"{row.deployment} on {row.host}: {printable(row.error)}", err=True)
    sys.exit(EXIT_OK if all(r.reachable and not r.error for r in rows) else EXIT_FINDINGS)


@main.command()
@_paths_argument
@_inventory_option
@click.option("--to", "to", type=int, help="Revision to restore (default: the last good one before the current).")
@click.option("--yes", is_flag=True, help="Roll back without asking.")
def rollback(paths: tuple[Path, ...], inventory: Path | None, to: int | None, yes: bool) -> None:
    """Restore an earlier revision on every host, with the same health checks as apply."""
    from servespec.rollout import ApplyOptions, RolloutError, StoppedAfterChangesError
    from servespec.rollout import rollback as run_rollback
    from servespec.rollout.progress import outcome_table

    fleet = _load_valid(paths, inventory)
    options = ApplyOptions(confirm=lambda _: yes or click.confirm("roll back?", err=True))
    try:
        outcomes = run_rollback(fleet, to, options)
    except StoppedAfterChangesError as err:
        outcome_table(err.outcomes, "rollback")
        _stopped_after_changes(err, err.changed)
    except RolloutError as err:
        click.echo(f"error: {err}; nothing was changed", err=True)
        sys.exit(EXIT_FINDINGS)
    outcome_table(outcomes, "rollback")
    sys.exit(EXIT_FINDINGS if any(o.result not in ("ok", "unchanged") for o in outcomes) else EXIT_OK)


@main.command()
@_paths_argument
@_inventory_option
@click.option("--yes", is_flag=True, help="Destroy without asking.")
def destroy(paths: tuple[Path, ...], inventory: Path | None, yes: bool) -> None:
    """Stop and remove the deployments: containers, revisions, state and active files."""
    from servespec.rollout import ApplyOptions, RolloutError, StoppedAfterChangesError
    from servespec.rollout import destroy as run_destroy
    from servespec.rollout.progress import outcome_table

    fleet = _load_valid(paths, inventory)
    try:
        outcomes = run_destroy(fleet, ApplyOptions(confirm=lambda _: yes or click.confirm("destroy?", err=True)))
    except StoppedAfterChangesError as err:
        outcome_table(err.outcomes, "destroy")
        _stopped_after_changes(err, err.changed)
    except RolloutError as err:
        click.echo(f"error: {err}; nothing was changed", err=True)
        sys.exit(EXIT_FINDINGS)
    outcome_table(outcomes, "destroy")
    sys.exit(EXIT_FINDINGS if any(o.result != "ok" for o in outcomes) else EXIT_OK)


@main.command()
@_root_option
@click.option(
    "-i", "--inventory", type=click.Path(path_type=Path, dir_okay=False), help="Inventory whose hosts to read."
)
@click.option(
    "--from-outputs",
    "outputs",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder of saved command outputs, one sub-folder per host (air-gapped sites).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where to write <host>.json (default: facts/ next to the inventory, or ./facts).",
)
def discover(inventory: Path | None, outputs: Path | None, output: Path | None) -> None:
    """Collect each host's hardware facts (GPUs, topology, ACS, IOMMU, NUMA, Docker, disk) into facts files.

    Read-only on the hosts. Reference the files from the inventory (`facts: facts/<host>.json`)
    so `deploy validate` checks specs against them without reaching any host.
    """
    from servespec.discover.facts import write_facts
    from servespec.text import printable

    if (inventory is None) == (outputs is None):
        raise click.UsageError("give exactly one of -i/--inventory and --from-outputs")
    if outputs is not None:
        if not outputs.is_dir() or not any(p.is_dir() for p in outputs.iterdir()):
            raise click.UsageError(f"{printable(str(outputs))}: expected one sub-folder of saved outputs per host")
        for path in write_facts(outputs, output or Path("facts")):
            click.echo(f"wrote {printable(str(path))}", err=True)
        return
    assert inventory is not None
    from servespec.rollout import RolloutError
    from servespec.rollout import discover as collect

    fleet = _load([inventory])
    # A missing facts file (REF002) or errors inside one are what discover is for; any
    # other error in the inventory itself stops it.
    stopped = f"stopped: {inventory} is not a valid inventory; nothing was collected"
    _stop_on_errors([f for f in fleet.findings if f.rule != "REF002" and f.file == fleet.files[0]], lambda _: stopped)
    if not fleet.inventories:
        click.echo(stopped, err=True)
        sys.exit(EXIT_FINDINGS)
    destination = output or inventory.parent / "facts"
    try:
        failed = collect(fleet.inventories[0], destination, on_event=_events("text"))
    except RolloutError as err:
        click.echo(f"error: {err}; nothing was collected", err=True)
        sys.exit(EXIT_FINDINGS)
    for name in fleet.inventories[0].hosts:
        if name in failed:
            click.echo(
                f"{name}: not collected ({printable(failed[name])}); its facts file was left as it was", err=True
            )
        else:
            click.echo(f"wrote {printable(str(destination / (name + '.json')))}", err=True)
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


@main.command()
@_paths_argument
@_inventory_option
def lock(paths: tuple[Path, ...], inventory: Path | None) -> None:
    """Resolve every model once and write models.lock.yaml beside the specs (contract §5).

    Each model is read from its model directory or GGUF file on this machine, the local
    Hugging Face cache, else the Hub (HF_ENDPOINT, HF_TOKEN or model.hub_token's variable;
    HF_HUB_OFFLINE=1 keeps it to this machine). The lock records the commit, the config
    fields facts are read from and the weight bytes, so that `deploy validate` checks the
    same facts offline on any machine; commit it. Specs with model.config are skipped.
    Exit 0: every model locked; 1: some could not be (their old entries are kept); 2: usage.
    """
    from servespec.findings import Severity
    from servespec.knowledge.lock import lock_fleet
    from servespec.text import printable

    fleet = _load(paths, inventory)
    outcome = lock_fleet(fleet)
    findings = [f for f in fleet.findings if f.severity is Severity.ERROR] + list(outcome.findings)
    for finding in findings:
        click.echo(finding.to_text(), err=True)
    for name in outcome.written:
        click.echo(f"wrote {printable(name)}", err=True)
    skipped = f", {outcome.skipped} skipped (model.config given)" if outcome.skipped else ""
    click.echo(f"locked {outcome.locked} model(s){skipped}", err=True)
    sys.exit(EXIT_FINDINGS if any(f.severity is Severity.ERROR for f in findings) else EXIT_OK)


@main.command()
@click.option(
    "-o", "--output", type=click.Path(path_type=Path, file_okay=False), default=Path("docs"), show_default=True
)
def docs(output: Path) -> None:
    """Write the generated reference pages (spec fields, rules, engines) under OUTPUT."""
    from servespec.docgen import write
    from servespec.text import printable

    click.echo(f"wrote {len(write(output))} page(s) into {printable(str(output))}", err=True)


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
    from servespec.text import printable

    for path in write_schemas(output):
        click.echo(printable(str(path)))


if __name__ == "__main__":  # pragma: no cover
    main()
