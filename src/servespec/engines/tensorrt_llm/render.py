"""TensorRT-LLM: ``trtllm-serve serve MODEL ... --extra_llm_api_options extra_llm_api_options.yaml``.

Options with a ``trtllm-serve`` flag go on the command line in its own (underscore)
spelling; LLM-API keys without a flag (``kv_cache_config.free_gpu_memory_fraction``,
``dtype``, ...) go into the YAML file, nested by their dotted names. trtllm-serve has no
API-key option, so none is rendered (NET002 reports a key that cannot be enforced).
"""

from __future__ import annotations

from typing import Any

from servespec.render.common import (
    CONFIG_DIR,
    EngineContainer,
    Target,
    engine_host,
    flags,
    hub_token_env,
    launch,
    launch_words,
    positional_model,
    served_name_options,
)

LAUNCH = ["trtllm-serve", "serve"]
"""The launcher words (the NGC image's entrypoint runs them); ``engine.command`` replaces them."""


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def context(target: Target) -> EngineContainer:
    """The TensorRT-LLM container of one host."""
    spec = target.spec
    model = spec.model
    fixed: dict[str, Any] = {
        "host": engine_host(target),
        "port": spec.serving.port,
        "tensor_parallel_size": spec.resources.tensor_parallel,
        "pipeline_parallel_size": spec.resources.pipeline_parallel,
    }
    if target.max_model_len:
        fixed["max_seq_len"] = target.max_model_len
    cli: dict[str, Any] = {}
    api: dict[str, Any] = {}
    if model.dtype != "auto":
        api["dtype"] = model.dtype
    if model.revision:
        api["revision"] = model.revision
    fixed.update(served_name_options(target))
    for key, value in {**fixed, **target.options}.items():
        # the release's own spelling decides: 1.0 takes tensor parallelism as --tp_size,
        # 1.2 as --tensor_parallel_size; LLM-API fields with no flag go into the YAML file
        if target.command_line_flag(key) or (key in fixed and target.option(key) is None):
            cli[key] = value
        else:
            api[key] = value
    argv = [positional_model(target), *flags(target, cli)]
    files: dict[str, tuple[str, dict[str, Any]]] = {}
    if api:
        argv += ["--extra_llm_api_options", f"{CONFIG_DIR}/extra_llm_api_options.yaml"]
        files["extra_llm_api_options.yaml"] = ("tensorrt-llm/extra_llm_api_options.yaml.j2", {"config": _nest(api)})
    arguments = [*argv, *target.extra_args]
    entrypoint, command = launch(target, LAUNCH, arguments)
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        secret_env=hub_token_env(target),
        files=files,
        human_command=[*launch_words(target, [], LAUNCH), *arguments],
    )
