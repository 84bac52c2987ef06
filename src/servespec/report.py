"""Print findings in the formats `deploy validate --format` offers (contract §2), and table cells."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from servespec import __version__
from servespec.findings import Finding, Severity
from servespec.rules import ALL_RULES
from servespec.text import printable

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
