"""JSON Schemas of the file kinds, generated from the models (committed under schemas/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from servespec.spec.models import Deployment, FactsFile, Inventory

SCHEMA_FILES: dict[str, type[BaseModel]] = {
    "deployment.schema.json": Deployment,
    "inventory.schema.json": Inventory,
    "facts.schema.json": FactsFile,
}


def schema_text(model: type[BaseModel], filename: str) -> str:
    """The schema document for ``model``, as the exact text written to disk."""
    body: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://servespec.dev/schemas/v1/{filename}",
    }
    body.update(model.model_json_schema())
    return json.dumps(body, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema into ``directory``; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, model in SCHEMA_FILES.items():
        path = directory / filename
        path.write_text(schema_text(model, filename), encoding="utf-8")
        written.append(path)
    return written
