"""The controller's side of staged weights: what each host is told to fetch, where, and the role's order.

:func:`servespec.rollout.staging.weights_plan` is pure (no host is asked): the Hub repository and
revision, the endpoint the container's HF_ENDPOINT names, the host folder of the engine's Hub cache
through its model-cache mount, and the lock file's size. apply passes it as the ``weights_*`` host
variables; the role fetches before the service step stops the running container.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec import engines, rollout
from servespec.render import render_fleet
from servespec.rollout.runner import RESULT_KEY, Report, playbook_root
from servespec.rollout.staging import WeightsPlan, weights_line, weights_plan, weights_progress
from servespec.spec.fleet import load_fleet
from tests.rollout.test_outcomes import FakeHosts, fake

__all__ = ["fake"]

ARCH = (
    "{params_b: 3.1, layers: 36, hidden_size: 2048, attention_heads: 16, kv_heads: 2, max_position_embeddings: 32768}"
)
COMMIT = "3" * 40


def _fleet(tmp_path: Path, engine: str, version: str, source: str, extra: str = "") -> Any:
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {ssh_user: root, become: false}\nhosts:\n"
        "  h1: {address: 10.0.0.1, hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 8}, "
        'driver_version: "580.95.05"}}\n'
    )
    gguf = "\n  quantization: gguf" if engine in ("llama.cpp", "ollama") else ""
    (tmp_path / "d.yaml").write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: d}}
inventory: inventory.yaml
model:
  source: {source}
  revision: "{COMMIT}"
  max_model_len: 4096
  architecture: {ARCH}{gguf}
engine:
  name: {engine}
  version: "{version}"{extra}
placement: {{hosts: [h1]}}
serving: {{port: 8000}}
suppress:
  - {{rule: SEC003, reason: test}}
  - {{rule: NET002, reason: test}}
"""
    )
    return load_fleet([tmp_path / "d.yaml"])


def _plan(fleet: Any) -> WeightsPlan:
    rendered = render_fleet(fleet)
    deployment = fleet.deployments[0]
    return weights_plan(deployment, rendered.containers[(deployment.name, "h1")])


HUB_CACHE: dict[str, list[tuple[str, str, str]]] = {
    "vllm": [("0.11.0", "acme/tiny", "/var/lib/servespec/models/hub")],  # /root/.cache/huggingface: HF_HOME/hub
    "sglang": [("0.5.23", "acme/tiny", "/var/lib/servespec/models/hub")],
    "tgi": [
        ("3.3.7", "acme/tiny", "/var/lib/servespec/models/hub"),  # the image's HF_HOME=/data, mounted there
        ("2.0.4", "acme/tiny", "/var/lib/servespec/models"),  # 2.0: HUGGINGFACE_HUB_CACHE=/data
    ],
    "tensorrt-llm": [("1.2.1", "acme/tiny", "/var/lib/servespec/models/hub")],
    "ktransformers": [("0.7.2", "acme/tiny", "/var/lib/servespec/models/hub")],
    "openllm": [("0.6.30", "Qwen/Qwen3-8B", "/var/lib/servespec/models/hub")],  # a model one of its bentos serves
    # Engines that fetch their model themselves: nothing is staged (their profile names no Hub cache).
    "llama.cpp": [],
    "ollama": [],
    "xinference": [],
    "lmstudio": [],
}
"""Every registered engine: the releases and host folder a Hub model is staged into (a test fails without a row)."""


@pytest.mark.parametrize("engine", engines.names())
def test_hub_models_are_staged_in_the_engines_own_cache(tmp_path: Path, engine: str) -> None:
    assert engine in HUB_CACHE, f"no row for {engine} in HUB_CACHE"
    store = engines.get(engine).profile.model_store
    assert bool(HUB_CACHE[engine]) == (store is not None and store.hub_cache is not None)
    for version, source, cache in HUB_CACHE[engine]:
        plan = _plan(_fleet(tmp_path, engine, version, source))
        assert (plan.kind, plan.source, plan.revision, plan.cache) == ("hub", source, COMMIT, cache), version
        assert plan.endpoint == "https://huggingface.co"
        assert f"{source}@" in plan.describe()


def test_the_containers_hub_settings_move_the_staged_cache_and_endpoint(tmp_path: Path) -> None:
    extra = "\n  env: {HF_HUB_CACHE: /models/hub, HF_ENDPOINT: 'http://mirror.internal:8080/'}"
    plan = _plan(_fleet(tmp_path, "vllm", "0.11.0", "acme/tiny", extra))
    # /models gets the model cache mounted (knowledge.store.mounts): the host folder is the cache itself.
    assert (plan.kind, plan.cache, plan.endpoint) == ("hub", "/var/lib/servespec/models", "http://mirror.internal:8080")
    plan = _plan(_fleet(tmp_path, "vllm", "0.11.0", "acme/tiny", "\n  options: {download_dir: /weights}"))
    assert plan.cache == "/var/lib/servespec/models"


def test_what_is_not_staged_says_why(tmp_path: Path) -> None:
    assert _plan(_fleet(tmp_path, "llama.cpp", "b11434", "/srv/models/demo.gguf")).kind == "local"
    hub_gguf = _plan(_fleet(tmp_path, "llama.cpp", "b11434", "acme/tiny-GGUF"))
    assert hub_gguf.kind == "engine" and "llama.cpp fetches its model itself" in hub_gguf.describe()
    assert "ollama fetches its model itself" in _plan(_fleet(tmp_path, "ollama", "0.32.15", "qwen2.5:3b")).describe()
    offline = _plan(_fleet(tmp_path, "vllm", "0.11.0", "acme/tiny", "\n  env: {HF_HUB_OFFLINE: '1'}"))
    assert offline.kind == "engine" and "HF_HUB_OFFLINE" in offline.why


def test_apply_tells_each_host_what_to_stage(tmp_path: Path, fake: FakeHosts) -> None:
    rollout.apply(_fleet(tmp_path, "vllm", "0.11.0", "acme/tiny"), rollout.ApplyOptions(), tmp_path / "work")
    variables = fake.variables["h1"]
    assert variables["servespec_weights_repo"] == "acme/tiny"
    assert variables["servespec_weights_revision"] == COMMIT
    assert variables["servespec_weights_cache"] == "/var/lib/servespec/models/hub"


def test_weights_are_staged_before_the_service_step_stops_the_old_container() -> None:
    tasks = playbook_root() / "roles" / "servespec" / "tasks"
    block = YAML(typ="safe").load((tasks / "main.yml").read_text())[1]["block"]
    order = [task.get("ansible.builtin.import_tasks") or task["ansible.builtin.include_tasks"] for task in block]
    assert order.index("weights.yml") < order.index("service.yml")
    preflight = YAML(typ="safe").load((tasks / "preflight.yml").read_text())
    assert [t["servespec_weights"]["action"] for t in preflight if "servespec_weights" in t] == ["check"]


def test_progress_shows_each_hosts_cached_and_downloaded_bytes() -> None:
    seen: list[dict[str, Any]] = []
    handle = weights_progress(seen.append)
    assert handle is not None
    report = {"kind": Report.WEIGHTS, "repo": "acme/tiny", "commit": COMMIT, "files": 3, "cached_files": 1}
    report |= {"cached_bytes": 1 << 30, "download_bytes": 3 << 30, "partial_bytes": 0, "action": "check"}
    handle({"event": "runner_on_ok", "event_data": {"host": "h1", "task": "x", "res": {RESULT_KEY: report}}})
    assert seen[-1]["event_data"] == {"host": "h1", "task": weights_line(report)}
    assert "1/3 files cached (1.00 GiB), 3.00 GiB to download" in weights_line(report)


def test_the_stand_in_image_stages_only_from_a_named_endpoint(tmp_path: Path) -> None:
    """Test-only: hosts running the stand-in reach no public Hub; a test names its Hub stand-in."""
    fleet = _fleet(tmp_path, "vllm", "0.11.0", "acme/tiny")
    deployment = fleet.deployments[0]
    container = render_fleet(fleet).containers[(deployment.name, "h1")]
    assert weights_plan(deployment, container, standin=True).kind == "engine"
    fleet = _fleet(tmp_path, "vllm", "0.11.0", "acme/tiny", "\n  env: {HF_ENDPOINT: 'http://10.0.0.9:8080'}")
    deployment = fleet.deployments[0]
    container = render_fleet(fleet).containers[(deployment.name, "h1")]
    assert weights_plan(deployment, container, standin=True).endpoint == "http://10.0.0.9:8080"


ARCHIVE = "\n  archive: weights/tiny.tar"


def _archive_fleet(tmp_path: Path, engine: str, version: str, source: str) -> Any:
    (tmp_path / "weights").mkdir(exist_ok=True)
    (tmp_path / "weights" / "tiny.tar").write_bytes(b"a tar archive stands here")
    _fleet(tmp_path, engine, version, source)  # writes the inventory and the spec, given the archive below
    text = (tmp_path / "d.yaml").read_text().replace(f'  revision: "{COMMIT}"', f'  revision: "{COMMIT}"{ARCHIVE}')
    (tmp_path / "d.yaml").write_text(text)
    return load_fleet([tmp_path / "d.yaml"])


def test_apply_tells_each_host_to_unpack_the_model_archive(tmp_path: Path, fake: FakeHosts) -> None:
    import hashlib

    fleet = _archive_fleet(tmp_path, "vllm", "0.11.0", "acme/tiny")
    plan = _plan(fleet)
    assert (plan.kind, plan.archive, plan.cache) == ("archive", "weights/tiny.tar", "/var/lib/servespec/models/hub")
    assert "unpacked from the archive weights/tiny.tar" in plan.describe()
    rollout.apply(fleet, rollout.ApplyOptions(), tmp_path / "work")
    variables = fake.variables["h1"]
    archive = (tmp_path / "weights" / "tiny.tar").resolve()
    assert variables["servespec_weights_repo"] == ""  # nothing fetched from a Hub
    linked = Path(variables["servespec_weights_archive"])  # read through a link in the run's work folder
    assert linked.is_relative_to((tmp_path / "work").resolve()) and linked.resolve() == archive
    assert variables["servespec_weights_archive_sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    # Root's incoming folder, outside the cache that engines fetching their own models mount read-write.
    assert variables["servespec_weights_archive_dest"] == "/var/lib/servespec/incoming/models--acme--tiny/tiny.tar"
    assert variables["servespec_weights_archive_repo"] == "acme/tiny"
    assert variables["servespec_weights_revision"] == COMMIT


def test_a_model_archive_the_engine_cannot_read_stops_apply_before_any_host(tmp_path: Path, fake: FakeHosts) -> None:
    fleet = _archive_fleet(tmp_path, "llama.cpp", "b11434", "acme/tiny-GGUF")
    with pytest.raises(
        rollout.RolloutError, match=r"model\.archive cannot be used: llama\.cpp fetches its model itself"
    ):
        rollout.apply(fleet, rollout.ApplyOptions(), tmp_path / "work")
    assert fake.variables == {}


def test_a_model_archive_needs_a_commit_and_an_existing_file(tmp_path: Path) -> None:
    from servespec.rules.runner import check_fleet

    _archive_fleet(tmp_path, "vllm", "0.11.0", "acme/tiny")
    text = (tmp_path / "d.yaml").read_text()
    (tmp_path / "d.yaml").write_text(text.replace(f'revision: "{COMMIT}"', "revision: main"))
    findings = check_fleet(load_fleet([tmp_path / "d.yaml"]))
    assert any(f.rule == "SS003" and "40-hex commit" in f.message for f in findings), findings
    (tmp_path / "d.yaml").write_text(text.replace("weights/tiny.tar", "weights/missing.tar"))
    findings = check_fleet(load_fleet([tmp_path / "d.yaml"]))
    assert [(f.rule, f.line) for f in findings if f.rule == "REF002"] == [("REF002", 8)], findings


CACHE_MODES: dict[str, list[tuple[str, str, str, str | None]]] = {
    "vllm": [
        ("0.11.0", "acme/tiny", "", "ro"),
        ("0.11.0", "acme/tiny", "\n  env: {HF_HOME: /srv/hf}", "ro"),  # the mount follows the store, still ro
    ],
    "sglang": [("0.5.23", "acme/tiny", "", "ro")],
    "tgi": [("3.3.7", "acme/tiny", "", "ro"), ("2.0.4", "acme/tiny", "", "ro")],
    "tensorrt-llm": [("1.2.1", "acme/tiny", "", "ro")],
    "ktransformers": [("0.7.2", "acme/tiny", "", "ro")],
    "openllm": [("0.6.30", "Qwen/Qwen3-8B", "", "ro")],
    "llama.cpp": [
        ("b11434", "acme/tiny-GGUF", "", "rw"),  # fetches its GGUF itself: it writes the cache
        ("b11434", "acme/tiny-GGUF", "\n  env: {HF_HUB_CACHE: /root/.cache/huggingface/hub}", "rw"),
    ],
    "ollama": [("0.32.15", "qwen2.5:3b", "", "rw")],
    "xinference": [("2.12.0", "Qwen/Qwen2.5-7B-Instruct", "", "rw")],  # downloads into XINFERENCE_HOME itself
    "lmstudio": [("07b7252", "qwen2.5-7b-instruct", "", None)],  # host-native: no container mounts the cache
}
"""Every registered engine: the model cache's mode in its container ("ro": staged; None: not mounted)."""


@pytest.mark.parametrize("engine", engines.names())
def test_the_cache_is_read_only_in_engines_whose_weights_are_staged(tmp_path: Path, engine: str) -> None:
    """Issue 20 item 3: root writes the cache it stages into, so the engine may only read it.

    servespec stages weights only through a read-only cache mount, and every engine it stages for
    gets the cache read-only at each of its mounts; an engine that fetches its model itself keeps it
    read-write (and is never staged for, even when its environment names a Hub cache).
    """
    assert engine in CACHE_MODES, f"no row for {engine} in CACHE_MODES"
    for version, source, extra, mode in CACHE_MODES[engine]:
        fleet = _fleet(tmp_path, engine, version, source, extra)
        rendered = render_fleet(fleet)
        deployment = fleet.deployments[0]
        container = rendered.containers[(deployment.name, "h1")]
        modes = {volume.mode for volume in container.volumes if volume.host == "/var/lib/servespec/models"}
        assert modes == ({mode} if mode else set()), (version, extra)
        staged = mode == "ro"
        assert (weights_plan(deployment, container).kind == "hub") is staged
        # transformers writes remote code under $HF_HOME/modules: out of the read-only mount, into the container.
        modules = container.environment.get("HF_MODULES_CACHE")
        assert modules == ("/tmp/servespec-hf-modules" if staged else None)
        assert all(not modules.startswith(v.container) for v in container.volumes) if modules else True
