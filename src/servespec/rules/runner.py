"""Run every rule over a fleet, apply suppressions and return the sorted findings."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from servespec.findings import Finding, Severity
from servespec.rules import ALL_RULES, RULES_BY_ID
from servespec.rules.schema import Suppressions
from servespec.spec.fleet import Fleet
from servespec.spec.source import Document


def check_fleet(fleet: Fleet, *, strict: bool = False) -> list[Finding]:
    """All findings for ``fleet``: loading problems, every rule, then suppressions."""
    findings = list(fleet.findings)
    for rule in ALL_RULES:
        findings.extend(rule().check(fleet))
    findings = [_with_docs(f) for f in findings]
    findings = apply_suppressions(fleet.documents, findings)
    if strict:
        findings = [f.with_severity(Severity.ERROR) if f.severity is Severity.WARNING else f for f in findings]
    return sorted(set(findings), key=lambda f: (f.file, f.line, f.column, f.rule, f.message))


def _with_docs(finding: Finding) -> Finding:
    rule = RULES_BY_ID.get(finding.rule)
    if rule is None or finding.docs:
        return finding
    return dataclasses.replace(finding, docs=rule.docs_url())


def apply_suppressions(documents: Iterable[Document], findings: list[Finding]) -> list[Finding]:
    """Drop findings a document suppresses with a reason; report bad or unused entries (SS005)."""
    kept = list(findings)
    rule = Suppressions()
    for document in documents:
        entries = document.data.get("suppress") if isinstance(document.data, dict) else None
        if not isinstance(entries, list):
            continue
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str):
                continue  # the model reports malformed entries (SS003/SS004)
            rule_id = entry["rule"]
            reason = entry.get("reason")
            path = ("suppress", index)
            if not isinstance(reason, str) or not reason.strip():
                kept.append(
                    _with_docs(
                        rule.report(
                            document,
                            f"suppression of {rule_id} gives no reason, so it silences nothing",
                            (*path, "rule"),
                            hint='add reason: "why this finding does not apply"',
                        )
                    )
                )
                continue
            matched = [f for f in kept if f.rule == rule_id and document.contains(f)]
            if not matched:
                kept.append(
                    _with_docs(
                        rule.report(
                            document,
                            f"suppression of {rule_id} matches no finding",
                            (*path, "rule"),
                            hint="remove the stale entry",
                        )
                    )
                )
            kept = [f for f in kept if f not in matched]
    return kept


def summarize(findings: Iterable[Finding], files: int) -> dict[str, int]:
    """Counts for the JSON summary (contract §2.1)."""
    counts = {"files": files, "errors": 0, "warnings": 0, "infos": 0}
    for finding in findings:
        counts[{"error": "errors", "warning": "warnings", "info": "infos"}[finding.severity.value]] += 1
    return counts
