"""`deploy validate` must not load the rollout or rendering stacks (start-up time)."""

from __future__ import annotations

import os
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

KIT = {
    "base", "catalog", "images", "lifecycle", "native", "options", "kit", "gguf", "profile", "registry", "versions",
    "layout", "shards",
}  # fmt: skip
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


VERSION_SCRIPT = """
import sys
from click.testing import CliRunner
from servespec.cli import main
result = CliRunner().invoke(main, ["--version"])
watched = ("pydantic", "ruamel", "importlib.metadata", "servespec.rules")
loaded = sorted(m for m in sys.modules if m.startswith(("servespec.engines.", *watched)))
print(result.exit_code)
print(",".join(loaded))
print(result.output, end="")
"""


def test_version_names_the_newest_catalogued_release_of_every_engine_without_loading_a_unit() -> None:
    from importlib.metadata import version

    from servespec import engines

    out = subprocess.run([sys.executable, "-c", VERSION_SCRIPT], capture_output=True, text=True, check=True)
    code, loaded, first, heading, *rows = out.stdout.splitlines()
    assert code == "0"
    # the file names are listed: no unit, no release file parsed, no pydantic, no package metadata (the
    # version is servespec.__version__: click's version lookup costs ~15 ms of importlib.metadata)
    assert set(loaded.split(",")) == {"servespec.engines.registry", "servespec.engines.versions"}
    assert first == f"servespec {version('servespec')}" and "scripts/catalog/refresh" in heading
    assert len(rows) == len(engines.names())
    for row, engine in zip(rows, engines.ENGINES, strict=True):
        catalog = engine.catalog
        name, newest, *pre = row.split()
        assert (name, newest) == (engine.name, catalog.versions[-1])
        if pre:  # a catalogued pre-release newer than every release (its own file exists)
            shown = pre[1].rstrip(")")
            assert pre[0] == "(pre-release" and shown in catalog.files and shown not in catalog.versions
            assert catalog.select(shown).relation == "exact"


BUILT_SCRIPT = """
import sys
from click.testing import CliRunner
from pydantic import BaseModel
from servespec.cli import main
result = CliRunner().invoke(main, ["validate", sys.argv[1]])
models, stack = set(), [BaseModel]
while stack:
    for sub in stack.pop().__subclasses__():
        if sub.__module__.startswith("servespec.") and sub not in models:
            models.add(sub)
            stack.append(sub)
print(result.exit_code, ",".join(sorted(m.__name__ for m in models if m.__pydantic_complete__)))
"""


def test_validate_builds_no_validator_for_a_nested_model() -> None:
    # defer_build: a model's validator is built on first use; one used only inside another is built into its
    # parent's, never on its own (twenty spec models, a dozen profile and catalog models at import otherwise).
    spec = REPO / "specs" / "examples" / "vllm.yaml"
    out = subprocess.run([sys.executable, "-c", BUILT_SCRIPT, str(spec)], capture_output=True, text=True, check=True)
    code, built = out.stdout.split()
    assert code == "0"
    assert {"Deployment", "Inventory", "Profile", "ReleaseFacts"} <= set(built.split(","))
    assert not {"ModelSpec", "EngineSpec", "Host", "Parallelism", "Arguments", "QuantizationMethod"} & set(
        built.split(",")
    )


PLAIN_SCRIPT = """
import sys
from click.testing import CliRunner
from servespec.cli import main
result = CliRunner().invoke(main, ["validate", sys.argv[1]])
libraries, stages = set(sys.argv[2].split(",")), tuple(sys.argv[3].split(","))
loaded = sorted(m for m in sys.modules if m.split(".")[0] in libraries or m.startswith(stages))
import pydantic.plugin._loader as loader
print(result.exit_code, ",".join(loaded) or "-", "scanned" if loader._plugins is not None else "not-scanned")
"""

NOT_FOR_VALIDATE = (
    "jinja2", "rich", "ansible", "ansible_runner", "docker", "huggingface_hub", "httpx", "httpcore", "yaml",
    "requests", "jsonschema", "check_jsonschema",
)  # fmt: skip
"""Libraries of rendering, rollout, the Hub (opt-in: --hub) and the schema tools: a plain validate needs none."""

STAGES_NOT_FOR_VALIDATE = (
    "servespec.render", "servespec.plan", "servespec.rollout", "servespec.metrics", "servespec.discover",
    "servespec.estimate", "servespec.docgen", "servespec.outdir", "servespec.spec.schemas",
)  # fmt: skip
"""servespec's later stages and its generators: imported by their own commands only."""


def _plain_validate(env: dict[str, str]) -> tuple[str, str, str]:
    spec = REPO / "specs" / "examples" / "vllm.yaml"
    argv = [
        sys.executable,
        "-c",
        PLAIN_SCRIPT,
        str(spec),
        ",".join(NOT_FOR_VALIDATE),
        ",".join(STAGES_NOT_FOR_VALIDATE),
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    code, loaded, scanned = out.stdout.split()
    return code, loaded, scanned


def test_plain_validate_imports_no_later_stage_and_scans_no_entry_points() -> None:
    # The pinned start-up of `deploy validate` (issue 21 item 6, bench/validate_throughput.py measures it): no
    # library of a later stage, no later stage of servespec, and no scan of every installed distribution's entry
    # points for pydantic plugins (~20 ms: the CLI sets PYDANTIC_DISABLE_PLUGINS=__all__ when unset).
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    code, loaded, scanned = _plain_validate(env)
    assert code == "0"
    assert loaded == "-"
    assert scanned == "not-scanned"


def test_a_callers_pydantic_plugin_setting_is_kept() -> None:
    # PYDANTIC_DISABLE_PLUGINS set by the caller, even empty (= every plugin on), wins over the CLI's default.
    code, _, scanned = _plain_validate({**os.environ, "PYDANTIC_DISABLE_PLUGINS": ""})
    assert code == "0"
    assert scanned == "scanned"
