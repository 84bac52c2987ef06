"""Ollama: a server configured by environment variables, and a Modelfile for the served model.

``ollama.env`` holds the server's OLLAMA_* variables (envconfig/config.go); the Modelfile
builds the served model FROM the spec's model with its PARAMETERs, ``num_ctx`` set to
``max_model_len`` (unset: neither it nor ``OLLAMA_CONTEXT_LENGTH`` is written; the release's
default applies: 2048, 4096, or chosen by VRAM from 0.15.5). The rollout runs ``ollama pull``
and ``ollama create NAME -f Modelfile`` once the server answers, for each served name:
``serving.model_name`` and the aliases, or unset the model's own ``name:tag`` (no renaming:
clients send the tag they pulled). Each ``model.adapters`` entry gets ``Modelfile.adapter-N``: the
same FROM and PARAMETERs plus ``ADAPTER`` (a GGUF file or Safetensors folder on the host, mounted
read-only), created as a model named as the adapter.
"""

from __future__ import annotations

from typing import Any

from servespec.engines.kit import (
    CONFIG_DIR,
    EngineContainer,
    Target,
    engine_host,
    env_text,
    host_and_port,
    launch,
    loadable_adapters,
)

PARAMETER_PREFIX = "modelfile."


def context(target: Target) -> EngineContainer:
    """The Ollama container of one host."""
    spec = target.spec
    server: dict[str, Any] = {"host": host_and_port(engine_host(target), spec.serving.port)}
    if target.max_model_len:
        server["context_length"] = target.max_model_len
    parameters: dict[str, Any] = {}
    if target.max_model_len:
        parameters["num_ctx"] = target.max_model_len
    for key, value in target.options.items():
        if key.startswith(PARAMETER_PREFIX):
            parameters[key.removeprefix(PARAMETER_PREFIX)] = value
        else:
            server[key] = value
    env: dict[str, Any] = {}
    for key, value in server.items():
        option = target.option(key)
        name = option.env if option is not None and option.env else "OLLAMA_" + key.upper()
        # booleans as true/false (strconv.ParseBool), lists comma-joined (strings.Split(s, ","))
        text = env_text(target, key, value) if value is not None else None
        if text is not None:
            env[name] = text
    modelfile = {"source": str(spec.model.source), "parameters": parameters, "system": spec.serving.system_prompt}
    adapters = {
        f"Modelfile.adapter-{index}": ("ollama/Modelfile.j2", {**modelfile, "adapter": adapter.path})
        for index, adapter in enumerate(loadable_adapters(target))
    }
    entrypoint, command = launch(target, ["serve"], target.extra_args)
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        env_files=["ollama.env"],
        files={
            "ollama.env": ("ollama/ollama.env.j2", {"env": env}),
            "Modelfile": ("ollama/Modelfile.j2", modelfile),
            **adapters,
        },
        container_model_cache="/root/.ollama",
        human_command=["ollama", "create", target.served_name, "-f", f"{CONFIG_DIR}/Modelfile"],
        # The rollout runs it once per name (target.served_names): unset, the model's own name:tag.
    )
