"""`deploy validate` must not load the rollout or rendering stacks (start-up time)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

SCRIPT = """
import sys
from click.testing import CliRunner
from servespec.cli import main
result = CliRunner().invoke(main, ["validate", sys.argv[1]])
heavy = sorted(m for m in ("jinja2", "ansible", "ansible_runner", "docker", "rich") if m in sys.modules)
print(result.exit_code, ",".join(heavy))
"""


def test_validate_loads_no_heavy_modules() -> None:
    spec = REPO / "specs" / "examples" / "vllm.yaml"
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(spec)], capture_output=True, text=True, check=True)
    code, heavy = out.stdout.split()[0], out.stdout.strip().partition(" ")[2]
    assert code == "0"
    assert heavy == ""
