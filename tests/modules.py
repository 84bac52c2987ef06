"""Loading a module of the Ansible role (or a script) by its path, as Ansible runs it on a host."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROLE = Path(__file__).resolve().parents[1] / "playbooks" / "roles" / "servespec"


def load_file(path: Path, name: str) -> ModuleType:
    """The module in ``path``, imported under ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def role_module(monkeypatch: pytest.MonkeyPatch, library: str, name: str) -> ModuleType:
    """The role's ``library/<library>.py``, its ``module_utils`` importable as Ansible provides them.

    Skips the test where ansible-core (the rollout extra), which every module imports, is missing.
    """
    pytest.importorskip("ansible.module_utils.basic", reason="the role's module needs ansible-core (the rollout extra)")
    common = load_file(ROLE / "module_utils" / "servespec_common.py", "ansible.module_utils.servespec_common")
    monkeypatch.setitem(sys.modules, "ansible.module_utils.servespec_common", common)
    return load_file(ROLE / "library" / f"{library}.py", name)
