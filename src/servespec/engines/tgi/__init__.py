"""Text Generation Inference (``text-generation-launcher``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import Engine, EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known


class Tgi(Engine):
    name = "tgi"
    package = __name__
    adapter_option = "lora_adapters"

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.tgi.checks import checks

        return checks(known)


ENGINE = Tgi()
