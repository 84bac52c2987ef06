"""The model repository's bentos (``bentos.json``, built by scripts/catalog/openllm.py).

``openllm serve MODEL:TAG`` serves a bento of https://github.com/bentoml/openllm-models:
each bento fixes the Hugging Face model (``openllm_model_id``), the vLLM release its
requirements pin, and the ``BentoArgs`` fields ``--arg KEY=VALUE`` may set (the others are
dropped by pydantic's default ``extra='ignore'``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Argument:
    type: str
    default: Any
    computed: str | None
    """The default as the bento computes it (``pydantic.Field(default_factory=...)``), when not a literal."""


@dataclass(frozen=True)
class Bento:
    tag: str
    """``name:version`` as ``openllm serve`` takes it (``llama3.1:8b-instruct-239c``)."""
    model_id: str
    revision: str | None
    aliases: tuple[str, ...]
    gpu: int
    gpu_type: str | None
    vllm: str | None
    """The vLLM release its env/python/requirements.txt pins."""
    arguments: dict[str, Argument]
    source: str

    def default(self, key: str) -> Any:
        found = self.arguments.get(key)
        return found.default if found else None


@dataclass(frozen=True)
class Repository:
    url: str
    commit: str
    committed: str
    bentos: tuple[Bento, ...]

    @property
    def short(self) -> str:
        return f"{self.url.removeprefix('https://github.com/')}@{self.commit[:7]}"

    def serving(self, model_id: str) -> list[Bento]:
        """The bentos serving ``model_id`` (Hub ids compare case-insensitively), by tag."""
        wanted = model_id.lower()
        return [bento for bento in self.bentos if bento.model_id.lower() == wanted]


def _bento(tag: str, data: dict[str, Any]) -> Bento:
    arguments = {
        key: Argument(str(entry["type"]), entry.get("default"), entry.get("computed"))
        for key, entry in data["arguments"].items()
    }
    return Bento(
        tag=tag,
        model_id=str(data["model_id"]),
        revision=data.get("revision"),
        aliases=tuple(data.get("aliases") or ()),
        gpu=int(data.get("gpu") or 0),
        gpu_type=data.get("gpu_type"),
        vllm=data.get("vllm"),
        arguments=arguments,
        source=str(data["source"]),
    )


@functools.cache
def repository() -> Repository:
    """The catalogued model repository (read once)."""
    data = json.loads(resources.files(__package__ or "servespec.engines.openllm").joinpath("bentos.json").read_text())
    return Repository(
        url=str(data["repository"]),
        commit=str(data["commit"]),
        committed=str(data["committed"]),
        bentos=tuple(_bento(tag, entry) for tag, entry in sorted(data["bentos"].items())),
    )


def bento_for(model_id: str) -> Bento | None:
    """The bento servespec serves ``model_id`` with: the first by tag among those serving it (None: none)."""
    found = repository().serving(model_id)
    return found[0] if found else None
