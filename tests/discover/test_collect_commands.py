"""The commands the host module runs are the ones `--from-outputs` documents, file by file.

The module (playbooks/roles/servespec/library/servespec_collect.py) runs on hosts and cannot
import servespec, so the list exists twice; this keeps the two the same.
"""

from __future__ import annotations

import importlib.util
import shlex

from servespec.discover.facts import OUTPUT_FILES
from tests.conftest import REPO


def test_module_commands_match_the_documented_outputs() -> None:
    path = REPO / "playbooks" / "roles" / "servespec" / "library" / "servespec_collect.py"
    spec = importlib.util.spec_from_file_location("servespec_collect", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.COMMANDS, "no commands found"
    for name, argv in module.COMMANDS.items():
        assert OUTPUT_FILES[name] == shlex.join(argv), name
