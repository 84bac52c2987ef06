"""A checkout cannot widen what the controller reads (issue 20, item 12).

The pull request's inventory may name any ``model_roots``; on the controller, only its entries
inside the checkout are read from unless the operator passes ``--model-roots``, and a local
source is judged where its symlinks lead (a link to ``/etc`` or ``/root`` is refused).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from servespec.cli import main
from servespec.knowledge import resolve
from servespec.spec.fleet import load_fleet
from tests.knowledge.test_sources import CONFIG


@pytest.fixture(autouse=True)
def _no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _model(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({**CONFIG, "num_hidden_layers": 7}))
    return folder


def _checkout(tmp_path: Path, roots: list[Path], source: Path | str) -> Path:
    """A checkout whose own inventory sets ``model_roots``; returns its spec."""
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True, exist_ok=True)
    (checkout / "hosts.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\n"
        f"defaults: {{model_roots: [{', '.join(str(r) for r in roots)}]}}\n"
        "hosts:\n  gpu-01:\n    connection: local\n    hardware: {gpus: {model: NVIDIA L4, count: 1}}\n"
    )
    spec = checkout / "app.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\ninventory: hosts.yaml\n"
        f"model:\n  source: {source}\n  max_model_len: 4096\n"
        'engine: {name: vllm, version: "0.11.0"}\n'
    )
    return spec


def _layers(spec: Path) -> int | None:
    answer = resolve.resolved(load_fleet([spec]).deployments[0]).model
    return answer.facts.layers if answer.facts else None


def _ref003(output: str) -> list[str]:
    return [line for line in output.splitlines() if " REF003 " in line]


def test_an_inventory_in_the_checkout_cannot_widen_the_roots(tmp_path: Path) -> None:
    model = _model(tmp_path / "outside" / "chat")
    spec = _checkout(tmp_path, [tmp_path / "outside"], model)
    assert _layers(spec) is None  # the folder outside the checkout is not read
    result = CliRunner().invoke(main, ["validate", str(spec)])
    lines = _ref003(result.stdout)
    assert len(lines) == 1 and "app.yaml:6:" in lines[0], result.stdout
    assert "not read on this machine" in lines[0] and "--model-roots" in lines[0]
    estimate = CliRunner().invoke(main, ["estimate", "--format", "json", str(spec)])
    assert json.loads(estimate.stdout)["estimates"][0]["gpus"] == [], estimate.stdout  # no memory plan


def test_the_operators_flag_lets_the_controller_read_it(tmp_path: Path) -> None:
    model = _model(tmp_path / "outside" / "chat")
    spec = _checkout(tmp_path, [tmp_path / "outside"], model)
    result = CliRunner().invoke(main, ["validate", "--model-roots", str(tmp_path / "outside"), str(spec)])
    assert _ref003(result.stdout) == [], result.stdout
    flag = ["--model-roots", str(tmp_path / "outside")]
    estimate = CliRunner().invoke(main, ["estimate", *flag, "--format", "json", str(spec)])
    assert json.loads(estimate.stdout)["estimates"][0]["gpus"] != [], estimate.stdout
    estimate = CliRunner().invoke(main, ["estimate", "--format", "json", str(spec)])  # the flag held one command
    assert json.loads(estimate.stdout)["estimates"][0]["gpus"] == []


def test_an_operators_inventory_outside_the_checkout_is_trusted(tmp_path: Path) -> None:
    model = _model(tmp_path / "outside" / "chat")
    spec = _checkout(tmp_path, [tmp_path / "elsewhere"], model)
    inventory = tmp_path / "operator" / "hosts.yaml"
    inventory.parent.mkdir()
    inventory.write_text((spec.parent / "hosts.yaml").read_text().replace("elsewhere", "outside"))
    result = CliRunner().invoke(main, ["validate", "-i", str(inventory), str(spec)])
    assert _ref003(result.stdout) == [], result.stdout


def test_roots_inside_the_checkout_are_still_read(tmp_path: Path) -> None:
    model = _model(tmp_path / "checkout" / "models" / "chat")
    spec = _checkout(tmp_path, [tmp_path / "checkout" / "models", tmp_path / "outside"], model)
    assert _layers(spec) == 7


def test_a_link_inside_the_checkout_to_a_folder_outside_is_not_read(tmp_path: Path) -> None:
    model = _model(tmp_path / "outside" / "chat")
    (tmp_path / "checkout" / "models").mkdir(parents=True)
    (tmp_path / "checkout" / "models" / "chat").symlink_to(model)
    spec = _checkout(tmp_path, [tmp_path / "checkout" / "models"], tmp_path / "checkout" / "models" / "chat")
    assert _layers(spec) is None
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert "leads (through a symlink) out of the model roots" in result.stdout, result.stdout


@pytest.mark.parametrize("system", ["/etc", "/root", "/proc/self"])
def test_a_link_to_a_system_folder_is_refused(tmp_path: Path, system: str) -> None:
    models = tmp_path / "checkout" / "models"
    models.mkdir(parents=True)
    (models / "chat").symlink_to(system)
    spec = _checkout(tmp_path, [models], models / "chat")
    result = CliRunner().invoke(main, ["validate", str(spec)])
    sec004 = [line for line in result.stdout.splitlines() if " SEC004 " in line]
    assert len(sec004) == 1 and "app.yaml:6:" in sec004[0] and "symlink" in sec004[0], result.stdout
    assert result.exit_code == 1
    assert _layers(spec) is None
