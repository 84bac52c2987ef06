"""OpenLLM: ``openllm serve BENTO:TAG --port P --arg KEY=VALUE ...`` in an image the user supplies.

The bento is the one of the model repository serving ``model.source`` (bentos.json); the
spec's context length, tensor parallelism and dtype and the ``engine.options`` bento
arguments it declares go as ``--arg`` (0.6.25 on; forward.py). ``openllm.env`` turns off
BentoML's usage tracking. Nothing else reaches vLLM: the bento fixes the rest.
"""

from __future__ import annotations

from typing import Any

from servespec.engines.kit import EngineContainer, RenderError, Target, engine_secrets, flags, launch, launch_words
from servespec.engines.openllm.forward import forwarded, takes_arguments, word

LAUNCHER = ["openllm"]
"""The ``openllm`` console script (pyproject.toml ``[project.scripts]``); the image's own entrypoint is unknown."""
TRACKING = "BENTOML_DO_NOT_TRACK"
"""OpenLLM's analytics switch (src/openllm/analytic.py ``DO_NOT_TRACK``), also bentoml's (usage_stats.py)."""


def bento_tag(target: Target) -> str:
    """The bento ``openllm serve`` takes: ``name:version`` of the model repository's bento for ``model.source``."""
    found = forwarded(target.known).bento
    if found is None:
        raise RenderError(f"model.source: no OpenLLM bento serves {str(target.spec.model.source)!r}")
    return found.tag


def arguments(target: Target) -> list[str]:
    """``--port`` (always, 3000 too: the command says it), serve's own options, one ``--arg`` per bento argument."""
    serve: dict[str, Any] = {"port": target.spec.serving.port}
    for key, value in target.options.items():
        option = target.option(key)
        if option is not None and option.flag is not None and key != "port":
            serve[key] = value
    words = flags(target, serve)
    if takes_arguments(target.release):
        for key, value in forwarded(target.known).arguments.items():
            words += ["--arg", f"{key}={word(value)}"]
    return words


def context(target: Target) -> EngineContainer:
    """The OpenLLM container of one host."""
    serve = ["serve", bento_tag(target), *arguments(target), *target.extra_args]
    entrypoint, command = launch(target, serve[:1], serve[1:])
    if entrypoint is None and target.spec.engine.command is None:
        entrypoint = list(LAUNCHER)  # named, not left to the image: a user-built image has any entrypoint
    return EngineContainer(
        command=command,
        entrypoint=entrypoint,
        secret_env=engine_secrets(target),
        env_files=["openllm.env"],
        files={"openllm.env": ("openllm/openllm.env.j2", {"env": {TRACKING: "true"}})},
        human_command=[*launch_words(target, LAUNCHER, serve[:1]), *serve[1:]],
    )
