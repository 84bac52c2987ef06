"""LM Studio's headless daemon (``llmster``), driven by ``lms``: a host-native unit, no container.

Its own checks (ENG002, ENG003): ``--gpu`` takes ``off``, ``max`` or a number in [0, 1]
(``gpuOptionParser``, src/subcommands/load.ts); ``estimate_only`` loads nothing, and ``exact``
and ``yes`` are rendered by servespec itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import EngineCheck
from servespec.engines.gguf import GgufEngine

if TYPE_CHECKING:
    from servespec.engines.base import Known

RENDERED = {
    "exact": "--exact matches a model path, but model.source is a model key (lms load KEY)",
    "yes": "servespec passes --yes (lms runs without a terminal in the unit)",
    "estimate_only": "--estimate-only loads no model: the server would serve nothing",
}
"""Options servespec renders itself or that cannot serve (ENG003)."""
SERVER_PREFIX = "server."
"""Catalog keys of ``lms server start`` options; the others are ``lms load``'s."""


def gpu_ratio(value: object) -> float | None:
    """``--gpu`` as gpuOptionParser reads it: off 0, max 1, else the number; None when it refuses it."""
    if isinstance(value, bool):
        return None
    text = str(value).strip().lower()
    if text == "off":
        return 0.0
    if text == "max":
        return 1.0
    try:
        number = float(text)
    except ValueError:
        return None
    return number if 0 <= number <= 1 else None


class LmStudio(GgufEngine):
    name = "lmstudio"
    package = __name__
    native_executable = "lms"

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        """``--gpu`` values gpuOptionParser refuses; options servespec sets itself or that serve nothing."""
        for key, setting in known.effective.items():
            if key == "gpu" and gpu_ratio(setting.value) is None:
                yield EngineCheck(
                    "ENG002",
                    setting.path,
                    f"gpu {setting.value!r}: lms load --gpu takes off, max or a number between 0 and 1",
                    "gpuOptionParser, src/subcommands/load.ts",
                )
            elif key in RENDERED and setting.value not in (None, False):
                yield EngineCheck("ENG003", setting.path, f"{key}: {RENDERED[key]}", f"remove {key}")
            elif key.startswith(SERVER_PREFIX) and setting.from_extra_args:
                yield EngineCheck(
                    "ENG003",
                    setting.path,
                    f"{setting.name} is an lms server start option; engine.extra_args go to lms load",
                    f"set engine.options.{key} (or the serving field it renders from)",
                )


ENGINE = LmStudio()
