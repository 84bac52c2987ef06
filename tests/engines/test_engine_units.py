"""Each engine is one unit: its folder, one line in the registry, regenerated artefacts.

Like the rule meta-test: every registered engine must bring a typed profile, release
catalogs, templates, a golden case and a docs page, and nothing outside ``engines/`` may
branch on an engine's name.
"""

from __future__ import annotations

import ast
import json
import re
import typing
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.base import Profile
from servespec.engines.catalog import POOL, ReleaseFacts
from servespec.spec.models import ENGINE_NAMES

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "src" / "servespec"
NAMES = set(engines.names())


def test_registry_is_the_spec_grammar() -> None:
    assert tuple(engines.names()) == ENGINE_NAMES
    assert len(set(engines.ENGINES)) == len(engines.ENGINES)


@pytest.mark.parametrize("engine", engines.ENGINES, ids=lambda e: e.name)
def test_every_engine_brings_its_whole_unit(engine: engines.Engine) -> None:
    folder = Path(str(engine.folder))
    assert folder.parent == PACKAGE / "engines", "an engine lives in src/servespec/engines/<name>/"
    assert isinstance(engine.profile, Profile) and engine.profile.engine == engine.name
    assert engine.releases, "at least one release catalog"
    for path in (folder / "releases").glob("*.json"):
        if path.name == POOL:
            continue
        data = json.loads(path.read_text())
        assert data["engine"] == engine.name and data["source"].startswith("https://"), path
        ReleaseFacts.model_validate(data.get("facts") or {})  # validated when loaded too
    templates = list((folder / "templates").glob("*.j2"))
    assert templates, "its native files' templates"
    assert list((ROOT / "tests" / "golden" / engine.name).glob("*/spec.yaml")), "a golden case"
    assert (ROOT / "docs" / "engines" / f"{engine.name}.md").is_file(), "a docs page (deploy docs -o docs)"
    import importlib

    from servespec.engines.gguf import GgufEngine

    assert callable(importlib.import_module(f"{engine.package}.render").context)
    if not isinstance(engine, GgufEngine):
        assert callable(importlib.import_module(f"{engine.package}.memory").estimate)
    # Every template it names when rendering exists in its own folder.
    source = (folder / "render.py").read_text()
    for name in {t.name for t in templates}:
        assert f"{engine.name}/{name}" in source, f"template {name} is rendered by nothing"


def test_profiles_refuse_unknown_keys() -> None:
    data = engines.get("vllm").profile.model_dump()
    data["batch_optoin"] = "max_num_seqs"
    with pytest.raises(ValueError, match="batch_optoin"):
        Profile.model_validate(data)
    with pytest.raises(ValueError, match="quantization_method"):
        ReleaseFacts.model_validate({"quantization_method": {}})


def _engine_name_branches(tree: ast.AST) -> list[tuple[int, str]]:
    """Places that compare with, look up by or key on an engine's name."""
    found = []

    def names_in(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and node.value in NAMES:
            return [str(node.value)]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return [n for item in node.elts for n in names_in(item)]
        return []

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += [(node.lineno, name) for name in names_in(operand)]
        elif isinstance(node, ast.Dict):
            found += [(node.lineno, name) for key in node.keys if key is not None for name in names_in(key)]
        elif isinstance(node, ast.match_case):
            found += [(node.pattern.lineno, name) for name in names_in(getattr(node.pattern, "value", node.pattern))]
    return found


PLAYBOOKS = ROOT / "playbooks"
ROLE_ENGINE_VARIABLE = re.compile(r"\bservespec_engine\b")


def _yaml_name_branches(text: str) -> list[tuple[int, str]]:
    """Lines of a playbook that read the engine's name, or quote one in a condition."""
    found = []
    quoted = re.compile(r"(['\"])(" + "|".join(re.escape(name) for name in sorted(NAMES)) + r")\1")
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        if ROLE_ENGINE_VARIABLE.search(code):
            found.append((number, "servespec_engine"))
        if ("when:" in code or "{{" in code or "{%" in code) and (match := quoted.search(code)):
            found.append((number, match.group(2)))
    return found


def test_no_engine_name_branches_outside_engines() -> None:
    offenders = []
    for path in sorted([*PACKAGE.rglob("*.py"), *PLAYBOOKS.rglob("*.py")]):
        relative = path.relative_to(ROOT)
        if path.is_relative_to(PACKAGE / "engines"):
            continue
        for line, name in _engine_name_branches(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{relative}:{line}: {name!r}")
    for path in sorted([*PLAYBOOKS.rglob("*.yml"), *PLAYBOOKS.rglob("*.yaml")]):
        relative = path.relative_to(ROOT)
        if relative.parts[-2:] in {("meta", "argument_specs.yml"), ("defaults", "main.yml")}:
            continue  # where the role declares its variables, servespec_engine among them
        for line, name in _yaml_name_branches(path.read_text()):
            offenders.append(f"{relative}:{line}: {name!r}")
    assert not offenders, "engine-specific behaviour belongs in its unit (profile or Engine): " + ", ".join(offenders)


def test_the_playbook_branch_finder_finds_branches() -> None:
    text = (
        "- name: x\n  when: servespec_engine == 'ollama'\n"
        "- name: y\n  when: \"servespec_model in ['vllm']\"\n"
        "  # servespec_engine in a comment is no branch\n"
        "- name: z\n  command: [ollama, pull]\n"
    )
    assert _yaml_name_branches(text) == [(2, "servespec_engine"), (2, "ollama"), (4, "vllm")]


def test_the_roles_host_steps_are_the_profiles() -> None:
    # What the role runs once a container is up is declared by the unit (profile after_start), and every
    # step a profile may declare is one tasks/model.yml runs and the role's argument spec accepts.
    tasks = (PLAYBOOKS / "roles" / "servespec" / "tasks" / "model.yml").read_text()
    spec = (PLAYBOOKS / "roles" / "servespec" / "meta" / "argument_specs.yml").read_text()
    steps = typing.get_args(typing.get_args(Profile.model_fields["after_start"].annotation)[0])
    assert steps
    for step in steps:
        assert f"'{step}' in servespec_after_start" in tasks, step
    assert re.search(r"servespec_after_start:\n(?: {8}.*\n)*? {8}choices: \[" + ", ".join(steps) + r"\]", spec)


def test_the_branch_finder_finds_branches() -> None:
    # The guard above must be able to fail: the shapes the old code used are all found.
    code = (
        'if engine == "vllm": pass\n'
        'x = engine in ("llama.cpp", "ollama")\n'
        'STARTUP = {"tgi": 90}\n'
        'match engine:\n    case "sglang": pass\n'
    )
    assert sorted(name for _, name in _engine_name_branches(ast.parse(code))) == [
        "llama.cpp",
        "ollama",
        "sglang",
        "tgi",
        "vllm",
    ]
