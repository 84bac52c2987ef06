"""Text Generation Inference: the launcher configured entirely through its environment.

Every ``text-generation-launcher`` argument has an environment variable (clap ``env``,
launcher/src/main.rs); ``tgi.env`` holds them and the container reads it as an env file.
The API key and hub token travel in the separate secrets env file, never in tgi.env.

TGI 3.3.7's launcher reads its key from ``API_KEY`` but hands it to the router it spawns as
``--api-key KEY`` (``spawn_webserver``) and logs all its arguments at start-up
(``tracing::info!("{:#?}", args)``), both in launcher/src/main.rs. The router reads
``API_KEY`` itself (backends/v3/src/main.rs, clap ``env``) and logs no arguments. So the
launcher never sees ``API_KEY``: with a key, the container puts a ``text-generation-router``
wrapper first on ``PATH`` (the launcher finds the router by name) that sets ``API_KEY`` from
``SERVESPEC_API_KEY`` for the router alone and execs the real one. The key is on no command
line and in no log line.
"""

from __future__ import annotations

from typing import Any

from servespec.engines.kit import (
    EngineContainer,
    Target,
    api_key_ref,
    engine_host,
    env_text,
    flags,
    hub_token_env,
    launch,
    launch_words,
    loadable_adapters,
    quantization_method,
    speculative_method,
)

KEY_ENV = "SERVESPEC_API_KEY"
ROUTER = "/usr/local/bin/text-generation-router"
"""Where the official image installs the router (Dockerfile: ``COPY ... /usr/local/bin/text-generation-router``)."""
ENTRYPOINT = "/tgi-entrypoint.sh"
"""The official image's entrypoint (activates the venv, then ``exec text-generation-launcher``)."""
KEY_WRAPPER = (
    'wrap="$(mktemp -d)" && '
    f'printf \'#!/bin/sh\\nexport API_KEY="${KEY_ENV}"\\nexec {ROUTER} "$@"\\n\' '
    '> "$wrap/text-generation-router" && '
    'chmod 0755 "$wrap/text-generation-router" && '
    f'PATH="$wrap:$PATH" exec {ENTRYPOINT} "$@"'
)
"""``bash -c`` script: a router wrapper that alone receives ``API_KEY``, then the image's entrypoint."""


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
    adapters = loadable_adapters(target)
    if adapters:
        # LORA_ADAPTERS (launcher --lora-adapters, catalogued from 2.1.0): `id=path` entries comma-joined,
        # each served as the `adapter_id` a request names
        options["lora_adapters"] = ",".join(adapter.pair for adapter in adapters)
    speculative = target.spec.model.speculative
    if speculative_method(target) == "ngram" and speculative is not None and speculative.num_tokens:
        options["speculate"] = speculative.num_tokens  # n-gram speculation without a Medusa model (--speculate)
    options.update(target.options)
    env: dict[str, str] = {}
    argv_options: dict[str, Any] = {}
    for key, value in options.items():
        option = target.option(key)
        text = env_text(target, key, value) if option is not None and option.env and value is not None else None
        if option is not None and option.env and text is not None:
            env[option.env] = text
        elif value is not None:
            argv_options[key] = value  # several values of a Vec without a delimiter: one --flag each
    arguments = [*flags(target, argv_options), *target.extra_args]
    own_entrypoint, command = launch(target, [], arguments)
    secrets, entrypoint = _key_delivery(target, own_entrypoint)
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        secret_env=secrets,
        files={"tgi.env": ("tgi/tgi.env.j2", {"env": env})},
        env_files=["tgi.env"],
        container_model_cache="/data",
        human_command=[*launch_words(target, ["text-generation-launcher"], []), *arguments],
    )


def _key_delivery(target: Target, entrypoint: list[str] | None) -> tuple[dict[str, dict[str, str]], list[str] | None]:
    """The secrets env file and the entrypoint: with an API key, one that hands the key to the router alone.

    ``entrypoint`` is ``engine.entrypoint`` (None: the image's): with a key, the wrapper
    execs it in place of the image's ``/tgi-entrypoint.sh``.
    """
    secrets = hub_token_env(target)
    api_key = api_key_ref(target)
    if api_key is None:
        return secrets, entrypoint
    secrets[KEY_ENV] = api_key
    if entrypoint:
        return secrets, ["/bin/bash", "-c", KEY_WRAPPER.replace(f"exec {ENTRYPOINT} ", "exec "), "tgi", *entrypoint]
    return secrets, ["/bin/bash", "-c", KEY_WRAPPER, "tgi"]
