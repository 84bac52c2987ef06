"""Property test: random mutations of valid specs never raise; they only produce findings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from servespec.spec.source import load_file, load_text
from tests.conftest import REPO

EXAMPLES = sorted((REPO / "specs" / "examples").glob("*.yaml"))
_yaml = YAML(typ="safe")
SPECS = [_yaml.load(p.read_text()) for p in EXAMPLES if "Deployment" in p.read_text()]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            out.extend(_paths(value, (*prefix, index)))
    return out


def _mutate(data: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value if action != "delete" else {}
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete":
        del parent[path[-1]]
    elif action == "replace":
        parent[path[-1]] = value
    elif isinstance(parent, dict):
        parent[f"{path[-1]}_x"] = value
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(range(len(SPECS))),
    st.data(),
    st.sampled_from(["delete", "replace", "add"]),
    values,
)
def test_mutated_specs_never_raise(tmp_path: Path, index: int, data: st.DataObject, action: str, value: Any) -> None:
    import copy

    spec = copy.deepcopy(SPECS[index])
    path = data.draw(st.sampled_from(_paths(spec)))
    mutated = _mutate(spec, path, action, value)
    text_out = tmp_path / "spec.yaml"
    with text_out.open("w") as handle:
        YAML(typ="safe").dump(mutated, handle)
    check_fleet(load_fleet([text_out]))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    load_text(text, "x.yaml", Path("x.yaml"))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_bytes_cut_from_valid_spec_never_raise(tmp_path_factory: pytest.TempPathFactory, noise: bytes) -> None:
    """Raw bytes go through the file loader (NUL, BOM and non-UTF-8 handling included)."""
    base = EXAMPLES[0].read_bytes()
    cut = len(noise) % max(len(base), 1)
    path = tmp_path_factory.mktemp("bytes") / "x.yaml"
    path.write_bytes(base[:cut] + noise + base[cut:])
    load_file(path, "x.yaml")


def _alias_text(width: int, depth: int, scalar: int) -> str:
    lines = ["a: &a [" + ",".join(["x" * scalar] * width) + "]"]
    for index in range(depth):
        lines.append(f"n{index}: &n{index} [" + ",".join([f"*{'a' if index == 0 else f'n{index - 1}'}"] * width) + "]")
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(0, 5), st.integers(1, 2000), st.integers(1, 60))
def test_aliases_never_expand_past_the_file_budget(width: int, depth: int, scalar: int, documents: int) -> None:
    """Whatever the shape of the aliases and however many documents share them, one file stays in budget."""
    from servespec.spec.source import MAX_ALIASED_CHARS, MAX_ALIASED_NODES, Usage

    usage = Usage()
    text = "---\n".join([_alias_text(width, depth, scalar)] * documents)
    load_text(text, "x.yaml", Path("x.yaml"), usage)
    # The walk stops at the first node over the budget, so it is overshot by one node at most.
    assert usage.aliased_nodes <= MAX_ALIASED_NODES + 1
    assert usage.aliased_chars <= MAX_ALIASED_CHARS + scalar
