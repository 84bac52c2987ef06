"""The committed rendered/ tree matches what specs/examples render (the CI drift check)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import REPO, run_cli


def test_committed_rendered_is_up_to_date() -> None:
    result = run_cli("render", str(REPO / "specs" / "examples"), "-o", str(REPO / "rendered"), "--check")
    assert result.exit_code == 0, result.output


def test_check_fails_after_a_spec_edit(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(REPO / "specs" / "examples", specs)
    out = tmp_path / "rendered"
    assert run_cli("render", str(specs), "-o", str(out)).exit_code == 0
    assert run_cli("render", str(specs), "-o", str(out), "--check").exit_code == 0
    spec = specs / "vllm.yaml"
    spec.write_text(spec.read_text().replace("max_num_seqs: 48", "max_num_seqs: 32"))
    result = run_cli("render", str(specs), "-o", str(out), "--check")
    assert result.exit_code == 1
    assert "llama-chat/gpu-nvs-01/config.yaml" in result.output
    (out / "stray.txt").write_text("not servespec's")
    assert run_cli("render", str(specs), "-o", str(out)).exit_code == 0
    assert (out / "stray.txt").read_text() == "not servespec's"  # render removes only files it wrote
    assert run_cli("render", str(specs), "-o", str(out), "--check").exit_code == 0


BAD = """apiVersion: servespec/v1
kind: Deployment
metadata: {name: x}
model: {source: Qwen/Qwen2.5-7B-Instruct, max_model_len: 4096}
engine: {name: vllm, version: "0.11.0", options: {num_scheduler_steps: 8}}
"""


def test_render_refuses_specs_with_errors(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(BAD)
    result = run_cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "ENG001" in result.output
    assert not (tmp_path / "out").exists()
