"""SGLang: ``python3 -m sglang.launch_server --config config.yaml``.

SGLang reads a YAML file of its own option names (``--config``, utils/server_args_config_parser.py);
list options and false booleans stay on the command line. The API key has no environment
variable in SGLang, so the command runs through ``bash -c`` which appends
``--api-key "$SERVESPEC_API_KEY"`` at run time: the key never appears in rendered files.
Multi-node replicas pass ``--nnodes``, ``--node-rank`` and ``--dist-init-addr``.
"""

from __future__ import annotations

from typing import Any

from servespec.render.common import (
    CONFIG_DIR,
    EngineContainer,
    Target,
    api_key_ref,
    hub_token_env,
    model_options,
    split_config,
)

DIST_PORT = 20000
"""servespec's choice for ``--dist-init-addr`` (SGLang has no default; any port free on the leader works)."""
LAUNCH = ["python3", "-m", "sglang.launch_server"]


def context(target: Target) -> EngineContainer:
    """The SGLang container of one host."""
    spec = target.spec
    model = spec.model
    options: dict[str, Any] = {
        "model_path": str(model.source),
        "host": "0.0.0.0",
        "port": spec.serving.port,
        "served_model_name": target.served_name,
        "tp_size": spec.resources.tensor_parallel,
        "pp_size": spec.resources.pipeline_parallel,
    }
    options.update(model_options(target))
    if target.multi_node:
        options.update(
            nnodes=target.hosts_in_replica,
            node_rank=target.rank,
            dist_init_addr=f"{target.leader.address}:{DIST_PORT}",
        )
    options.update(target.options)
    config, extra = split_config(target, options)
    args = ["--config", f"{CONFIG_DIR}/config.yaml", *extra, *target.extra_args]
    secrets = hub_token_env(target)
    key = api_key_ref(target)
    command = [*LAUNCH, *args]
    entrypoint = None
    if key is not None:
        secrets["SERVESPEC_API_KEY"] = key
        entrypoint = ["/bin/bash", "-c", 'exec "$@" --api-key "$SERVESPEC_API_KEY"', "sglang"]
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        secret_env=secrets,
        files={"config.yaml": ("sglang/config.yaml.j2", {"config": config})},
        human_command=command + (["--api-key", "$SERVESPEC_API_KEY"] if key else []),
    )
