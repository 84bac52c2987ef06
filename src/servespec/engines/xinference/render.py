"""XInference: ``xinference-local -H 0.0.0.0 --port PORT``, then the launch request ``launch.json``.

The server container starts with no model (the image's ENTRYPOINT is empty: the command
names ``xinference-local``, the click command ``local`` of xinference/deploy/cmdline.py).
``launch.json`` is the body of ``POST /v1/models`` (restful_api.py ``launch_model``) that
the rollout sends once ``GET /status`` answers: the registry's ``model_name``,
``model_format``, ``model_size_in_billions`` and ``quantization`` for ``model.source``,
``model_engine``, ``model_uid`` (the served name), ``replica``, ``n_gpu`` (the replica's
GPUs; XInference sets the engine's tensor parallel size from them), the launch options
of ``engine.options``, and the block of the chosen engine's options as top-level keys
(XInference passes every key it does not read itself to the engine: ``**kwargs``).
"""

from __future__ import annotations

from typing import Any

from servespec.engines.kit import EngineContainer, Target, engine_host, flags, launch, launch_words
from servespec.engines.xinference.blocks import CONTEXT_OPTION, DTYPE_OPTION, ENGINE_BLOCK, engine_block, forwarded
from servespec.engines.xinference.registry import RegistryEntry, launched
from servespec.hostpaths import is_local_path

LAUNCHER = ["xinference-local"]
SERVER = ("host", "port", "log_level", "metrics_exporter_host", "metrics_exporter_port", "auth_config")
"""Options of ``xinference-local`` (its click options); every other option is part of the launch request."""
BLOCKS = frozenset(ENGINE_BLOCK.values())


def _entry(target: Target) -> RegistryEntry | None:
    if target.release is None:
        return None
    return launched(str(target.spec.model.source), target.release.version, target.options)


def request(target: Target) -> dict[str, Any]:
    """The launch request's body, keys in XInference's own names."""
    spec = target.spec
    options = target.options
    entry = _entry(target)
    body: dict[str, Any] = {"model_uid": target.served_name}
    if entry is not None:
        quantization = "none" if "none" in entry.quantizations else entry.quantizations[0]
        body.update(
            model_name=entry.model_name,
            model_format=entry.model_format,
            model_size_in_billions=entry.model_size_in_billions,
            quantization=quantization,
        )
    if is_local_path(str(spec.model.source)):
        body["model_path"] = str(spec.model.source)
    body["model_type"] = "LLM"
    body["replica"] = 1
    body["n_gpu"] = spec.resources.tensor_parallel if target.gpu_ids else None
    for key, value in options.items():
        head = key.split(".", 1)[0]
        if key in SERVER or head in BLOCKS:
            continue
        option = target.option(key)
        body[(option.config_key if option and option.config_key else key)] = value
    block = engine_block(options)
    if block is not None:
        if target.max_model_len and block in CONTEXT_OPTION:
            body[CONTEXT_OPTION[block]] = target.max_model_len
        if spec.model.dtype != "auto" and block in DTYPE_OPTION:
            body[DTYPE_OPTION[block]] = spec.model.dtype
        body.update(forwarded(options, block))
    return body


def context(target: Target) -> EngineContainer:
    """The XInference server container of one host, and its launch request."""
    server: dict[str, Any] = {"host": engine_host(target), "port": target.spec.serving.port}
    server.update({k: v for k, v in target.options.items() if k in SERVER})
    args = [*flags(target, server), *target.extra_args]
    entrypoint, command = launch(target, LAUNCHER, args)
    body = request(target)
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        files={"launch.json": ("xinference/launch.json.j2", {"request": body})},
        container_model_cache="/root/.xinference",
        human_command=[*launch_words(target, [], LAUNCHER), *args],
        # The worker's metrics exporter (metrics.json: the live view and Prometheus read it there).
        ports=[int(server["metrics_exporter_port"])] if server.get("metrics_exporter_port") else [],
    )
