"""Host-path policy: which local model sources may be mounted into an engine, and the folder each mounts."""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING

from servespec.spec.source import quote_value

if TYPE_CHECKING:
    from servespec.spec.fleet import DeploymentDoc


def is_local_path(source: str) -> bool:
    """Whether a model source is a path on the host rather than a hub id or Ollama tag.

    Relative (``./m``, ``../m``, ``m.gguf``) and ``~`` sources count as local so that
    :func:`local_source_problem` refuses them: on a host they have no meaning servespec
    controls (the container runtime has neither the spec author's working directory nor
    their home, and ``docker run -v`` reads a relative name as a named volume).
    """
    return source.startswith(("/", "./", "../", "~", ".")) or source.endswith(".gguf")


def _plain(text: str) -> str:
    """``text`` unquoted when quote_value shows it unchanged, else quote_value's quoted, cut, escaped form."""
    shown = quote_value(text)
    return text if shown == repr(text) else shown


def _roots_shown(roots: list[str], most: int = 8) -> str:
    """The model roots as a message lists them: each one cut and escaped, at most ``most`` of them."""
    shown = ", ".join(_plain(root) for root in roots[:most])
    return shown + (f", ... ({len(roots) - most} more)" if len(roots) > most else "")


def local_source_problem(source: str, roots: list[str]) -> str:
    """Why a local model source may not be mounted into a container ("" when it may).

    The source must be an absolute path without ``..`` components whose mounted folder
    (the file's folder for a ``.gguf``) is one of ``roots`` or lies below one, compared
    after normalisation (``//``, ``/./`` and trailing slashes collapse). A root of ``/``
    is never honoured: it would allow ``/var/run`` (docker.sock) and ``/etc``. The system
    folders are compared with the folder as written and with where its symlinks lead on
    this machine (``os.path.realpath``), so a link to ``/etc`` is refused like ``/etc``.
    """
    if not source.startswith("/"):
        return f"{quote_value(source)} is not an absolute path (relative and ~ paths have no fixed meaning on a host)"
    if ".." in source.split("/"):
        return f"{quote_value(source)} contains '..'"
    folder = mounted_folder(source)
    exposed = _system_path(folder)
    if exposed:
        return f"{_plain(folder)} would expose {exposed} to the engine (never mounted, whatever the model roots say)"
    exposed = _system_path(os.path.realpath(folder))  # a link here to /etc or /root is judged where it leads
    if exposed:
        return f"{_plain(folder)} leads through a symlink on this machine to {exposed} (never mounted nor read)"
    for root in roots:
        clean = _normalise(root) if root.startswith("/") else ""
        if clean in ("", "/") or ".." in root.split("/"):
            continue
        if folder == clean or folder.startswith(clean + "/"):
            return ""
    return f"{_plain(folder)} is outside the inventory's model roots ({_roots_shown(roots)})"


_SYSTEM = (
    "/proc", "/sys", "/dev", "/run", "/var/run", "/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib64",
    "/root", "/var/lib/docker", "/var/lib/containerd",
)  # fmt: skip
"""Host folders never mounted into an engine, nor any folder above them (docker.sock, credentials, devices)."""
_ABOVE_ONLY = ("/home", "/var/lib/servespec")
"""Folders whose parents may not be mounted (every user's home; servespec's own state), though a child may."""


def _system_path(folder: str) -> str:
    """The protected host path that mounting ``folder`` would expose, or ""."""
    for path in _SYSTEM:
        if folder == path or folder.startswith(path + "/") or path.startswith(folder.rstrip("/") + "/"):
            return path
    for path in _ABOVE_ONLY:
        if folder == path or path.startswith(folder.rstrip("/") + "/"):
            return path
    return ""


def _normalise(path: str) -> str:
    # normpath keeps a leading "//" (POSIX leaves its meaning open); a host path never needs it.
    return posixpath.normpath("/" + path.lstrip("/"))


def mounted_folder(source: str) -> str:
    """The normalised host folder an absolute local source mounts (the file's folder for a ``.gguf``)."""
    path = _normalise(source)
    return posixpath.dirname(path) if path.endswith(".gguf") else path


def model_roots(deployment: DeploymentDoc) -> list[str]:
    """The inventory's ``defaults.model_roots``: host folders a local model source may name."""
    from servespec.spec.models import DEFAULT_MODEL_ROOTS

    inventory = deployment.inventory
    return list(inventory.spec.defaults.model_roots) if inventory is not None else list(DEFAULT_MODEL_ROOTS)
