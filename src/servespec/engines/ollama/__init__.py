"""Ollama (``ollama serve``)."""

from __future__ import annotations

from servespec.engines.gguf import GgufEngine


class Ollama(GgufEngine):
    name = "ollama"
    package = __name__


ENGINE = Ollama()
