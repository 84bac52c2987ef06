"""Reading a release's Python source with ``ast``: the helpers every source-reading catalog builder shares."""

from __future__ import annotations

import ast
from pathlib import Path


def parse(src: Path, rel: str) -> ast.Module | None:
    """The module at ``rel`` under a release's source tree ``src``; None where the release has no such file."""
    path = src / rel
    return ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else None


def functions(tree: ast.AST) -> dict[str, ast.FunctionDef]:
    """Every function (and method) under ``tree`` by name; the last of a name wins."""
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def function(node: ast.AST | None, name: str) -> ast.FunctionDef | None:
    """The first function (or method) called ``name`` under ``node``."""
    if node is None:
        return None
    return next((n for n in ast.walk(node) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def find_class(node: ast.AST, name: str) -> ast.ClassDef | None:
    """The first class called ``name`` under ``node``."""
    return next((n for n in ast.walk(node) if isinstance(n, ast.ClassDef) and n.name == name), None)
