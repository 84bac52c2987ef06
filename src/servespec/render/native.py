"""A host-native engine unit: an engine that runs as a systemd service on the host, not in a container.

LM Studio's headless daemon (``llmster``, driven by its ``lms`` CLI) has no official image: it is
installed by LM Studio's own installer into the user's home. Its unit renders a systemd service
file and the ordered ``lms`` commands; :class:`NativeUnit` is the part of the host's description
(``container.yaml``'s ``native``) that the role's ``servespec_native`` module reads to install and
start it. Everything else in the description (ports, health check, smoke test, revision) keeps its
meaning; ``image`` is empty and the Docker fields describe no container.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class NativeUnit:
    """How the role installs and starts a host-native engine (read by library/servespec_native.py)."""

    manager: Literal["systemd"]
    unit: str
    """The systemd unit's name (``servespec-<deployment>.service``)."""
    unit_file: str
    """The rendered file (in the revision's folder) the role installs as ``/etc/systemd/system/<unit>``."""
    executable: str
    """The absolute path of the engine's CLI the unit runs (preflight checks that it is there)."""
    commands: tuple[tuple[str, ...], ...]
    """The unit's commands in order, as argv lists (its ExecStart, then each ExecStartPost)."""
    stop: tuple[str, ...]
    """The unit's ExecStop argv."""

    def __post_init__(self) -> None:
        if not self.executable.startswith("/") or not self.commands:
            raise ValueError("a native unit runs an absolute executable and at least one command")

    def to_json(self) -> dict[str, Any]:
        """container.yaml's ``native`` mapping."""
        return {
            "manager": self.manager,
            "unit": self.unit,
            "unit_file": self.unit_file,
            "executable": self.executable,
            "commands": [list(command) for command in self.commands],
            "stop": list(self.stop),
        }
