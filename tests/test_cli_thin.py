"""The command line stays thin (issue 21): each command is short, and cli.py loads no printing machinery.

Each click command parses its arguments and calls its stage and its report; tables, JSON and
text layouts live in the report modules (servespec.report, estimate_report, plan.report,
rollout.progress, discover.report), which are imported inside the commands.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import click

from servespec import cli
from tests.conftest import REPO

CLI = REPO / "src" / "servespec" / "cli.py"
MAX_BODY_LINES = 25
ALLOWED_AT_TOP = {"__future__", "sys", "collections.abc", "pathlib", "typing", "click", "servespec"}
"""``servespec``: the package's own ``__init__`` (``__version__`` for --version), loaded before cli.py anyway."""


def _functions() -> dict[str, ast.FunctionDef]:
    tree = ast.parse(CLI.read_text(encoding="utf-8"))
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _body_lines(node: ast.FunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's end."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body:
        return 0
    assert node.end_lineno is not None
    return node.end_lineno - body[0].lineno + 1


def test_every_command_is_short() -> None:
    functions = _functions()
    commands = {command.callback.__name__ for command in cli.main.commands.values() if command.callback}
    assert commands >= {"validate", "estimate", "render", "plan", "apply", "status", "discover", "lock", "explain"}
    long = {name: _body_lines(functions[name]) for name in commands if _body_lines(functions[name]) > MAX_BODY_LINES}
    assert not long, f"commands over {MAX_BODY_LINES} lines of body; move the work to its stage or report: {long}"


def test_every_command_is_a_click_command_of_main() -> None:
    for name, command in cli.main.commands.items():
        assert isinstance(command, click.Command), name


def test_cli_imports_nothing_but_click_and_the_standard_library_at_module_level() -> None:
    tree = ast.parse(CLI.read_text(encoding="utf-8"))
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported <= ALLOWED_AT_TOP, imported - ALLOWED_AT_TOP


def test_importing_the_cli_loads_no_stage_and_no_printing_machinery() -> None:
    script = (
        "import sys, servespec.cli\n"
        "heavy = ('rich', 'jinja2', 'pydantic', 'servespec.report', 'servespec.rules', 'servespec.rollout')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
