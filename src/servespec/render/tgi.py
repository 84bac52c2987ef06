"""Text Generation Inference: the launcher configured entirely through its environment.

Every ``text-generation-launcher`` argument has an environment variable (clap ``env``,
launcher/src/main.rs); ``tgi.env`` holds them and the container reads it as an env file.
The API key and hub token travel in the separate secrets env file, never in tgi.env.
"""

from __future__ import annotations

from typing import Any

from servespec.render.common import EngineContainer, Target, engine_host, engine_secrets, flags, quantization_method


def context(target: Target) -> EngineContainer:
    """The TGI container of one host."""
    spec = target.spec
    model = spec.model
    options: dict[str, Any] = {
        "model_id": str(model.source),
        "hostname": engine_host(target),
        "port": spec.serving.port,
        "num_shard": spec.resources.tensor_parallel,
    }
    if model.revision:
        options["revision"] = model.revision
    if model.dtype in ("float16", "bfloat16"):
        options["dtype"] = model.dtype
    if quantization_method(target):
        options["quantize"] = quantization_method(target)
    if target.max_model_len:
        options["max_total_tokens"] = target.max_model_len
    options.update(target.options)
    env: dict[str, str] = {}
    argv_options: dict[str, Any] = {}
    for key, value in options.items():
        option = target.option(key)
        if option is not None and option.env:
            env[option.env] = _env_text(value)
        else:
            argv_options[key] = value
    command = [*flags(target, argv_options), *target.extra_args]
    return EngineContainer(
        command=command,
        secret_env=engine_secrets(target),
        files={"tgi.env": ("tgi/tgi.env.j2", {"env": env})},
        env_files=["tgi.env"],
        container_model_cache="/data",
        human_command=["text-generation-launcher", *command],
    )


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)
