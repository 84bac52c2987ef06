"""The architecture's import rules as tests (docs: STYLE.md, Architecture).

Imports are read from the source with ``ast``: module-level ones, those inside functions (a lazy
import is for start-up cost, never to hide a cycle) and those under ``if TYPE_CHECKING:`` (a
type a module names is a dependency too). ``from package import name`` depends on the package
(its ``__init__`` runs first), and on ``package.name`` too when that is a module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from tests.conftest import REPO

SRC = REPO / "src"
PACKAGE = SRC / "servespec"
ENGINES = "servespec.engines"


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(name: str, path: Path) -> set[str]:
    """The servespec modules ``name`` imports (a name imported from a package counts as its submodule if one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _imported_from(path.read_text(encoding="utf-8"), name, package)


def _imported_from(source: str, name: str, package: str | None = None) -> set[str]:
    modules = _modules()
    package = name.rpartition(".")[0] if package is None else package
    found = set()
    for module in _import_names(ast.parse(source), package, modules):
        while module and module not in modules:
            module = module.rpartition(".")[0]
        if module and module != name:
            found.add(module)
    return found


def _import_names(tree: ast.AST, package: str, modules: dict[str, Path]) -> Iterator[str]:
    """The dotted names each import statement reaches, wherever it stands (``if TYPE_CHECKING:`` included)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, package)
            yield module  # its __init__ runs first, whatever is imported from it
            for alias in node.names:  # a submodule by its own name
                if f"{module}.{alias.name}" in modules:
                    yield f"{module}.{alias.name}"


def _from_module(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


@cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the servespec modules it imports."""
    return {name: frozenset(_imported(name, path)) for name, path in _modules().items()}


def cycles() -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan), largest first."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set(stack[stack.index(node) :])
            del stack[stack.index(node) :]
            if len(component) > 1:
                found.append(component)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return sorted(found, key=len, reverse=True)


def units() -> set[str]:
    """The engine units: the packages under servespec/engines/."""
    return {_name(path.parent) for path in (PACKAGE / "engines").glob("*/__init__.py")}


def _unit_of(module: str) -> str | None:
    for unit in units():
        if module == unit or module.startswith(unit + "."):
            return unit
    return None


def test_no_module_joins_an_import_cycle() -> None:
    assert cycles() == [], f"import cycles (lazy and TYPE_CHECKING imports counted): {cycles()}"


def test_only_the_registry_imports_engine_units() -> None:
    found = set()
    for module, imports in graph().items():
        if module == ENGINES or _unit_of(module) is not None:
            continue
        for imported in imports:
            unit = _unit_of(imported)
            if unit is not None:
                found.add((module, unit))
    assert found == set(), f"modules outside engines/ import a unit: {sorted(found)}"


def test_units_import_neither_the_resolver_nor_the_render_stage() -> None:
    found = sorted(
        (module, imported)
        for module, imports in graph().items()
        if _unit_of(module) is not None
        for imported in imports
        if imported in ("servespec.knowledge.resolve", "servespec.render") or imported.startswith("servespec.render.")
    )
    assert found == []


def test_the_engine_kit_is_a_floor_below_the_units() -> None:
    kit = {"servespec.engines.kit", "servespec.engines.options", "servespec.engines.base", "servespec.hostpaths"}
    for module in kit:
        assert not {m for m in graph()[module] if _unit_of(m) or m == ENGINES}, module
        assert "servespec.knowledge.resolve" not in graph()[module], module
        assert not {m for m in graph()[module] if m.startswith("servespec.render")}, module


def test_the_checker_sees_what_it_must() -> None:
    """The rules above read a real graph: every unit is found; lazy, TYPE_CHECKING and package imports count."""
    assert len(units()) >= 10 and "servespec.engines.base" in graph()["servespec.engines.kit"]
    assert "servespec.render.environment" in graph()["servespec.render"]
    source = "def f():\n    from servespec import hostpaths\nif TYPE_CHECKING:\n    from servespec.rollout import x\n"
    assert _imported_from(source, "servespec.x") == {"servespec", "servespec.hostpaths", "servespec.rollout"}
    source = "import servespec.rollout.state as state\nfrom servespec.engines.sglang import kt, DIST_PORT\n"
    found = _imported_from(source, "servespec.x")
    assert found == {"servespec.rollout.state", "servespec.engines.sglang", "servespec.engines.sglang.kt"}


def test_a_typing_only_cycle_is_a_cycle() -> None:
    """base -> kit under TYPE_CHECKING and kit -> base at run time is a cycle: neither can be read alone."""
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from servespec.engines.kit import Target\n"
    assert "servespec.engines.kit" in _imported_from(source, "servespec.engines.base")
