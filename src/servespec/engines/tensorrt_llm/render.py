"""TensorRT-LLM: ``trtllm-serve serve MODEL ... --extra_llm_api_options extra_llm_api_options.yaml``.

Options with a ``trtllm-serve`` flag go on the command line in its own (underscore)
spelling; LLM-API keys without a flag (``kv_cache_config.free_gpu_memory_fraction``,
``dtype``, ...) go into the YAML file, nested by their dotted names. trtllm-serve has no
API-key option, so none is rendered (NET002 reports a key that cannot be enforced).
"""

from __future__ import annotations

import copy
from typing import Any

from servespec.engines.catalog import EngineOption, version_key
from servespec.engines.kit import (
    CONFIG_DIR,
    EngineContainer,
    Target,
    chat_template_option,
    engine_host,
    flags,
    hub_token_env,
    launch,
    launch_words,
    option_words,
    positional_model,
    served_name_options,
    speculative_method,
)
from servespec.engines.tensorrt_llm.parallel import rendered

LAUNCH = ["trtllm-serve", "serve"]
"""The launcher words (the NGC image's entrypoint runs them); ``engine.command`` replaces them."""


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """The LLM-API YAML: dotted keys nested, mappings deep-merged (``kv_cache_config: {dtype: fp8}`` and
    ``kv_cache_config.free_gpu_memory_fraction: 0.8`` are one ``kv_cache_config``)."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                break  # a value already there (ENG002/ENG003 report it): kept as written
            node = child
        else:
            node[leaf] = _merged(node.get(leaf), copy.deepcopy(value))
    return nested


def _merged(old: Any, new: Any) -> Any:
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for key, value in new.items():
            out[key] = _merged(out.get(key), value)
        return out
    return new


def _elsewhere(target: Target, key: str) -> EngineOption | None:
    """The newest other catalogued release's entry (pre-releases too) for a key this release lacks."""
    catalog = target.known.engine.catalog
    for version in sorted(catalog.files, key=version_key, reverse=True):
        option = catalog.release(version).options.get(key)
        if option is not None:
            return option
    return None


def split(target: Target, fixed: dict[str, Any], options: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The trtllm-serve flags and the flat LLM-API YAML keys of the options, by the release's own catalog.

    A key with a flag in this release goes on the command line in its spelling; a key this
    release catalogues without one goes into the YAML. A key it lacks follows the newest
    release that has it: a command-line-only option (``tool_parser``: no LLM-API field) on
    the command line in that release's spelling, a flag that sets a config key
    (``kv_cache_dtype`` -> ``kv_cache_config.dtype``) at that key, else the key itself. A
    flag that sets a nested key (``--free_gpu_memory_fraction``) goes into the YAML when the
    YAML holds its parent: trtllm-serve merges the YAML over the flags (before 1.2 a YAML
    ``kv_cache_config`` replaces the one the flags built), so the flag would be lost.
    """
    cli: dict[str, Any] = {}
    words: list[str] = []
    api: dict[str, Any] = {}
    for key, value in {**fixed, **options}.items():
        own = target.option(key)
        if target.command_line_flag(key) or (key in fixed and own is None):
            cli[key] = value
        elif own is not None:
            api[key] = value
        elif (other := _elsewhere(target, key)) is not None and other.flag and not other.config_key:
            written = option_words(target, key, value)
            words += [other.flag, *written[1:]] if written[:1] == [target.option_flag(key)] else written
        elif other is not None and other.flag and other.config_key:
            api[other.config_key] = value
        else:
            api[key] = value
    parents = {name.split(".")[0] for name in api}
    for key in list(cli):
        option = target.option(key)
        config_key = option.config_key if option is not None and option.flag else None
        if config_key and "." in config_key and config_key.split(".")[0] in parents:
            value = cli.pop(key)
            api.setdefault(config_key, value)  # the YAML's own value wins, as in trtllm-serve (ENG003 reports both)
    return [*flags(target, cli), *words], api


def context(target: Target) -> EngineContainer:
    """The TensorRT-LLM container of one host."""
    spec = target.spec
    model = spec.model
    fixed: dict[str, Any] = {
        "host": engine_host(target),
        "port": spec.serving.port,
        **rendered(target.known),  # every rank, with attention DP and the EP size where the spec sets them
        "pipeline_parallel_size": spec.resources.pipeline_parallel,
    }
    if target.max_model_len:
        fixed["max_seq_len"] = target.max_model_len
    api: dict[str, Any] = {}
    if model.dtype != "auto":
        api["dtype"] = model.dtype
    if model.revision:
        api["revision"] = model.revision
    fixed.update(served_name_options(target))
    fixed.update(chat_template_option(target))
    # the release's own spelling decides: 1.0 takes tensor parallelism as --tp_size,
    # 1.2 as --tensor_parallel_size; LLM-API fields with no flag go into the YAML file
    words, options = split(target, fixed, target.options)
    api.update(_speculative(target))
    api.update(options)
    argv = [positional_model(target), *words]
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


def decoding_type(target: Target) -> str | None:
    """``speculative_config.decoding_type`` for ``model.speculative.method``, if the release's catalog lists it.

    EAGLE-3 heads are ``Eagle3`` where the release has that choice (1.1.0), else ``Eagle``, whose
    config runs EAGLE-3 heads (``eagle3_one_model``) in the catalogued 1.0.0 and 1.2.1.
    """
    wanted = speculative_method(target)
    option = target.option("speculative_config.decoding_type")
    choices = [str(c) for c in (option.choices or ())] if option is not None else []
    if wanted == "Eagle3" and wanted not in choices:
        wanted = "Eagle"
    return wanted if wanted in choices else None


def _speculative(target: Target) -> dict[str, Any]:
    """``model.speculative`` as the LLM-API ``speculative_config`` in extra_llm_api_options.yaml.

    ``decoding_type`` (:func:`decoding_type`), ``max_draft_len`` (``num_nextn_predict_layers`` for
    MTP) from ``num_tokens``, and the draft's path as ``speculative_model_dir`` (1.0.0, 1.2.1) or
    ``speculative_model`` (0.21.0), whichever the release's catalog has.
    """
    speculative = target.spec.model.speculative
    kind = decoding_type(target) if speculative is not None else None
    if speculative is None or kind is None:
        return {}
    config: dict[str, Any] = {"speculative_config.decoding_type": kind}
    tokens = speculative.num_tokens
    if tokens is not None:
        key = "num_nextn_predict_layers" if kind == "MTP" else "max_draft_len"
        config[f"speculative_config.{key}"] = tokens
    if target.draft is not None:
        for key in ("speculative_model_dir", "speculative_model"):
            if target.option(f"speculative_config.{key}") is not None:
                config[f"speculative_config.{key}"] = target.draft.path
                break
    return config
