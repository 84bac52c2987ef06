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

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.tgi.checks import checks

        return checks(known)


ENGINE = Tgi()
