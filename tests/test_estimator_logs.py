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
        if not data.get("engine_version_assumed"):  # a log that prints no version states the one it assumes
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


# --- stand-ins for what a log does not state: an unnamed GPU, an unstated release (issue 23) ---------------------


def _write_log(folder, name: str, data: dict) -> object:
    from ruamel.yaml import YAML

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with path.open("w") as out:
        YAML().dump(data, out)
    return path


def test_an_unnamed_gpu_is_stood_in_for_by_the_logged_total() -> None:
    from servespec.knowledge.memory import cuda_total_gib

    found = _gpu({"gpu": None, "total_gpu_memory_gib": 15.99})
    assert found is not None and found.id == "unnamed:15.99 GiB" and found.compute_capability == (0, 0)
    assert cuda_total_gib(found) == pytest.approx(15.99, abs=0.01)
    assert _gpu({"gpu": None}) is None  # neither a name nor a total: nothing to stand in with
    described = _gpu({"gpu": "48 GB-class card", "gpu_named": False, "total_gpu_memory_gib": 44.0})
    assert described is not None and described.id == "unnamed:44.00 GiB"
    printed = _gpu({"gpu": None, "total_gpu_memory_gib": 23.5, "gpu_compute_capability": "8.6"})
    assert printed is not None and printed.compute_capability == (8, 6)


def _unnamed_vllm_log(tp: int, seqs: bool, capability: str | None = None) -> dict:
    settings: dict = {"tensor_parallel_size": tp, "gpu_memory_utilization": 0.9, "max_model_len": 8192}
    if seqs:
        settings.update(max_num_seqs=256, max_num_batched_tokens=2048)
    log = {
        "vllm_version": "0.19.0",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "gpu": None,
        "total_gpu_memory_gib": 79.3,
        "settings": settings,
        "engine": "v1",
        "observed": {"kv_cache_tokens": 500000},
    }
    if capability:
        log["gpu_compute_capability"] = capability
    return log


@pytest.mark.parametrize(
    ("tp", "seqs", "capability", "answered"),
    [
        (1, True, None, True),  # one GPU, the batch limits logged: memory is all the estimate reads
        (1, False, None, False),  # >= 70 GiB: vLLM's defaults differ on an A100, which the log does not rule out
        (2, True, None, False),  # TP 2: NCCL's NVLS buffers on an NVSwitch board, which the log does not rule out
        (2, True, "8.6", True),  # the logged capability rules out Hopper boards and the A100
    ],
)
def test_an_unnamed_gpu_answers_only_when_the_estimate_reads_nothing_the_log_hides(
    tmp_path, tp: int, seqs: bool, capability: str | None, answered: bool
) -> None:
    from tests.vllm_logs import compare

    row = compare(_write_log(tmp_path, "900-unnamed.yaml", _unnamed_vllm_log(tp, seqs, capability)))  # type: ignore[arg-type]
    assert any("unnamed:79.30 GiB" in label for label in row.assumed), row
    if answered:
        assert not row.skipped and row.predicted, row
    else:
        assert row.predicted is None and "GPU fact the log does not show" in row.skipped, row


def test_sglang_pre_load_memory_stands_in_for_an_unnamed_card(tmp_path) -> None:
    """SGLang takes mem_fraction_static of the memory it logs before loading; the stand-in is that figure plus the
    estimator's context allowance (labelled). At TP > 1 that figure is measured after NCCL's set-up and SGLang takes
    the least over the ranks: the stand-in is the least of every rank's logged figure plus the NCCL allowance the
    estimate subtracts again, and a log that does not show every rank's figure is not answered."""
    from ruamel.yaml import YAML

    from servespec.knowledge.memory import CONTEXT_GIB, VLLM_NON_TORCH_GIB
    from tests.vllm_logs import AFTER_TP_SETUP, OTHER_LOGS, compare_other

    path = next((OTHER_LOGS / "sglang").glob("002-*.yaml"))
    row = compare_other(path)
    assert not row.skipped and abs(row.error) < 0.02, row
    assert any(f"unnamed:{78.64 + CONTEXT_GIB:.2f} GiB" in label for label in row.assumed), row.assumed
    data = YAML(typ="safe").load(path.read_text())
    data["settings"]["tp_size"] = "2"
    wide = compare_other(_write_log(tmp_path / "sglang", "902-tp2.yaml", data))  # type: ignore[arg-type]
    assert wide.predicted is None and "1 of 2 ranks' pre-load memory" in wide.skipped, wide
    data["settings"].update(tp_size="1", mem_fraction_static=None)
    unset = compare_other(_write_log(tmp_path / "sglang", "903-default.yaml", data))  # type: ignore[arg-type]
    assert unset.predicted is None and "mem_fraction_static not logged" in unset.skipped, unset
    # 004: TP2, ranks log 18.73 and 19.15 GiB; SGLang's baseline is the lesser (an all-reduce MIN)
    tp2 = compare_other(next((OTHER_LOGS / "sglang").glob("004-*.yaml")))
    assert not tp2.skipped and abs(tp2.error) < 0.02, tp2
    total = 18.73 + CONTEXT_GIB + VLLM_NON_TORCH_GIB[1]
    assert any(f"unnamed:{total:.2f} GiB{AFTER_TP_SETUP}" in label for label in tp2.assumed), tp2.assumed


def test_printed_server_args_bound_an_unstated_sglang_release() -> None:
    """The ServerArgs fields a log prints are options (or aliases) of the release that ran it: every log that states
    its release falls inside the bound, and the bound is narrower than the catalogue."""
    from ruamel.yaml import YAML

    from servespec.engines import get
    from tests.vllm_logs import OTHER_LOGS, _printed_args_bound

    checked = 0
    for path in sorted((OTHER_LOGS / "sglang").glob("*.yaml")):
        data = YAML(typ="safe").load(path.read_text())
        stated = str(data.get("engine_version") or "")
        if stated == "unknown" or "server_args=ServerArgs(" not in str(data.get("log")):
            continue
        everything = ["unknown", *get("sglang").select("unknown").known]
        bound = _printed_args_bound("sglang", data, everything)
        assert stated in bound and len(bound) < len(everything), (path.name, bound)
        checked += 1
    assert checked >= 2


def test_an_assumed_release_is_used_and_labelled(tmp_path) -> None:
    from ruamel.yaml import YAML

    from tests.vllm_logs import OTHER_LOGS, _version, class_table, compare_other

    assumption = {"version": "2.4.0", "why": "newest release before the post"}
    assert _version({"engine_version": "unknown", "engine_version_assumed": assumption}, "engine_version") == (
        "2.4.0",
        ("release 2.4.0 assumed: newest release before the post",),
    )
    stated = {"engine_version": "2.3.1", "engine_version_assumed": assumption}
    assert _version(stated, "engine_version") == ("2.3.1", ())  # a printed release wins
    path = next((OTHER_LOGS / "tgi").glob("004-*.yaml"))
    row = compare_other(path)
    assert row.version == "2.4.0" and row.assumed and row.assumed[0].startswith("release 2.4.0 assumed"), row
    assert any(entry["versions"] == "2.4.0*" for entry in class_table([row])), class_table([row])
    # max_total_tokens is not logged, and the values the launcher accepts move the figure: not answered, with why
    assert row.skipped.startswith("max_total_tokens not logged"), row
    data = YAML(typ="safe").load(path.read_text())
    data["engine_version"] = "2.4.0"
    del data["engine_version_assumed"]
    data["settings_assumed"]["max_total_tokens"] = {"value": 10000, "why": "the least the launcher accepts"}
    one = compare_other(_write_log(tmp_path / "tgi", "904-assumed.yaml", data))  # type: ignore[arg-type]
    assert any(label.startswith("max_total_tokens 10000 assumed") for label in one.assumed), one.assumed
    data["settings"]["max_total_tokens"] = data.pop("settings_assumed")["max_total_tokens"]["value"]
    plain = compare_other(_write_log(tmp_path / "tgi", "905-stated.yaml", data))  # type: ignore[arg-type]
    assert plain.predicted == one.predicted and not plain.assumed  # an assumed setting is what a stated one gives


def test_an_unstated_release_is_answered_only_when_no_catalogued_release_changes_the_figure(tmp_path) -> None:
    from ruamel.yaml import YAML

    from tests.vllm_logs import OTHER_LOGS, compare_other

    same = compare_other(next((OTHER_LOGS / "llama.cpp").glob("015-*.yaml")))
    assert not same.skipped and any("release not stated: the figure is the same" in a for a in same.assumed), same
    data = YAML(typ="safe").load(next((OTHER_LOGS / "sglang").glob("001-*.yaml")).read_text())
    data["engine_version"] = "unknown"
    data["settings"]["mem_fraction_static"] = None  # the default fraction is the release's own
    row = compare_other(_write_log(tmp_path / "sglang", "905-unstated.yaml", data))  # type: ignore[arg-type]
    assert row.predicted is None and "release not stated, and the figure depends on it" in row.skipped, row


@pytest.mark.parametrize(
    ("logged", "by_default", "answered", "a100_kept", "hopper_kept"),
    [
        (8192, True, True, False, True),  # vLLM chose 8192 itself: a >= 70 GiB card that is not an A100
        (2048, True, True, True, False),  # 2048 by default on an 80 GB card: the A100's tier only
        (8192, False, False, True, True),  # the user set 8192: says nothing about the card (A100: 256 sequences)
    ],
)
def test_a_budget_vllm_chose_by_default_rules_out_the_cards_that_choose_another(
    tmp_path, logged: int, by_default: bool, answered: bool, a100_kept: bool, hopper_kept: bool
) -> None:
    """vLLM's V1 API server picks max_num_batched_tokens and max_num_seqs as a pair by GPU (0.19.0's
    v1_batch_defaults fact): a logged default budget says which pair ran, so the unnamed 80 GB card's candidates
    that would have picked the other pair (and another sampler warm-up) are not estimated; a budget the user set
    says nothing about the card."""
    from servespec.knowledge import models
    from tests.vllm_logs import _candidate_releases, _defaults_agree, _variants, compare

    log = _unnamed_vllm_log(1, False)
    log["settings"]["max_num_batched_tokens"] = logged
    if by_default:
        log["settings_by_default"] = {"max_num_batched_tokens": "Chunked prefill is enabled with ..."}
    row = compare(_write_log(tmp_path, "908-by-default.yaml", log))  # type: ignore[arg-type]
    if answered:
        assert not row.skipped and row.predicted, row
        assert any("settings_by_default ruled out" in label for label in row.assumed), row
    else:
        assert row.predicted is None and "GPU fact the log does not show" in row.skipped, row
    facts, release = models.catalogued(log["model"]), _candidate_releases("0.19.0")[0]
    cards = {card.id if "A100" in card.id else card.compute_capability: card for card in _variants(_gpu(log))}
    assert _defaults_agree(log, facts, "0.19.0", cards["A100-SXM4-80GB"], release) is a100_kept
    assert _defaults_agree(log, facts, "0.19.0", cards[(9, 0)], release) is hopper_kept


def test_a_loose_gpu_name_is_estimated_as_every_card_it_fits(tmp_path) -> None:
    """'NVIDIA H100' fits the PCIe, SXM5 and NVL cards (80 and 94 GB): without a logged total the estimate differs
    between them, so the log is not answered on a guess; 'NVIDIA A100 80GB' (PCIe or SXM4, the same memory and
    facts) is."""
    from tests.vllm_logs import _gpu_candidates, compare

    assert {gpu.id for gpu in _gpu_candidates({"gpu": "NVIDIA H100"})} == {
        "H100-PCIE-80GB",
        "H100-SXM5-80GB",
        "H100-NVL-94GB",
    }
    log = _unnamed_vllm_log(1, True)
    loose = compare(_write_log(tmp_path, "906-h100.yaml", {**log, "gpu": "NVIDIA H100", "total_gpu_memory_gib": None}))  # type: ignore[arg-type]
    assert loose.predicted is None and loose.skipped.startswith("GPU name fits H100-PCIE-80GB"), loose
    a100 = compare(
        _write_log(tmp_path, "907-a100.yaml", {**log, "gpu": "NVIDIA A100 80GB", "total_gpu_memory_gib": None})
    )  # type: ignore[arg-type]
    assert not a100.skipped and a100.predicted, a100


def test_a_vllm_log_without_a_token_count_is_scored_on_its_kv_memory(tmp_path) -> None:
    """Log 170 (vLLM 0.6.4) prints kv_cache_size=22.74GiB and no token count: it is scored on the memory (labelled
    KV_MIB), which on logs that give both tracks the token error (bench legend)."""
    from tests.vllm_logs import KV_MIB, LOGS, compare, compare_all, kv_memory_pairs

    row = compare(next(LOGS.glob("170-*.yaml")))
    assert row.figure == KV_MIB and row.observed == round(22.74 * 1024) and not row.skipped, row
    assert row.predicted == pytest.approx(row.kv_gib * 1024, abs=6), row  # kv_gib is rounded to 0.01 GiB
    log = _unnamed_vllm_log(1, True)
    log["observed"] = {"available_kv_cache_gib": 60.0}
    assert compare(_write_log(tmp_path, "908-gib.yaml", log)).figure == KV_MIB  # type: ignore[arg-type]
    pairs = kv_memory_pairs()
    # Both memory figures are rounded to 0.01 GiB (the log's print, the plan's kv_cache_gib), so on a small cache
    # the two errors may part by up to 0.01 GiB of rounding alone (log 123: 2.39 logged, 2.38 planned, 2.3862 and
    # 2.3833 GiB unrounded); a gap beyond both 0.25 % and that rounding is a real difference.
    logged = {row.name: row.logged_kv_gib or 0.0 for row in compare_all()}
    wide = [(name, gap) for name, gap in pairs if gap >= 0.0025 and gap * logged[name] > 0.0101]
    assert len(pairs) >= 20 and not wide, wide
    pipelined = _unnamed_vllm_log(1, True)
    pipelined["settings"]["pipeline_parallel_size"] = 2
    pipelined["observed"] = {"available_kv_cache_gib": 60.0}
    assert not compare(_write_log(tmp_path, "909-pp.yaml", pipelined)).figure  # type: ignore[arg-type]


def test_an_ollama_engine_log_is_scored_on_its_kv_cache_lines() -> None:
    """The Go ollama engine logs no llama.cpp KV line, only 'kv cache' device=CUDA0 size="18.0 GiB"; where both are
    printed they agree, and 013 (Qwen3 8B, 131072 cells) and 017 (Gemma 3 4B: five global layers at 4096 cells, 29
    sliding-window layers at window 1024 + batch 512) match the estimate's cells to the byte."""
    from tests.vllm_logs import (
        OLLAMA_ENGINE_KV,
        OTHER_LOGS,
        _ollama_engine_kv_bytes,
        _ollama_engine_kv_precision,
        compare_other,
        ollama_figure_pairs,
    )

    assert _ollama_engine_kv_bytes({"engine_kv_cache": {"CUDA0": "6.1 GiB", "CPU": "1.9 GiB"}}) == 8 * 2**30
    assert _ollama_engine_kv_bytes({"engine_kv_cache": {}}) is None
    # format.HumanBytes2 prints one decimal: half a unit of it per device line
    assert _ollama_engine_kv_precision({"engine_kv_cache": {"CUDA0": "1.1 GiB"}}) == round(0.05 * 2**30)
    assert _ollama_engine_kv_precision({"engine_kv_cache": {"CUDA0": "496.0 MiB", "CPU": "16.0 MiB"}}) == round(
        0.1 * 2**20
    )
    assert _ollama_engine_kv_precision({"engine_kv_cache": {"CUDA0": "lots"}}) == 0
    pairs = ollama_figure_pairs()
    assert pairs and all(abs(engine_kv - runner) <= precision for _, engine_kv, runner, precision in pairs), pairs
    # ollama/035 (T4, 0.17.7) prints "1.1 GiB" for the runner's 1152 MiB: not equal, within the printed decimal
    assert any(engine_kv != runner for _, engine_kv, runner, _ in pairs)
    from ruamel.yaml import YAML

    for stem, mib in (("013-", 18 * 1024), ("017-", 254)):
        path = next((OTHER_LOGS / "ollama").glob(f"{stem}*.yaml"))
        data = YAML(typ="safe").load(path.read_text())
        for device, size in data["observed"]["engine_kv_cache"].items():  # quoted from the log, not typed in
            assert f'msg="kv cache" device={device} size="{size}"' in data["log"], (path.name, device)
        row = compare_other(path)
        assert row.figure == OLLAMA_ENGINE_KV and row.observed == mib * 2**20, row
        assert not row.skipped and abs(row.error) < 0.003, row  # Ollama prints one decimal


def test_a_speculative_log_is_estimated_with_its_draft_or_says_why_not(tmp_path) -> None:
    """``settings.speculative`` in spec-v1's ``model.speculative`` spelling reaches the estimate (an MTP draft's layer
    and state blocks move the figure of the MTP log 171, re-enabled here); a method the spec does not express, a
    draft whose config the log does not give, or free text leave the log unanswered with the reason."""
    from ruamel.yaml import YAML

    from tests.vllm_logs import LOGS, compare

    data = YAML(typ="safe").load(next(LOGS.glob("171-*.yaml")).read_text())
    del data["calibration"]
    drafted = compare(_write_log(tmp_path, "971-mtp.yaml", data))  # type: ignore[arg-type]
    data["settings"]["speculative"] = None
    plain = compare(_write_log(tmp_path, "972-plain.yaml", data))  # type: ignore[arg-type]
    assert drafted.predicted and plain.predicted and not drafted.skipped, drafted
    assert drafted.predicted < plain.predicted  # one more attention layer, 3 more state blocks per request
    assert abs(drafted.error) < abs(plain.error)
    for value, reason in [
        ({"method": "medusa", "num_tokens": 5}, "speculative method medusa"),
        ({"method": "dflash", "draft": "x", "num_tokens": 5}, "the dflash draft's config is not in the log"),
        ({"method": "draft", "draft": "x", "num_tokens": 5}, "the draft draft's config is not in the log"),
        ("mtp, 3 tokens", "speculative decoding's settings are not given as"),
    ]:
        data["settings"]["speculative"] = value
        row = compare(_write_log(tmp_path, "973-other.yaml", data))  # type: ignore[arg-type]
        assert row.predicted is None and row.skipped.startswith(reason), row


def test_a_failed_start_on_a_loose_gpu_name_is_judged_on_the_verdict_every_card_gives(tmp_path) -> None:
    """A failed start is judged on its verdict, not its figure: when every card 'NVIDIA H100' may be predicts the
    same verdict, that verdict is its answer (labelled with the cards); when they disagree, it is unanswered and the
    reason names which cards say what. Log 150 (gpt-oss-120b at 131072 tokens, vLLM 0.10.1): the weights leave no
    KV cache on the 80 GB cards, the 94 GB NVL starts."""
    from ruamel.yaml import YAML

    from tests.vllm_logs import LOGS, MIXED_VERDICT, VERDICT_ONLY, VERDICT_OVER, compare

    data = YAML(typ="safe").load(next(LOGS.glob("150-*.yaml")).read_text())
    assert compare(next(LOGS.glob("150-*.yaml"))).fits is False  # the thread's collect_env names the PCIe card
    data["gpu"] = "NVIDIA H100"
    mixed = compare(_write_log(tmp_path, "910-loose.yaml", data))  # type: ignore[arg-type]
    assert mixed.fits is None and mixed.skipped.startswith(MIXED_VERDICT), mixed
    assert "'does not fit' on H100-PCIE-80GB, H100-SXM5-80GB" in mixed.skipped, mixed.skipped
    assert "'starts' on H100-NVL-94GB" in mixed.skipped, mixed.skipped
    data["settings"].update(max_model_len=8192, gpu_memory_utilization=0.95)  # a KV cache on every card: all start
    starts = compare(_write_log(tmp_path, "911-short.yaml", data))  # type: ignore[arg-type]
    assert starts.fits is True and starts.skipped == VERDICT_OVER, starts
    assert any("all 3 candidates predict 'starts'" in label for label in starts.assumed), starts.assumed
    data["settings"]["gpu_memory_utilization"] = 0.5  # half of any H100 is less than the weights: none starts
    caught = compare(_write_log(tmp_path, "912-half.yaml", data))  # type: ignore[arg-type]
    assert caught.fits is False and caught.skipped in (VERDICT_OVER, VERDICT_ONLY), caught  # no KV cache on any
    data["started"] = True  # a started log is still answered on its figure only (which differs between the cards)
    data["settings"]["gpu_memory_utilization"] = 0.95
    data["observed"]["kv_cache_tokens"] = 100000
    started = compare(_write_log(tmp_path, "913-started.yaml", data))  # type: ignore[arg-type]
    assert started.predicted is None and "GPU fact the log does not show" in started.skipped, started


def test_a_failed_start_of_another_engine_is_judged_over_every_release_and_card_it_may_be(tmp_path) -> None:
    """sglang/012 ('NVIDIA H100', release not stated) as a failed start without a KV figure: judged on the verdict
    every card and catalogued release gives, which here is a start (a miss, not an answer left open); SGLang starts
    with a pool shorter than the context and caps the request length (profile short_kv_cache), so its verdict does
    not read vLLM's one-sequence check: the started sglang/001 (46,611 tokens for a 131,072 context) fits."""
    from ruamel.yaml import YAML

    from tests.vllm_logs import OTHER_LOGS, VERDICT_OVER, compare_other

    assert compare_other(next((OTHER_LOGS / "sglang").glob("001-*.yaml"))).fits is True
    data = YAML(typ="safe").load(next((OTHER_LOGS / "sglang").glob("012-*.yaml")).read_text())
    data.update(started=False, observed={})
    data.pop("calibration", None)
    row = compare_other(_write_log(tmp_path / "sglang", "914-failed.yaml", data))  # type: ignore[arg-type]
    assert row.fits is True and row.skipped == VERDICT_OVER, row
    label = next(text for text in row.assumed if text.startswith("verdict over candidates"))
    assert "H100-NVL-94GB" in label and "sglang release not stated" in label and "predict 'starts'" in label, label
    data["settings"]["mem_fraction_static"] = 0.3  # 30 % of any H100 holds less than the weights: none starts
    caught = compare_other(_write_log(tmp_path / "sglang", "915-small.yaml", data))  # type: ignore[arg-type]
    assert caught.fits is False, caught


def _after_kv_margin(log: str) -> float | None:
    """GiB free after vLLM 0.19.0's KV cache less the CUDA graphs it then captured and the profiled peak (the sampler
    warm-up's), from the log's own lines; None when it does not print them."""
    import re

    init = re.search(r"worker init memory snapshot: .*?free_memory=([\d.]+)GiB", log)
    after = re.search(r"Free memory after profiling: ([\d.]+) GiB \(total\)", log)
    peak = re.search(r"torch peak memory increase: ([\d.]+)GiB", log)
    kv = re.search(r"Available KV cache memory: ([\d.]+) GiB", log)
    graphs = re.search(r"CUDA graph pool memory: ([\d.]+) GiB \(actual\)", log)
    if not (init and after and peak and kv and graphs):
        return None
    return float(after[1]) - float(kv[1]) - float(graphs[1]) - float(peak[1])


def test_mem008_stays_a_warning_because_the_logged_after_kv_margin_does_not_separate_failed_from_started() -> None:
    """gpt-oss-20b at 0.95 on H100 (075, 076) fails in the sampler warm-up after the KV cache, and the logs' own
    figures say why it is no arithmetic proof: the allocation that failed was smaller than the free memory plus what
    PyTorch held reserved but unallocated (fragmentation), and the margin after the cache (free - graphs - the
    sampler's profiled peak) is lower on logs that started (051, 058) than on 075. So MEM008 may not be an error
    here, the estimate predicts their start (a miss the bench reports), and no started log is predicted to fail on
    the warm-up."""
    import re

    from ruamel.yaml import YAML

    from tests.vllm_logs import LOGS, compare_all

    margins: dict[str, tuple[bool, float]] = {}
    for path in sorted(LOGS.glob("*.yaml")):
        data = YAML(typ="safe").load(path.read_text())
        margin = _after_kv_margin(str(data.get("log") or ""))
        if margin is not None and str(data.get("vllm_version")) == "0.19.0":
            margins[path.stem[:3]] = (data.get("started") is not False, margin)
        if path.stem[:3] in ("075", "076"):
            oom = re.search(
                r"Tried to allocate ([\d.]+) MiB\. .*? of which ([\d.]+) MiB is free\..*?([\d.]+) GiB is reserved by "
                r"PyTorch but unallocated",
                str(data["log"]),
            )
            assert oom is not None, path.name
            missing = float(oom[1]) - float(oom[2])
            assert 0 < missing < float(oom[3]) * 1024, (path.name, missing)  # fragmentation, not a total shortfall
    failed = [margin for started, margin in margins.values() if not started]
    started = [margin for ok, margin in margins.values() if ok]
    assert len(failed) == 2 and len(started) >= 40, margins
    assert min(started) < max(failed) < 0, margins  # a started log had less room after the cache than 075
    rows = {row.name[:3]: row for row in compare_all()}
    assert rows["075"].fits is True and rows["075"].warned_after_kv, rows["075"]
    assert rows["076"].fits is True and rows["076"].warned_after_kv, rows["076"]
    wrongly = [r.name for r in rows.values() if r.started and (r.after_kv_shortfall_gib or 0) > 0]
    assert not wrongly, wrongly


def test_a_failed_start_left_out_of_the_measure_can_still_be_judged_on_its_verdict(tmp_path) -> None:
    """``calibration: {use: false, why, verdict: true}``: the figure stays out of the accuracy measure (169's 1,280
    tokens rest on a vGPU's 4.09 GiB of non-torch memory), but the failed start is judged on the settings it gives;
    without ``verdict`` it is left unanswered with the reason, and a started log is never judged so."""
    from ruamel.yaml import YAML

    from tests.vllm_logs import LOGS, VERDICT_ONLY, compare

    row = compare(next(LOGS.glob("169-*.yaml")))
    assert row.predicted is None and row.fits is not None and row.skipped.startswith(VERDICT_ONLY), row
    assert "its figure is left out: 4.09 GiB of non-torch memory" in row.skipped, row.skipped
    data = YAML(typ="safe").load(next(LOGS.glob("169-*.yaml")).read_text())
    data["calibration"].pop("verdict")
    plain = compare(_write_log(tmp_path, "916-excluded.yaml", data))  # type: ignore[arg-type]
    assert plain.fits is None and plain.skipped.startswith("4.09 GiB of non-torch memory"), plain
    data["calibration"]["verdict"] = True
    data["started"] = True
    started = compare(_write_log(tmp_path, "917-started.yaml", data))  # type: ignore[arg-type]
    assert started.fits is None and started.skipped.startswith("4.09 GiB"), started


def test_a_vllm_failed_start_with_unlogged_settings_is_judged_at_the_ends_of_their_ranges(tmp_path) -> None:
    """161 (Llama 3.2 Vision on one L20, vLLM 0.6.3): the LLM(...) arguments are not in the stored text, the profiling
    batch it prints (256 sequences) is. At every end of what 0.6.3 accepts (utilization 0.01-1.0, max_model_len
    1-131072) the profiling run's encoder alone exceeds the card: caught. On an H200 the ends disagree (1.0 starts,
    0.01 does not), so the same log there is left open and says which ends say what."""
    from ruamel.yaml import YAML

    from tests.vllm_logs import LOGS, MIXED_VERDICT, VERDICT_OVER, compare

    path = next(LOGS.glob("161-*.yaml"))
    row = compare(path)
    assert row.fits is False and row.skipped == VERDICT_OVER, row
    assert any("max_model_len 1-131072 (not logged)" in label for label in row.assumed), row.assumed
    data = YAML(typ="safe").load(path.read_text())
    data["gpu"] = "NVIDIA H200"
    mixed = compare(_write_log(tmp_path, "918-h200.yaml", data))  # type: ignore[arg-type]
    assert mixed.fits is None and mixed.skipped.startswith(MIXED_VERDICT), mixed
    assert "'does not fit' on gpu_memory_utilization=0.01" in mixed.skipped, mixed.skipped
    assert "'starts' on gpu_memory_utilization=1.0" in mixed.skipped, mixed.skipped


def test_a_logged_max_total_tokens_caps_the_sglang_estimate() -> None:
    """The docs CI's launch patch passes --max-total-tokens 20480: SGLang allocates the cap (model_runner.py
    init_memory_pool), and the harness reads the logged setting, so the estimate is the cap, not the memory's figure."""
    from tests.vllm_logs import OTHER_LOGS, compare_other

    row = compare_other(next((OTHER_LOGS / "sglang").glob("014-*.yaml")))
    assert not row.skipped and row.observed == row.predicted == 20480, row


def test_ktransformers_kt_arguments_reach_the_estimate() -> None:
    """A KTransformers log's --kt-* arguments are passed to the unit typed as it reads them: with a weight path and a
    GPU-expert count the routed experts leave the GPU (more KV tokens, host RAM sized); without them it is SGLang's
    plan with every expert on the GPU."""
    from servespec.knowledge import gpus, models
    from tests.vllm_logs import _estimate_sglang

    facts = models.catalogued("Qwen/Qwen3-30B-A3B")
    card = gpus.resolve("NVIDIA GeForce RTX 4090")
    assert facts is not None and card is not None
    settings = {"tp_size": "1", "mem_fraction_static": "0.85", "context_length": "8192"}
    base = {"engine": "ktransformers", "engine_version": "0.7.2", "settings": settings}
    plain = _estimate_sglang(base, facts, card)
    kt = {
        "kt_weight_path": "/models/q3-amxint4",
        "kt_method": "AMXINT4",
        "kt_num_gpu_experts": "8",
        "kt_cpuinfer": "60",
    }
    split = _estimate_sglang({**base, "settings": {**settings, **kt}}, facts, card)
    assert plain is not None and split is not None
    assert plain.offload is None and split.offload is not None
    assert split.offload.gpu_layers == 8 and split.offload.layers == facts.experts
    assert split.weights_gib < plain.weights_gib and split.kv_tokens > plain.kv_tokens


@pytest.mark.parametrize("version", ["2.2.0", "3.0.1"])
def test_an_unset_tgi_max_total_tokens_is_the_launchers_default(tmp_path, version: str) -> None:
    """A TGI log whose Args leave max_total_tokens unset (the launcher's defaults) is sized with the release's
    default context (2.0.0-2.4.0: min(max_position_embeddings, 4096); 2.4.1+: the KV cache after warm-up), not
    Llama 3.1's 131,072 rope-scaled maximum, whose warm-up batch would not fit a 24 GB card. A written log
    (labelled stand-in: no real log is read); its figure is compared with the launcher's logged defaults."""
    from tests.vllm_logs import compare_other

    unset = {"max_input_tokens": None, "max_total_tokens": None, "max_batch_prefill_tokens": None}
    data = {
        "url": "https://example.invalid/stand-in",
        "engine": "tgi",
        "engine_version": version,
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "gpu": "NVIDIA A10G",
        "gpu_count": 1,
        "settings": unset,
        "started": True,
        "observed": {"max_batch_total_tokens": 19056},
        "log": "stand-in\n",
    }
    row = compare_other(_write_log(tmp_path / "tgi", "901-unset.yaml", data))  # type: ignore[arg-type]
    assert not row.skipped and row.fits and row.predicted, row
    if version == "2.2.0":  # "Default `max_total_tokens` to 4096" (v2.2.0 launcher/src/main.rs L1439, L1477)
        data["settings"] = {"max_input_tokens": 4095, "max_total_tokens": 4096, "max_batch_prefill_tokens": 4145}
        logged = compare_other(_write_log(tmp_path / "tgi", "902-logged.yaml", data))  # type: ignore[arg-type]
        assert logged.predicted == row.predicted, (row, logged)
    else:  # 2.4.1+: the context is what the cache holds, so no 131,071-token warm-up request is allocated first
        data["settings"] = {**unset, "max_total_tokens": 131072}
        whole = compare_other(_write_log(tmp_path / "tgi", "903-whole.yaml", data))  # type: ignore[arg-type]
        assert not whole.fits and row.predicted > (whole.predicted or 0), (row, whole)


def test_a_rounded_figure_is_scored_on_the_interval_it_stands_for() -> None:
    """A log figure printed to one decimal (Ollama's 'kv cache' lines) stands for an interval: an estimate inside it
    has no error the log can show, one outside is scored on its distance from the nearer end; an exact figure keeps
    the plain relative error."""
    from tests.vllm_logs import Comparison

    gib = 2**30
    printed, half = round(2.2 * gib), round(0.05 * gib)
    inside = Comparison("x", printed, round(2.227 * gib), observed_precision=half)
    assert inside.error == 0.0
    above = Comparison("x", printed, round(2.35 * gib), observed_precision=half)
    assert abs(above.error - 0.1 / 2.2) < 1e-6
    below = Comparison("x", printed, round(2.0 * gib), observed_precision=half)
    assert abs(below.error + 0.15 / 2.2) < 1e-6
    exact = Comparison("x", printed, round(2.227 * gib))
    assert abs(exact.error - 0.027 / 2.2) < 1e-6
