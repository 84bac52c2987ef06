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


UNITS_SCRIPT = """
import sys
from click.testing import CliRunner
import servespec.spec.models
TABLE = "servespec.engines.registry"  # the registry's names, a leaf
after_models = sorted(m for m in sys.modules if m.startswith("servespec.engines.") and m != TABLE)
from servespec.cli import main
result = CliRunner().invoke(main, ["validate", sys.argv[1]])
from servespec.engines.catalog import Catalog
units = sorted({m.split(".")[2] for m in sys.modules if m.startswith("servespec.engines.")})
print(result.exit_code, ",".join(after_models) or "-", ",".join(units), Catalog.release.cache_info().currsize)
"""

KIT = {"base", "catalog", "images", "lifecycle", "native", "options", "kit", "gguf", "registry", "layout", "shards"}
"""The engine kit: what every unit uses, below them (and the registry's table of names, which imports nothing)."""


def test_validate_imports_the_specs_engine_and_one_release_only() -> None:
    # The registry imports a unit on first get(name), the spec grammar takes the registry's names without
    # importing any, and a release catalog is parsed when a spec names it.
    spec = REPO / "specs" / "examples" / "vllm.yaml"
    out = subprocess.run([sys.executable, "-c", UNITS_SCRIPT, str(spec)], capture_output=True, text=True, check=True)
    code, after_models, units, releases = out.stdout.split()
    assert code == "0"
    assert after_models == "-", "importing the spec models imports no unit and no catalog"
    assert set(units.split(",")) - KIT == {"vllm"}
    assert releases == "1", "one vLLM release parsed (the one the spec names)"
