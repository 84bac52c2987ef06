"""Shared helpers: run the CLI in-process and build fleets from text."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from servespec.cli import main

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str) -> Result:
    """Invoke `deploy ARGS` in-process; exceptions are kept on the result, not raised."""
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    """Run the test with the working directory set to a fresh temporary folder."""
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)
