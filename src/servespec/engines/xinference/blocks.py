"""XInference's option blocks: the engine each ``model_engine`` names, and the options forwarded to it."""

from __future__ import annotations

from typing import Any

BLOCKS = {"vllm": "vllm", "sglang": "sglang"}
"""Option block -> the servespec engine whose catalog checks it (XInference ``model_engine`` lower-cased)."""
UNCHECKED = {
    "llama_cpp": "llama.cpp: XInference passes these to xllamacpp's (or llama-cpp-python's) model parameters, not to "
    "llama-server's command line, and servespec has no catalog of them",
    "transformers": "Transformers: keyword arguments of XInference's own Transformers model class",
    "mlx": "MLX: keyword arguments of XInference's own MLX model class",
    "lmdeploy": "LMDeploy: keyword arguments of XInference's own LMDeploy model class",
}
"""Blocks of engines servespec has no catalog for: forwarded as given, unchecked."""
ENGINE_BLOCK = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama_cpp", "transformers": "transformers",
                "mlx": "mlx", "lmdeploy": "lmdeploy"}  # fmt: skip
"""``model_engine`` lower-cased (XInference matches it case-insensitively: llm_family.py) -> its option block."""
CONTEXT_OPTION = {"vllm": "max_model_len", "sglang": "context_length", "llama_cpp": "n_ctx"}
"""The forwarded option ``model.max_model_len`` renders to, per block (vLLM EngineArgs, SGLang ServerArgs,
xllamacpp / llama-cpp-python ``n_ctx``)."""
DTYPE_OPTION = {"vllm": "dtype", "sglang": "dtype"}
OWNED = {
    "vllm": ("tensor_parallel_size", "max_model_len", "model"),
    "sglang": ("tp_size", "context_length", "model_path"),
}
"""Forwarded options a spec field decides (``resources.tensor_parallel`` -> n_gpu -> the engine's tensor parallel
size, set by XInference from the GPUs it gives the model: vllm/core.py ``setdefault("tensor_parallel_size", ...)``)."""


def engine_block(options: dict[str, Any]) -> str | None:
    """The option block of the spec's ``model_engine`` (None when unset or not an engine XInference names)."""
    value = options.get("model_engine")
    return ENGINE_BLOCK.get(value.lower()) if isinstance(value, str) else None


def forwarded(options: dict[str, Any], block: str) -> dict[str, Any]:
    """The options of one block, keyed as the engine names them."""
    prefix = block + "."
    out = {key.removeprefix(prefix): value for key, value in options.items() if key.startswith(prefix)}
    whole = options.get(block)
    if isinstance(whole, dict):  # an unchecked block stays one mapping
        out = {**{str(k): v for k, v in whole.items()}, **out}
    return out
