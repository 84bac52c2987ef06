"""The command line: formats, exit codes, explain, schema, examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec.rules import ALL_RULES
from servespec.spec.schemas import SCHEMA_FILES, schema_text
from tests.conftest import REPO, run_cli

EXAMPLES = REPO / "specs"

BAD_SPEC = """\
apiVersion: servespec/v1
kind: Deployment
metadata: {name: demo}
model: {source: Qwen/Qwen2.5-7B-Instruct, max_modl_len: 4096}
engine: {name: vllm, version: "0.11.0"}
"""

WARN_SPEC = """\
apiVersion: servespec/v1
kind: Deployment
metadata: {name: demo}
model: {source: /srv/models/demo.gguf, quantization: gguf, max_model_len: 4096}
engine: {name: llama.cpp, version: b11434}
suppress:
  - {rule: REF001, reason: "stale"}
"""


def test_examples_validate_clean() -> None:
    result = run_cli("validate", str(EXAMPLES))
    assert result.exit_code == 0, result.output


def test_every_example_has_a_schema_modeline() -> None:
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        first = path.read_text().splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path
        schema = (path.parent / first.split("$schema=", 1)[1]).resolve()
        assert schema.is_file(), f"{path}: modeline points at missing {schema}"


def test_committed_schemas_match_models() -> None:
    for name, model in SCHEMA_FILES.items():
        committed = (REPO / "schemas" / name).read_text()
        assert committed == schema_text(model, name), f"schemas/{name} is stale: run `deploy schema -o schemas`"


def test_schema_command_writes_every_kind(tmp_path: Path) -> None:
    result = run_cli("schema", "-o", str(tmp_path))
    assert result.exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "deployment.schema.json",
        "facts.schema.json",
        "inventory.schema.json",
    ]


def test_text_format_and_exit_code(in_tmp: Path) -> None:
    Path("bad.yaml").write_text(BAD_SPEC)
    result = run_cli("validate", "bad.yaml")
    assert result.exit_code == 1
    assert "bad.yaml:4:43: SS002 error unknown field 'max_modl_len'" in result.stdout
    assert "did you mean 'max_model_len'?" in result.stdout


def test_lint_is_an_alias(in_tmp: Path) -> None:
    Path("bad.yaml").write_text(BAD_SPEC)
    assert run_cli("lint", "bad.yaml").exit_code == 1


def test_json_format_follows_the_contract(in_tmp: Path) -> None:
    Path("bad.yaml").write_text(BAD_SPEC)
    report = json.loads(run_cli("validate", "--format", "json", "bad.yaml").stdout)
    assert report["version"] == 1
    assert report["summary"] == {"files": 1, "errors": 1, "warnings": 0, "infos": 0}
    (finding,) = report["findings"]
    assert set(finding) == {"rule", "severity", "message", "file", "line", "column", "path", "hint", "docs"}
    assert (finding["rule"], finding["line"], finding["column"], finding["path"]) == (
        "SS002",
        4,
        43,
        "model.max_modl_len",
    )


def test_github_format(in_tmp: Path) -> None:
    Path("bad.yaml").write_text(BAD_SPEC)
    out = run_cli("validate", "--format", "github", "bad.yaml").stdout
    assert out.startswith("::error file=bad.yaml,line=4,col=43,title=SS002::unknown field")


def test_sarif_format_has_rules_and_located_results(in_tmp: Path) -> None:
    Path("bad.yaml").write_text(BAD_SPEC)
    log = json.loads(run_cli("validate", "--format", "sarif", "bad.yaml").stdout)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r.id for r in ALL_RULES]
    (result,) = run["results"]
    assert result["ruleId"] == "SS002"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (4, 43)


def test_warnings_pass_unless_strict(in_tmp: Path) -> None:
    Path("warn.yaml").write_text(WARN_SPEC)
    assert run_cli("validate", "warn.yaml").exit_code == 0
    strict = run_cli("validate", "--strict", "--format", "json", "warn.yaml")
    assert strict.exit_code == 1
    assert json.loads(strict.stdout)["findings"][0]["severity"] == "error"


def test_unknown_format_is_usage_error(in_tmp: Path) -> None:
    Path("warn.yaml").write_text(WARN_SPEC)
    assert run_cli("validate", "--format", "xml", "warn.yaml").exit_code == 2


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.id for r in ALL_RULES])
def test_explain_names_a_source(rule: type) -> None:
    result = run_cli("explain", rule.id.lower())  # type: ignore[attr-defined]
    assert result.exit_code == 0
    assert rule.sources[0] in result.stdout  # type: ignore[attr-defined]


def test_explain_unknown_rule() -> None:
    result = run_cli("explain", "XYZ999")
    assert result.exit_code == 2


def test_inventory_override(in_tmp: Path) -> None:
    Path("spec.yaml").write_text(
        WARN_SPEC.replace('suppress:\n  - {rule: REF001, reason: "stale"}\n', "placement: {hosts: [gpu-9]}\n")
    )
    Path("inv.yaml").write_text("apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  gpu-1: {}\n")
    result = run_cli("validate", "-i", "inv.yaml", "spec.yaml")
    assert result.exit_code == 1
    assert "REF001" in result.stdout and "did you mean 'gpu-1'" in result.stdout
    assert run_cli("validate", "-i", "absent.yaml", "spec.yaml").exit_code == 2


def test_discover_from_outputs_writes_facts_that_validate_uses(in_tmp: Path) -> None:
    topo = REPO / "tests" / "data" / "facts" / "samples" / "01-topo-h100-nv18-nvswitch" / "output.txt"
    Path("saved/gpu-01").mkdir(parents=True)
    Path("saved/gpu-01/topo.txt").write_text(topo.read_text())
    result = run_cli("discover", "--from-outputs", "saved", "-o", "inv/facts")
    assert result.exit_code == 0, result.output
    facts = json.loads(Path("inv/facts/gpu-01.json").read_text())
    assert facts["hardware"]["interconnect"] == "nvswitch" and len(facts["links"]) == 28
    Path("inv/hosts.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  gpu-01: {facts: facts/gpu-01.json}\n"
    )
    assert run_cli("validate", "inv/hosts.yaml").exit_code == 0


@pytest.mark.parametrize("args", [[], ["--from-outputs", "missing"], ["-i", "x.yaml", "--from-outputs", "."]])
def test_discover_usage_errors(in_tmp: Path, args: list[str]) -> None:
    result = run_cli("discover", *args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_findings_never_repeat_a_secret(in_tmp: Path) -> None:
    """SEC001 reports where a literal secret is, without copying it into CI logs or SARIF."""
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    Path("spec.yaml").write_text(
        WARN_SPEC.split("suppress:")[0].replace("engine: {name: llama.cpp, version: b11434}", "")
        + f'engine: {{name: llama.cpp, version: b11434, extra_args: ["--hf-token", "{token}", "{token}"]}}\n'
    )
    for fmt in ("text", "json", "sarif", "github"):
        result = run_cli("validate", "--format", fmt, "spec.yaml")
        assert result.exit_code == 1 and "SEC001" in result.output
        assert token not in result.output, fmt


def test_one_table_cell_for_every_table() -> None:
    """The estimate and status tables and the rollout's tables print cells with the same function."""
    from servespec import estimate_report, report
    from servespec.rollout import progress

    assert progress.cell is report.cell is estimate_report.cell
    assert report.cell("[red]x[/red]\x1b").plain == "[red]x[/red]\\x1b"


ESTIMATE_TABLE = """
import sys
from click.testing import CliRunner
from servespec.cli import main
result = CliRunner().invoke(main, ["estimate", sys.argv[1]])
loaded = sorted(m for m in ("servespec.rollout", "ansible", "ansible_runner", "docker") if m in sys.modules)
print(result.exit_code, "rich" in sys.modules, ",".join(loaded) or "-")
"""


def test_the_estimate_table_loads_no_rollout_modules() -> None:
    import subprocess
    import sys

    spec = REPO / "specs" / "examples" / "vllm.yaml"
    out = subprocess.run([sys.executable, "-c", ESTIMATE_TABLE, str(spec)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "True", "-"], out.stdout + out.stderr
