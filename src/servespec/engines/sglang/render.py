"""SGLang: ``python3 -m sglang.launch_server --config config.yaml``.

SGLang reads a YAML file of its own option names (``--config``, utils/server_args_config_parser.py);
list options and false booleans stay on the command line. SGLang 0.5.23 reads its API key
from nothing but ``--api-key`` (no environment variable, no key file:
srt/arg_groups/fields/serving.py), and ``python3 -m sglang.launch_server`` parses
``sys.argv[1:]`` (launch_server.py). So, with a key, the container runs a small Python
launcher (:data:`KEY_LAUNCHER`) that takes the key out of its environment, appends
``--api-key KEY`` to ``sys.argv`` inside the process and runs ``sglang.launch_server``
as ``-m`` would: the key is in no rendered file, in no process's command line
(``/proc/PID/cmdline``, ``ps``, ``docker inspect``) and in no child's environment. SGLang
itself still logs it (see docs/engines/sglang.md).
Multi-node replicas pass ``--nnodes``, ``--node-rank`` and ``--dist-init-addr``.
"""

from __future__ import annotations

from typing import Any

from servespec.engines.kit import (
    CONFIG_DIR,
    EngineContainer,
    Target,
    api_key_ref,
    engine_host,
    flags,
    hub_token_env,
    launch,
    launch_words,
    loadable_adapters,
    model_options,
    served_name_options,
    speculative_method,
    split_config,
)
from servespec.engines.sglang import DIST_PORT
from servespec.engines.sglang.parallel import rendered

LAUNCH = ["python3", "-m", "sglang.launch_server"]
KEY_ENV = "SERVESPEC_API_KEY"
KEY_LAUNCHER = (
    "import os, runpy, sys; "
    f'key = os.environ.pop("{KEY_ENV}"); '
    'sys.argv[1:] = [*sys.argv[1:], "--api-key", key]; '
    'runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)'
)
"""Runs ``sglang.launch_server`` with ``--api-key`` added to ``sys.argv`` in-process (never to argv of a process)."""


def context(target: Target, python: str = "python3") -> EngineContainer:
    """The SGLang container of one host (``python``: the image's interpreter with SGLang; KTransformers' differs)."""
    spec = target.spec
    model = spec.model
    options: dict[str, Any] = {
        "model_path": str(model.source),
        "host": engine_host(target),
        "port": spec.serving.port,
        **served_name_options(target),
    }
    layout = rendered(target.known)  # --tp-size, and --dp-size / expert parallelism where the spec sets them
    options["tp_size"] = layout["tp_size"]
    options["pp_size"] = spec.resources.pipeline_parallel
    options.update(layout)
    options.update(model_options(target))
    adapters = loadable_adapters(target)
    if adapters:
        # `--lora-paths name=path ...`: LoRAPathAction splits `name=path` (srt/server_args.py, 0.4.0;
        # srt/arg_groups/argparse_actions.py, 0.5.23), and a request's `model: name` selects it
        options["lora_paths"] = [adapter.pair for adapter in adapters]
    options.update(_speculative(target))
    if target.multi_node:
        options.update(
            nnodes=target.hosts_in_replica,
            node_rank=target.rank,
            dist_init_addr=f"{target.leader.address}:{DIST_PORT}",
        )
    if target.release is not None and target.option("pp_size") is None and spec.resources.pipeline_parallel == 1:
        del options["pp_size"]  # before 0.4.6.post2 there is no --pp-size; one stage is what runs anyway
    options.update(target.options)
    # the spec's data/expert parallelism wins over an option saying otherwise (ENG003 reports it)
    options.update({key: value for key, value in layout.items() if key != "tp_size"})
    files: dict[str, tuple[str, dict[str, Any]]] = {}
    if target.release is not None and target.option("config") is None:
        # a release without --config (0.4.0 to 0.5.2: srt/server_args.py has none): every option on the command line
        args = [*flags(target, options), *target.extra_args]
    else:
        config, extra = split_config(target, options)
        args = ["--config", f"{CONFIG_DIR}/config.yaml", *extra, *target.extra_args]
        files["config.yaml"] = ("sglang/config.yaml.j2", {"config": config})
    secrets = hub_token_env(target)
    key = api_key_ref(target)
    launcher = [python, *LAUNCH[1:]]
    entrypoint, command = launch(target, launcher, args)
    if key is not None:  # engine.entrypoint / engine.command cannot run beside the key launcher: ENG005 says so
        secrets[KEY_ENV] = key
        entrypoint = [python, "-c", KEY_LAUNCHER]
        command = args
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        secret_env=secrets,
        files=files,
        human_command=[*launch_words(target, [], launcher), *args] + (["--api-key", f"${KEY_ENV}"] if key else []),
    )


def _speculative(target: Target) -> dict[str, Any]:
    """``model.speculative`` as ``--speculative-algorithm`` (EAGLE, EAGLE3, NEXTN, NGRAM, STANDALONE) and its draft.

    With ``num_tokens`` N a chain draft: ``--speculative-num-steps N --speculative-eagle-topk 1
    --speculative-num-draft-tokens N+1`` (a chain verifies its N drafted tokens plus the root); NGRAM takes
    ``--speculative-num-draft-tokens N``. Unset, SGLang chooses (srt/arg_groups speculative defaults).
    """
    algorithm = speculative_method(target)
    speculative = target.spec.model.speculative
    if algorithm is None or speculative is None or target.option("speculative_algorithm") is None:
        return {}
    options: dict[str, Any] = {"speculative_algorithm": algorithm}
    if target.draft is not None:
        options["speculative_draft_model_path"] = target.draft.path
    tokens = speculative.num_tokens
    if tokens is not None and algorithm == "NGRAM":
        options["speculative_num_draft_tokens"] = tokens
    elif tokens is not None:
        options.update(speculative_num_steps=tokens, speculative_eagle_topk=1, speculative_num_draft_tokens=tokens + 1)
    return options
