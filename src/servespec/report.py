"""Print what the commands report: findings in `deploy validate`'s formats (contract §2), table cells, the lines
of render, lock and explain.

``deploy estimate`` prints with :mod:`servespec.estimate_report`, ``deploy plan`` with
:mod:`servespec.plan.report`, and the rollout's commands (apply, status, rollback, destroy,
discover) with :mod:`servespec.rollout.progress`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from servespec import __version__
from servespec.findings import Finding, Severity
from servespec.rules import ALL_RULES, RULES_BY_ID
from servespec.text import printable

if TYPE_CHECKING:
    from servespec.knowledge.locking import LockOutcome

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def cell(text: object) -> Any:
    """A rich table cell shown as the literal text: escaped, never read as rich markup or emoji codes.

    One definition for every table servespec prints (estimate, status, the rollout's live view
    and outcome); rich is imported only when a table is printed.
    """
    from rich.text import Text

    return Text(printable(str(text)))


def render(fmt: str, findings: Sequence[Finding], summary: dict[str, int]) -> str:
    """The whole report in ``fmt``, ending with a newline (empty for clean text output)."""
    if fmt == "json":
        return (
            json.dumps({"version": 1, "findings": [f.to_json() for f in findings], "summary": summary}, indent=2) + "\n"
        )
    if fmt == "sarif":
        return json.dumps(sarif(findings), indent=2) + "\n"
    if fmt == "github":
        return "".join(github_annotation(f) + "\n" for f in findings)
    return "".join(f.to_text() + "\n" for f in findings)


def print_findings(fmt: str, findings: Sequence[Finding], summary: dict[str, int]) -> None:
    """`deploy validate`'s report: :func:`render` on stdout and, in text, :func:`text_summary` on stderr."""
    sys.stdout.write(render(fmt, findings, summary))
    if fmt == "text":
        click.echo(text_summary(summary), err=True)


def print_errors(findings: Sequence[Finding]) -> int:
    """Print the error findings on stderr; how many there were."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    for finding in errors:
        click.echo(finding.to_text(), err=True)
    return len(errors)


def print_stale(stale: Sequence[str], output: Path, total: int) -> None:
    """`deploy render --check`: each stale file, then what to run; or that ``output``'s ``total`` files are current."""
    shown = printable(str(output))
    for name in stale:
        click.echo(f"stale: {printable(str(output / name))}")
    if stale:
        click.echo(f"{len(stale)} file(s) differ from what the specs render; run deploy render -o {shown}", err=True)
    else:
        click.echo(f"{shown}: up to date ({total} files)", err=True)


def print_lock(errors: Sequence[Finding], outcome: LockOutcome) -> bool:
    """`deploy lock`: the findings (the fleet's errors, then the lock's own), the files written and the count.

    Returns whether one of those findings is an error.
    """
    findings = [*errors, *outcome.findings]
    for finding in findings:
        click.echo(finding.to_text(), err=True)
    for name in outcome.written:
        click.echo(f"wrote {printable(name)}", err=True)
    skipped = f", {outcome.skipped} skipped (model.config given)" if outcome.skipped else ""
    click.echo(f"locked {outcome.locked} model(s){skipped}", err=True)
    return any(f.severity is Severity.ERROR for f in findings)


def print_explanation(rule_id: str | None) -> bool:
    """`deploy explain`: every rule in one line each, or one rule's page; False when ``rule_id`` names none."""
    if rule_id is None:
        for rule in ALL_RULES:
            kinds = ",".join(dict.fromkeys(e.kind.value for e in rule.evidence)) or "-"
            click.echo(f"{rule.id:8} {rule.severity.value:8} {kinds:32} {rule.summary}")
        return True
    found = RULES_BY_ID.get(rule_id.upper())
    if found is None:
        return False
    kinds = ", ".join(dict.fromkeys(e.kind.value for e in found.evidence)) or "none (never an error)"
    click.echo(f"{found.id} ({found.name}), default severity: {found.severity.value}; evidence: {kinds}\n")
    click.echo(found.explain())
    click.echo("\nSources:")
    for source in found.sources:
        click.echo(f"  {source}")
    return True


def text_summary(summary: dict[str, int]) -> str:
    """One closing line for humans, printed to stderr."""
    return (
        f"{summary['files']} file(s) checked: {summary['errors']} error(s), "
        f"{summary['warnings']} warning(s), {summary['infos']} info(s)"
    )


def sarif(findings: Sequence[Finding]) -> dict[str, object]:
    """A SARIF 2.1.0 log with one run, every rule described, one result per finding."""
    rules = [
        {
            "id": rule.id,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.explain().split("\n\n")[0]},
            "help": {"text": rule.explain()},
            "helpUri": rule.docs_url(),
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        }
        for rule in ALL_RULES
    ]
    index = {rule.id: i for i, rule in enumerate(ALL_RULES)}
    results = []
    for finding in findings:
        message = finding.message_with_hint
        result: dict[str, object] = {
            "ruleId": finding.rule,
            "level": _SARIF_LEVEL[finding.severity],
            "message": {"text": message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": finding.file.replace("\\", "/")},
                        "region": {"startLine": finding.line, "startColumn": finding.column},
                    }
                }
            ],
        }
        if finding.rule in index:
            result["ruleIndex"] = index[finding.rule]
        results.append(result)
    return {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "servespec",
                        "version": __version__,
                        "informationUri": "https://github.com/servespec/servespec",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }


def _escape_data(text: str) -> str:
    """GitHub's escaping of a workflow command's data (``%``, CR, LF), then every other unsafe character."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(text: str) -> str:
    """A property value: the data escaping, and ``:`` and ``,``, which end a property."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(finding: Finding) -> str:
    """A GitHub Actions workflow command (``::error file=...,line=...::message``)."""
    props = ",".join(
        [
            f"file={_escape_property(finding.file)}",
            f"line={finding.line}",
            f"col={finding.column}",
            f"title={_escape_property(finding.rule)}",
        ]
    )
    message = finding.message_with_hint
    return f"::{_GITHUB_LEVEL[finding.severity]} {props}::{_escape_data(message)}"
