"""JSON Schemas of the file kinds, generated from the models (committed under schemas/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from servespec import outdir
from servespec.spec.models import Deployment, FactsFile, Inventory

_ID = "https://servespec.dev/schemas/v1/"

SCHEMA_FILES: dict[str, type[BaseModel]] = {
    "deployment.schema.json": Deployment,
    "inventory.schema.json": Inventory,
    "facts.schema.json": FactsFile,
}


def schema_text(model: type[BaseModel], filename: str) -> str:
    """The schema document for ``model``, as the exact text written to disk."""
    body: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{_ID}{filename}",
    }
    body.update(model.model_json_schema())
    return json.dumps(body, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def _owns(name: str, data: bytes) -> bool:
    """A schema servespec wrote: a JSON object naming itself by servespec's ``$id`` for that file."""
    try:
        body = json.loads(data)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("$id") == f"{_ID}{name}"


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema into ``directory``; return the paths written.

    Never through a symlink, never over a file that is not one of these schemas
    (:class:`~servespec.outdir.OutputError`, nothing written).
    """
    files = {filename: schema_text(model, filename).encode("utf-8") for filename, model in SCHEMA_FILES.items()}
    return outdir.write_files(directory, files, _owns)
