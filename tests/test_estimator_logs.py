"""The estimator against real vLLM start-up logs: median absolute error of KV tokens ≤ 5 %."""

from __future__ import annotations

from tests.vllm_logs import compare_all, median_abs_error


def test_estimator_matches_recorded_vllm_logs() -> None:
    rows = compare_all()
    used = [row for row in rows if not row.skipped]
    assert len(used) >= 5, [(row.name, row.skipped) for row in rows]
    assert median_abs_error(rows) <= 0.05, [(row.name, round(row.error, 3)) for row in used]


def test_every_log_left_out_of_calibration_says_why() -> None:
    from ruamel.yaml import YAML

    from tests.conftest import REPO

    for path in sorted((REPO / "tests" / "data" / "vllm_logs").glob("*.yaml")):
        calibration = YAML(typ="safe").load(path.read_text()).get("calibration") or {}
        if calibration.get("use") is False:
            assert str(calibration.get("why", "")).strip(), path.name


def test_every_startup_log_of_other_engines_names_its_source_and_quotes_its_log() -> None:
    """Each startup_logs/<engine>/*.yaml links its source, names engine, version, model and GPU, quotes the log."""
    from ruamel.yaml import YAML

    from tests.conftest import REPO

    paths = sorted((REPO / "tests" / "data" / "startup_logs").glob("*/*.yaml"))
    assert paths
    for path in paths:
        data = YAML(typ="safe").load(path.read_text())
        assert data.get("engine") == path.parent.name, path.name
        for field in ("url", "engine_version", "model", "gpu", "log"):
            assert str(data.get(field) or "").strip(), (path.name, field)
        assert str(data["url"]).startswith("https://"), path.name
        assert isinstance(data.get("observed"), dict), path.name
        calibration = data.get("calibration") or {}
        if calibration.get("use") is False:
            assert str(calibration.get("why", "")).strip(), path.name


def test_error_band_file_is_what_the_logs_measure() -> None:
    """The MEM rules' band (knowledge/data/estimator_band.yaml) is derived, never hand-set."""
    from ruamel.yaml import YAML

    from tests.vllm_logs import BAND_FILE, bands

    assert YAML(typ="safe").load(BAND_FILE.read_text()) == bands(compare_all()), (
        "regenerate: .venv/bin/python bench/estimator_accuracy.py --write-band"
    )


def test_class_table_counts_every_log_of_every_engine_once() -> None:
    """bench/estimator_accuracy.py's per-class table (issue 23): every recorded log in exactly one row."""
    from tests.conftest import REPO
    from tests.vllm_logs import class_table, compare_corpus

    rows = compare_corpus()
    files = list((REPO / "tests" / "data" / "vllm_logs").glob("*.yaml"))
    files += list((REPO / "tests" / "data" / "startup_logs").glob("*/*.yaml"))
    assert len(rows) == len(files)
    table = class_table(rows)
    assert sum(entry["n"] for entry in table) == len(rows)
    assert sum(entry["answered"] for entry in table) == sum(1 for row in rows if not row.skipped)
    assert {entry["engine"] for entry in table} >= {"vllm", "sglang", "llama.cpp"}
    for entry in table:
        assert entry["answered"] <= entry["n"]
        assert (entry["median"] is None) == (entry["answered"] == 0)


def test_attention_classes_of_known_layouts() -> None:
    """Sliding windows (gpt-oss), Llama 4's chunked attention, MLA (DeepSeek-V2) and full attention are told apart."""
    from servespec.knowledge import models
    from tests.vllm_logs import attention_class

    assert attention_class(models.catalogued("openai/gpt-oss-20b")) == "sliding"
    assert attention_class(models.catalogued("meta-llama/Llama-4-Scout-17B-16E-Instruct")) == "chunked"
    assert attention_class(models.catalogued("deepseek-ai/DeepSeek-V2-Lite-Chat")) == "mla"
    assert attention_class(models.catalogued("meta-llama/Llama-3.1-8B-Instruct")) == "full"
    assert attention_class(None) == "unknown"


def test_ollama_startup_log_figures_are_read_from_the_quoted_lines() -> None:
    """Each startup_logs/ollama/*.yaml: version, GPU, context size and KV size appear in its own `log:` lines."""
    import re

    from ruamel.yaml import YAML

    from tests.conftest import REPO

    paths = sorted((REPO / "tests" / "data" / "startup_logs" / "ollama").glob("*.yaml"))
    assert len(paths) >= 20
    for path in paths:
        data = YAML(typ="safe").load(path.read_text())
        log = str(data["log"])
        assert f"version {data['engine_version']})" in log, path.name
        assert str(data["gpu"]) in log, path.name
        num_ctx = data["settings"].get("num_ctx")
        if num_ctx is not None:
            assert re.search(rf"(--ctx-size|KvSize:| -c) ?{num_ctx}\b", log), (path.name, num_ctx)
        observed = data["observed"]
        if observed.get("n_ctx") is not None:
            assert re.search(rf"n_ctx +=\s*{observed['n_ctx']}\b", log), (path.name, observed["n_ctx"])
        if observed.get("kv_cache_mib") is not None:
            sizes = re.findall(r"(?:KV self size|llama_kv_cache(?:_unified)?: size) +=\s*([\d.]+) MiB", log)
            assert sizes and abs(sum(map(float, sizes)) - observed["kv_cache_mib"]) < 0.01, (path.name, sizes)
