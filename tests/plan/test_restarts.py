"""How a plan's restarts read (text, markdown) and `deploy plan --previous` end to end, hosts faked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from servespec import rollout
from servespec.plan import Desired, Observed, plan
from servespec.plan.footprint import desired
from servespec.plan.report import restarts_markdown, restarts_text
from servespec.plan.sizing import Footprint, GpuMemory
from servespec.rollout.runner import HostResult, Report, RunResult
from servespec.spec.fleet import load_fleet
from servespec.text import UNSAFE
from tests.conftest import run_cli

CASES = Path(__file__).parent / "cases"
HOSTILE = "x\x1b]8;;http://evil\x07\u202e\n::error file=a::forged\r\x9b|<b>"


def _case(name: str) -> list[Any]:
    case = json.loads((CASES / f"{name}.json").read_text())
    return plan(
        [Desired.from_json(d) for d in case["desired"]],
        [Observed(**o) for o in case["observed"]],
        [Desired.from_json(d) for d in case.get("previous", [])],
    )


def test_text_names_the_field_the_memory_and_the_download() -> None:
    text = restarts_text(_case("context-change-moves-kv-not-weights"))
    assert text.splitlines() == [
        "restarts:",
        "update chat on h1: config.yaml max-model-len: 16384 -> 32768",
        "  GPU 0 NVIDIA H100 80GB HBM3: weights 7.5 GiB, KV cache 62.8 GiB, "
        "31.4 -> 15.7 (-15.7) sequences of 16,384 -> 32,768 (+16,384) tokens",
        "  download: nothing: model and revision unchanged",
    ]
    text = restarts_text(_case("model-revision-change-downloads-the-weights"))
    assert "  download: 15.0 GiB (16,060,522,496 bytes): revision 111111111111 -> 222222222222" in text
    assert "image vllm/vllm-openai:v0.11.0" in restarts_text(_case("engine-release-changes-the-image"))
    assert restarts_text(_case("unchanged-host-has-no-restart-reason")) == ""


def test_markdown_has_one_row_per_restart_and_gpu_group() -> None:
    text = restarts_markdown(_case("host-added-downloads-the-model"))
    rows = [line for line in text.splitlines() if line.startswith("| chat")]
    assert rows == [
        "| chat | h2 | create | GPU 0-1 NVIDIA H100 80GB HBM3 | - -> 7.5 | - -> 62.8 | - -> 31.4 | - -> 16,384 | "
        "15.0 GiB (16,060,522,496 bytes): not deployed on this host: the weights of "
        "meta-llama/Llama-3.1-8B-Instruct@111111111111; image vllm/vllm-openai:v0.10.2 | not deployed on this host |"
    ]
    unknown = restarts_markdown(_case("update-without-previous-says-before-is-unknown"))
    assert "give --previous" in unknown


def test_host_values_in_changes_are_inert() -> None:
    files = {"container.yaml": "image: a\n", "tgi.env": f"A={HOSTILE}\n", f"f{HOSTILE}.env": "B=1\n"}
    wanted = {"container.yaml": "image: a\n", "tgi.env": "A=1\n"}
    (action,) = plan(
        [Desired("d", HOSTILE, "b", wanted, Footprint())],
        [Observed("d", HOSTILE, current=1, good=1, digest="a", status="good", files=files)],
    )
    assert action.changes  # the hostile value and file name are in what the restart names
    for text in (restarts_text([action]), restarts_markdown([action])):
        lines = text.rstrip("\n").split("\n")
        assert not any(UNSAFE.search(line) for line in lines), text
        assert not any(line.lstrip().startswith("::") for line in lines), text
    (row,) = [line for line in restarts_markdown([action]).splitlines() if line.startswith("| d ")]
    assert len(re.findall(r"(?<!\\)\|", row)) == 11, row  # a | in a value does not add a column
    assert "<b>" not in row


def test_gpus_with_different_plans_are_separate_rows() -> None:
    gpus = tuple(GpuMemory(i, "NVIDIA L4", 3.0, 10.0 + (i == 2), 1000, 1.0, 1000) for i in range(4))
    (action,) = plan([Desired("d", "h", "b", {"container.yaml": "image: a\n"}, Footprint(gpus))], [])
    labels = [line.split(":")[0].strip() for line in restarts_text([action]).splitlines()[2:-1]]
    assert labels == ["GPU 0-1 NVIDIA L4", "GPU 2 NVIDIA L4", "GPU 3 NVIDIA L4"]


# deploy plan --previous, the hosts answered by a fake status playbook ---------------------------

ARCH = (
    "{params_b: 0.5, layers: 24, hidden_size: 896, intermediate_size: 4864, attention_heads: 14, kv_heads: 2, "
    "head_dim: 64, vocab_size: 151936, max_position_embeddings: 32768}"
)


def _fleet_files(folder: Path, context: int, hosts: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {ssh_user: root, become: false}\nhosts:\n"
        "  h1: {address: 10.0.0.1, hardware: {gpus: {count: 0}, cpus: 4, memory_gib: 16}}\n"
        "  h2: {address: 10.0.0.2, hardware: {gpus: {count: 0}, cpus: 4, memory_gib: 16}}\n"
    )
    spec = folder / "chat.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: chat}\ninventory: inventory.yaml\n"
        "model: {source: /srv/models/chat.gguf, quantization: gguf, "
        f"max_model_len: {context}, architecture: {ARCH}}}\n"
        f"engine: {{name: llama.cpp, version: b11434}}\nplacement: {{hosts: [{hosts}]}}\nserving: {{port: 8080}}\n"
        "suppress:\n  - {rule: SEC003, reason: test}\n"
    )
    return spec


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The old specs (context 4096, h1) that h1 runs, and the new ones (context 8192, h1 and h2)."""
    old = _fleet_files(tmp_path / "old", 4096, "h1")
    new = _fleet_files(tmp_path / "new", 8192, "h1, h2")
    running = {d.host: d for d in desired(load_fleet([old]))}

    def run_on(playbook: str, hosts: dict[str, Any], *_: Any, **__: Any) -> RunResult:
        assert playbook == "status.yml"
        out = {}
        for name in hosts:
            report: dict[str, Any] = {"state": None, "files": {}, "lock": None, "container": None, "healthy": False}
            if name in running:
                revision = {"number": 1, "digest": running[name].digest, "status": "good"}
                state = {"version": 1, "deployment": "chat", "current": 1, "good": 1, "revisions": [revision]}
                report |= {"state": state, "files": running[name].files, "healthy": True}
            out[name] = HostResult(name, touched=True, reports={Report.STATUS: {"deployments": {"chat": report}}})
        return RunResult("successful", out)

    monkeypatch.setattr(rollout.inventory, "run_on", run_on)
    return old, new


def test_plan_previous_json(fleet: tuple[Path, Path]) -> None:
    old, new = fleet
    result = run_cli("plan", str(new), "--previous", str(old), "--format", "json")
    assert result.exit_code == 0, result.output
    h1, h2 = json.loads(result.output)["actions"]
    assert (h1["kind"], h2["kind"]) == ("update", "create")
    assert h1["restart_reason"] == (
        "args.json argv --ctx-size: 4096 -> 8192; container.yaml command --ctx-size: 4096 -> 8192"
    )
    (gpu,) = h1["memory"]["gpus"]
    assert h1["memory"]["before_from"] == "previous"
    assert (gpu["model"], gpu["before"]["context_tokens"], gpu["after"]["context_tokens"]) == ("CPU", 4096, 8192)
    assert gpu["delta"]["kv_cache_gib"] > 0 and gpu["delta"]["weights_gib"] == 0
    assert h1["download"] == {"bytes": 0, "estimated": False, "why": "model and revision unchanged", "image": None}
    assert h2["memory"]["before_from"] == "nothing" and h2["memory"]["gpus"][0]["before"] is None
    assert h2["download"]["bytes"] == 0 and "path on the host" in h2["download"]["why"]
    again = run_cli("plan", str(new), "--previous", str(old), "--format", "json")
    assert again.output == result.output  # deterministic


def test_plan_text_and_markdown_show_the_restarts(fleet: tuple[Path, Path]) -> None:
    old, new = fleet
    text = run_cli("plan", str(new), "--previous", str(old)).output
    lines = text.splitlines()
    assert lines[2] == "restarts:" and lines.index("restarts:") < next(i for i, x in enumerate(lines) if x[:3] == "---")
    assert "update chat on h1: args.json argv --ctx-size: 4096 -> 8192" in text
    assert re.search(r"CPU \(host memory\): weights [\d.]+ GiB, KV cache [\d.]+ -> [\d.]+ \(\+[\d.]+\) GiB", text)
    markdown = run_cli("plan", str(new), "--previous", str(old), "--format", "markdown").output
    assert "#### Restarts: memory before -> after, downloads" in markdown
    assert "| chat | h1 | update | CPU (host memory) |" in markdown


def test_plan_without_previous_says_before_is_unknown(fleet: tuple[Path, Path]) -> None:
    _, new = fleet
    result = run_cli("plan", str(new), "--format", "json")
    h1 = json.loads(result.output)["actions"][0]
    assert h1["memory"]["before_from"] is None and "give --previous" in h1["memory"]["note"]
    assert h1["download"]["bytes"] is None
    missing = run_cli("plan", str(new), "--previous", str(new.parent / "nowhere"))
    assert missing.exit_code == 2 and "Traceback" not in missing.output


def test_weight_bytes_measured_or_estimated_from_the_model_facts() -> None:
    from servespec.plan.footprint import footprints

    found = footprints(load_fleet([Path(__file__).parents[2] / "specs" / "examples" / "vllm.yaml"]))
    chat = found[("llama-chat", "gpu-nvs-01")]
    # no lock entry: 8,030,261,248 parameters stored in bfloat16, the size of Meta's safetensors shards
    assert (chat.weight_bytes, chat.weight_bytes_estimated) == (16_060_522_496, True)
    (action,) = plan([Desired("llama-chat", "gpu-nvs-01", "b", {"container.yaml": "image: a\n"}, chat)], [])
    assert action.download is not None and action.download.estimated
    assert "estimated from the model's parameters" in action.download.why
