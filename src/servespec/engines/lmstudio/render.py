"""LM Studio: a host-native systemd unit running the ordered ``lms`` commands, no container.

``lms daemon up`` starts llmster and returns (src/subcommands/daemon/up.ts), so the unit is
``Type=oneshot`` with ``RemainAfterExit=yes``: ``ExecStart`` starts the daemon, each
``ExecStartPost`` runs one ``lms`` command (``load`` with its options, then ``server start``) and
``systemctl start`` returns once the server is up; ``ExecStop`` is ``lms daemon down``. The daemon
stays in the unit's cgroup, so stopping the unit ends it. ``lms-commands.json`` holds the same
commands as data (what the role's module and people read).

Every word of the unit is escaped for systemd's own command-line syntax (systemd.service(5),
"Command lines"; systemd.unit(5), "Specifiers"): in double quotes, with ``\\`` and ``"``
backslash-escaped, ``%`` as ``%%`` and ``$`` as ``$$``, so no value is read as a specifier, an
environment variable or a second word; a control character is refused, not written.
"""

from __future__ import annotations

import re
from typing import Any

from servespec.engines.kit import (
    EngineContainer,
    NativeUnit,
    RenderError,
    Target,
    flags,
    positional_model,
    resolve_timeout,
    served_name_options,
)
from servespec.engines.lmstudio import ENGINE
from servespec.engines.native import injects_code
from servespec.text import unsafe_character

USER = "lmstudio"
"""The dedicated user the unit runs as (``User=``/``Group=``): LM Studio installs per user, into ``~/.lmstudio``."""
LMS = f"/home/{USER}/.lmstudio/bin/lms"
"""Where LM Studio's installer puts ``lms`` for that user (``~/.lmstudio/bin/lms``: https://lmstudio.ai/docs/cli)."""
SERVER = "server."
_PLAIN = re.compile(r"^[A-Za-z0-9_./:=,+@-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def systemd_word(word: str) -> str:
    """One argument in systemd's command-line syntax: read back as exactly ``word``."""
    bad = unsafe_character(word)
    if bad is not None:
        raise RenderError(f"a unit argument carries {bad}, which is never rendered")
    escaped = word.replace("%", "%%").replace("$", "$$")
    if _PLAIN.match(word):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def command_line(argv: list[str]) -> str:
    """An ``Exec*=`` value: the absolute executable as it is, then each argument escaped."""
    executable, *arguments = argv
    if not executable.startswith("/") or not _PLAIN.match(executable):
        raise RenderError("the unit's executable must be an absolute path of plain characters")
    return " ".join([executable, *(systemd_word(word) for word in arguments)])


def environment_line(name: str, value: str) -> str:
    """An ``Environment=`` value (``"NAME=value"``, specifiers escaped); the name must be a variable name."""
    if not _ENV_NAME.match(name):
        raise RenderError(f"engine.env name {name[:40]!r} is not a variable name")
    if injects_code(name):
        raise RenderError(f"engine.env.{name} would choose the code the host-native unit loads; it is never rendered")
    bad = unsafe_character(value)
    if bad is not None:
        raise RenderError(f"engine.env.{name} carries {bad}, which is never rendered")
    text = f"{name}={value}".replace("%", "%%")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def executable(target: Target) -> str:
    """``engine.entrypoint``'s one absolute path to an ``lms`` where the spec names one (ENG008 checks it), else LMS."""
    entrypoint = target.spec.engine.entrypoint
    chosen = str(entrypoint[0]) if entrypoint else LMS
    if chosen.rsplit("/", 1)[-1] != ENGINE.native_executable:
        raise RenderError(f"the unit runs only an executable named {ENGINE.native_executable} (engine.entrypoint)")
    return chosen


def commands(target: Target) -> list[list[str]]:
    """The unit's commands in order: daemon up, load (its options, then extra_args), server start."""
    spec = target.spec
    lms = executable(target)
    load: dict[str, Any] = {"yes": True, **served_name_options(target)}
    if target.max_model_len:
        load["context_length"] = target.max_model_len
    server: dict[str, Any] = {"server.port": spec.serving.port, "server.bind": str(spec.serving.bind)}
    for key, value in target.options.items():
        (server if key.startswith(SERVER) else load)[key] = value
    return [
        [lms, "daemon", "up"],
        [lms, "load", positional_model(target), *flags(target, load), *target.extra_args],
        [lms, "server", "start", *flags(target, server)],
    ]


def context(target: Target) -> EngineContainer:
    """The systemd unit of one host, its commands as data, and the native description the role reads."""
    deployment = target.deployment.name
    unit = f"servespec-{deployment}.service"
    argvs = commands(target)
    stop = [argvs[0][0], "daemon", "down"]
    env = {
        name: str(value).lower() if isinstance(value, bool) else str(value)
        for name, value in target.spec.engine.env.items()
    }
    unit_context = {
        "deployment": deployment,
        "user": USER,
        "environment": [environment_line(name, value) for name, value in sorted(env.items())],
        "start": command_line(argvs[0]),
        "post": [command_line(argv) for argv in argvs[1:]],
        "stop": command_line(stop),
        "timeout": resolve_timeout(target),
    }
    native = NativeUnit("systemd", unit, unit, argvs[0][0], tuple(tuple(a) for a in argvs), tuple(stop))
    return EngineContainer(
        command=[],
        files={
            unit: ("lmstudio/unit.service.j2", unit_context),
            "lms-commands.json": ("lmstudio/lms-commands.json.j2", {"native": native.to_json()}),
        },
        human_command=argvs[1],
        native=native,
    )
