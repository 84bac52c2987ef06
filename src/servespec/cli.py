"""The `deploy` command line: each command parses its arguments, calls its stage and its report, and exits.

The work is in the stages (``spec`` → ``knowledge`` → ``rules`` → ``render`` → ``plan`` →
``rollout``), the printing in the reports (:mod:`servespec.report`,
:mod:`servespec.estimate_report`, :mod:`servespec.plan.report`,
:mod:`servespec.rollout.progress`, :mod:`servespec.discover.report`); here are the options,
the exit codes and the one line an unexpected error becomes. Imports of the stages are made
inside the commands, so `deploy validate` never loads Ansible, docker, jinja2 or rich and
starts fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar

import click

from servespec import __version__

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


def _comment_format_option(text: str) -> Callable[[F], F]:
    """``--format text|json|markdown`` for the commands whose markdown is a pull-request comment."""
    return click.option(
        "--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True, help=text
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

        # Pydantic looks for plugins in every installed distribution's entry points when it builds
        # its first validator (importlib.metadata: ~10% of a cold `deploy validate`); servespec's
        # models use none. PYDANTIC_DISABLE_PLUGINS set by the caller (even empty) is kept.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
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


def _version(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    """``--version``: servespec's version and the newest catalogued release of each engine (file names only)."""
    if not value or ctx.resilient_parsing:
        return
    from servespec.engines.versions import newest_catalogued

    lines = [f"servespec {__version__}"]
    lines.append("newest catalogued engine releases (scripts/catalog/refresh adds newer):")
    for engine, (newest, pre) in newest_catalogued().items():
        lines.append(f"  {engine} {newest or 'none'}" + (f" (pre-release {pre})" if pre else ""))
    click.echo("\n".join(lines))
    ctx.exit()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show servespec's version and the newest catalogued release of each engine, and exit.",
)
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
    from servespec.report import print_findings
    from servespec.rules.runner import check_fleet, summarize

    fleet = _load(paths, inventory)
    with _hub(hub):
        findings = check_fleet(fleet, strict=strict)
    summary = summarize(findings, len(fleet.files))
    print_findings(fmt, findings, summary)
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
    from servespec.estimate import estimates
    from servespec.estimate_report import errors_shown, print_estimates
    from servespec.rules.runner import check_fleet

    fleet = _load(paths, inventory)
    with _hub(hub):
        findings = check_fleet(fleet)
        rows = estimates(fleet, findings)
    print_estimates(fmt, rows, findings)
    sys.exit(EXIT_FINDINGS if errors_shown(findings) or not fleet.deployments else EXIT_OK)


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
@click.option(
    "--monitoring",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write a Prometheus scrape configuration and Grafana dashboards into this directory.",
)
def render(paths: tuple[Path, ...], inventory: Path | None, output: Path, check: bool, monitoring: Path | None) -> None:
    """Write every host's engine configuration (container.yaml, native config files, README).

    Output is deterministic: the same specs render the same bytes on any machine.
    Specs with error findings are not rendered (run `deploy validate` to see them).
    """
    from servespec.render import render_fleet, stale_files, write
    from servespec.text import printable

    fleet, _ = _checked(paths, inventory, stopped=lambda n: f"not rendered: {n} error(s); fix them first")
    rendered = render_fleet(fleet)
    if check:
        from servespec.report import print_stale

        stale = stale_files(rendered, output)
        print_stale(stale, output, len(rendered.files))
        sys.exit(EXIT_FINDINGS if stale else EXIT_OK)
    written = write(rendered, output)
    click.echo(f"rendered {len(written)} file(s) into {printable(str(output))}", err=True)
    if monitoring is not None:
        from servespec.metrics.monitoring import render_monitoring

        written = write(render_monitoring(fleet), monitoring)
        click.echo(f"rendered {len(written)} monitoring file(s) into {printable(str(monitoring))}", err=True)


def _load(paths: tuple[Path, ...] | list[Path], inventory: Path | None = None) -> Any:
    """Load the fleet; a missing path is a usage error (exit 2)."""
    from servespec.spec.fleet import UsageError, load_fleet

    try:
        return load_fleet(list(paths), inventory, click.get_current_context().meta.get("servespec.root"))
    except UsageError as err:
        raise click.UsageError(str(err)) from None


def _stop_on_errors(findings: list[Any], stopped: Callable[[int], str]) -> None:
    """Print the error findings and exit 1 when there are any, ending with ``stopped(count)``."""
    from servespec.report import print_errors

    count = print_errors(findings)
    if count:
        click.echo(stopped(count), err=True)
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


def _refused(err: Exception, nothing: str) -> NoReturn:
    """Exit 1 after a rollout error that came before any host was touched (``nothing``: "nothing was ...")."""
    click.echo(f"error: {err}; {nothing}", err=True)
    sys.exit(EXIT_FINDINGS)


@main.command()
@_paths_argument
@_inventory_option
@_comment_format_option("Output format (markdown: a pull-request comment with the memory plan).")
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
    from servespec.estimate import estimates
    from servespec.plan.report import plan_output
    from servespec.rollout import RolloutError
    from servespec.rollout.planned import previous_desired, sized_plan
    from servespec.rollout.progress import print_unread

    fleet, findings = _checked(paths, inventory)
    earlier = previous_desired(_load(previous, inventory)) if previous else []
    try:
        planned = sized_plan(fleet, earlier)
    except RolloutError as err:
        _refused(err, "nothing was read")
    click.echo(plan_output(planned.actions, fmt, lambda: estimates(fleet, findings)), nl=False)
    print_unread(planned.unread)
    if planned.unread:
        sys.exit(EXIT_FINDINGS)


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
@click.option(
    "--verify",
    "verify",
    is_flag=True,
    help="After health and the smoke test, benchmark each host against the spec's slo; a miss restores it.",
)
def apply(
    paths: tuple[Path, ...],
    inventory: Path | None,
    fmt: str,
    yes: bool,
    check: bool,
    standin_image: str | None,
    secrets_dir: Path | None,
    verify: bool,
) -> None:
    """Validate, render and roll out; a host that fails is restored to its last good revision.

    Hosts are updated `rollout.max_unavailable` replicas at a time; the rollout stops at
    the first failed batch. Unchanged hosts are not touched. Exit 1 when a host failed.
    With --verify a host that misses the spec's slo counts as failed (docs/verify.md).
    """
    import tempfile

    from servespec.rollout import ApplyOptions, RolloutError, StoppedAfterChangesError
    from servespec.rollout import apply as run_apply
    from servespec.rollout.progress import confirm_plan, print_outcomes, shown_events

    fleet = _load_valid(paths, inventory)
    confirm = confirm_plan(fmt, check=check, yes=yes)
    options = ApplyOptions(confirm, standin_image=standin_image, secrets_dir=secrets_dir, check_only=check)
    options.verify = verify
    for name in (d.name for d in fleet.deployments if verify and d.spec.slo is None):
        click.echo(f"warning: {name} has no slo: --verify does not benchmark it", err=True)
    with tempfile.TemporaryDirectory(prefix="servespec-apply-") as workdir:
        try:
            with shown_events(fmt) as on_event:
                options.on_event = on_event
                _, outcomes = run_apply(fleet, options, Path(workdir))
        except StoppedAfterChangesError as err:
            # Earlier deployments rolled out before this one could not: show what they did.
            print_outcomes(err.outcomes, fmt)
            _stopped_after_changes(err, err.changed)
        except RolloutError as err:
            _refused(err, "nothing was changed")
    print_outcomes(outcomes, fmt)
    sys.exit(EXIT_FINDINGS if any(o.result not in ("ok", "unchanged") for o in outcomes) else EXIT_OK)


@main.command()
@_paths_argument
@_inventory_option
@_format_option
@click.option("--metrics", "metrics", is_flag=True, help="Also read each host's engine /metrics (two looks).")
@click.option(
    "--interval", type=click.FloatRange(0.1, 600), default=2.0, show_default=True, help="Seconds between looks."
)
def status(paths: tuple[Path, ...], inventory: Path | None, fmt: str, metrics: bool, interval: float) -> None:
    """Per host: the running revision, whether it is healthy, and since when (--metrics: live engine metrics)."""
    from servespec.rollout import RolloutError
    from servespec.rollout import status as read_status
    from servespec.rollout.progress import print_status

    fleet = _load_valid(paths, inventory)
    try:
        rows = read_status(fleet)
    except RolloutError as err:
        _refused(err, "nothing was read")
    if metrics:
        from servespec.metrics.live import read
        from servespec.metrics.report import print_metrics

        shown = read(fleet, rows, interval)
        print_metrics(shown, fmt)
        rows_ok = all(r.reachable and not r.error for r in rows) and not any(m.error for m in shown)
        sys.exit(EXIT_OK if rows_ok else EXIT_FINDINGS)
    print_status(rows, fmt)
    sys.exit(EXIT_OK if all(r.reachable and not r.error for r in rows) else EXIT_FINDINGS)


@main.command()
@_paths_argument
@_inventory_option
@_comment_format_option("Output format (markdown: a pull-request comment).")
def verify(paths: tuple[Path, ...], inventory: Path | None, fmt: str) -> None:
    """Benchmark what each host runs against the spec's `slo`, from the host itself; exit 1 on a miss.

    Bounded by slo.workload (requests, max_seconds); nothing is restarted or changed (docs/verify.md).
    """
    from servespec.rollout import RolloutError
    from servespec.rollout.verify import verify as run_verify
    from servespec.rollout.verify import verify_output

    fleet = _load_valid(paths, inventory)
    if not any(d.spec.slo for d in fleet.deployments):
        raise click.UsageError("no deployment in the given specs has an slo (see docs/verify.md)")
    try:
        rows = run_verify(fleet)
    except RolloutError as err:
        _refused(err, "nothing was benchmarked")
    click.echo(verify_output(rows, fmt), nl=False)
    sys.exit(EXIT_OK if rows and all(row.ok for row in rows) else EXIT_FINDINGS)


@main.command()
@_paths_argument
@_inventory_option
@click.option(
    "--interval", type=click.FloatRange(0.5, 600), default=2.0, show_default=True, help="Seconds per refresh."
)
@click.option("--rounds", type=click.IntRange(1), help="Stop after this many refreshes (default: until interrupted).")
def top(paths: tuple[Path, ...], inventory: Path | None, interval: float, rounds: int | None) -> None:
    """Live engine metrics per host and replica, refreshed every INTERVAL seconds (the view since the last look)."""
    from servespec.metrics.live import watch
    from servespec.metrics.report import show_refreshing
    from servespec.rollout import RolloutError
    from servespec.rollout import status as read_status

    fleet = _load_valid(paths, inventory)
    try:
        rows = read_status(fleet)
    except RolloutError as err:
        _refused(err, "nothing was read")
    watch(fleet, rows, show_refreshing, interval, rounds)
    sys.exit(EXIT_OK)


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
        _refused(err, "nothing was changed")
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
        _refused(err, "nothing was changed")
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
    if (inventory is None) == (outputs is None):
        raise click.UsageError("give exactly one of -i/--inventory and --from-outputs")
    if outputs is not None:
        _discover_saved(outputs, output or Path("facts"))
    else:
        assert inventory is not None
        _discover_hosts(inventory, output or inventory.parent / "facts")


def _discover_saved(outputs: Path, destination: Path) -> None:
    """`discover --from-outputs`: the facts files of the saved outputs (a folder not holding them is a usage error)."""
    from servespec.discover import outputs_problem
    from servespec.discover.facts import write_facts
    from servespec.discover.report import print_written

    problem = outputs_problem(outputs)
    if problem:
        raise click.UsageError(problem)
    print_written(write_facts(outputs, destination))


def _discover_hosts(inventory: Path, destination: Path) -> NoReturn:
    """`discover -i`: read the inventory's hosts; exit 1 when one was not collected or the inventory is invalid."""
    from servespec.discover import inventory_errors
    from servespec.discover.report import print_collected
    from servespec.rollout import RolloutError
    from servespec.rollout import discover as collect

    fleet = _load([inventory])
    stopped = f"stopped: {inventory} is not a valid inventory; nothing was collected"
    _stop_on_errors(inventory_errors(fleet), lambda _: stopped)
    if not fleet.inventories:
        click.echo(stopped, err=True)
        sys.exit(EXIT_FINDINGS)
    try:
        failed = collect(fleet.inventories[0], destination, on_event=None)
    except RolloutError as err:
        _refused(err, "nothing was collected")
    print_collected(fleet.inventories[0].hosts, failed, destination)
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
    from servespec.knowledge.locking import lock_fleet
    from servespec.report import print_lock

    fleet = _load(paths, inventory)
    outcome = lock_fleet(fleet)
    failed = print_lock([f for f in fleet.findings if f.severity is Severity.ERROR], outcome)
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


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
    from servespec.report import print_explanation

    if not print_explanation(rule_id):
        raise click.UsageError(f"unknown rule {rule_id!r}; `deploy explain` lists them all")


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
