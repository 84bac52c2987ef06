"""An error is a proof: every rule that can report an error declares the evidence behind it (issue 22, item 1)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.rules.test_cases import ALL_CASES, CASES, FLEET

from servespec.cli import main
from servespec.findings import Severity
from servespec.rules import ALL_RULES, RULES_BY_ID
from servespec.rules.base import Evidence, EvidenceKind, Rule
from servespec.spec.source import load_text

RULES_DIR = Path(inspect.getfile(Rule)).parent
REPO = RULES_DIR.parents[2]


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.id for r in ALL_RULES])
def test_an_error_level_rule_declares_its_evidence(rule: Any) -> None:
    if rule.severity is Severity.ERROR:
        assert rule.evidence, f"{rule.id} is an error without declared evidence"
    for evidence in rule.evidence:
        assert isinstance(evidence, Evidence) and evidence.cites
        for cite in evidence.cites:
            if evidence.kind is EvidenceKind.ENGINE_REFUSAL and cite.startswith("https://github.com/"):
                assert "/blob/" in cite and "/main/" not in cite, f"{rule.id}: {cite} is not pinned"
            if cite.startswith("docs/"):
                assert (REPO / cite.split("#", 1)[0]).is_file(), cite
        if evidence.kind is EvidenceKind.SECURITY_POLICY:
            assert all(c.startswith("docs/security.md#") for c in evidence.cites)


def _error_overrides(tree: ast.Module) -> dict[str, bool]:
    """Rule class -> whether its body names Severity.ERROR anywhere (a class default or a report override)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", "") == "Rule" for b in node.bases):
            found[node.name] = any(
                isinstance(n, ast.Attribute) and n.attr == "ERROR" and getattr(n.value, "id", "") == "Severity"
                for n in ast.walk(node)
            )
    return found


def test_no_rule_names_the_error_level_without_evidence() -> None:
    by_class = {rule.__name__: rule for rule in ALL_RULES}
    for path in sorted(RULES_DIR.glob("*.py")):
        for name, errs in _error_overrides(ast.parse(path.read_text())).items():
            if errs and name in by_class:
                assert by_class[name].evidence, f"{path.name}: {name} can report an error without evidence"


def test_report_demotes_an_unproven_error() -> None:
    class Guess(Rule):
        id = "ZZ999"
        name = "test.guess"
        severity = Severity.ERROR
        summary = "a guess"
        sources = ()

    (document,), _ = load_text("a: 1\n", "x.yaml", Path("x.yaml"))
    assert Guess().report(document, "m", ("a",)).severity is Severity.WARNING
    assert Guess().report(document, "m", ("a",), severity=Severity.INFO).severity is Severity.INFO


def test_every_error_the_case_files_produce_comes_from_a_rule_with_evidence(tmp_path: Path) -> None:
    import os
    import shutil

    from tests.rules.test_cases import run_case  # noqa: F401 - the same fixture fleet

    from servespec.rules.runner import check_fleet
    from servespec.spec.fleet import load_fleet

    failing = [(rule, case) for rule, case in ALL_CASES if case["expect"]]
    assert failing and CASES.is_dir()
    for index, (_, case) in enumerate(failing):
        root = tmp_path / str(index)
        shutil.copytree(FLEET, root)
        for name, text in case["files"].items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        old = Path.cwd()
        os.chdir(root)
        try:
            specs = [Path(name) for name in case["files"] if name.endswith((".yaml", ".yml"))]
            findings = check_fleet(load_fleet(specs))
        finally:
            os.chdir(old)
        for finding in findings:
            if finding.severity is Severity.ERROR:
                assert RULES_BY_ID[finding.rule].evidence, (case["name"], finding.rule)


def test_explain_shows_the_evidence_class() -> None:
    out = CliRunner().invoke(main, ["explain", "SEC001"]).output
    assert "security-policy" in out and "docs/security.md#secrets" in out
    assert "never reports an error" in CliRunner().invoke(main, ["explain", "ROL002"]).output
