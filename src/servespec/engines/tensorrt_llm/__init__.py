"""TensorRT-LLM (``trtllm-serve``, PyTorch backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import Engine, EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.engines.layout import Layout


class TensorrtLlm(Engine):
    name = "tensorrt-llm"
    package = __name__

    def layout(self, known: Known) -> Layout:
        from servespec.engines.tensorrt_llm.parallel import layout

        return layout(known)

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.tensorrt_llm.parallel import checks

        return checks(known)


ENGINE = TensorrtLlm()
