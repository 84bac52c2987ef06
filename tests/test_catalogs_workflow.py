""".github/workflows/catalogs.yml: weekly, least privilege, pinned actions, and only commands and files that exist.

The repository has no workflow linter of its own; where ``actionlint`` is on PATH it is run too.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "catalogs.yml"


def _workflow() -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(WORKFLOW.read_text())
    return data


def _steps(job: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _workflow()["jobs"][job]["steps"]
    return steps


def _runs(job: str) -> str:
    return "\n".join(str(step.get("run", "")) for step in _steps(job))


def test_it_runs_weekly_and_by_hand() -> None:
    triggers = _workflow()["on"]
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    (entry,) = triggers["schedule"]
    minute, hour, day, month, weekday = entry["cron"].split()
    assert minute.isdigit() and hour.isdigit() and (day, month) == ("*", "*")
    assert re.fullmatch(r"[0-6]", weekday), "one day of the week"


def test_permissions_are_the_least_each_job_needs() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    assert set(jobs) == {"refresh", "pull-request"}
    # the job that runs the releases' code reads only; the one that pushes runs none of it
    assert jobs["refresh"]["permissions"] == {"contents": "read"}
    assert jobs["pull-request"]["permissions"] == {"contents": "write", "pull-requests": "write"}
    assert jobs["pull-request"]["needs"] == "refresh"
    for job in jobs:
        for step in _steps(job):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, job


def test_every_action_is_pinned_to_a_commit() -> None:
    used = [str(step["uses"]) for job in _workflow()["jobs"] for step in _steps(job) if "uses" in step]
    assert any(u.startswith("peter-evans/create-pull-request@") for u in used)
    for action in used:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), action
    text = WORKFLOW.read_text()
    for action in used:
        assert re.search(rf"{re.escape(action)}\s+# v\d+\.\d+\.\d+", text), f"{action}: name the release it pins"


def test_it_sets_up_refreshes_tests_and_only_then_hands_over_a_patch() -> None:
    steps = _steps("refresh")
    runs = [str(step.get("run", "")) for step in steps]
    order = [
        next(i for i, run in enumerate(runs) if "scripts/setup.sh" in run),
        next(i for i, run in enumerate(runs) if "scripts/catalog/refresh" in run and "--dry-run" not in run),
        next(i for i, run in enumerate(runs) if "pytest" in run),
        next(i for i, run in enumerate(runs) if "git diff" in run),
    ]
    assert order == sorted(order)
    assert "continue-on-error" not in steps[order[2]], "failing tests open no pull request"
    apply = next(str(s["run"]) for s in _steps("pull-request") if "git apply" in str(s.get("run", "")))
    assert "--include='src/servespec/engines/*'" in apply and "--include='docs/*'" in apply


def test_the_commands_and_files_it_names_exist() -> None:
    refresh = _runs("refresh")
    for script in ("scripts/setup.sh", "scripts/catalog/refresh", "scripts/parser-envs"):
        assert script in refresh and (REPO / script).is_file()
    for script in ("scripts/catalog/refresh", "scripts/parser-envs"):
        assert (REPO / script).stat().st_mode & 0o111, f"{script} is executable"
    pytest_line = " ".join(line.strip() for line in refresh.splitlines() if line.strip())
    args = shlex.split(pytest_line[pytest_line.index("-m pytest") :])
    paths = [a for a in args if a.startswith("tests/")]
    assert paths and all((REPO / p).exists() for p in paths), paths
    # the parser environments it builds are the ones the builders run, each with its lock file
    envs = set(re.findall(r"envs\+=\(([\w.-]+)\)", refresh))
    builders = (REPO / "scripts/catalog/vllm.py").read_text() + (REPO / "scripts/catalog/sglang.py").read_text()
    assert envs and all(f'"{env}"' in builders or f"/{env}" in builders for env in envs), envs
    assert all((REPO / "tests/parsers" / f"requirements-{env}.txt").is_file() for env in envs)


def test_actionlint_finds_nothing() -> None:
    tool = shutil.which("actionlint")
    if tool is None:
        pytest.skip("actionlint is not installed")
    done = subprocess.run([tool, str(WORKFLOW)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
