"""TensorRT-LLM (``trtllm-serve``, PyTorch backend)."""

from __future__ import annotations

from servespec.engines.base import Engine


class TensorrtLlm(Engine):
    name = "tensorrt-llm"
    package = __name__


ENGINE = TensorrtLlm()
