"""OpenLLM's own limits: a serving image, a bento serving the model, what ``--arg`` can pass (ENG002, ENG003)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import EngineCheck
from servespec.engines.openllm.forward import forwarded

if TYPE_CHECKING:
    from servespec.engines.base import Known

NO_IMAGE = (
    "OpenLLM publishes no serving image (the repository has no Dockerfile; `bentoml containerize` builds an image of "
    "one bento that runs `bentoml serve`, not `openllm`): set engine.image to an image with openllm {version} and git "
    "installed"
)


def checks(known: Known) -> Iterator[EngineCheck]:
    spec = known.deployment.spec
    if spec.engine.image is None:
        yield EngineCheck(
            "ENG003",
            ("engine", "name"),
            NO_IMAGE.format(version=spec.engine.version),
            hint="build one (docs/engines/openllm.md) and name it in engine.image",
        )
    for problem in forwarded(known).problems:
        yield EngineCheck(problem.rule, problem.path, problem.message, hint=problem.hint)
