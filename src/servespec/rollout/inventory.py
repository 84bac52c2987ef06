"""The Ansible inventory the controller writes: each host's connection variables, checked.

Connection values that ssh would read as options are refused here (the loader's grammar,
:mod:`servespec.spec.grammars`, checked again where the inventory is written); every string
reaches Ansible marked unsafe anyway (:mod:`servespec.rollout.ansible_vars`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

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


@dataclass(frozen=True)
class HostVars:
    """The role's variables for one host of an apply or a rollback (``servespec_<field>``).

    One field per option of the role's ``main`` entry point in ``meta/argument_specs.yml``,
    with its type and default; tests/rollout/test_host_vars.py checks them against that file.
    Every string reaches Ansible unsafe (:mod:`servespec.rollout.ansible_vars`).
    """

    deployment: str
    """Deployment name (a DNS label)."""
    run: Mapping[str, str | int]
    """Controller, process id and run id of this run (the lock holder)."""
    digest: str = ""
    """Content hash of the rendered files (new revisions)."""
    staging: str = ""
    """Controller path of the JSON bundle of this host's rendered files (new revisions)."""
    existing_revision: int = 0
    """Roll back to this existing revision instead of making a new one."""
    secrets: str = ""
    """Controller path of the resolved secrets env file; empty when there are none."""
    image: str = ""
    """Engine image reference; empty on rollback (the revision's own image is used)."""
    image_archive: str = ""
    """Controller path of a docker save archive; empty to pull instead."""
    image_archive_bytes: int = 0
    """Size of the image archive, for the disk room check."""
    driver_min: str = ""
    """Lowest NVIDIA driver the image's CUDA version runs on; empty to skip the check."""
    model_paths: tuple[str, ...] = ()
    """Host paths the model needs."""
    model_roots: tuple[str, ...] = ()
    """Host folders a model path must resolve inside (the inventory's defaults.model_roots)."""
    smoke_test: bool = True
    """Send one completion after health passes."""
    standin_image: str = ""
    """Test-only stand-in image (GPU requests and NUMA pinning dropped)."""
    break_lock: str = ""
    """Run id of this controller's own stale lock to break."""
    role: Literal["leader", "worker"] = "leader"
    """Role of the host in a multi-node replica."""
    engine: str = ""
    """Engine name."""
    model_source: str = ""
    """The spec's model.source."""
    served_names: tuple[str, ...] = ()
    """The names the model is served under (Ollama creates one model per name)."""
    adapter_models: tuple[str, ...] = ()
    """Adapter names Ollama creates as models, the Nth from the rendered ``Modelfile.adapter-N``."""
    after_start: tuple[str, ...] = ()
    """The steps the role runs once the container is up, as the engine's profile declares them (``after_start``)."""
    weights_repo: str = ""
    """Hub repository to stage in the host's model cache before the old container stops; empty: none."""
    weights_revision: str = ""
    """Revision (commit or branch) to stage."""
    weights_endpoint: str = ""
    """Hub endpoint or mirror to stage from (the container's HF_ENDPOINT, else huggingface.co)."""
    weights_cache: str = ""
    """Host folder of the engine's Hub cache."""
    weights_bytes: int = 0
    """The weights' size from the lock file, for the disk room check when the Hub lists no sizes (0: unknown)."""
    weights_archive: str = ""
    """Controller path of ``model.archive``, unpacked into the Hub cache at weights_revision; empty: none."""
    weights_archive_bytes: int = 0
    """The model archive's size, for the disk room check."""
    weights_archive_sha256: str = ""
    """The model archive's sha256 (a snapshot unpacked from it is not unpacked again)."""
    weights_archive_dest: str = ""
    """Host path the model archive is copied to (inside the repository's cache folder)."""
    weights_archive_repo: str = ""
    """The Hub repository id the archive's snapshot is filed under."""
    beside_repos: tuple[str, ...] = ()
    """Hub repositories loaded beside the model (``model.adapters``, the speculative draft) to stage with the
    weights (same endpoint and cache); empty: none."""
    beside_revisions: tuple[str, ...] = ()
    """The commit of each of beside_repos."""
    beside_endpoint: str = ""
    """Hub endpoint or mirror they are staged from."""
    beside_cache: str = ""
    """Host folder of the engine's Hub cache they are staged into."""
    rollout_path: Literal["", "surge", "in_place"] = ""
    """rollout.strategy auto: start the new revision beside the old one (surge) or in place; empty: stop, then start."""
    gpu_wait: tuple[int, ...] = ()
    """In place: the GPUs that must have gpu_need_mib free before the new revision starts (the old one's released)."""
    gpu_need_mib: int = 0
    """In place: the MiB each of gpu_wait must have free (the estimate's memory per GPU)."""
    proxy_image: str = ""
    """The front proxy's image (HAProxy); empty: no proxy, the engine owns serving.port."""
    proxy_image_archive: str = ""
    """Controller path of a docker save archive of the proxy image; empty to pull instead."""
    proxy_bind: str = ""
    """The address the proxy listens on (serving.bind)."""
    proxy_port: int = 0
    """The port the proxy owns (serving.port)."""
    proxy_ports: tuple[int, ...] = ()
    """The engine's two internal ports on 127.0.0.1 (one per revision slot); replica ``i``'s are these plus ``i``."""
    proxy_replicas: int = 0
    """placement.replicas_per_host where above 1 (each replica replaced in turn behind the proxy); 0: one engine."""
    proxy_health_path: str = ""
    """The path the proxy health-checks each replica at (the engine's health path); empty: no replicas."""
    verify: str = ""
    """apply --verify: the spec's slo (workload, targets, the dataset's prompts) as JSON; empty: no verify."""

    ROLE_ONLY = ("servespec_state_root", "servespec_config_root")
    """Options of the entry point the controller never sets: the role's defaults hold (host paths)."""

    def to_vars(self) -> dict[str, Any]:
        """The ``servespec_*`` variables, as plain lists and dicts (for :func:`inventory_for`)."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            out[f"servespec_{item.name}"] = (
                list(value) if isinstance(value, tuple) else dict(value) if isinstance(value, Mapping) else value
            )
        return out


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


CONTROLLER_FILES = ("staging", "secrets", "image_archive", "weights_archive", "proxy_image_archive")
"""The HostVars fields naming controller files the role reads (``lookup('file')``, ``copy src:``)."""

WORK = "servespec_work"
"""The extra var naming the run's work folder: every controller file the role reads lies inside it."""

FILES = "servespec_controller_files"
"""The extra var holding each host's :data:`CONTROLLER_FILES`, by host name (the role's vars/main.yml reads it)."""


def inside(work: str, path: str) -> bool:
    """Whether ``path`` names a file below the absolute folder ``work`` (no ``.`` or ``..`` step, no ``//``)."""
    if not work.startswith("/") or work.endswith("/") or not path.startswith(work + "/"):
        return False
    return all(part not in ("", ".", "..") for part in path[len(work) + 1 :].split("/"))


def controller_files(hosts: Hosts, work: str) -> tuple[Hosts, dict[str, dict[str, str]]]:
    """``hosts`` without their controller file paths, and those paths by host (an extra var).

    Extra vars outrank every other variable Ansible has (inventory, facts, ``set_fact``), so a
    value a host sends back can never rename a file the controller reads for it. Each path must
    lie in the run's work folder ``work`` (RolloutError otherwise); the role checks it again.
    """
    kept: Hosts = {}
    files: dict[str, dict[str, str]] = {}
    for name, (view, variables) in hosts.items():
        mine = {key: str(variables.get(f"servespec_{key}") or "") for key in CONTROLLER_FILES}
        for key, path in mine.items():
            if path and not inside(work, path):
                raise RolloutError(f"host {name}: servespec_{key} is not inside the run's work folder")
        kept[name] = (
            view,
            {k: v for k, v in variables.items() if k.removeprefix("servespec_") not in CONTROLLER_FILES},
        )
        files[name] = mine
    return kept, files


def run_on(
    playbook: str,
    hosts: Hosts,
    extravars: dict[str, Any],
    on_event: EventHandler | None,
    secrets: tuple[str, ...] = (),
) -> RunResult:
    """Run ``playbook`` on ``hosts`` (in their order), all of them at once; ``secrets`` are masked in results.

    The controller files each host gets travel as the extra var :data:`FILES`, checked to lie in
    ``extravars[WORK]`` (:func:`controller_files`). Every rollout module calls it as
    ``inventory.run_on`` (tests replace it here).
    """
    kept, files = controller_files(hosts, str(extravars.get(WORK) or ""))
    extra = {**extravars, FILES: files, WORK: str(extravars.get(WORK) or "")}
    return run_playbook(playbook, inventory_for(kept), extra, on_event=on_event, forks=len(hosts), secrets=secrets)


def check_inventories(fleet: Fleet) -> None:
    """Refuse (RolloutError) a host of any deployment that ssh would not read as plain names."""
    for deployment in fleet.deployments:
        inventory_for({view.name: (view, {}) for view in resolve.resolved(deployment).hosts})
