"""Render every host's engine configuration, deterministically.

``render_fleet`` is a pure function of the loaded fleet: it returns the files (path ->
text) that ``deploy render -o DIR`` writes under ``DIR/<deployment>/<host>/`` plus a
``DIR/<deployment>/README.md``. Each engine's unit (``servespec/engines/<name>/``) turns a
target into its container (``engines.kit.engine_container``) and lays its files out with its own
templates; ``renderers/_common/`` holds the files every engine shares.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servespec import outdir
from servespec.engines.kit import (
    EngineContainer,
    RenderError,
    Target,
    chat_template_files,
    engine_container,
    host_and_port,
)
from servespec.knowledge import resolve
from servespec.render.common import container_description, content_hash, header, targets
from servespec.render.container import ContainerSpec, docker_run, replica_description
from servespec.render.environment import render_template
from servespec.spec.document import KeyPath
from servespec.spec.fleet import DeploymentDoc, Fleet
from servespec.text import printable


@dataclass
class Rendered:
    """The files of one render, relative to the output directory."""

    files: dict[str, str] = field(default_factory=dict)
    containers: dict[tuple[str, str], ContainerSpec] = field(default_factory=dict)
    """(deployment, host) -> container description, for the rollout and tests."""

    def host_files(self, deployment: str, host: str) -> dict[str, str]:
        """One host's files of one deployment, by their names in the host's folder."""
        prefix = f"{deployment}/{host}/"
        return {path[len(prefix) :]: text for path, text in self.files.items() if path.startswith(prefix)}


def render_target(target: Target) -> tuple[dict[str, str], ContainerSpec, EngineContainer]:
    """Files of one host (name -> text), its container description and the engine's decisions."""
    engine = engine_container(target)
    engine.files.update(chat_template_files(target))  # every engine that takes the file: it is shipped alike
    digest = content_hash(target)
    top = header(target, digest)
    files = {
        name: render_template(template, {**context, "header": top})
        for name, (template, context) in engine.files.items()
    }
    description = container_description(target, engine, digest)
    context = {"header": top, "container": description.to_json()}
    files["container.yaml"] = render_template("_common/container.yaml.j2", context)
    return files, description, engine


def _readme(deployment: DeploymentDoc, hosts: list[tuple[Target, ContainerSpec, EngineContainer]]) -> str:
    known = resolve.resolved(deployment)
    memory = []
    for target, _, _ in hosts:
        plan = known.estimate_on(target.host)
        hardware = resolve.host_gpus(target.host)
        gpu = hardware.model.display_name if hardware.model else ("CPU" if hardware.count == 0 else "unknown")
        if plan is None:
            memory.append(
                {
                    "host": target.host.name,
                    "gpu": gpu,
                    **dict.fromkeys(("total", "weights", "overhead", "kv", "tokens", "sequences"), "?"),
                }
            )
            continue
        memory.append(
            {
                "host": target.host.name,
                "gpu": gpu,
                "total": f"{plan.total_gib:.1f}",
                "weights": f"{plan.weights_gib:.1f}",
                "overhead": f"{plan.overhead_gib:.1f}",
                "kv": f"{plan.kv_cache_gib:.1f}",
                "tokens": f"{plan.kv_tokens:,}",
                "sequences": f"{plan.max_sequences:.1f}",
            }
        )
    spec = deployment.spec
    first = hosts[0][0]
    context = {
        "header": header(first, content_hash(first), per_host=False),
        "name": deployment.name,
        "engine_title": known.profile.title,
        "engine_version": spec.engine.version,
        "model": spec.model.source,
        "served_names": first.served_names,
        "endpoint": host_and_port(_reachable(str(spec.serving.bind)), spec.serving.port),
        "api_key": spec.serving.api_key is not None,
        "memory": memory,
        "hosts": [
            {
                "name": t.host.name,
                "role": t.role,
                # placement.replicas_per_host: each replica's own docker run (the front proxy owns serving.port)
                "docker": [docker_run(replica_description(d, r)) for r in d.replicas] or [docker_run(d)],
                "command": e.human_command,
                "native": d.native.to_json() if d.native else None,
            }
            for t, d, e in hosts
        ],
        "secrets": sorted(hosts[0][1].secret_environment),
    }
    return render_template("_common/README.md.j2", context)


def _reachable(bind: str) -> str:
    """The address a client on the host sends to: ``serving.bind``, loopback for the wildcards."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bind, bind)


MAX_FILE_BYTES = 8 * 1024 * 1024
"""One rendered file at most. The biggest real one (a multi-node README) is under 2 KiB, and a
spec file is at most 1 MiB; only a value repeated many times (YAML aliases) comes near this."""

MAX_RUN_BYTES = 128 * 1024 * 1024
"""Every file of one render together (the example fleet renders 72 KiB)."""


def _largest_value(data: Any, path: KeyPath = ()) -> tuple[int, KeyPath]:
    """The length and key path of the longest string in a document: the likely cause of an oversized render."""
    if isinstance(data, str):
        return len(data), path
    children = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    return max((_largest_value(value, (*path, key)) for key, value in children), default=(0, path))


def _size_error(deployment: DeploymentDoc, what: str) -> RenderError:
    """The refusal of an oversized render, located at the deployment's longest value."""
    _, path = _largest_value(deployment.document.data)
    where = deployment.document.source_map.locate(path)
    return RenderError(
        f"{printable(deployment.document.file)}:{where.line}:{where.column}: deployment "
        f"{printable(deployment.name)}: {what}; a large value repeated (through YAML aliases or a template) "
        "is the usual cause"
    )


class _Budget:
    """Counts what one render writes and stops it at MAX_FILE_BYTES per file, MAX_RUN_BYTES in all."""

    def __init__(self) -> None:
        self.total = 0

    def add(self, deployment: DeploymentDoc, name: str, text: str) -> None:
        size = len(text.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            what = f"{printable(name)} would be {size:,} bytes, over the {_kib(MAX_FILE_BYTES)} limit per rendered file"
            raise _size_error(deployment, what)
        self.total += size
        if self.total > MAX_RUN_BYTES:
            raise _size_error(deployment, f"the render would pass the {_kib(MAX_RUN_BYTES)} limit for one render")


def _kib(size: int) -> str:
    return f"{size // 1024 // 1024} MiB" if size % (1024 * 1024) == 0 else f"{size // 1024} KiB"


def render_fleet(fleet: Fleet) -> Rendered:
    """Every file of every deployment on every host; deterministic for the same inputs.

    Stops with a located :class:`RenderError` when a file or the whole render would pass
    MAX_FILE_BYTES or MAX_RUN_BYTES, before anything is written.
    """
    out, budget = Rendered(), _Budget()
    for deployment in fleet.deployments:
        rendered_hosts = []
        for target in targets(deployment):
            files, description, engine = render_target(target)
            for name, text in files.items():
                budget.add(deployment, f"{deployment.name}/{target.host.name}/{name}", text)
                out.files[f"{deployment.name}/{target.host.name}/{name}"] = text
            out.containers[(deployment.name, target.host.name)] = description
            rendered_hosts.append((target, description, engine))
        if rendered_hosts:
            readme = _readme(deployment, rendered_hosts)
            budget.add(deployment, f"{deployment.name}/README.md", readme)
            out.files[f"{deployment.name}/README.md"] = readme
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_text(rendered: Rendered) -> str:
    """The manifest `render -o` leaves in DIR: every file it wrote and its sha256 (deterministic)."""
    files = {name: _sha256(text.encode("utf-8")) for name, text in sorted(rendered.files.items())}
    return json.dumps({"version": 1, "generator": "deploy render", "files": files}, indent=2) + "\n"


def _previous(directory: Path) -> tuple[dict[str, str], outdir.Existing]:
    """The files a previous render recorded (name -> sha256), and the manifest as it is on disk."""
    outdir.check_root(directory)
    found = outdir.survey(directory, [outdir.MANIFEST])[outdir.MANIFEST]
    if found.kind == "absent":
        return {}, found
    where = outdir.shown(directory, outdir.MANIFEST)
    if found.kind == "other":
        raise outdir.OutputError(f"{where}: a symbolic link or special file, not a servespec render manifest")
    try:
        body = json.loads(found.data)
        files = body["files"] if isinstance(body, dict) and body.get("version") == 1 else None
    except (ValueError, KeyError):
        files = None
    if not isinstance(files, dict) or not all(
        isinstance(n, str) and isinstance(h, str) and re.fullmatch(r"[0-9a-f]{64}", h) for n, h in files.items()
    ):
        raise outdir.OutputError(f"{where}: not a servespec render manifest; remove it or choose another directory")
    for name in files:
        outdir.check_name(name)  # a forged entry must not reach outside DIR or into .git/
    return files, found


def write(rendered: Rendered, directory: Path) -> list[Path]:
    """Write the files and the manifest; remove files a previous render wrote that are no longer produced.

    Only files the manifest records, unchanged since, are replaced or removed; a symlink,
    a file servespec did not write or one edited since stops the render before anything
    is written (:class:`~servespec.outdir.OutputError`).
    """
    previous, _ = _previous(directory)
    files = {name: text.encode("utf-8") for name, text in rendered.files.items()}
    leftovers = sorted(set(previous) - set(files))
    found = outdir.survey(directory, leftovers)
    removes = [n for n in leftovers if found[n].kind == "file" and _sha256(found[n].data) == previous[n]]
    refused = [
        f"{outdir.shown(directory, n)}: changed since servespec rendered it, and no longer rendered; "
        "delete it or restore it"
        for n in leftovers
        if found[n].kind == "other" or (found[n].kind == "file" and n not in removes)
    ]
    files[outdir.MANIFEST] = manifest_text(rendered).encode("utf-8")

    def owns(name: str, data: bytes) -> bool:
        return name == outdir.MANIFEST or previous.get(name) == _sha256(data)

    written = outdir.write_files(directory, files, owns, removes=removes, refused=refused)
    return [path for path in written if path.name != outdir.MANIFEST]


def stale_files(rendered: Rendered, directory: Path) -> list[str]:
    """Files in ``directory`` that a render would change, add or remove (the --check list); reads only."""
    previous, manifest = _previous(directory)
    found = outdir.survey(directory, set(rendered.files) | set(previous))
    changed = {
        name for name, text in rendered.files.items() if found[name] != outdir.Existing("file", text.encode("utf-8"))
    }
    gone = {name for name in previous if name not in rendered.files and found[name].kind != "absent"}
    if manifest != outdir.Existing("file", manifest_text(rendered).encode("utf-8")):
        changed.add(outdir.MANIFEST)
    return sorted(changed | gone)
