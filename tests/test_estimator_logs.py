"""The estimator against real vLLM start-up logs: median absolute error of KV tokens ≤ 5 %."""

from __future__ import annotations

import pytest

from tests.vllm_logs import _gpu, compare_all, median_abs_error


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


@pytest.mark.parametrize(
    ("gpu", "total_gib", "gpu_id"),
    [
        ("NVIDIA GeForce RTX 3060", 11.76, "RTX-3060-12GB"),  # one name, two memory sizes: the logged total decides
        ("NVIDIA GeForce RTX 3060", 7.79, "RTX-3060-8GB"),
        ("NVIDIA GeForce RTX 3060", 3.8, None),  # neither card is that size
        ("NVIDIA GeForce GTX 1080", 7.92, "GTX-1080"),  # 004/005's card (xlisp/jimw-vllm README)
        ("TITAN X (Pascal)", None, "TITAN-X-Pascal"),  # a name with parentheses
        ("NVIDIA H200 (141 GB class)", 139.8, "H200-SXM-141GB"),  # a comment in parentheses
    ],
)
def test_log_gpu_names_resolve(gpu: str, total_gib: float | None, gpu_id: str | None) -> None:
    found = _gpu({"gpu": gpu, "total_gpu_memory_gib": total_gib})
    assert (found.id if found else None) == gpu_id
