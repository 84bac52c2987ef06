"""Text Generation Inference (``text-generation-launcher``)."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import TYPE_CHECKING

from servespec.engines.base import Engine, EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known


class Tgi(Engine):
    name = "tgi"
    package = __name__
    adapter_option = "lora_adapters"
    # launcher --speculate: "If using a medusa model, the heads will be picked up automatically. Else, it will
    # use n-gram speculation" (launcher/src/main.rs, every catalogued release)
    speculative_methods = MappingProxyType({"ngram": "ngram"})

    def speculative_problem(self, known: Known) -> str:
        why = super().speculative_problem(known)
        speculative = known.deployment.spec.model.speculative
        if why or speculative is None or speculative.num_tokens:
            return why
        return f"{known.profile.title} speculates by --speculate N: model.speculative.num_tokens is needed"

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.tgi.checks import checks

        return checks(known)


ENGINE = Tgi()
