"""The 11th-engine experiment: a unit copied under a new name and registered gets every test the original gets.

In a temporary copy of the checkout, ``engines/tgi`` is copied to ``engines/tgx`` (its name changed inside its
own folder) and one line is added to the registry. Nothing else is edited: the spec grammar, the role and the
test tables follow the registry. pytest then collects the same test instances for ``tgx`` as for ``tgi``, apart
from the tests driven by case files an engine brings of its own (golden cases, upstream recipes), which a unit
without them fails (test_engine_units: "a golden case").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

ORIGINAL, COPY = "tgi", "tgx"

CASE_DRIVEN = {
    "tests/render/test_golden.py::test_render_matches_golden",
    "tests/render/test_catalog_conformance.py::test_emitted_names_exist_in_the_catalog",
    "tests/render/test_recipes.py::test_recipe_validates_without_false_error",
    "tests/render/test_recipes.py::test_recipe_renders_what_upstream_launches",
    "tests/test_yaml_c_parser.py::test_both_parsers_read_every_file_alike",
}
"""Tests with one instance per case file under tests/ (tests/golden/<engine>/, tests/data/recipes/): a new
engine gets them with its own cases."""

CASE_LISTS = {
    "tests/rules/test_extra_args_spellings.py::test_spellings_the_parser_refuses_stay_unknown",
    "tests/render/test_served_names.py::test_a_name_the_engine_cannot_take_is_a_located_warning",
    "tests/render/test_model_store.py::test_a_store_that_cannot_be_mounted_is_eng006_at_the_setting",
    "tests/render/test_entrypoint.py::test_command_replaces_servespecs_launcher_words",
}
"""Hand-written lists of cases that name an engine's particular releases, options or launcher words (TGI's
option without a served name, its launcher words): one engine's facts, not a table of every engine. The list
only shrinks: a test turned into a registry table leaves it."""


def _copy_checkout(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / name)


def _add_engine(root: Path) -> list[Path]:
    """Copy the unit under the new name and register it; the files edited outside the new unit's folder."""
    units = root / "src" / "servespec" / "engines"
    shutil.copytree(units / ORIGINAL, units / COPY, ignore=shutil.ignore_patterns("__pycache__"))
    for path in (units / COPY).rglob("*.py"):
        text = path.read_text()
        text = text.replace(f"servespec.engines.{ORIGINAL}", f"servespec.engines.{COPY}")
        path.write_text(text.replace(f'name = "{ORIGINAL}"', f'name = "{COPY}"'))
    profile = units / COPY / "profile.yaml"
    profile.write_text(re.sub(rf"(?m)^engine: {ORIGINAL}$", f"engine: {COPY}", profile.read_text(), count=1))
    registry = units / "registry.py"
    line = f'    "{ORIGINAL}": "{ORIGINAL}",\n'
    text = registry.read_text()
    assert line in text, "the registry's line for the unit copied"
    registry.write_text(text.replace(line, line + f'    "{COPY}": "{COPY}",\n', 1))
    return [registry]


def _mentions(ids: list[str], engine: str) -> set[str]:
    word = re.compile(rf"(?<![A-Za-z0-9_.]){re.escape(engine)}(?![A-Za-z0-9_.])")
    return {node for node in ids if word.search(node)}


def test_a_copied_unit_gets_every_test_of_the_original(tmp_path: Path) -> None:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs the git checkout (the files git lists are copied)")
    root = tmp_path / "checkout"
    _copy_checkout(root)
    edited = _add_engine(root)
    assert edited == [root / "src" / "servespec" / "engines" / "registry.py"]
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "from servespec import engines; from servespec.spec.models import ENGINE_NAMES; "
            f"assert engines.get({COPY!r}).profile.engine == {COPY!r} and {COPY!r} in ENGINE_NAMES; "
            "print(engines.__file__)",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip().startswith(str(root)), "the copy's package is the one imported"
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    original = _mentions(ids, ORIGINAL)
    copied = {node.replace(COPY, ORIGINAL) for node in _mentions(ids, COPY)}
    own = {node for node in original if node.split("[")[0] in CASE_DRIVEN | CASE_LISTS}
    assert copied == original - own, (
        f"{len(copied)} test instances for {COPY}, {len(original - own)} for {ORIGINAL}; missing: "
        + ", ".join(sorted(original - own - copied)[:20])
    )
    assert len(copied) >= 70
    still_listed = {node.split("[")[0] for node in own}
    assert still_listed >= CASE_DRIVEN | CASE_LISTS, "a test left the lists: drop it here"
