"""The engine's model store as the spec moves it: ``OLLAMA_MODELS``, ``HF_HOME``, vLLM ``--download-dir``.

servespec persists downloaded models by mounting the host's model cache at the engine's
default store. A setting that moves the store elsewhere (profile ``model_store``: environment
variables in ``engine.env``, options in ``engine.options`` or ``extra_args``) gets the same
cache mounted at its path (:func:`mounts`), so a new container finds the model instead of
downloading it again. A path that cannot be mounted (relative, ``~``, ``..``, a system folder
of the image, the read-only model folder) is reported by ENG006 instead (:func:`problem`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from servespec import hostpaths
from servespec.knowledge import resolve
from servespec.spec.fleet import DeploymentDoc

CONTAINER_SYSTEM = (
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/boot",
    "/run",
    "/var/run",
)
"""Image folders a cache mount may neither hide nor lie in (``/etc`` holds servespec's rendered files)."""


@dataclass(frozen=True)
class StoreSetting:
    """One setting of the spec that names the engine's model store."""

    what: str
    """``engine.env.OLLAMA_MODELS``, ``engine.options.download_dir``, ``extra argument --download-dir``."""
    value: str
    path: tuple[str | int, ...]
    at_key: bool


def settings(deployment: DeploymentDoc) -> list[StoreSetting]:
    """The spec's settings that name the model store, in the profile's order."""
    known = resolve.resolved(deployment)
    store = known.profile.model_store
    if store is None:
        return []
    engine = deployment.spec.engine
    found = [
        StoreSetting(f"engine.env.{name}", str(engine.env[name]), ("engine", "env", name), False)
        for name in store.env
        if name in engine.env
    ]
    effective = known.effective
    for key in store.options:
        setting = effective.get(key)
        if setting is None or not isinstance(setting.value, str):
            continue
        what = f"extra argument {setting.name}" if setting.from_extra_args else f"engine.options.{setting.name}"
        found.append(StoreSetting(what, setting.value, setting.path, setting.at_key))
    return found


def _clean(path: str) -> str:
    return posixpath.normpath(path)


def _overlaps(path: str, other: str) -> bool:
    """Whether one folder is the other or lies below it."""
    return path == other or path.startswith(other.rstrip("/") + "/") or other.startswith(path.rstrip("/") + "/")


def problem(deployment: DeploymentDoc, value: str) -> str:
    """Why the cache cannot be mounted at a store path ("" when it can)."""
    if not value.startswith("/"):
        return "is not an absolute path: the engine resolves it against its working directory or home, not a mount"
    if ".." in value.split("/") or any(c in value for c in ":,\n") or value.strip() != value:
        return "cannot be a mount point (it holds '..', ':' or ',')"
    path = _clean(value)
    for system in CONTAINER_SYSTEM:
        if path == "/" or _overlaps(path, system):
            return f"would hide or lie in the image's {system}"
    source = str(deployment.spec.model.source)
    if hostpaths.is_local_path(source) and source.startswith("/"):
        folder = hostpaths.mounted_folder(source)
        if _overlaps(path, folder):
            return "overlaps the read-only model folder servespec mounts"
    return ""


def mounts(deployment: DeploymentDoc, default: str) -> list[str]:
    """Container paths the model cache is mounted at besides ``default``: each mountable store setting
    outside it (one inside the default mount is already persisted)."""
    out: list[str] = []
    for setting in settings(deployment):
        if problem(deployment, setting.value):
            continue
        path = _clean(setting.value)
        inside = path == default or path.startswith(default.rstrip("/") + "/")
        if not inside and path not in out:
            out.append(path)
    return out


def hub_cache_inside(deployment: DeploymentDoc, env: Mapping[str, str]) -> str | None:
    """Where the engine's huggingface_hub keeps the Hub cache inside the container, given its environment
    (None: the engine keeps no Hub cache servespec knows; see rollout.staging.container_hub_cache)."""
    from servespec.engines.catalog import version_key

    known = resolve.resolved(deployment)
    for key in ("download_dir", "huggingface_hub_cache"):
        setting = known.effective.get(key)
        if setting is not None and isinstance(setting.value, str) and setting.value.startswith("/"):
            return posixpath.normpath(setting.value)
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name, "").startswith("/"):
            return posixpath.normpath(env[name])
    if env.get("HF_HOME", "").startswith("/"):
        return posixpath.join(posixpath.normpath(env["HF_HOME"]), "hub")
    if env.get("XDG_CACHE_HOME", "").startswith("/"):
        return posixpath.join(posixpath.normpath(env["XDG_CACHE_HOME"]), "huggingface", "hub")
    store = known.profile.model_store
    default = store.hub_cache if store is not None else None
    if store is None or default is None:
        return None
    release = version_key(deployment.spec.engine.version)
    for before, path in sorted(store.hub_cache_before.items(), key=lambda item: version_key(item[0])):
        if release < version_key(before):
            return path
    return default
