"""Metric names per engine release (engines/<unit>/metrics.json) against every catalogued release and real texts."""

from __future__ import annotations

import json

import pytest

from servespec.engines import get
from servespec.metrics.facts import for_release, versions
from servespec.metrics.view import parse, parsed_name, view
from tests.conftest import REPO
from tests.metrics import served_engines

DATA = REPO / "tests" / "data" / "metrics"
COVERED = served_engines()
QUEUE_ROLES = {
    engine: ("requests_running", "requests_waiting")
    for engine in ("vllm", "sglang", "tgi", "llama.cpp", "ktransformers")
}
"""Engines whose every release has running and waiting gauges (XInference: neither in 1.x, never a waiting one)."""
SOURCES = json.loads((DATA / "SOURCES.json").read_text())


@pytest.mark.parametrize("engine", COVERED)
def test_every_catalogued_release_has_metric_facts(engine: str) -> None:
    catalogued = get(engine).catalog.versions
    assert set(catalogued) <= set(versions(engine)), "metrics.json covers every catalogued release"
    for version in catalogued:
        facts = for_release(engine, version)
        assert facts is not None and facts.version == version
        assert facts.metrics, f"{engine} {version}: no metric names"
        for role in ("prompt_tokens", "generation_tokens", *QUEUE_ROLES.get(engine, ())):
            metric = facts.metric(role)
            assert metric is not None and metric.served, f"{engine} {version}: no served metric for {role}"
        assert all(facts.metrics[name].served for name in facts.roles.values()), "a role names only served metrics"
        assert all(m.source.startswith("https://github.com/") for m in facts.metrics.values())


def test_vllm_kv_cache_rename_follows_the_release() -> None:
    # PR #18354 renamed vllm:gpu_cache_usage_perc; 0.11.0 hides the old name, 0.12.0 no longer defines it.
    old, new = for_release("vllm", "0.8.5"), for_release("vllm", "0.12.0")
    assert old is not None and new is not None
    assert old.roles["kv_cache_usage"] == "vllm:gpu_cache_usage_perc"
    assert new.roles["kv_cache_usage"] == "vllm:kv_cache_usage_perc"
    assert "vllm:gpu_cache_usage_perc" not in new.served


def test_a_release_between_catalogued_ones_uses_the_nearest_earlier() -> None:
    facts = for_release("llama.cpp", "b11000")
    assert facts is not None and facts.version == "b10936"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_recorded_texts_name_only_metrics_some_release_defines(name: str) -> None:
    engine = SOURCES[name]["engine"]
    prefixes = {
        "vllm": "vllm:",
        "llama.cpp": "llamacpp:",
        "sglang": "sglang:",
        "tgi": "tgi_",
        "xinference": "xinference:",
    }
    prefix = prefixes[engine]
    snapshot = parse((DATA / name).read_text())
    releases = [for_release(engine, v) or _never() for v in versions(engine)]
    known = {parsed_name(m, s) for r in releases for m in r.metrics.values() for s in m.samples}
    engine_samples = {s for s in snapshot.names if s.startswith(prefix)}
    assert engine_samples, "the recording holds engine metrics"
    assert engine_samples <= known, sorted(engine_samples - known)


def _never():  # type: ignore[no-untyped-def]
    raise AssertionError("a listed release has facts")


def test_llama_cpp_b11434_serves_exactly_its_catalogued_names() -> None:
    facts = for_release("llama.cpp", "b11434")
    assert facts is not None
    written = {s for s in parse((DATA / "llama.cpp-b11434-after.prom").read_text()).names}
    served = {parsed_name(m, s) for m in facts.metrics.values() for s in m.samples}
    # the per-position counter is written only once a draft model accepted tokens
    assert written == served - {"llamacpp:spec_decode_num_accepted_tokens_per_pos_total"}


def test_llama_cpp_view_between_two_real_looks() -> None:
    facts = for_release("llama.cpp", "b11434")
    assert facts is not None
    before = parse((DATA / "llama.cpp-b11434-idle.prom").read_text(), at=100.0)
    now = parse((DATA / "llama.cpp-b11434-after.prom").read_text(), at=102.0)
    result = view(facts, now, before).values
    assert result["generation_tokens_per_s"] == pytest.approx(48 / 2)
    assert result["prompt_tokens_per_s"] == pytest.approx(14 / 2)
    assert result["requests_running"] == 0 and result["requests_waiting"] == 0
    assert result["kv_cache_usage"] is None and result["ttft_p95_ms"] is None  # b11434 has no metric for them


def test_vllm_kv_cache_read_under_the_releases_own_name() -> None:
    text = parse((DATA / "vllm-production-stack-318.prom").read_text())
    old, new = for_release("vllm", "0.8.5"), for_release("vllm", "0.12.0")
    assert old is not None and new is not None
    assert view(old, text).values["kv_cache_usage"] == 0.0
    renamed = view(new, text)
    assert renamed.values["kv_cache_usage"] is None and "kv_cache_usage" in renamed.missing


def test_ttft_percentiles_from_histogram_increases() -> None:
    facts = for_release("vllm", "0.6.0")
    assert facts is not None
    now = parse((DATA / "vllm-ibm-18.prom").read_text(), at=10.0)
    result = view(facts, now, parse("", at=0.0)).values
    # 213 observations; the 106.5th lies in (0.01, 0.02] which holds the first 112: 10 + 10 * 106.5/112 ms
    assert result["ttft_p50_ms"] == pytest.approx(10 + 10 * 106.5 / 112)
    assert result["prompt_tokens_per_s"] is None  # the earlier look had no counter: no rate is made up


def test_sglang_running_requests_and_token_usage_from_a_real_text() -> None:
    facts = for_release("sglang", "0.5.1")
    assert facts is not None
    values = view(facts, parse((DATA / "sglang-13485.prom").read_text())).values
    assert values["requests_running"] == 1.0 and values["kv_cache_usage"] == 0.0


def test_every_ollama_release_is_known_to_serve_no_metrics_and_points_at_api_ps() -> None:
    catalogued = get("ollama").catalog.versions
    assert set(catalogued) <= set(versions("ollama"))
    for version in catalogued:
        facts = for_release("ollama", version)
        assert facts is not None and facts.path is None and not facts.metrics
        assert facts.none_reason is not None and "/api/ps" in facts.none_reason


def test_xinference_metrics_are_the_worker_exporters_and_follow_the_release() -> None:
    old, new = for_release("xinference", "1.6.1"), for_release("xinference", "3.2.1")
    assert old is not None and new is not None
    for facts in (old, new):
        assert facts.path == "/metrics" and facts.port_option == "metrics_exporter_port"
        assert facts.port({}, 9997) is None and facts.port({"metrics_exporter_port": 9998}, 9997) == 9998
        assert "metrics_exporter_port to a port" in facts.off({})
    # 1.x wrote its first-token latency as a gauge in ms: no TTFT role; 2.8.0 added the histogram in seconds.
    assert "xinference:time_to_first_token_ms" in old.served and "ttft" not in old.roles
    assert new.metric("ttft") is not None and new.metric("ttft").type == "histogram"  # type: ignore[union-attr]
    # aioprometheus writes a counter under its declared name: the sample keeps no added _total.
    assert old.metric("prompt_tokens").samples == ("xinference:input_tokens_total_counter",)  # type: ignore[union-attr]
    # cluster gauges live on the supervisor's REST /metrics, not on the worker's port
    assert "xinference:workers_total" in new.metrics and "xinference:workers_total" not in new.served


def test_xinference_prompt_tokens_from_a_real_worker_text() -> None:
    facts = for_release("xinference", "1.6.1")
    assert facts is not None
    text = (DATA / "xinference-3564.prom").read_text()
    result = view(facts, parse(text, at=2.0), parse(text, at=0.0))
    # the counter is read under the parser's name (xinference:input_tokens_total_counter_total): no increase
    assert result.values["prompt_tokens_per_s"] == 0.0
    assert result.values["requests_running"] is None  # 1.6.1 has no metric for it: never looked for


def test_an_endpoint_that_is_not_prometheus_text_is_never_read() -> None:
    # Stand-in facts (no catalogued release has one yet): TensorRT-LLM's /metrics answers JSON iteration stats.
    from servespec.metrics.facts import ReleaseMetrics

    facts = ReleaseMetrics("tensorrt-llm", "0.21.0", "/metrics", None, format="json")
    assert "serves json at /metrics, not Prometheus text" in facts.off({})
    assert ReleaseMetrics("tensorrt-llm", "0.21.0", "/metrics", None).off({}) == ""
