"""`deploy status --metrics`: two looks at each host's endpoint, read with the release's own metric names."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from servespec.metrics.live import read
from servespec.rollout.state import Status
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "metrics"


def _fleet(engine: str, version: str, options: dict[str, Any], key_env: str | None = None) -> Any:
    api_key = SimpleNamespace(from_env=key_env, from_file=None) if key_env else None
    spec = SimpleNamespace(
        engine=SimpleNamespace(name=engine, version=version, options=options),
        serving=SimpleNamespace(api_key=api_key),
    )
    return SimpleNamespace(deployments=[SimpleNamespace(name="tiny", spec=spec)])


def _row(reachable: bool = True) -> Status:
    return Status("tiny", "host1", 1, True, "http://10.0.0.5:8080", None, "servespec-tiny", reachable=reachable)


def test_two_looks_give_rates_with_the_releases_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_KEY", "s3cret")
    answers = [(DATA / f"llama.cpp-b11434-{n}.prom").read_text() for n in ("idle", "after")]
    asked: list[tuple[str, dict[str, str]]] = []

    def fetch(url: str, headers: dict[str, str]) -> str:
        asked.append((url, headers))
        return answers[len(asked) - 1]

    rows = read(_fleet("llama.cpp", "b11434", {"metrics": True}, "TINY_KEY"), [_row()], interval=0.1, fetch=fetch)
    assert [url for url, _ in asked] == ["http://10.0.0.5:8080/metrics"] * 2
    assert asked[0][1] == {"Authorization": "Bearer s3cret"}
    (row,) = rows
    assert row.release == "b11434" and not row.note and row.view is not None
    assert row.view.values["generation_tokens_per_s"] is not None and row.view.values["generation_tokens_per_s"] > 0
    assert "s3cret" not in str(row.to_json())


def test_llama_cpp_without_the_metrics_option_is_not_asked() -> None:
    def fetch(url: str, headers: dict[str, str]) -> str:
        raise AssertionError("no request when the endpoint is off")

    (row,) = read(_fleet("llama.cpp", "b11434", {}), [_row()], interval=0.1, fetch=fetch)
    assert "engine.options.metrics: true" in row.note and row.view is None


def test_an_engine_without_metric_facts_says_so_and_an_unreachable_host_is_not_asked() -> None:
    def fetch(url: str, headers: dict[str, str]) -> str:
        raise AssertionError("not asked")

    (row,) = read(_fleet("openllm", "0.6.30", {}), [_row()], interval=0.1, fetch=fetch)
    assert "no metric names for openllm" in row.note
    (row,) = read(_fleet("vllm", "0.12.0", {}), [_row(reachable=False)], interval=0.1, fetch=fetch)
    assert row.note == "host unreachable"


def test_a_broken_answer_is_an_error_row_not_a_traceback() -> None:
    def fetch(url: str, headers: dict[str, str]) -> str:
        return "<html>not metrics</html>"

    (row,) = read(_fleet("vllm", "0.12.0", {}), [_row()], interval=0.1, fetch=fetch)
    assert row.error and "not Prometheus text" in row.note


def test_ollama_rows_say_it_serves_no_metrics() -> None:
    def fetch(url: str, headers: dict[str, str]) -> str:
        raise AssertionError("Ollama has no /metrics to ask")

    (row,) = read(_fleet("ollama", "0.20.0", {}), [_row()], interval=0.1, fetch=fetch)
    assert "/api/ps" in row.note and not row.error


def test_top_shows_the_view_between_consecutive_looks() -> None:
    from servespec.metrics.live import watch

    texts = [(DATA / f"llama.cpp-b11434-{n}.prom").read_text() for n in ("idle", "after", "after")]
    asked: list[str] = []
    shown: list[float | None] = []

    def fetch(url: str, headers: dict[str, str]) -> str:
        asked.append(url)
        return texts[len(asked) - 1]

    def show(rows: list[Any]) -> None:
        shown.append(rows[0].view.values["generation_tokens_per_s"])

    watch(_fleet("llama.cpp", "b11434", {"metrics": True}), [_row()], show, interval=0.05, rounds=2, fetch=fetch)
    assert len(asked) == 3 and len(shown) == 2
    assert shown[0] is not None and shown[0] > 0 and shown[1] == 0  # nothing generated between the last two looks


def test_xinference_is_read_on_the_worker_exporters_port_only_when_set() -> None:
    asked: list[str] = []
    text = (DATA / "xinference-3564.prom").read_text()

    def fetch(url: str, headers: dict[str, str]) -> str:
        asked.append(url)
        return text

    (row,) = read(_fleet("xinference", "1.6.1", {}), [_row()], interval=0.1, fetch=fetch)
    assert "engine.options.metrics_exporter_port" in row.note and not asked
    (row,) = read(_fleet("xinference", "1.6.1", {"metrics_exporter_port": 9998}), [_row()], interval=0.1, fetch=fetch)
    assert asked == ["http://10.0.0.5:9998/metrics"] * 2 and not row.note
    assert row.view is not None and row.view.values["prompt_tokens_per_s"] == 0.0
