"""TensorRT-LLM (``trtllm-serve``, PyTorch backend)."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import TYPE_CHECKING

from servespec.engines.base import Engine, EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.engines.layout import Layout

if TYPE_CHECKING:
    from servespec.engines.base import Known


class TensorrtLlm(Engine):
    name = "tensorrt-llm"
    package = __name__
    # LLM-API speculative_config.decoding_type: the release catalog's choices decide (render.py _speculative)
    speculative_methods = MappingProxyType(
        {"eagle": "Eagle", "eagle3": "Eagle3", "mtp": "MTP", "ngram": "NGram", "draft": "DraftTarget"}
    )

    def speculative_problem(self, known: Known) -> str:
        """``decoding_type`` must be one of the release catalog's choices (EAGLE-3 heads run as ``Eagle`` where it
        has no ``Eagle3``)."""
        why = super().speculative_problem(known)
        speculative, release = known.deployment.spec.model.speculative, known.release
        if why or speculative is None or release is None:
            return why
        option = release.option("speculative_config.decoding_type")
        title = known.profile.title
        if option is None:
            return f"{title} {release.version}'s catalog lists no speculative_config.decoding_type"
        choices = {str(c) for c in (option.choices or ())}
        wanted = self.speculative_methods[speculative.method]
        if wanted in choices or (wanted == "Eagle3" and "Eagle" in choices):
            return ""
        return f"{title} {release.version}'s speculative_config.decoding_type has no {wanted}"

    def layout(self, known: Known) -> Layout:
        from servespec.engines.tensorrt_llm.parallel import layout

        return layout(known)

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.tensorrt_llm.parallel import checks

        return checks(known)


ENGINE = TensorrtLlm()
