"""KTransformers: sglang-kt (SGLang with the ``--kt-*`` CPU/GPU expert options) in ``kvcache/ktransformers``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import EngineCheck
from servespec.engines.sglang import Sglang

if TYPE_CHECKING:
    from servespec.engines.base import Known


class Ktransformers(Sglang):
    """The SGLang unit's behaviour (cluster ports, rendering, KV arithmetic) with KTransformers' own checks."""

    name = "ktransformers"
    package = __name__

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.ktransformers.checks import checks

        return checks(known)


ENGINE = Ktransformers()
