"""`deploy render --monitoring DIR`: file_sd scrape config and per-release-family dashboards."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from servespec.metrics.facts import for_release
from servespec.metrics.monitoring import dashboard, panels
from servespec.metrics.view import parsed_name
from tests.conftest import REPO, run_cli
from tests.metrics import served_engines

EXAMPLES = REPO / "specs" / "examples"
PROMQL_WORDS = {
    "sum", "avg", "max", "by", "rate", "histogram_quantile", "le", "deployment", "host", "replica",
    "finished_reason", "__rate_interval", "up", "job",
}  # fmt: skip
"""PromQL functions, grouping labels and Prometheus' own ``up``: every other name in a query is an engine metric."""


def _names(expr: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", re.sub(r'"[^"]*"', "", expr))) - PROMQL_WORDS


def _spec(tmp_path: Path, name: str, metrics_on: bool) -> Path:
    shutil.copytree(EXAMPLES / "inventory", tmp_path / "inventory", dirs_exist_ok=True)
    text = (EXAMPLES / name).read_text()
    if metrics_on:
        text = text.replace("    parallel: 2\n", "    parallel: 2\n    metrics: true\n")
    (tmp_path / name).write_text(text)
    return tmp_path / name


@pytest.mark.parametrize("engine", served_engines())
def test_every_dashboard_query_names_only_metrics_of_its_release(engine: str) -> None:
    from servespec.metrics.facts import versions

    for version in versions(engine):
        facts = for_release(engine, version)
        assert facts is not None
        written = {parsed_name(m, s) for m in facts.metrics.values() if m.served for s in m.samples}
        written |= {s for m in facts.metrics.values() if m.served for s in m.samples}
        board = dashboard(engine, [facts])
        exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
        assert exprs, f"{engine} {version}: a dashboard with no queries"
        for expr in exprs:
            assert _names(expr) <= written, f"{engine} {version}: {expr} names {_names(expr) - written}"


def test_vllm_dashboards_follow_the_kv_cache_rename() -> None:
    def kv_queries(version: str) -> str:
        facts = for_release("vllm", version)
        assert facts is not None
        return " ".join(q for title, _, qs in panels(facts) if title == "KV-cache use" for _, q in qs)

    assert "vllm:gpu_cache_usage_perc" in kv_queries("0.8.5")
    assert "vllm:kv_cache_usage_perc" in kv_queries("0.12.0") and "gpu_cache" not in kv_queries("0.12.0")


def test_render_monitoring_writes_labelled_file_sd_targets_and_dashboards(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "llama.cpp.yaml", metrics_on=True)
    vllm = _spec(tmp_path, "vllm.yaml", metrics_on=False)
    result = run_cli("render", str(spec), str(vllm), "-o", str(tmp_path / "out"), "--monitoring", str(tmp_path / "mon"))
    assert result.exit_code == 0, result.output
    mon = tmp_path / "mon"
    (target,) = json.loads((mon / "targets" / "qwen-tiny-cpu.json").read_text())
    assert target["targets"] == ["127.0.0.1:8080"] or target["targets"][0].endswith(":8080")
    assert set(target["labels"]) == {"deployment", "host", "replica", "engine", "release", "revision"}
    assert target["labels"]["release"] == "b11312" and re.fullmatch(r"[0-9a-f]{64}", target["labels"]["revision"])
    config = (mon / "prometheus.yml").read_text()
    assert "servespec-qwen-tiny-cpu" in config and "targets/qwen-tiny-cpu.json" in config
    boards = sorted((mon / "dashboards").glob("*.json"))
    assert {json.loads(b.read_text())["tags"][1] for b in boards} == {"llama.cpp", "vllm"}


def test_llama_cpp_without_metrics_is_not_scraped_and_the_readme_says_why(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "llama.cpp.yaml", metrics_on=False)
    result = run_cli("render", str(spec), "-o", str(tmp_path / "out"), "--monitoring", str(tmp_path / "mon"))
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "mon" / "targets" / "qwen-tiny-cpu.json").exists()
    assert "engine.options.metrics: true" in (tmp_path / "mon" / "README.md").read_text()


def test_promtool_accepts_the_rendered_configuration(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus; scripts/setup.sh installs it)")
    spec = _spec(tmp_path, "llama.cpp.yaml", metrics_on=True)
    result = run_cli("render", str(spec), "-o", str(tmp_path / "out"), "--monitoring", str(tmp_path / "mon"))
    assert result.exit_code == 0, result.output
    checked = subprocess.run(
        [promtool, "check", "config", "prometheus.yml"], cwd=tmp_path / "mon", capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_xinference_is_scraped_on_its_worker_exporter_port_which_the_container_publishes(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "inventory", tmp_path / "inventory", dirs_exist_ok=True)
    text = (EXAMPLES / "xinference.yaml").read_text()
    (tmp_path / "off.yaml").write_text(text)
    (tmp_path / "on.yaml").write_text(
        text.replace("    model_engine: vLLM", "    metrics_exporter_port: 9998\n    model_engine: vLLM")
    )
    result = run_cli(
        "render", str(tmp_path / "off.yaml"), "-o", str(tmp_path / "o1"), "--monitoring", str(tmp_path / "m1")
    )
    assert result.exit_code == 0, result.output
    assert "engine.options.metrics_exporter_port to a port" in (tmp_path / "m1" / "README.md").read_text()
    result = run_cli(
        "render", str(tmp_path / "on.yaml"), "-o", str(tmp_path / "o2"), "--monitoring", str(tmp_path / "m2")
    )
    assert result.exit_code == 0, result.output
    (target,) = json.loads((tmp_path / "m2" / "targets" / "qwen7b-xinference.json").read_text())
    assert target["targets"][0].endswith(":9998") and target["labels"]["release"] == "2.12.0"
    rendered = "\n".join(p.read_text() for p in (tmp_path / "o2").rglob("*") if p.is_file())
    assert "--metrics-exporter-port" in rendered and "9998:9998" in rendered
