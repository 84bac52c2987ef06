"""llama.cpp: ``llama-server`` (the server image's entrypoint) with its arguments.

``max_model_len`` is each sequence's context. Without ``--parallel`` llama-server runs its
automatic slots sharing one unified KV cache of ``--ctx-size`` tokens, so it renders as
``max_model_len``; with ``--parallel N`` (and no ``--kv-unified``) the build splits
``--ctx-size`` per slot, so it renders as ``max_model_len × N`` (engines/llama_cpp/memory.py).
Unset, nothing is rendered: the build's default (``n_ctx_train``, fitted by ``--fit``). A
replica's GPUs are used with ``--split-mode row`` (tensor_parallel) or ``layer``
(pipeline_parallel) and an even ``--tensor-split``; the API key comes from LLAMA_API_KEY.
"""

from __future__ import annotations

from typing import Any

from servespec.engines.kit import (
    EngineContainer,
    Target,
    chat_template_option,
    engine_host,
    engine_secrets,
    flags,
    launch,
    launch_words,
    loadable_adapters,
    served_name_options,
)
from servespec.engines.llama_cpp.memory import ctx_size, slots
from servespec.hostpaths import is_local_path


def context(target: Target) -> EngineContainer:
    """The llama.cpp container of one host."""
    spec = target.spec
    user = target.options
    # slots as the engine will run them: engine.options and extra_args alike (-np 8 in extra_args splits too)
    layout = slots(target.known.options, target.release)
    source = str(spec.model.source)
    options: dict[str, Any] = {
        "model" if is_local_path(source) else "hf_repo": source,
        **served_name_options(target),
        **chat_template_option(target),
        "host": engine_host(target),
        "port": spec.serving.port,
    }
    if target.max_model_len:
        options["ctx_size"] = ctx_size(target.max_model_len, layout, target.release)
    gpus = len(target.gpu_ids)
    if gpus == 0:
        options["n_gpu_layers"] = "0"
    elif gpus > 1:
        options["split_mode"] = "row" if spec.resources.tensor_parallel > 1 else "layer"
        options["tensor_split"] = ",".join("1" for _ in range(gpus))
    files = [adapter.path for adapter in loadable_adapters(target)]
    if files:
        # `--lora FNAME` takes comma-separated files (common/arg.cpp, every catalogued build); the server
        # applies each to every request at scale 1 unless a request's `lora` field says otherwise
        options["lora"] = ",".join(files)
    options.update(user)  # --parallel only when the spec sets it: unset is the build's automatic slots
    arguments = [*flags(target, options), *target.extra_args]
    entrypoint, command = launch(target, [], arguments)
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        secret_env=engine_secrets(target),
        files={"args.json": ("llama.cpp/args.json.j2", {"argv": ["llama-server", *arguments]})},
        # --hf-repo downloads use the Hugging Face cache layout (common/hf-cache.cpp, every catalogued build)
        container_model_cache="/root/.cache/huggingface",
        human_command=[*launch_words(target, ["llama-server"], []), *arguments],
    )
