"""XInference's launch request checked before it is sent (ENG003): what the server would refuse or ignore."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import EngineCheck
from servespec.engines.xinference.blocks import ENGINE_BLOCK, OWNED, engine_block
from servespec.engines.xinference.registry import choose, lookup, nearest
from servespec.hostpaths import is_local_path
from servespec.spec.source import quote_value

if TYPE_CHECKING:
    from servespec.engines.base import Known

REST = "https://github.com/xorbitsai/inference/blob/v2.12.0/xinference/api/restful_api.py"
FAMILY = "https://github.com/xorbitsai/inference/blob/v2.12.0/xinference/model/llm/llm_family.py"
BLOCK_NAMES = frozenset(ENGINE_BLOCK.values())
SPEC_FIELDS = {0: "resources.tensor_parallel (n_gpu)", 1: "model.max_model_len", 2: "model.source"}


def checks(known: Known) -> Iterator[EngineCheck]:
    """model_engine named and matching the option blocks; the model in the release's registry; no field twice."""
    release = known.release
    if release is None:
        return
    options = known.options
    block = engine_block(options)
    engine = options.get("model_engine")
    if engine is None:
        # restful_api.py launch_model: "Invalid input. Please specify the `model_engine` field." (HTTP 400)
        yield EngineCheck(
            "ENG003",
            ("engine", "options", "model_engine"),
            "XInference launches an LLM only with model_engine named: its launch request answers 400 "
            "'Please specify the `model_engine` field' without it",
            hint="set engine.options.model_engine: vLLM (or SGLang, llama.cpp, Transformers)",
        )
    seen: set[str] = set()
    for key, setting in known.effective.items():
        head = key.split(".", 1)[0]
        if head in BLOCK_NAMES and head != block and head not in seen:
            seen.add(head)
            yield EngineCheck(
                "ENG003",
                setting.path[:3],
                f"engine.options.{head} is for model_engine {head.replace('_', '.')}, but model_engine is "
                f"{quote_value(engine)}: XInference passes the launch request's options to that one engine, so "
                f"servespec renders only the {block or 'model_engine'} block",
                hint=f"remove engine.options.{head}, or set model_engine to its engine",
            )
    if block is not None:
        for index, name in enumerate(OWNED.get(block, ())):
            owned = known.effective.get(f"{block}.{name}")
            if owned is not None:
                yield EngineCheck(
                    "ENG003",
                    owned.path,
                    f"{block}.{name} duplicates {SPEC_FIELDS[index]}, which renders it through the launch request",
                    hint=f"remove it and set {SPEC_FIELDS[index].split(' ')[0]}",
                )
    replica = known.effective.get("replica")
    if replica is not None and isinstance(replica.value, int) and replica.value > 1:
        yield EngineCheck(
            "ENG003",
            replica.path,
            f"replica {replica.value} needs {replica.value} × n_gpu GPUs in the server's container "
            "(restful_api.py: the allocated GPUs must be a multiple of replica), and servespec gives it the "
            "replica's resources.tensor_parallel GPUs",
            hint="remove replica and scale with placement.hosts (one replica per host)",
        )
    image = str(known.deployment.spec.engine.image or "")
    if image.endswith("-cpu") and block in ("vllm", "sglang"):
        # xinference/deploy/docker/Dockerfile.cpu installs xllamacpp and transformers, no vLLM or SGLang
        yield EngineCheck(
            "ENG003",
            ("engine", "options", "model_engine"),
            f"the CPU image {quote_value(image)} bundles no {quote_value(engine)} "
            "(xinference/deploy/docker/Dockerfile.cpu installs xllamacpp and Transformers only)",
            hint="use model_engine llama.cpp or Transformers there, or the GPU image",
        )
    yield from _registry(known, release.version)


def _registry(known: Known, version: str) -> Iterator[EngineCheck]:
    spec = known.deployment.spec
    options = known.options
    source = str(spec.model.source)
    if "model_name" in options or is_local_path(source):
        if is_local_path(source) and "model_name" not in options:
            yield EngineCheck(
                "ENG003",
                ("model", "source"),
                "a local model directory is launched as model_path under a registered model_name, "
                "which servespec cannot read from the directory",
                hint="set engine.options.model_name (and model_format, model_size_in_billions) to the family it is",
            )
        return
    entries = lookup(source, version)
    if not entries:
        close = nearest(source, version)
        yield EngineCheck(
            "ENG003",
            ("model", "source"),
            f"XInference {version}'s built-in registry (llm_family.json) has no Hugging Face model "
            f"{quote_value(source)}: a launch names a registered model_name",
            hint=(
                f"did you mean model.source {quote_value(close)}? Otherwise "
                if close
                else "serve a registered model or "
            )
            + "set engine.options.model_name (with model_format, model_size_in_billions, quantization)",
        )
        return
    fmt = options.get("model_format")
    quant = options.get("quantization")
    if choose(entries, str(fmt) if fmt else None, str(quant) if quant else None) is None:
        have = ", ".join(sorted({f"{e.model_format}/{'|'.join(e.quantizations)}" for e in entries}))
        yield EngineCheck(
            "ENG003",
            ("engine", "options", "model_format" if fmt else "quantization"),
            f"XInference {version} registers {quote_value(source)} as {have}; the launch would match no model "
            f"spec (llm_family.py match_llm: {FAMILY})",
            hint="use one of the registered formats and quantizations, or leave them to servespec",
        )
