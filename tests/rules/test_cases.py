"""Run every rule's case file: passing specs give none of the rule's findings, failing ones exactly the expected.

Each case lists `(rule, file, line)` tuples (sqlfluff's check_tuple); the files of
`cases/_fleet/` are copied beside every case so specs can say `inventory: inventory.yaml`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.rules import ALL_RULES
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

CASES = Path(__file__).parent / "cases"
FLEET = CASES / "_fleet"


def _load_cases() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(CASES.glob("*.yaml")):
        data = YAML(typ="safe").load(path.read_text())
        assert data["rule"] == path.stem, f"{path.name} names rule {data['rule']}"
        out.extend((data["rule"], case) for case in data["cases"])
    return out


ALL_CASES = _load_cases()


def run_case(rule: str, case: dict[str, Any], root: Path) -> list[tuple[str, str, int]]:
    """Write the case's files under ``root``, validate them, return this rule's findings."""
    shutil.copytree(FLEET, root, dirs_exist_ok=True)
    for name, text in case["files"].items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    old = Path.cwd()
    # A case's `hf-cache/` files are the controller's Hugging Face cache (an adapter's adapter_config.json)
    cache = root / "hf-cache" if any(name.startswith("hf-cache/") for name in case["files"]) else None
    saved = os.environ.get("HF_HUB_CACHE")
    os.chdir(root)
    if cache is not None:
        os.environ["HF_HUB_CACHE"] = str(cache)
    try:
        specs = [
            Path(name)
            for name in case["files"]
            if name.endswith((".yaml", ".yml")) and not name.startswith("hf-cache/")
        ]
        findings = check_fleet(load_fleet(specs))
    finally:
        os.chdir(old)
        if cache is not None:
            if saved is None:
                os.environ.pop("HF_HUB_CACHE", None)
            else:
                os.environ["HF_HUB_CACHE"] = saved
    return sorted((f.rule, f.file, f.line) for f in findings if f.rule == rule)


@pytest.mark.parametrize(("rule", "case"), ALL_CASES, ids=[f"{r}-{c['name']}" for r, c in ALL_CASES])
def test_case(rule: str, case: dict[str, Any], tmp_path: Path) -> None:
    expected = sorted((r, f, line) for r, f, line in case["expect"])
    assert run_case(rule, case, tmp_path) == expected


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.id for r in ALL_RULES])
def test_rule_is_documented_and_has_cases(rule: Any) -> None:
    assert rule.__doc__ and "Source" in rule.__doc__, f"{rule.id} docstring must name its source"
    assert rule.sources, f"{rule.id} has no sources"
    assert all(s.startswith(("https://", "docs/")) for s in rule.sources), rule.sources
    assert rule.summary and rule.name
    cases = [case for r, case in ALL_CASES if r == rule.id]
    assert any(not c["expect"] for c in cases), f"{rule.id} needs a passing case"
    assert any(c["expect"] for c in cases), f"{rule.id} needs a failing case"


def test_rule_ids_are_unique() -> None:
    ids = [rule.id for rule in ALL_RULES]
    assert len(ids) == len(set(ids))
