"""llama.cpp (``llama-server``)."""

from __future__ import annotations

from servespec.engines.gguf import GgufEngine


class LlamaCpp(GgufEngine):
    name = "llama.cpp"
    package = __name__
    adapter_option = "lora"
    adapters_by_name = False
    adapter_formats = ("gguf",)


ENGINE = LlamaCpp()
