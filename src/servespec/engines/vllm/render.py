"""vLLM: ``vllm serve MODEL --config config.yaml``, with ``vllm serve`` as the container's entrypoint.

config.yaml holds every option in vLLM's own names; the command line keeps only what a
vLLM config file cannot express (false booleans as ``--no-x``, multi-value lists).
Multi-node replicas use Ray in 0.11 (a head on the leader, ``ray start`` on workers) and
vLLM's own ``--nnodes/--node-rank/--master-addr`` where the release has them, unless the options
ask for ``distributed_executor_backend: ray`` (then Ray, as vLLM takes ``--nnodes`` only without it).
"""

from __future__ import annotations

import ipaddress
from itertools import pairwise
from pathlib import PurePosixPath
from typing import Any

from servespec.engines.kit import (
    CONFIG_DIR,
    EngineContainer,
    Target,
    engine_host,
    engine_secrets,
    flags,
    host_and_port,
    launch,
    launch_words,
    loadable_adapters,
    model_options,
    positional_model,
    served_name_options,
    shell_join,
    speculative_method,
    split_config,
)
from servespec.engines.vllm import MASTER_PORT, RAY_PORT, native_multinode
from servespec.engines.vllm.parallel import rendered


def _portable(target: Target) -> dict[str, Any]:
    spec = target.spec
    options: dict[str, Any] = {
        "host": engine_host(target),
        "port": spec.serving.port,
        **served_name_options(target),
        **model_options(target),
    }
    options["tensor_parallel_size"] = spec.resources.tensor_parallel
    options["pipeline_parallel_size"] = spec.resources.pipeline_parallel
    adapters = loadable_adapters(target)
    if adapters:
        # `--enable-lora --lora-modules name=path ...` (vllm/entrypoints/openai/cli_args.py LoRAParserAction,
        # every catalogued release): each adapter is served under its name (`model` in a request)
        options["enable_lora"] = True
        options["lora_modules"] = [adapter.pair for adapter in adapters]
    options.update(_speculative(target))
    return options


def _speculative(target: Target) -> dict[str, Any]:
    """``model.speculative`` as the release takes it: ``--speculative-config`` JSON (from 0.8.2), else the separate
    ``--speculative-model`` / ``--num-speculative-tokens`` flags of earlier releases (draft and EAGLE checkpoints,
    ``[ngram]``); MTP there is not rendered (SPD001).

    vllm/config/speculative.py (v0.11.0): ``method``, ``model``, ``num_speculative_tokens`` (required unless the
    draft's config has ``n_predict``: MTP checkpoints), ``prompt_lookup_max`` (5 for ngram when unset).
    """
    method = speculative_method(target)
    speculative = target.spec.model.speculative
    if method is None or speculative is None:
        return {}
    tokens = speculative.num_tokens
    if target.release is None or target.option("speculative_config") is not None:
        config: dict[str, Any] = {"method": method}
        if target.draft is not None:
            config["model"] = target.draft.path
        if tokens is not None:
            config["num_speculative_tokens"] = tokens
        return {"speculative_config": config}
    if target.option("speculative_model") is None or speculative.method == "mtp":
        return {}
    old: dict[str, Any] = {"speculative_model": target.draft.path if target.draft else "[ngram]"}
    if tokens is not None:
        old["num_speculative_tokens"] = tokens
    if speculative.method == "ngram" and target.option("ngram_prompt_lookup_max") is not None:
        old["ngram_prompt_lookup_max"] = 5  # the value 0.11.0 defaults prompt_lookup_max to
    if target.option("use_v2_block_manager") is not None and target.release.default("use_v2_block_manager") is not True:
        # "Speculative decoding requires usage of the V2 block manager" (vllm/config.py L1190-L1193, v0.6.0)
        old["use_v2_block_manager"] = True
    return old


def context(target: Target) -> EngineContainer:
    """The vLLM container of one host."""
    # the spec's data/expert parallelism wins over an option saying otherwise (ENG003 reports it)
    options = {**_portable(target), **target.options, **rendered(target.known)}
    multi_native = target.multi_node and native_multinode(target.release, target.options)
    if multi_native:
        options.update(
            nnodes=target.hosts_in_replica,
            node_rank=target.rank,
            master_addr=target.leader.address,
            master_port=MASTER_PORT,
        )
        if target.role == "worker":
            options["headless"] = True
    elif target.multi_node:
        options["distributed_executor_backend"] = "ray"
    # Flags servespec turns on for adapters and speculation stay on the command line: vLLM 0.6's config reader
    # writes every value after its key (vllm/utils.py _load_config_file, v0.6.0: `--enable-lora True`), which a
    # store_true flag refuses; 0.8.5's passes a true flag alone (L1496)
    on = {key: options.pop(key) for key in COMMAND_LINE_FLAGS if options.get(key) is True}
    config, extra = split_config(target, options)
    extra = [*flags(target, on), *extra]
    serve = [*_model_words(target), "--config", f"{CONFIG_DIR}/config.yaml", *extra, *target.extra_args]
    entrypoint, command = launch(target, [], serve)
    if entrypoint is None and target.spec.engine.command is None:
        # named, not left to the image: vllm/vllm-openai's ENTRYPOINT was
        # `python3 -m vllm.entrypoints.openai.api_server` (no positional model) before it became
        # `vllm serve`, and vendor images keep the old one; every catalogued release has `vllm serve`
        entrypoint = list(SERVE)
    engine = EngineContainer(
        command=command,
        entrypoint=entrypoint,
        secret_env=engine_secrets(target),
        files={"config.yaml": ("vllm/config.yaml.j2", {"config": config})},
        human_command=[*launch_words(target, SERVE, []), *serve],
    )
    if target.multi_node and _node_ip(target):
        # vLLM's own address for torch.distributed and NCCL (envs.py: "If you are using multi-node
        # inference, you should set this differently on each node"); else it guesses a route.
        engine.environment["VLLM_HOST_IP"] = target.host.address
    if target.multi_node and not multi_native:
        _ray(target, engine, serve)
    return engine


COMMAND_LINE_FLAGS = ("enable_lora", "use_v2_block_manager")
"""True flags the render adds (``model.adapters``, speculation on 0.6) kept out of config.yaml."""

SERVE = ["vllm", "serve"]
"""The container's entrypoint: the ``vllm`` console script's ``serve`` (every catalogued release has it; the
catalogs are read from its parser). The official image's own ENTRYPOINT was ``python3 -m
vllm.entrypoints.openai.api_server`` (vllm#17172, 2025) before docker/Dockerfile switched to ``vllm serve``."""


def _model_words(target: Target) -> list[str]:
    """The model as ``vllm serve`` takes it (positional), or as ``--model=X`` for any other launcher.

    ``engine.entrypoint`` / ``engine.command`` naming another launcher (older images'
    ``python3 -m vllm.entrypoints.openai.api_server``) get ``--model``: only the ``serve``
    subcommand has a positional model (vllm/entrypoints/cli/serve.py ``model_tag``). One
    word, first: the ``--config`` reader of vLLM 0.6 keeps ``args[0]`` in front of the
    file's options (vllm/utils.py ``_pull_args_from_config``), so ``--model`` and its value
    must not be two words there.
    """
    engine = target.spec.engine
    words = [*(engine.entrypoint or []), *(engine.command or [])]
    serves = any(PurePosixPath(word).name == "vllm" and after == "serve" for word, after in pairwise(words))
    if not words or serves:
        return [positional_model(target)]
    return [f"--model={positional_model(target)}"]


def _node_ip(target: Target) -> list[str]:
    """``--node-ip-address`` of this member: the inventory address the other members reach.

    Without it Ray picks an address itself (its route to 8.8.8.8), possibly another network
    than the replica's. Ray takes an IP here, so host names are left to Ray.
    """
    try:
        ipaddress.ip_address(target.host.address)
    except ValueError:
        return []
    return [f"--node-ip-address={target.host.address}"]


def _ray(target: Target, engine: EngineContainer, serve: list[str]) -> None:
    """Ray layout: the leader starts a head then vllm serve; workers join the head and block."""
    leader = host_and_port(target.leader.address, RAY_PORT)
    if target.role == "worker":
        engine.entrypoint = ["ray"]
        engine.command = ["start", "--block", f"--address={leader}", *_node_ip(target)]
        engine.human_command = ["ray", *engine.command]
        return
    head = ["ray", "start", "--head", f"--port={RAY_PORT}", *_node_ip(target)]
    script = f"{shell_join(head)} && exec {shell_join(launch_words(target, SERVE, []))} {shell_join(serve)}"
    engine.entrypoint = ["/bin/bash", "-c"]
    engine.command = [script]
    engine.human_command = ["/bin/bash", "-c", script]
