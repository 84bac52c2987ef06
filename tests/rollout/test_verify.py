"""deploy verify's client (the role's module_utils/servespec_bench.py), its checks, reports and the slo spec.

The HTTP server here is a STAND-IN for an engine's OpenAI-compatible streaming endpoint: it lets these
quick tests check the client's counting, bounds and verdicts on known answers. Whether a real engine
meets or misses a target is decided only by tests/rollout/test_verify_e2e.py (llama.cpp on a test host).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from servespec.rollout.verify import VerifyRow, slo_payload, verify_output
from servespec.spec.fleet import load_fleet
from tests.conftest import run_cli
from tests.modules import ROLE, load_file

bench = load_file(ROLE / "module_utils" / "servespec_bench.py", "servespec_bench_under_test")


class _StandIn(BaseHTTPRequestHandler):
    """STAND-IN engine: streams ``max_tokens`` one-word chunks, then usage; behaviour set per test."""

    bodies: ClassVar[list[dict[str, Any]]] = []
    fail_every: ClassVar[int] = 0
    delay: ClassVar[float] = 0.0
    usage: ClassVar[bool] = True
    calls: ClassVar[int] = 0
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            type(self).calls += 1
            number = type(self).calls
            self.bodies.append(body)
        if self.fail_every and number % self.fail_every == 0:
            self.send_response(500)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for _ in range(body["max_tokens"]):
            time.sleep(self.delay)
            self.wfile.write(b'data: {"choices": [{"text": " w"}]}\n\n')
            self.wfile.flush()
        if self.usage:
            words = len(body["prompt"].split())
            usage = {"prompt_tokens": words + 1, "completion_tokens": body["max_tokens"]}
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def engine() -> Iterator[str]:
    _StandIn.bodies, _StandIn.fail_every, _StandIn.delay, _StandIn.usage, _StandIn.calls = [], 0, 0.0, True, 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/completions"
    finally:
        server.shutdown()
        server.server_close()


HEADERS = {"Content-Type": "application/json"}


def _workload(**values: Any) -> dict[str, Any]:
    return {"prompt_tokens": 16, "output_tokens": 5, "requests": 8, "max_seconds": 60, **values}


def test_percentiles_interpolate_between_ranks() -> None:
    assert bench.percentile([], 95) is None
    assert bench.percentile([7.0], 95) == 7.0
    assert bench.percentile([1, 2, 3, 4], 50) == 2.5
    assert bench.percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


def test_a_closed_loop_run_counts_the_engines_tokens(engine: str) -> None:
    figures = bench.run(engine, HEADERS, "chat", _workload(concurrency=3))
    assert (figures["requests"], figures["completed"], figures["failed"]) == (8, 8, 0)
    assert figures["output_tokens"] == 40 and figures["mean_output_tokens"] == 5
    assert figures["mean_prompt_tokens"] == 17  # the stand-in's count: 16 words + 1
    assert figures["ttft_p95_ms"] is not None and figures["itl_p95_ms"] is not None
    sent = _StandIn.bodies
    assert len(sent) == 8 and {b["model"] for b in sent} == {"chat"}
    assert all(b["stream"] and b["ignore_eos"] and b["max_tokens"] == 5 for b in sent)
    assert all(len(b["prompt"].split()) == 16 for b in sent)
    assert len({b["prompt"] for b in sent}) == 8  # no two prompts share a cached prefix


def test_without_usage_the_chunks_are_counted(engine: str) -> None:
    _StandIn.usage = False
    figures = bench.run(engine, HEADERS, None, _workload(concurrency=2, requests=3))
    assert figures["output_tokens"] == 15 and figures["mean_prompt_tokens"] is None
    assert "model" not in _StandIn.bodies[0]


def test_failed_requests_make_the_error_rate(engine: str) -> None:
    _StandIn.fail_every = 4
    figures = bench.run(engine, HEADERS, None, _workload(concurrency=1))
    assert (figures["completed"], figures["failed"], figures["error_rate"]) == (6, 2, 0.25)
    assert figures["errors"] and "500" in figures["errors"][0]
    checks = bench.evaluate(figures, {"error_rate": 0.1})
    assert checks == [{"target": "error_rate", "limit": 0.1, "measured": 0.25, "ok": False}]
    assert bench.missed(checks) == "error_rate 0.25 (target <= 0.1)"


def test_an_open_loop_run_sends_at_the_rate(engine: str) -> None:
    figures = bench.run(engine, HEADERS, None, _workload(rate=50, requests=10))
    assert figures["completed"] == 10 and len(_StandIn.bodies) == 10


def test_the_run_is_bounded_by_max_seconds(engine: str) -> None:
    _StandIn.delay = 0.5  # 5 tokens: 2.5 s per request against a 1 s bound
    figures = bench.run(engine, HEADERS, None, _workload(concurrency=2, requests=4, max_seconds=1))
    assert figures["completed"] == 0 and figures["failed"] == 4 and figures["error_rate"] == 1.0
    assert len(_StandIn.bodies) == 2  # the two workers' first requests; none started after the bound
    checks = bench.evaluate(figures, {"ttft_p95_ms": 10_000})
    assert [c["ok"] for c in checks] == [False, False]  # no request finished: no latency measured, no token
    assert "output_tokens 0" in bench.missed(checks)


def test_a_dataset_is_used_in_turn(engine: str) -> None:
    prompts = [{"prompt": "one two", "output_tokens": 2}, {"prompt": "three", "output_tokens": 3}]
    workload = {"requests": 4, "max_seconds": 60, "concurrency": 1}
    figures = bench.run(engine, HEADERS, None, workload, prompts)
    assert [b["prompt"] for b in _StandIn.bodies] == ["one two", "three", "one two", "three"]
    assert figures["output_tokens"] == 10


def test_targets_are_met_or_missed_in_their_direction() -> None:
    figures = {"ttft_p95_ms": 120.0, "itl_p95_ms": 30.0, "output_tokens_per_s": 50.0, "requests_per_s": 2.0}
    figures |= {"error_rate": 0.0, "output_tokens": 100}
    met = {"ttft_p95_ms": 200, "itl_p95_ms": 30, "output_tokens_per_s": 50, "requests_per_s": 1, "error_rate": 0}
    assert all(c["ok"] for c in bench.evaluate(figures, met))
    missed = {"ttft_p95_ms": 100, "itl_p95_ms": 29.9, "output_tokens_per_s": 51, "requests_per_s": 3}
    checks = bench.evaluate(figures, missed)
    assert [c["ok"] for c in checks] == [False, False, False, False]
    assert bench.missed(checks).startswith("itl_p95_ms 30.0 (target <= 29.9)")


# The spec side --------------------------------------------------------------------------------------

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {name: chat}
model: {source: /srv/models/demo.gguf, quantization: gguf, max_model_len: 256}
engine: {name: llama.cpp, version: b11434}
slo:
  workload: {WORKLOAD}
  targets: {ttft_p95_ms: 500, error_rate: 0}
"""


def _spec(tmp_path: Path, workload: str) -> Path:
    path = tmp_path / "chat.yaml"
    path.write_text(SPEC.replace("{WORKLOAD}", workload))
    return path


def test_the_payload_is_the_slo_with_the_datasets_prompts(tmp_path: Path) -> None:
    (tmp_path / "prompts.jsonl").write_text(
        '{"prompt": "hi", "output_tokens": 3}\n\n{"prompt": "yo", "output_tokens": 1}\n'
    )
    fleet = load_fleet([_spec(tmp_path, "{dataset: prompts.jsonl, concurrency: 2, requests: 4}")])
    assert not [f for f in fleet.findings if f.severity.name == "ERROR"], [f.to_text() for f in fleet.findings]
    payload = json.loads(slo_payload(fleet.deployments[0]))
    assert payload == {
        "workload": {"concurrency": 2, "requests": 4, "max_seconds": 300},
        "targets": {"ttft_p95_ms": 500, "error_rate": 0},
        "prompts": [{"prompt": "hi", "output_tokens": 3}, {"prompt": "yo", "output_tokens": 1}],
    }


@pytest.mark.parametrize(
    ("workload", "files", "message"),
    [
        ("{prompt_tokens: 8, concurrency: 2}", {}, "needs prompt_tokens and output_tokens"),
        ("{prompt_tokens: 8, output_tokens: 2}", {}, "needs one of rate or concurrency"),
        ("{prompt_tokens: 8, output_tokens: 2, rate: 1, concurrency: 2}", {}, "needs one of rate or concurrency"),
        ("{dataset: p.jsonl, prompt_tokens: 8, concurrency: 1}", {"p.jsonl": ""}, "not both"),
        ("{dataset: missing.jsonl, concurrency: 1}", {}, "missing.jsonl"),
        ("{dataset: ../outside.jsonl, concurrency: 1}", {}, "root directory"),
        (
            "{dataset: p.jsonl, concurrency: 1}",
            {"p.jsonl": '{"prompt": "a", "output_tokens": 1}\nnot json\n'},
            "line 2",
        ),
        ("{dataset: p.jsonl, concurrency: 1}", {"p.jsonl": '{"prompt": "a", "output_tokens": 0}\n'}, "line 1"),
        ("{dataset: p.jsonl, concurrency: 1}", {"p.jsonl": '{"prompt": "a", "max_tokens": 2}\n'}, "line 1"),
        ("{dataset: p.jsonl, concurrency: 1}", {"p.jsonl": "\n\n"}, "no prompts"),
        ("{prompt_tokens: 8, output_tokens: 2, concurrency: 1, max_seconds: 0}", {}, "max_seconds"),
    ],
)
def test_a_bad_slo_is_a_located_error(tmp_path: Path, workload: str, files: dict[str, str], message: str) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / ".git").mkdir()
    (tmp_path / "outside.jsonl").write_text('{"prompt": "a", "output_tokens": 1}\n')
    for name, text in files.items():
        (folder / name).write_text(text)
    path = _spec(folder, workload)
    result = run_cli("validate", str(path))
    assert result.exit_code == 1, result.output
    located = f"{path.name}:7:" in result.output or f"{path.name}:6:" in result.output
    assert message in result.output and located, result.output
    assert "Traceback" not in result.output


def test_verify_without_an_slo_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "chat.yaml"
    path.write_text(SPEC.split("slo:")[0])
    result = run_cli("verify", str(path))
    assert result.exit_code == 2 and "no deployment in the given specs has an slo" in result.output


def test_reports_escape_host_values_and_say_the_verdict() -> None:
    checks = [
        {"target": "ttft_p95_ms", "limit": 500, "measured": 812.5, "ok": False},
        {"target": "output_tokens_per_s", "limit": 10, "measured": 42.0, "ok": True},
    ]
    rows = [
        VerifyRow("chat", "h1", 3, {"requests": 8, "completed": 8, "failed": 0, "errors": []}, checks),
        VerifyRow("chat", "h2", error="unreachable | <b>\x1b[31m"),
    ]
    text = verify_output(rows, "text")
    assert "MISS chat on h1 (revision 3)" in text and "ttft_p95_ms 812.5 (target <= 500): missed" in text
    assert "output_tokens_per_s 42.0 (target >= 10): met" in text and "ERROR chat on h2" in text
    assert "\x1b" not in text
    markdown = verify_output(rows, "markdown")
    assert "| chat | h1 | 3 | ttft_p95_ms | &lt;= 500 | 812.5 | missed |" in markdown
    assert "| chat | h2 | - | - | - | - | ERROR: unreachable \\| &lt;b>\\x1b[31m |" in markdown
    shown = json.loads(verify_output(rows, "json"))["hosts"]
    assert [h["ok"] for h in shown] == [False, False] and shown[1]["error"].startswith("unreachable")


def test_the_plan_of_a_deployment_with_an_slo_says_what_verify_runs(tmp_path: Path) -> None:
    from servespec.render import render_fleet
    from servespec.rollout.state import desired_state

    fleet = load_fleet([_spec(tmp_path, "{prompt_tokens: 16, output_tokens: 8, concurrency: 2, requests: 6}")])
    (wanted,) = desired_state(render_fleet(fleet), fleet.deployments[0])
    assert wanted.verify == (
        "6 requests of 16+8 tokens at concurrency 2, at most 300 s; targets ttft_p95_ms 500.0, error_rate 0.0"
    )


def test_a_token_with_empty_text_still_marks_the_first_token(engine: str) -> None:
    """llama.cpp streams a held-back byte of a multi-byte character as a chunk with empty text."""
    original = _StandIn.do_POST

    def empty_first(self: _StandIn) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'data: {"choices": [{"text": ""}]}\n\n')
        usage = {"prompt_tokens": 3, "completion_tokens": body["max_tokens"]}
        self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())

    _StandIn.do_POST = empty_first  # type: ignore[method-assign]
    try:
        figures = bench.run(engine, HEADERS, None, _workload(concurrency=1, requests=2))
    finally:
        _StandIn.do_POST = original  # type: ignore[method-assign]
    assert figures["completed"] == 2 and figures["output_tokens"] == 10 and figures["ttft_p95_ms"] is not None
