"""model.adapters are staged on each host like the weights, and the engine reads what was staged (issue 24, item 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec import rollout
from servespec.render import render_fleet
from servespec.render.common import UnsafeModelPathError
from servespec.rollout.runner import playbook_root
from servespec.rollout.staging import beside_vars
from tests.rollout.test_outcomes import FakeHosts, fake
from tests.rollout.test_weights_plan import COMMIT, _fleet

__all__ = ["fake"]

ADAPTER_COMMIT = "a" * 40
ADAPTERS = (
    f"\n  adapters:\n    - {{name: sql, source: acme/sql-lora, revision: '{ADAPTER_COMMIT}'}}"
    "\n    - {name: chat, source: acme/chat-lora, revision: main}"
    "\n    - {name: support, source: /srv/adapters/support}"
)


def _adapter_fleet(tmp_path: Path, engine: str = "vllm", version: str = "0.11.0", source: str = "acme/tiny") -> Any:
    fleet = _fleet(tmp_path, engine, version, source)
    spec = tmp_path / "d.yaml"
    text = spec.read_text().replace("  max_model_len: 4096", "  max_model_len: 4096" + ADAPTERS)
    spec.write_text(text)
    from servespec.spec.fleet import load_fleet

    del fleet
    return load_fleet([spec])


def test_a_hub_adapter_at_a_commit_is_staged_into_the_weights_cache(tmp_path: Path) -> None:
    fleet = _adapter_fleet(tmp_path)
    rendered = render_fleet(fleet)
    container = rendered.containers[("d", "h1")]
    found = beside_vars(fleet.deployments[0], container)
    # only the adapter at a commit: a branch is left to the engine, a host path is mounted
    assert found == {
        "beside_repos": ("acme/sql-lora",),
        "beside_revisions": (ADAPTER_COMMIT,),
        "beside_endpoint": "https://huggingface.co",
        "beside_cache": "/var/lib/servespec/models/hub",
    }
    command = " ".join(container.command)
    # the engine reads the staged snapshot (the same folder huggingface_hub files a commit under)
    assert f"sql=/root/.cache/huggingface/hub/models--acme--sql-lora/snapshots/{ADAPTER_COMMIT}" in command
    assert "chat=acme/chat-lora" in command and "support=/srv/adapters/support" in command
    assert any(v.host == "/srv/adapters/support" and v.mode == "ro" for v in container.volumes)


def test_apply_tells_each_host_which_adapters_to_stage(tmp_path: Path, fake: FakeHosts) -> None:
    rollout.apply(_adapter_fleet(tmp_path), rollout.ApplyOptions(), tmp_path / "work")
    variables = fake.variables["h1"]
    assert variables["servespec_weights_revision"] == COMMIT
    assert variables["servespec_beside_repos"] == ["acme/sql-lora"]
    assert variables["servespec_beside_revisions"] == [ADAPTER_COMMIT]
    assert variables["servespec_beside_cache"] == "/var/lib/servespec/models/hub"


def test_adapters_are_staged_with_the_weights_module_before_the_old_container_stops() -> None:
    tasks = playbook_root() / "roles" / "servespec" / "tasks"
    weights = YAML(typ="safe").load((tasks / "weights.yml").read_text())
    staged = [t for t in weights if "servespec_weights" in t and "item.0" in str(t["servespec_weights"]["repo"])]
    assert len(staged) == 1 and staged[0]["servespec_weights"]["action"] == "fetch"
    assert "servespec_beside_repos" in staged[0]["loop"]
    specs = YAML(typ="safe").load((playbook_root() / "roles" / "servespec" / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    assert {"servespec_beside_repos", "servespec_beside_revisions", "servespec_beside_cache"} <= set(options)


def test_nothing_is_staged_for_an_engine_that_fetches_itself_or_a_local_model(tmp_path: Path) -> None:
    fleet = _adapter_fleet(tmp_path, source="/srv/models/tiny")
    rendered = render_fleet(fleet)
    container = rendered.containers[("d", "h1")]
    assert beside_vars(fleet.deployments[0], container) == {}
    # the cache is not staged into then, so the engine is given the Hub id, not a snapshot it would not find
    assert "sql=acme/sql-lora" in " ".join(container.command)


def test_an_adapter_path_outside_the_model_roots_is_refused(tmp_path: Path) -> None:
    fleet = _adapter_fleet(tmp_path)
    spec = tmp_path / "d.yaml"
    spec.write_text(spec.read_text().replace("/srv/adapters/support", "/etc/adapters"))
    from servespec.spec.fleet import load_fleet

    del fleet
    with pytest.raises(UnsafeModelPathError, match=r"model.adapters\[2\].source"):
        render_fleet(load_fleet([spec]))


DRAFT_COMMIT = "d" * 40


def test_the_draft_is_staged_and_read_from_its_snapshot(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.11.0", "acme/tiny")
    spec = tmp_path / "d.yaml"
    draft = (
        f"\n  speculative: {{method: draft, draft: acme/tiny-draft, draft_revision: '{DRAFT_COMMIT}', num_tokens: 4}}"
    )
    spec.write_text(spec.read_text().replace("  max_model_len: 4096", "  max_model_len: 4096" + draft))
    from servespec.spec.fleet import load_fleet

    del fleet
    fleet = load_fleet([spec])
    rendered = render_fleet(fleet)
    container = rendered.containers[("d", "h1")]
    assert beside_vars(fleet.deployments[0], container) == {
        "beside_repos": ("acme/tiny-draft",),
        "beside_revisions": (DRAFT_COMMIT,),
        "beside_endpoint": "https://huggingface.co",
        "beside_cache": "/var/lib/servespec/models/hub",
    }
    snapshot = f"/root/.cache/huggingface/hub/models--acme--tiny-draft/snapshots/{DRAFT_COMMIT}"
    config = rendered.host_files("d", "h1")["config.yaml"]
    assert f'"model":"{snapshot}"' in config and '"method":"draft_model"' in config


def test_ollama_creates_one_model_per_adapter_from_its_modelfile(tmp_path: Path, fake: FakeHosts) -> None:
    fleet = _fleet(tmp_path, "ollama", "0.32.15", "qwen2.5:3b")
    spec = tmp_path / "d.yaml"
    adapters = "\n  adapters: [{name: pirate, source: /srv/adapters/pirate.gguf}]"
    spec.write_text(spec.read_text().replace("  max_model_len: 4096", "  max_model_len: 4096" + adapters))
    from servespec.spec.fleet import load_fleet

    del fleet
    fleet = load_fleet([spec])
    files = render_fleet(fleet).host_files("d", "h1")
    assert files["Modelfile.adapter-0"].splitlines()[-1] == "ADAPTER /srv/adapters/pirate.gguf"
    assert "ADAPTER" not in files["Modelfile"]  # the model itself stays as it was
    rollout.apply(fleet, rollout.ApplyOptions(), tmp_path / "work")
    assert fake.variables["h1"]["servespec_adapter_models"] == ["pirate"]
    tasks = YAML(typ="safe").load((playbook_root() / "roles" / "servespec" / "tasks" / "model.yml").read_text())
    (create,) = [t for t in tasks if "servespec_adapter_models" in str(t.get("loop", ""))]
    assert create["servespec_container"]["command"][:2] == ["ollama", "create"]
    assert "Modelfile.adapter-{{ servespec_adapter_index }}" in create["servespec_container"]["command"][-1]
