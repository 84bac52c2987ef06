"""`deploy validate --format sarif` checked against the official SARIF 2.1.0 schema.

The schema is the OASIS TC's own file (tests/data/sarif/README.md says where it came from),
so this fails if our log drifts from the standard, not from our idea of it.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import jsonschema
import pytest

from tests.conftest import REPO, run_cli

SCHEMA_PATH = REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
BAD = sorted((REPO / "tests" / "data" / "bad").glob("*.yaml"))


@cache
def _validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def _errors(log: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator().iter_errors(log)]


def _sarif(*args: str) -> dict[str, Any]:
    result = run_cli("validate", "--format", "sarif", *args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_bad_corpus_log_is_valid_sarif() -> None:
    log = _sarif(*map(str, BAD))
    results = log["runs"][0]["results"]
    assert len({r["ruleId"] for r in results}) >= 5  # several rules, several shapes of location
    assert _errors(log) == []


def test_clean_examples_log_is_valid_sarif() -> None:
    log = _sarif(str(REPO / "specs"))
    assert _errors(log) == []


@pytest.mark.parametrize(
    "breakage",
    [
        lambda log: log.update(version="2.0.0"),
        lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].update(startLine=0),
        lambda log: log["runs"][0]["results"][0].update(level="fatal"),
        lambda log: log["runs"][0]["tool"]["driver"].pop("name"),
    ],
    ids=["version", "line-zero", "level", "driver-name"],
)
def test_schema_check_catches_a_broken_log(breakage: Any) -> None:
    """The check above can fail: each of these edits makes a log the schema rejects."""
    log = copy.deepcopy(_sarif(*map(str, BAD[:3])))
    breakage(log)
    assert _errors(log)
