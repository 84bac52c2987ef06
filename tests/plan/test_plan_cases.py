"""plan() is a pure function: JSON cases give the desired and observed state and the actions expected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from servespec.plan import Desired, Observed, plan

CASES = sorted((Path(__file__).parent / "cases").glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_plan_case(path: Path) -> None:
    """Each expected action lists the keys it checks: the first cases the version-1 keys, the later ones
    also restart_reason, changes, memory (per GPU before/after/delta) and download."""
    case: dict[str, Any] = json.loads(path.read_text())
    actions = plan(
        [Desired.from_json(d) for d in case["desired"]],
        [Observed.from_json(o) for o in case["observed"]],
        [Desired.from_json(d) for d in case.get("previous", [])],
    )
    got = []
    for action, want in zip(actions, case["actions"], strict=False):
        shown = {**action.to_json(), "files_changed": sorted(action.diffs)}
        got.append({key: shown[key] for key in want})
    assert len(actions) == len(case["actions"])
    assert got == case["actions"]


def test_update_diff_is_a_unified_diff() -> None:
    desired = [Desired("d", "h1", "b", {"config.yaml": "port: 2\n"})]
    observed = [Observed("d", "h1", current=1, good=1, digest="a", status="good", files={"config.yaml": "port: 1\n"})]
    (action,) = plan(desired, observed)
    assert action.diffs["config.yaml"].splitlines()[:2] == ["--- a/d/h1/config.yaml", "+++ b/d/h1/config.yaml"]
    assert "-port: 1" in action.diffs["config.yaml"] and "+port: 2" in action.diffs["config.yaml"]


def test_markdown_summary_is_short_and_has_the_memory_table() -> None:
    from servespec.plan.report import plan_markdown

    desired = [
        Desired("d", "h1", "b", {"config.yaml": "port: 2\n"}),
        Desired("d", "h2", "b", {"config.yaml": "port: 2\n"}),
    ]
    observed = [Observed("d", "h1", current=1, good=1, digest="a", status="good", files={"config.yaml": "port: 1\n"})]
    text = plan_markdown(plan(desired, observed), [])
    assert "**1 create, 1 update**" in text
    assert "| d | h1 | update | 1 | 1 file(s) changed (config.yaml) |" in text
    assert len(text.splitlines()) < 20
