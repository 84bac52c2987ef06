"""The Ansible inventory the controller writes: each host's connection variables, checked.

Connection values that ssh would read as options are refused here (the loader's grammar,
:mod:`servespec.spec.grammars`, checked again where the inventory is written); every string
reaches Ansible marked unsafe anyway (:mod:`servespec.rollout.ansible_vars`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from servespec.knowledge import resolve
from servespec.rollout.errors import RolloutError
from servespec.rollout.runner import EventHandler, RunResult, run_playbook
from servespec.spec.fleet import Fleet, HostView
from servespec.spec.grammars import is_address, is_key_path, is_user_name
from servespec.spec.models import HostName
from servespec.text import unsafe_character

Hosts = dict[str, tuple[HostView, dict[str, Any]]]
"""Hosts of one run, in order: each host's view and the servespec variables it gets."""


def _plain_host_name(name: str) -> bool:
    """An inventory host name as the loader takes it (spec.models.HostName: one definition)."""
    try:
        _host_names().validate_python(name)
    except ValidationError:
        return False
    return True


@functools.cache
def _host_names() -> TypeAdapter[str]:
    """The validator of models.HostName, built once."""
    return TypeAdapter(HostName)


def _connection_value(host: str, field: str, value: str, valid: Callable[[str], bool]) -> str:
    """``value`` when ssh reads it as the value it is (the loader's own grammar), else a RolloutError.

    The loader refuses these values already; this is the check again where the inventory
    is written, for anything that skipped it.
    """
    if not valid(value):
        raise RolloutError(
            f"host {host}: {field} {value!r} is not a plain address or name (see spec.grammars; "
            "no whitespace, quotes or template characters, not starting with '-'); fix the inventory"
        )
    return value


def _key_path(host: str, key: str) -> str:
    """``defaults.ssh_key`` expanded, when ssh and Ansible read it as the file it names."""
    # ssh expands %-tokens and ${VAR} in IdentityFile, and Ansible quotes it with '"': refused
    # here by name, whatever the grammar allows.
    if not is_key_path(key) or unsafe_character(key) or any(char in key for char in '%$"'):
        raise RolloutError(
            f'host {host}: defaults.ssh_key holds a character ssh would expand or split (% $ " or a control'
            " character) or is not a plain file path; rename the key file"
        )
    return str(Path(key).expanduser())


def connection_vars(host: HostView) -> dict[str, Any]:
    """The ``ansible_*`` variables that reach ``host`` (checked: RolloutError for a value ssh would misread)."""
    defaults = host.inventory.spec.defaults
    spec = host.spec
    if spec.connection == "local":
        import sys

        # Host state lives under /var/lib and /etc: a non-root controller uses sudo on itself.
        return {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "ansible_become": os.geteuid() != 0,
        }
    out: dict[str, Any] = {
        "ansible_host": _connection_value(host.name, "address", host.address, is_address),
        "ansible_port": spec.ssh_port or defaults.ssh_port,
        "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_become": defaults.become,
    }
    user = spec.ssh_user or defaults.ssh_user
    if user:
        out["ansible_user"] = _connection_value(host.name, "ssh_user", user, is_user_name)
    if defaults.ssh_key:
        out["ansible_ssh_private_key_file"] = _key_path(host.name, defaults.ssh_key)
    return out


def inventory_for(hosts: Hosts) -> dict[str, Any]:
    """An Ansible inventory with the hosts in order, each with its connection and servespec vars.

    Raises RolloutError for a host name, address or user that is not a plain name (every
    string value is passed to Ansible unsafe anyway; these would still reach ssh's argv).
    """
    for name in hosts:
        if not _plain_host_name(name):
            raise RolloutError(f"host name {name!r} is not letters, digits, '.', '_' and '-'; fix the inventory")
    return {
        "all": {
            "children": {
                "servespec_targets": {
                    "hosts": {name: {**connection_vars(view), **extra} for name, (view, extra) in hosts.items()}
                }
            }
        }
    }


def run_on(
    playbook: str,
    hosts: Hosts,
    extravars: dict[str, Any],
    on_event: EventHandler | None,
    secrets: tuple[str, ...] = (),
) -> RunResult:
    """Run ``playbook`` on ``hosts`` (in their order), all of them at once; ``secrets`` are masked in results.

    Every rollout module calls it as ``inventory.run_on`` (tests replace it here).
    """
    return run_playbook(playbook, inventory_for(hosts), extravars, on_event=on_event, forks=len(hosts), secrets=secrets)


def check_inventories(fleet: Fleet) -> None:
    """Refuse (RolloutError) a host of any deployment that ssh would not read as plain names."""
    for deployment in fleet.deployments:
        inventory_for({view.name: (view, {}) for view in resolve.placed_hosts(deployment)})
