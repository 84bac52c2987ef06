"""The smoke test asks for each adapter the engine serves by name (issue 24, item 1: "the smoke test calls one")."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from servespec.render import render_fleet
from servespec.spec.fleet import load_fleet
from tests.render.test_served_names import _Engine, engine, probe
from tests.rollout.test_adapters_staging import _adapter_fleet

__all__ = ["engine", "probe"]


def test_the_probe_asks_for_every_adapter_by_name(probe: ModuleType, engine: dict[str, Any]) -> None:
    _Engine.models = {"object": "list", "data": [{"id": "base"}, {"id": "sql"}]}
    ok, answers = probe._smoke_adapters({**engine, "smoke_adapters": ["sql"]}, None)
    assert ok and answers == {"sql": " hi"} and _Engine.requests[-1]["model"] == "sql"
    ok, why = probe._smoke_adapters({**engine, "smoke_adapters": ["sql", "gone"]}, None)
    assert not ok and "adapter 'gone'" in why  # an adapter the engine does not serve fails the revision
    assert probe._smoke_adapters(engine, None) == (True, {})


def test_the_container_names_the_adapters_the_engine_serves(tmp_path: Path) -> None:
    rendered = render_fleet(_adapter_fleet(tmp_path))
    assert rendered.containers[("d", "h1")].smoke_adapters == ("sql", "chat", "support")
    assert rendered.containers[("d", "h1")].to_json()["smoke_adapters"] == ["sql", "chat", "support"]


def test_llama_cpp_applies_its_adapter_to_every_request_so_none_is_asked_by_name(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {ssh_user: root}\nhosts:\n  h1: {address: 10.0.0.1}\n"
    )
    (tmp_path / "d.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        "model:\n  source: /srv/models/tiny.gguf\n  max_model_len: 2048\n"
        "  adapters: [{name: pirate, source: /srv/adapters/pirate.gguf}, {name: hub, source: acme/lora}]\n"
        "engine: {name: llama.cpp, version: b11434}\nplacement: {hosts: [h1]}\n"
    )
    container = render_fleet(load_fleet([tmp_path / "d.yaml"])).containers[("d", "h1")]
    assert container.smoke_adapters == () and "smoke_adapters" not in container.to_json()
    command = list(container.command)
    # the GGUF file is loaded; the Hub adapter (a PEFT folder llama.cpp cannot read) is not rendered (ADP001)
    assert command[command.index("--lora") + 1] == "/srv/adapters/pirate.gguf" and "acme/lora" not in command
