"""TensorRT-LLM (``trtllm-serve``, PyTorch backend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from servespec.engines.base import Engine

if TYPE_CHECKING:
    from servespec.knowledge.memory import EstimateInput, GpuEstimate
    from servespec.render.common import EngineContainer, Target


class TensorrtLlm(Engine):
    name = "tensorrt-llm"
    package = __name__

    def render(self, target: Target) -> EngineContainer:
        from servespec.engines.tensorrt_llm.render import context

        return context(target)

    def estimate(self, inp: EstimateInput) -> GpuEstimate | None:
        from servespec.engines.tensorrt_llm.memory import estimate_trtllm

        return estimate_trtllm(inp, inp.gpu) if inp.gpu else None


ENGINE = TensorrtLlm()
