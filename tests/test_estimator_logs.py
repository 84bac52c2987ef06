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


def test_no_recorded_log_trips_the_estimator() -> None:
    """The bench reports a log the estimator raises on instead of stopping; none of the recorded ones may."""
    from tests.vllm_logs import compare_corpus

    failed = [(row.name, row.skipped) for row in compare_corpus() if row.skipped.startswith("not scored:")]
    assert not failed


def test_a_log_the_estimator_cannot_take_is_listed_with_the_reason(tmp_path) -> None:
    from tests.vllm_logs import _guarded, compare

    bad = tmp_path / "900-bad.yaml"
    bad.write_text(
        "vllm_version: '0.11.0'\nmodel: meta-llama/Llama-3.1-8B-Instruct\ngpu: NVIDIA L4\n"
        "settings: {tensor_parallel_size: two}\nobserved: {kv_cache_tokens: 1000}\n"
    )
    row = _guarded(compare, bad)
    assert row.predicted is None and row.skipped.startswith("not scored:"), row


def test_an_uncatalogued_gpu_is_stood_in_for_by_the_logged_total() -> None:
    from tests.vllm_logs import _gpu

    found = _gpu({"gpu": "NVIDIA Imaginary 9000", "total_gpu_memory_gib": 47.5})
    assert found is not None and found.id == "uncatalogued:NVIDIA Imaginary 9000"
    assert _gpu({"gpu": "NVIDIA Imaginary 9000"}) is None


def test_a_compressed_tensors_log_is_sized_by_the_scheme_vllm_loaded() -> None:
    """A RedHatAI compressed-tensors log names no width in its settings; the scheme vLLM built from the checkpoint
    (``weights_scheme``, quoted from the raw log) sizes its weights: 8-bit decoder linears, 16-bit embeddings and head,
    as logged (Llama-3.1-8B W8A8: 8.49 GiB), where the unquantized model would take 14.96 GiB."""
    from ruamel.yaml import YAML

    from servespec.engines import get
    from servespec.knowledge.memory import EstimateInput, weight_bytes
    from tests.vllm_logs import LOGS, WEIGHTS_SCHEMES, _facts, _gpu, compare

    path = next(LOGS.glob("073-*.yaml"))
    row = compare(path)
    assert not row.skipped and abs(row.error) < 0.02, (row.skipped, row.predicted, row.observed)
    data = YAML(typ="safe").load(path.read_text())
    assert data["weights_scheme"] in WEIGHTS_SCHEMES
    facts = _facts(data)
    plain = _facts({**data, "weights_scheme": None})
    assert facts is not None and plain is not None and plain.quant_bits is None
    gpu = _gpu(data)
    assert gpu is not None

    def gib(model: object) -> float:
        release = get("vllm").select("0.19.0").release
        inp = EstimateInput(engine="vllm", release=release, model=model, gpu=gpu, quantization="compressed-tensors")  # type: ignore[arg-type]
        return weight_bytes(inp) / 2**30

    assert gib(facts) == pytest.approx(data["observed"]["model_weights_gib"], abs=0.1)
    assert gib(plain) > 14.9


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
            # the Go engine's own allocation lines when no llama.cpp runner printed one (msg="kv cache" device=...)
            sizes = sizes or re.findall(r'msg="kv cache" device=\S+ size="([\d.]+) MiB"', log)
            assert sizes and abs(sum(map(float, sizes)) - observed["kv_cache_mib"]) < 0.01, (path.name, sizes)


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
