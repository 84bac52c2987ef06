"""The playbooks and the role pass ansible-lint's production profile, with no rule skipped."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def test_ansible_lint_production_profile() -> None:
    lint = shutil.which("ansible-lint", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.skip("ansible-lint is not installed (pip install -e '.[dev]')")
    result = subprocess.run(
        [lint, "--offline", "--nocolor", "--profile", "production", "."],
        cwd=REPO / "playbooks",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert not (REPO / "playbooks" / ".ansible-lint").exists(), "no lint configuration may skip rules"
