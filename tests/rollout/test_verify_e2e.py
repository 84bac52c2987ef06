"""deploy verify and apply --verify against a real engine: llama.cpp's llama-server on a test host over SSH.

The benchmark runs on the host beside the engine (the role's servespec_bench module). A target the
CPU engine meets passes; one no engine can meet (a first token in a microsecond) fails; and an
apply --verify of a new revision that misses its target restores the revision the host ran before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import current_revision, demo_model_yaml, in_checkout, serves, stage_demo_model

pytestmark = pytest.mark.slow
KEY = "verify-secret"
MET = "{ttft_p95_ms: 60000, itl_p95_ms: 60000, output_tokens_per_s: 0.01, error_rate: 0}"
MISSED = "{ttft_p95_ms: 0.001, error_rate: 0}"


def _spec(path: Path, archive: Path, *, length: int, targets: str) -> Path:
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: bench}}
inventory: inventory.yaml
{demo_model_yaml(length)}engine:
  name: llama.cpp
  version: b11434
  image: {images.llama_cpp_image()}
  image_archive: {in_checkout(archive, path.parent)}
  options: {{parallel: 2, threads: 1}}
placement: {{hosts: [host1]}}
serving: {{port: 8080, bind: 0.0.0.0, api_key: {{from_env: VERIFY_KEY}}}}
rollout: {{health_timeout: 2m}}
slo:
  workload: {{prompt_tokens: 16, output_tokens: 8, concurrency: 2, requests: 6, max_seconds: 120}}
  targets: {targets}
"""
    )
    return path


def test_verify_and_apply_verify_on_a_real_llama_cpp(
    tmp_path: Path, inventory: Path, clean_hosts: list[RemoteHost], monkeypatch: pytest.MonkeyPatch
) -> None:
    host = clean_hosts[0]
    archive = images.archive(images.llama_cpp_image())
    stage_demo_model([host], tmp_path)
    monkeypatch.setenv("VERIFY_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    spec = _spec(tmp_path / "bench.yaml", archive, length=256, targets=MET)

    # apply --verify of a revision that meets its target: it becomes the running revision.
    first = run_cli("apply", str(spec), "--yes", "--verify", "--format", "json")
    assert first.exit_code == 0, first.output
    assert current_revision(host, "bench") == 1 and serves(host.address, KEY)

    # deploy verify: met, then missed, from the same running revision (nothing restarted).
    met = run_cli("verify", str(spec), "--format", "json")
    assert met.exit_code == 0, met.output
    (row,) = json.loads(met.output)["hosts"]
    assert row["ok"] and row["revision"] == 1 and row["host"] == "host1"
    figures = row["figures"]
    assert figures["completed"] == 6 and figures["failed"] == 0 and figures["output_tokens"] == 48
    assert figures["mean_prompt_tokens"] is not None  # llama.cpp's own count of the synthetic prompt
    assert KEY not in met.output

    _spec(spec, archive, length=256, targets=MISSED)
    missed = run_cli("verify", str(spec))
    assert missed.exit_code == 1, missed.output
    assert "MISS bench on host1 (revision 1)" in missed.output and "ttft_p95_ms" in missed.output
    assert current_revision(host, "bench") == 1

    # apply --verify of a new revision that misses: the host is restored to revision 1 and serves.
    _spec(spec, archive, length=384, targets=MISSED)
    second = run_cli("apply", str(spec), "--yes", "--verify", "--format", "json")
    assert second.exit_code == 1, second.output
    assert '"result": "rolled back"' in second.output and "slo missed" in second.output
    assert current_revision(host, "bench") == 1 and serves(host.address, KEY)
    state = json.loads(host.sh("cat /var/lib/servespec/bench/state.json"))
    assert {r["number"]: r["status"] for r in state["revisions"]} == {1: "good", 2: "failed"}
