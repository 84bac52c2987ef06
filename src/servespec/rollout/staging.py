"""A new revision's files on the controller: the one JSON bundle uploaded per host, its secrets, and its weights.

Secrets are resolved here, on the controller, only while applying; they reach hosts in a
mode-0600 env file copied with ``no_log`` and appear in no plan, event or log.

Weights (:func:`weights_plan`): a Hub model is fetched into each host's model cache by the role's
``weights.yml`` before the running container stops (``servespec_weights``: resumable, verified,
renamed into place), so an update costs restart + load, not download + load. Air-gapped hosts get
``model.archive`` instead: copied from the controller and unpacked into the same cache at the pinned
commit (``servespec_weights_archive``), once per archive.
"""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from servespec import hostpaths
from servespec.render import Rendered
from servespec.render.container import ContainerSpec
from servespec.rollout.errors import RolloutError
from servespec.rollout.local_files import archive_path, resolve_secrets
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


# --- Staged weights (issue 13): each host fetches the new revision's model before its running revision stops.

HUB_ENDPOINT = "https://huggingface.co"
"""huggingface_hub's default endpoint (constants.py ``ENDPOINT``, v2.4.0), when the container sets no HF_ENDPOINT."""


@dataclass(frozen=True)
class WeightsPlan:
    """How one host gets the model of a new revision before its running revision stops.

    ``kind``: ``hub`` (staged from the Hub or the mirror the container's HF_ENDPOINT names),
    ``archive`` (``model.archive`` copied from the controller and unpacked into the Hub cache),
    ``local`` (a host path, checked in preflight), or ``engine`` (left to the engine, see ``why``).
    """

    kind: Literal["hub", "archive", "local", "engine"]
    source: str
    revision: str = ""
    endpoint: str = ""
    cache: str = ""
    """Host folder of the engine's Hub cache (the container's HF_HUB_CACHE, through its model-cache mount)."""
    expected_bytes: int | None = None
    """The weights' size from the lock file (models.lock.yaml ``weight_bytes``), when it has one."""
    why: str = ""
    archive: str = ""
    """``model.archive`` as written (kind ``archive``)."""

    def describe(self) -> str:
        """One line for a plan or a progress view: what the host will fetch, or why nothing."""
        if self.kind == "archive":
            return f"weights: {self.source}@{self.revision} unpacked from the archive {self.archive} into {self.cache}"
        if self.kind == "local":
            return f"weights: {self.source} on the host (checked, nothing to download)"
        if self.kind == "engine":
            return f"weights: fetched by the engine at start ({self.why})"
        size = f", {_gib(self.expected_bytes)} per the lock" if self.expected_bytes else ""
        return f"weights: {self.source}@{self.revision} staged from {self.endpoint} into {self.cache}{size}"


def _gib(count: int | None) -> str:
    return f"{(count or 0) / (1 << 30):.2f} GiB"


def container_hub_cache(deployment: DeploymentDoc, container: ContainerSpec) -> str | None:
    """Where the engine's huggingface_hub keeps the Hub cache inside the container (None: not staged).

    huggingface_hub constants.py (v2.4.0): ``HF_HUB_CACHE``, else ``HUGGINGFACE_HUB_CACHE``, else
    ``HF_HOME``/hub, ``HF_HOME`` defaulting to ``XDG_CACHE_HOME``/huggingface, that to ~/.cache. A
    ``download_dir`` (vLLM, SGLang: snapshot_download's ``cache_dir``) or TGI's ``huggingface_hub_cache``
    comes first. Else the image's own store, the profile's ``model_store.hub_cache`` (TGI's image sets
    ``HF_HOME=/data``); an engine whose profile names none fetches its model itself (llama.cpp's
    ``--hf-repo`` picks one GGUF file, Ollama pulls from its registry), and nothing is staged.
    """
    from servespec.knowledge import store

    return store.hub_cache_inside(deployment, container.environment)


def host_path(container: ContainerSpec, inside: str) -> str | None:
    """The host folder a container path lies in, through the container's read-only model-cache mounts.

    Only a cache the engine cannot write is staged into (render.common.cache_mode): root on the host
    writes it, and a container that could write it too could plant links there (issue 20).
    """
    from servespec.render.common import MODEL_CACHE

    for volume in sorted(container.volumes, key=lambda v: len(v.container), reverse=True):
        base = volume.container.rstrip("/")
        if volume.host != MODEL_CACHE or volume.mode != "ro":
            continue
        if inside == base or inside.startswith(base + "/"):
            return volume.host + inside[len(base) :]
    return None


def weights_plan(deployment: DeploymentDoc, container: ContainerSpec, *, standin: bool = False) -> WeightsPlan:
    """How the host of ``container`` gets the deployment's model (a pure function: no host is asked).

    The plan display can call it per host; what each host already has cached is known only on
    the host, and comes back from the preflight check (``Report.WEIGHTS``). ``standin``: the
    test-only stand-in image runs on hosts that reach no public Hub, so a model is staged there
    only from an endpoint the container names (HF_ENDPOINT: a test's Hub stand-in).
    """
    from servespec.knowledge import sources

    source = str(deployment.spec.model.source)
    if hostpaths.is_local_path(source):
        return WeightsPlan("local", source)
    inside = container_hub_cache(deployment, container)
    if inside is None:
        return WeightsPlan("engine", source, why=f"{deployment.spec.engine.name} fetches its model itself")
    cache = host_path(container, inside)
    if cache is None:
        return WeightsPlan("engine", source, why="the engine's Hub cache is not the persisted model cache")
    archive = deployment.spec.model.archive
    if archive is not None:
        return WeightsPlan("archive", source, str(deployment.spec.model.revision), cache=cache, archive=archive)
    if container.environment.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return WeightsPlan("engine", source, why="HF_HUB_OFFLINE is set: the engine reads its cache only")
    entry, _ = sources.lock_entry(deployment)
    locked = entry.weight_bytes if entry is not None else None
    named = container.environment.get("HF_ENDPOINT", "").strip().rstrip("/")
    if standin and not named:
        return WeightsPlan("engine", source, why="test-only stand-in image without an HF_ENDPOINT to stage from")
    endpoint = named or HUB_ENDPOINT
    revision = str(deployment.spec.model.revision or "main")
    return WeightsPlan("hub", source, revision, endpoint, cache, locked)


def beside_vars(deployment: DeploymentDoc, container: ContainerSpec, *, standin: bool = False) -> dict[str, Any]:
    """The HostVars fields staging what the engine loads beside the model (``beside_*``): each Hub adapter and the
    speculative draft at a commit, fetched by the weights module into the same cache as the weights, before the
    running revision stops.

    Only what the render points the engine at (render/common.py ``beside_path``: the snapshot
    folder at the commit) is staged; a host path is mounted as it is, and a branch revision or an
    engine without a staged Hub cache leaves the repository to the engine.
    """
    from servespec.render.common import COMMIT

    model = deployment.spec.model
    wanted = [(str(a.source), str(a.revision or "")) for a in model.adapters]
    if model.speculative is not None and model.speculative.draft is not None:
        wanted.append((str(model.speculative.draft), str(model.speculative.draft_revision or "")))
    hub = [(repo, rev) for repo, rev in wanted if not hostpaths.is_local_path(repo) and COMMIT.fullmatch(rev)]
    if not hub or hostpaths.is_local_path(str(model.source)):
        return {}
    inside = container_hub_cache(deployment, container)
    cache = host_path(container, inside) if inside is not None else None
    named = container.environment.get("HF_ENDPOINT", "").strip().rstrip("/")
    if cache is None or (standin and not named):
        return {}
    return {
        "beside_repos": tuple(repo for repo, _ in hub),
        "beside_revisions": tuple(rev for _, rev in hub),
        "beside_endpoint": named or HUB_ENDPOINT,
        "beside_cache": cache,
    }


def file_sha256(path: Path) -> str:
    """The sha256 of a controller file, read once per run however many hosts need it."""
    stat = path.stat()
    return _sha256(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def archive_refusal(deployment: DeploymentDoc, plan: WeightsPlan) -> str:
    """Why ``model.archive`` cannot be used on a host with this plan ('' when it can or none is set)."""
    if deployment.spec.model.archive is None or plan.kind == "archive":
        return ""
    if plan.kind == "local":
        return "model.archive unpacks into the Hub cache, but model.source is a host path: drop one of them"
    return f"model.archive cannot be used: {plan.why}; give the model as a host path instead"


def weights_vars(plan: WeightsPlan, deployment: DeploymentDoc) -> dict[str, Any]:
    """The HostVars fields of a plan (``weights_*``; an empty repo and archive mean nothing to stage)."""
    refused = archive_refusal(deployment, plan)
    if refused:
        raise RolloutError(refused)
    if plan.kind == "archive":
        document = deployment.document
        from servespec.render.common import HOST_STATE_ROOT

        real = archive_path(plan.archive, document.path, document.root, "model.archive")
        # Root's own folder, mounted into no container (servespec_weights_archive INCOMING_ROOT).
        folder = posixpath.join(HOST_STATE_ROOT, "incoming", "models--" + plan.source.replace("/", "--"))
        return {
            "weights_repo": "",
            "weights_archive": str(real),
            "weights_archive_bytes": real.stat().st_size,
            "weights_archive_sha256": file_sha256(real),
            "weights_archive_dest": posixpath.join(folder, real.name),
            "weights_revision": plan.revision,
            "weights_cache": plan.cache,
            "weights_archive_repo": plan.source,
        }
    if plan.kind != "hub":
        return {"weights_repo": ""}
    return {
        "weights_repo": plan.source,
        "weights_revision": plan.revision,
        "weights_endpoint": plan.endpoint,
        "weights_cache": plan.cache,
        "weights_bytes": plan.expected_bytes or 0,
    }


def weights_line(report: dict[str, Any]) -> str:
    """What a host's weights check or fetch reported (``Report.WEIGHTS``), as one progress line."""
    commit = str(report.get("commit", ""))[:12]
    if "archive" in report:
        where = f"weights {report.get('repo', '?')}@{commit} from the archive {report.get('archive', '?')}"
        if report.get("present"):
            return f"{where}: already unpacked, nothing copied"
        if report.get("action") == "unpack":
            return f"{where}: {_gib(report.get('unpacked_bytes', 0))} unpacked"
        return f"{where}: {_gib(report.get('archive_bytes', 0))} to copy and unpack"
    cached, files = report.get("cached_files", 0), report.get("files", 0)
    where = f"weights {report.get('repo', '?')}@{commit}: {cached}/{files} files cached"
    if report.get("action") == "fetch":
        return f"{where} before, {_gib(report.get('downloaded_bytes', 0))} downloaded"
    partial = report.get("partial_bytes", 0)
    resumed = f" (resuming {_gib(partial)} already fetched)" if partial else ""
    return (
        f"{where} ({_gib(report.get('cached_bytes', 0))}), {_gib(report.get('download_bytes', 0))} to download{resumed}"
    )


def weights_progress(on_event: Callable[[dict[str, Any]], None] | None) -> Callable[[dict[str, Any]], None] | None:
    """``on_event``, also handed one line per host saying what its weights check found and its fetch did.

    The line arrives as a task event whose task name is the line (what the live view and the JSON
    lines show per host), right after the event of the task that reported it.
    """
    if on_event is None:
        return None
    from servespec.rollout.runner import RESULT_KEY, Report, weights_problem

    def handle(event: dict[str, Any]) -> None:
        on_event(event)
        data = event.get("event_data") or {}
        res = data.get("res") if event.get("event") == "runner_on_ok" else None
        report = res.get(RESULT_KEY) if isinstance(res, dict) else None
        if isinstance(report, dict) and report.get("kind") == Report.WEIGHTS:
            # A host's report is checked before any of it is shown: a wrong-typed one is that host's failure.
            problem = weights_problem(report)
            kind, line = ("runner_on_failed", problem) if problem else ("runner_on_ok", weights_line(report))
            on_event({"event": kind, "event_data": {"host": data.get("host"), "task": line}})

    return handle
