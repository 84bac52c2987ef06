"""A new revision's files on the controller: the one JSON bundle uploaded per host, and its secrets.

Secrets are resolved here, on the controller, only while applying; they reach hosts in a
mode-0600 env file copied with ``no_log`` and appear in no plan, event or log.
"""

from __future__ import annotations

import json
from pathlib import Path

from servespec.render import Rendered
from servespec.rollout.local_files import resolve_secrets
from servespec.spec.fleet import DeploymentDoc


def secrets_folder(deployment: DeploymentDoc, chosen: Path | None) -> Path | None:
    """The folder from_file secrets must stay inside: ``chosen`` (``--secrets-dir``), else the inventory's.

    The inventory's ``defaults.secrets_dir`` is relative to the inventory file.
    """
    if chosen is not None:
        return chosen
    inventory = deployment.inventory
    configured = inventory.spec.defaults.secrets_dir if inventory is not None else None
    if inventory is None or configured is None:
        return None
    base = inventory.document.path.parent if inventory.document is not None else Path.cwd()
    return base / Path(configured).expanduser()


def stage(
    rendered: Rendered, deployment: DeploymentDoc, host: str, workdir: Path, secrets_dir: Path | None
) -> tuple[Path, str]:
    """One JSON bundle of the host's rendered files (one upload), and its secrets env file's text ('' if none)."""
    files = rendered.host_files(deployment.name, host)
    container = rendered.containers[(deployment.name, host)].to_json()
    files[".servespec/container.json"] = json.dumps(container, indent=2, sort_keys=True)
    bundle = workdir / "staging" / deployment.name / f"{host}.json"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    bundle.write_text(json.dumps(files), encoding="utf-8")
    if not container["secret_environment"]:
        return bundle, ""
    return bundle, resolve_secrets(container["secret_environment"], secrets_dir)
