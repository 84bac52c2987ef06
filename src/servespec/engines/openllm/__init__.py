"""OpenLLM (``openllm serve MODEL:TAG``): a BentoML bento of vLLM from the openllm-models repository."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import Engine, EngineCheck
from servespec.engines.lifecycle import Unmaintained

if TYPE_CHECKING:
    from servespec.engines.base import Known

PYPI = "https://pypi.org/pypi/openllm/json"
REPOSITORY = "https://github.com/bentoml/OpenLLM"

UNMAINTAINED = Unmaintained(
    last_release="0.6.30",
    released="2025-04-21",
    evidence="no release on PyPI since 0.6.30 (uploaded 2025-04-21T04:10:51); the repository's later commits are "
    "dependency bumps (2025-09-09) and a SECURITY.md note (2026-05-29), and the model repository "
    "bentoml/openllm-models last changed on 2025-04-30",
    replacement="vllm",
    replacement_how='set engine.name: vllm and engine.version: "0.8.5" (the vLLM every bento pins) and keep '
    "model.source: `vllm serve` serves the same model on the same OpenAI-compatible /v1 routes, without the bento",
    sources=(PYPI, REPOSITORY, "https://github.com/bentoml/openllm-models"),
)


class OpenLlm(Engine):
    name = "openllm"
    package = __name__
    unmaintained = UNMAINTAINED

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.openllm.checks import checks

        return checks(known)


ENGINE = OpenLlm()
