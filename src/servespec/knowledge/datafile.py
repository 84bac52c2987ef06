"""Read the catalogs' YAML data files, with a JSON cache outside the package.

The YAML files are the source of truth (they carry comments and sources), but a pure-Python
YAML parse of the model catalog costs a fifth of a second at every start. The parsed data
is cached as JSON under the user's cache directory, keyed by the file's content hash, so
only the first run after an edit pays for the parse. Any cache problem falls back to YAML.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "servespec" / "catalogs"


def load_yaml_data(*parts: str) -> Any:
    """Parse ``knowledge/data/<parts>`` (YAML), through the JSON cache when possible."""
    return _load(resources.files("servespec.knowledge").joinpath("data", *parts), "-".join(parts))


def _load(resource: Traversable, name: str) -> Any:
    text = resource.read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    cached = _cache_dir() / f"{name}.{digest}.json"
    try:
        return json.loads(cached.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    data = YAML(typ="safe", pure=True).load(text)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        temporary.replace(cached)
    except OSError:
        pass  # a read-only home directory only costs speed
    return data


def load_yaml_resource(package: str, *parts: str) -> Any:
    """Parse a YAML data file shipped in ``package``, through the same JSON cache."""
    return _load(resources.files(package).joinpath(*parts), f"{package}-{'-'.join(parts)}")
