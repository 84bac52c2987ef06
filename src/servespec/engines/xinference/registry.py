"""XInference's built-in model registry: which ``model_name`` (format, size, quantization) a Hugging Face id is.

``registry.json`` pools ``xinference/model/llm/llm_family.json`` of every catalogued release
(scripts/catalog/xinference.py): per Hugging Face model id, the families naming it and the
releases that have each. A launch request names the family, not the repository: XInference
downloads the ``model_id`` of the spec it matches (llm_family.py ``match_llm``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from servespec.engines.catalog import version_key


@dataclass(frozen=True)
class RegistryEntry:
    model_name: str
    model_format: str
    model_size_in_billions: int | float | str
    quantizations: tuple[str, ...]
    context_length: int | None


@functools.cache
def _data() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("registry.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _within(version: str, spans: list[list[str]]) -> bool:
    wanted = version_key(version)
    return any(version_key(first) <= wanted <= version_key(last) for first, last in spans)


def lookup(source: str, version: str) -> list[RegistryEntry]:
    """The registry entries of the release ``version`` whose Hugging Face model id is ``source`` (case-insensitive)."""
    models: dict[str, list[dict[str, Any]]] = _data()["models"]
    found = models.get(source)
    if found is None:
        folded = source.casefold()
        found = next((v for k, v in models.items() if k.casefold() == folded), [])
    return [
        RegistryEntry(
            str(e["model_name"]),
            str(e["model_format"]),
            e["model_size_in_billions"],
            tuple(e["quantizations"]),
            e.get("context_length"),
        )
        for e in found
        if _within(version, e["releases"])
    ]


def choose(entries: list[RegistryEntry], model_format: str | None, quantization: str | None) -> RegistryEntry | None:
    """The entry a launch would match: the given format (else ``pytorch``, else the first) holding the quantization."""
    if not entries:
        return None
    wanted = [e for e in entries if model_format is None or e.model_format == model_format]
    if model_format is None:
        wanted = [e for e in entries if e.model_format == "pytorch"] or entries
    if quantization is not None:
        wanted = [e for e in wanted if quantization.lower() in (q.lower() for q in e.quantizations)]
    return wanted[0] if wanted else None


def launched(source: str, version: str, options: dict[str, Any]) -> RegistryEntry | None:
    """The registry entry a launch of ``source`` on release ``version`` names (None: a local path, or not registered).

    ``engine.options`` ``model_format`` and ``quantization`` narrow it, as the launch request does.
    """
    from servespec.hostpaths import is_local_path

    if is_local_path(source):
        return None
    fmt, quant = options.get("model_format"), options.get("quantization")
    return choose(lookup(source, version), fmt and str(fmt), quant and str(quant))


def launched_name(source: str, version: str | None, options: dict[str, Any]) -> str | None:
    """The ``model_name`` a launch request sends: ``engine.options.model_name``, else the registry's name.

    It is also the model UID XInference serves when the request gives none: the supervisor's
    ``launch_builtin_model`` sets ``model_uid = self._gen_model_uid(model_name)``, which is
    ``model_name`` itself while no model of that name runs (checked at every catalogued tag,
    v1.1.0-v3.2.1, e.g.
    https://github.com/xorbitsai/inference/blob/v3.2.1/xinference/core/supervisor.py#L2336-L2337
    and #L1940-L1942).
    """
    named = options.get("model_name")
    if isinstance(named, str) and named:
        return named
    entry = launched(source, version, options) if version is not None else None
    return entry.model_name if entry is not None else None


def nearest(source: str, version: str) -> str | None:
    """The registered Hugging Face id of ``version`` closest to ``source`` (a renamed repository), or None."""
    import difflib

    models: dict[str, list[dict[str, Any]]] = _data()["models"]
    known = [k for k, v in models.items() if any(_within(version, e["releases"]) for e in v)]
    found = difflib.get_close_matches(source, known, n=1, cutoff=0.85)
    return found[0] if found else None
