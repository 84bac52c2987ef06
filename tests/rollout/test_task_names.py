"""The controller reads some tasks' results by name: those names must exist in the role.

A renamed task once made `apply` report revisions as "- -> -" while the host had allocated one.
"""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from servespec import rollout
from tests.conftest import REPO

TASKS = REPO / "playbooks" / "roles" / "servespec" / "tasks"


def _names(node: object) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("name"), str):
            found.add(node["name"])
        for value in node.values():
            found |= _names(value)
    elif isinstance(node, list):
        for item in node:
            found |= _names(item)
    return found


@pytest.mark.parametrize(
    "name", [rollout.TASK_ALLOCATE, rollout.TASK_MARK_GOOD, rollout.TASK_COLLECT, rollout.TASK_STATUS]
)
def test_controller_reads_existing_task(name: str) -> None:
    names: set[str] = set()
    for path in TASKS.glob("*.yml"):
        names |= _names(YAML(typ="safe").load(path.read_text()))
    assert name in names
