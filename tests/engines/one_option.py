"""The ENG001 findings of a one-option spec on one release: what the per-engine catalog tests sample."""

from __future__ import annotations

from pathlib import Path

from servespec.findings import Finding
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet


def eng001(tmp_path: Path, engine: str, version: str, model: str, option: str, value: str = "1") -> list[Finding]:
    """ENG001 findings of a spec whose only engine option is ``option: value`` (both as YAML text)."""
    path = tmp_path / f"{engine}-{version}-{option}.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n"
        f"model: {model}\n"
        f"engine: {{name: {engine}, version: '{version}', options: {{'{option}': {value}}}}}\n"
    )
    return [f for f in check_fleet(load_fleet([path])) if f.rule == "ENG001"]
