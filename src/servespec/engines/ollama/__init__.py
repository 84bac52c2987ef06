"""Ollama (``ollama serve``)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from servespec.engines.gguf import GgufEngine
from servespec.hostpaths import is_local_path

if TYPE_CHECKING:
    from servespec.engines.base import Known

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
"""Characters a model name part may not hold: letters, digits, ``_``, ``-``, ``.`` only
(https://github.com/ollama/ollama/blob/v0.32.15/types/model/name.go, ``isValidPart``)."""


class Ollama(GgufEngine):
    name = "ollama"
    package = __name__
    # Modelfile ADAPTER: "a fine tuned LoRA adapter that should apply to the base model", a Safetensors folder or a
    # GGUF file (docs/modelfile.md); each adapter is created as a model of its own, served under its name
    adapters_in_modelfile = True
    adapter_formats = ("gguf", "folder")
    flash_option = "flash_attention"  # OLLAMA_FLASH_ATTENTION (engines/ollama/memory.py reads it)

    def default_served_name(self, known: Known) -> str | None:
        """A local GGUF file (``FROM /path/model.gguf``) has no ``name:tag`` of its own: ``ollama create``
        needs one, so unset it is the file's stem (characters a name may not hold become ``-``)."""
        source = str(known.deployment.spec.model.source)
        if not is_local_path(source):
            return None
        stem = _NOT_IN_NAME.sub("-", PurePosixPath(source).stem).strip("-._")
        return stem.lower() or None


ENGINE = Ollama()
