"""Nothing from a checkout or a host is ever evaluated by Ansible, read or written out of bounds (issue 9).

These tests build HostView, inventories and extra vars directly, bypassing the loader's
grammars: the rollout layer must be safe by itself. The templating tests run the real
ansible-runner (no SSH needed: the hosts point at a closed port, or run a local debug
playbook) and look for the marker files the payloads would create.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from servespec import rollout
from servespec.rollout import RolloutError, inventory_for, resolve_secrets
from servespec.rollout.runner import HostResult, Report, RunResult, _collect, run_playbook
from servespec.spec.fleet import HostView, InventoryDoc
from servespec.spec.models import Host, HostDefaults, Inventory
from tests.conftest import REPO, run_cli
from tests.modules import load_file

ROLE = REPO / "playbooks" / "roles" / "servespec"


def payload(marker: Path) -> str:
    """A template that creates ``marker`` when Ansible evaluates it (and still yields a usable value)."""
    return "{{ lookup('pipe', 'touch " + str(marker) + "; echo 127.0.0.1') }}"


def block_payload(marker: Path) -> str:
    """The statement form: ``{% %}`` runs the lookup too."""
    return "{% set x = lookup('pipe', 'touch " + str(marker) + "') %}ok"


def view(name: str, host: dict[str, Any], defaults: dict[str, Any] | None = None) -> HostView:
    """A HostView made without validation (model_construct), as a loader without grammars would let through."""
    spec = Host.model_construct(**{**Host().model_dump(), **host})
    base = HostDefaults().model_dump()
    inventory = Inventory.model_construct(
        apiVersion="servespec/v1",
        kind="Inventory",
        defaults=HostDefaults.model_construct(**{**base, **(defaults or {})}),
        hosts={name: spec},
        suppress=[],
    )
    return HostView(name=name, spec=spec, inventory=InventoryDoc(spec=inventory, document=None), hardware=None)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def common() -> ModuleType:
    return load_file(ROLE / "module_utils" / "servespec_common.py", "servespec_common_under_test")


# 1. Inventory values -------------------------------------------------------------------------


def test_inventory_strings_reach_ansible_unsafe(tmp_path: Path) -> None:
    pytest.importorskip("ansible_runner")
    port = closed_port()
    marks = {field: tmp_path / f"pwned-{field}" for field in ("key", "deployments", "address", "user", "python")}
    hosts = {
        "h1": (
            view("h1", {"address": "127.0.0.1", "ssh_port": port}, {"become": False}),
            {"servespec_deployments": [block_payload(marks["deployments"])]},
        ),
    }
    inventory = inventory_for(hosts)
    # What inventory_for refuses (address, user, key) must be inert in the writer too: defence in depth.
    with pytest.raises(RolloutError, match="ssh_key"):
        inventory_for({"h1": (view("h1", {}, {"ssh_key": payload(marks["key"])}), {})})
    inventory["all"]["children"]["servespec_targets"]["hosts"]["h2"] = {
        "ansible_host": payload(marks["address"]),
        "ansible_user": payload(marks["user"]),
        "ansible_ssh_private_key_file": payload(marks["key"]),
        "ansible_port": port,
        "ansible_python_interpreter": payload(marks["python"]),
        "servespec_deployments": ["demo"],
    }
    result = run_playbook("status.yml", inventory, {})
    assert [m.name for m in marks.values() if m.exists()] == []
    assert set(result.hosts) == {"h1", "h2"}
    assert all(r.unreachable for r in result.hosts.values())


def test_inventory_refuses_an_address_that_ssh_would_read_as_an_option() -> None:
    for address in ("-oProxyCommand=touch /tmp/pwned", "-p2222", "a b", "host\nname", "{{ x }}", payload(Path("m"))):
        with pytest.raises(RolloutError, match="address"):
            inventory_for({"h": (view("h", {"address": address}), {})})
    with pytest.raises(RolloutError, match="ssh_user"):
        inventory_for({"h": (view("h", {"ssh_user": "-oProxyCommand=x"}), {})})
    with pytest.raises(RolloutError, match="ssh_user"):
        inventory_for({"h": (view("h", {}, {"ssh_user": "{{ lookup('pipe', 'id') }}"}), {})})
    for key in ("/k/%h", "/k/${HOME}", '/k/a"b', "/k/a\nb"):
        with pytest.raises(RolloutError, match="ssh_key"):
            inventory_for({"h": (view("h", {}, {"ssh_key": key}), {})})
    with pytest.raises(RolloutError, match="host name"):
        inventory_for({"{{ x }}": (view("{{ x }}", {}), {})})


ADDRESSES = ("10.0.0.1", "2001:db8::10", "gpu-01.example", "gpu_01.internal", "[::1]", "a:b", "host%x", "a" * 300)
USERS = ("deploy", ".deploy", "svc$", "ubuntu@corp", "a" * 300, "a:b")
KEYS = ("~/.ssh/id_ed25519", "/keys/fleet-key", "/keys/a b", "/keys/a'b", "/keys/\u202ekey")


def _accepted(host: dict[str, Any], defaults: dict[str, Any] | None = None, name: str = "h") -> bool:
    """Whether inventory_for takes a host with these values."""
    try:
        inventory_for({name: (view(name, host, defaults), {})})
    except RolloutError:
        return False
    return True


def test_the_runner_checks_connection_values_with_the_loaders_grammars() -> None:
    """One grammar: inventory_for accepts exactly what spec.grammars (and models.HostName) accept."""
    from pydantic import TypeAdapter, ValidationError

    from servespec.spec import grammars
    from servespec.spec.models import HostName

    for address in ADDRESSES:
        assert _accepted({"address": address}) == grammars.is_address(address), address
    for user in USERS:
        assert _accepted({"ssh_user": user}) == grammars.is_user_name(user), user
    for key in KEYS:
        assert _accepted({}, {"ssh_key": key}) == grammars.is_key_path(key), key
    for name in ("gpu-a", "gpu.a_1", "a" * 300, "-a"):
        try:
            TypeAdapter(HostName).validate_python(name)
            valid = True
        except ValidationError:
            valid = False
        assert _accepted({}, name=name) == valid, name


def test_unsafe_yaml_marks_every_string_that_could_be_a_template_and_refuses_template_keys() -> None:
    from servespec.rollout.ansible_vars import UnsafeInputError, unsafe_yaml

    text = unsafe_yaml({"a": "{x", "b": [1, True, None, {"c": '{\u2028\U0001f600"\\'}], "d": {}, "e": "010"})
    assert text.count("!unsafe") == 2
    assert '"{\\u2028\\U0001f600\\"\\\\"' in text
    assert 'e: "010"' in text
    with pytest.raises(UnsafeInputError):
        unsafe_yaml({"{{ x }}": 1})
    with pytest.raises(UnsafeInputError):
        unsafe_yaml({"a": object()})


# 2. Extra vars ------------------------------------------------------------------------------


def test_extravars_reach_ansible_unsafe_and_intact(tmp_path: Path) -> None:
    pytest.importorskip("ansible_runner")
    values = {
        "servespec_image": payload(tmp_path / "pwned-image"),
        "servespec_model_paths": [block_payload(tmp_path / "pwned-model")],
        "servespec_run": {"run_id": payload(tmp_path / "pwned-run")},
        "servespec_labels": {"team": "{# comment #}{{ 7 * 7 }}"},
        "servespec_odd": "tab\there \u202e bidi \U0001f600",
        "servespec_empty": "",
        # Strings Ansible's loader would retype if tagged (ansible-core 2.19: !unsafe "010" is 8).
        "servespec_typed": ["010", "0x1f", "true", "null", "1e3", "2001-12-14", "~", "1_000", ".inf"],
    }
    playbook = tmp_path / "show.yml"
    playbook.write_text(
        "- hosts: servespec_targets\n  gather_facts: false\n  tasks:\n"
        "    - name: Show\n      ansible.builtin.debug:\n"
        "        msg: '{{ [servespec_image, servespec_model_paths, servespec_run, servespec_labels,"
        " servespec_odd, servespec_empty | length, servespec_typed] }}'\n"
    )
    local = view("local", {"connection": "local"})
    result = run_playbook(str(playbook), inventory_for({"local": (local, {})}), values)
    assert result.hosts["local"].ok, result.hosts["local"].error
    shown = result.hosts["local"].results["Show"]["msg"]
    assert shown == [values[k] for k in ("servespec_image", "servespec_model_paths", "servespec_run")] + [
        values["servespec_labels"],
        values["servespec_odd"],
        0,  # an empty string stays a string (Ansible reads an empty !unsafe scalar as None)
        values["servespec_typed"],
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["show.yml"]


# 3. Host-reported state ---------------------------------------------------------------------

HOSTILE_STATES: list[Any] = [
    {"current": "{{ lookup('pipe', 'id') }}", "good": None, "revisions": []},
    {"current": 1, "good": 1, "revisions": [{"number": "1", "digest": "ab", "status": "good"}]},
    {"current": 1, "good": 1, "revisions": [{"number": 1, "digest": "{{ x }}", "status": "good"}]},
    {"current": 1, "good": 1, "revisions": [{"number": 1, "digest": "ab", "status": "{% x %}"}]},
    {"current": True, "good": None, "revisions": []},
    {"current": None, "good": None, "revisions": "x"},
    {"current": None, "good": None, "revisions": [[1]]},
    "x",
    [],
]


@pytest.mark.parametrize("state", HOSTILE_STATES)
def test_hostile_state_is_refused_with_a_clear_error(state: Any) -> None:
    from servespec.rollout.reported import checked_report

    report, problem = checked_report({"state": state, "files": {}, "lock": None, "container": None, "healthy": False})
    assert problem.startswith("state.json")
    assert report["state"] is None


def test_hostile_lock_files_and_container_are_refused() -> None:
    from servespec.rollout.reported import checked_report

    good = {"state": None, "files": {}, "lock": None, "container": None, "healthy": False}
    for key, value in (
        ("lock", {"controller": "c", "pid": 1, "run_id": "{{ lookup('pipe', 'id') }}"}),
        ("lock", {"controller": "c", "pid": "1; id", "run_id": "0123456789ab"}),
        ("files", {"../../x": "text"}),
        ("files", {"a.txt": 1}),
        ("container", {"status": "{{ x }}", "started_at": None}),
        ("healthy", "yes"),
    ):
        _, problem = checked_report({**good, key: value})
        assert problem, (key, value)
    report, problem = checked_report(
        {
            **good,
            "state": {
                "version": 1,
                "deployment": "d",
                "current": 2,
                "good": 2,
                "revisions": [{"number": 2, "digest": "0f" * 32, "status": "good", "created": "2026-01-01T00:00:00Z"}],
            },
            "lock": {"controller": "c", "pid": 12, "run_id": "0123456789ab", "since": "2026-01-01T00:00:00Z"},
            "container": {"status": "running", "started_at": "2026-01-01T00:00:00.123456789Z"},
            "healthy": True,
            "files": {"container.yaml": "x"},
        }
    )
    assert problem == "" and report["state"]["current"] == 2 and report["lock"]["run_id"] == "0123456789ab"


def test_a_stale_lock_id_is_reused_only_when_it_is_a_run_id() -> None:
    lock = {"controller": socket.gethostname(), "pid": 2**22 + 12345, "run_id": "{{ lookup('pipe', 'id') }}"}
    assert rollout.state.stale_lock(lock) == ""
    assert rollout.state.stale_lock({**lock, "run_id": "0123456789ab"}) == "0123456789ab"
    assert rollout.state.stale_lock({**lock, "pid": "{{ x }}", "run_id": "0123456789ab"}) == ""


def test_gather_turns_a_hostile_report_into_an_error_for_that_host(monkeypatch: pytest.MonkeyPatch) -> None:
    hostile = {"state": {"current": "{{ x }}", "revisions": []}, "files": {}, "lock": None, "container": None}
    result = HostResult(host="h", touched=True, reports={Report.STATUS: {"deployments": {"d": hostile}}})
    monkeypatch.setattr(rollout.inventory, "run_on", lambda *a, **k: RunResult("successful", {"h": result}))
    monkeypatch.setattr(rollout.state.resolve, "resolved", lambda deployment: SimpleNamespace(hosts=(view("h", {}),)))

    class Doc:
        name = "d"

    observed, results = rollout.gather(Doc())  # type: ignore[arg-type]
    assert observed[0].current is None
    assert not results["h"].ok and results["h"].error.startswith("state.json")


# 4. discover writes only its own file names ----------------------------------------------------


def test_discover_writes_only_the_documented_file_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outputs = {
        "nproc.txt": "4\n",
        f"../../../{outside.name}": "x",
        str(outside) + "-abs": "x",
        "meminfo.txt": "MemTotal: " + "9" * (9 << 20),
        "topo.txt": 12,
    }
    result = HostResult(host="h", touched=True, reports={Report.OUTPUTS: {"outputs": outputs}})
    monkeypatch.setattr(rollout.inventory, "run_on", lambda *a, **k: RunResult("successful", {"h": result}))
    seen: list[list[str]] = []

    def record(folder: Path, destination: Path) -> list[Path]:
        seen.append(sorted(p.name for p in (folder / "h").iterdir()))
        return []

    monkeypatch.setattr("servespec.discover.facts.write_facts", record)
    inventory = view("h", {}).inventory
    inventory.hosts["h"] = view("h", {})
    destination = tmp_path / "a" / "b" / "c"
    rollout.discover(inventory, destination)
    assert seen == [["nproc.txt"]]
    assert not any(p.name.startswith("outside") for p in tmp_path.rglob("*"))


# 5. plan with unreachable hosts ---------------------------------------------------------------


def test_plan_reports_unreachable_hosts_and_exits_1(tmp_path: Path) -> None:
    pytest.importorskip("ansible_runner")
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\n"
        f"defaults: {{ssh_user: root, ssh_port: {closed_port()}, become: false}}\n"
        "hosts:\n  h1:\n    address: 127.0.0.1\n    hardware: {gpus: {count: 0}, cpus: 2, memory_gib: 8}\n"
    )
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: demo}\ninventory: inventory.yaml\n"
        "model: {source: /srv/models/demo.gguf, quantization: gguf, max_model_len: 256, architecture: "
        "{params_b: 0.0001, layers: 2, hidden_size: 64, intermediate_size: 128, attention_heads: 4, kv_heads: 2, "
        "head_dim: 16, vocab_size: 300, max_position_embeddings: 2048}}\n"
        "engine: {name: llama.cpp, version: b11434}\nplacement: {hosts: [h1]}\nserving: {port: 8080}\n"
    )
    result = run_cli("plan", str(tmp_path / "spec.yaml"))
    assert result.exit_code == 1, result.output
    assert "h1" in result.output and "unreachable" in result.output


# 7. Secrets and archives stay inside allowed places --------------------------------------------


def test_from_file_secrets_only_inside_the_secrets_dir(tmp_path: Path) -> None:
    allowed = tmp_path / "secrets"
    allowed.mkdir()
    (allowed / "key").write_text("s3cret-value\n")
    (tmp_path / "shadow").write_text("root:hash\n")
    (allowed / "link").symlink_to(tmp_path / "shadow")
    assert resolve_secrets({"K": {"from_file": str(allowed / "key")}}, allowed) == "K=s3cret-value\n"
    for path, allow in (
        (tmp_path / "shadow", allowed),
        (allowed / "link", allowed),
        (allowed / ".." / "shadow", allowed),
        (allowed / "key", None),
    ):
        with pytest.raises(RolloutError, match=r"secrets-dir|secrets_dir") as caught:
            resolve_secrets({"K": {"from_file": str(path)}}, allow)
        assert "root:hash" not in str(caught.value)
    (allowed / "big").write_text("x" * 100_000)
    with pytest.raises(RolloutError, match="larger"):
        resolve_secrets({"K": {"from_file": str(allowed / "big")}}, allowed)
    if Path("/dev/zero").exists():
        with pytest.raises(RolloutError):
            resolve_secrets({"K": {"from_file": "/dev/zero"}}, Path("/dev"))


def test_image_archive_must_be_a_regular_file_inside_the_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "specs").mkdir()
    spec_file = checkout / "specs" / "s.yaml"
    (checkout / "images").mkdir()
    (checkout / "images" / "a.tar").write_text("tar")
    (tmp_path / "secret.tar").write_text("x")
    (checkout / "images" / "out.tar").symlink_to(tmp_path / "secret.tar")
    assert rollout.archive_path("../images/a.tar", spec_file) == (checkout / "images" / "a.tar").resolve()
    inside = str(checkout / "images" / "a.tar")
    # M1: absolute paths and '~' are refused even inside the checkout, as for every referenced file.
    for bad in (inside, "~/a.tar", str(tmp_path / "secret.tar"), "../images/out.tar", "../../secret.tar", "../images"):
        with pytest.raises(RolloutError, match="image_archive"):
            rollout.archive_path(bad, spec_file)
    with pytest.raises(RolloutError, match="image_archive"):
        rollout.archive_path("/etc/shadow", spec_file)
    # The document's root (--root) bounds it, as the loader's does.
    assert rollout.archive_path("../../secret.tar", spec_file, tmp_path) == (tmp_path / "secret.tar").resolve()
    with pytest.raises(RolloutError, match="image_archive"):
        rollout.archive_path("a.tar", checkout / "images" / "s.yaml", checkout / "specs")


def test_archive_path_has_one_definition_of_the_checkout() -> None:
    from servespec.rollout import local_files

    assert not hasattr(local_files, "checkout_root")  # servespec.spec.paths.default_root is the one


# 8. Log tails are scrubbed ----------------------------------------------------------------------


def test_failure_logs_and_errors_are_scrubbed_on_the_controller() -> None:
    detail = {
        "stage": "health",
        "error": "key my-api-secret-1 refused",
        "logs": ["started with --api-key my-api-secret-1", "token hf_" + "a" * 30],
    }
    event = {"event": "runner_on_failed", "event_data": {"host": "h", "task": "t", "res": {"msg": json.dumps(detail)}}}
    hosts: dict[str, HostResult] = {}
    _collect(hosts, event, ("my-api-secret-1",))
    text = hosts["h"].error + "\n".join(hosts["h"].logs)
    assert "my-api-secret-1" not in text and "hf_" + "a" * 30 not in text
    assert "***" in hosts["h"].error


def test_failure_logs_are_scrubbed_on_the_host(tmp_path: Path, common: ModuleType) -> None:
    revisions = tmp_path / "d" / "revisions"
    for number, value in ((1, "old-secret-value"), (2, "new-secret-value")):
        (revisions / str(number)).mkdir(parents=True)
        (revisions / str(number) / "secrets.env").write_text(f"API_KEY={value}\nSHORT=ab\n")
    lines = ["--api-key new-secret-value", "old-secret-value here", "ab stays"]
    assert common.scrub_lines(lines, common.deployment_secrets("d", str(tmp_path))) == [
        "--api-key ***",
        "*** here",
        "ab stays",
    ]


# 9. IPv6 bind -------------------------------------------------------------------------------------


def test_base_url_brackets_ipv6_literals(common: ModuleType) -> None:
    def spec(host_ip: str) -> dict[str, Any]:
        return {"ports": [{"host_ip": host_ip}], "healthcheck": {"port": 8000}}

    assert common.base_url(spec("::1")) == "http://[::1]:8000"
    assert common.base_url(spec("fe80::1")) == "http://[fe80::1]:8000"
    assert common.base_url(spec("127.0.0.1")) == "http://127.0.0.1:8000"
    assert common.base_url(spec("0.0.0.0")) == "http://127.0.0.1:8000"
    assert common.base_url(spec("::")) == "http://127.0.0.1:8000"


def test_base_url_probes_where_a_host_network_engine_listens(common: ModuleType) -> None:
    """B1: multi-node members publish no port (``ports: []``); the probe uses healthcheck.host."""

    def spec(host: str | None) -> dict[str, Any]:
        health: dict[str, Any] = {"port": 8000, **({"host": host} if host is not None else {})}
        return {"ports": [], "healthcheck": health}

    assert common.base_url(spec("10.0.0.5")) == "http://10.0.0.5:8000"
    assert common.base_url(spec("2001:db8::10")) == "http://[2001:db8::10]:8000"
    assert common.base_url(spec("::1")) == "http://[::1]:8000"
    assert common.base_url(spec("gpu-a.example")) == "http://gpu-a.example:8000"
    for wildcard in ("0.0.0.0", "::", "0:0::0", "", None):
        assert common.base_url(spec(wildcard)) == "http://127.0.0.1:8000", wildcard
    # A published port still wins (bridge network).
    bridge = {"ports": [{"host_ip": "10.0.0.7"}], "healthcheck": {"port": 8000, "host": "10.0.0.5"}}
    assert common.base_url(bridge) == "http://10.0.0.7:8000"


RENDER_INVENTORY = """apiVersion: servespec/v1
kind: Inventory
hosts:
  a: {address: 10.2.0.1, hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 8}, interconnect: nvswitch}}
  b: {address: 10.2.0.2, hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 8}, interconnect: nvswitch}}
  one: {address: 10.2.0.3, hardware: {gpus: {model: NVIDIA L4, count: 1}}}
"""


def _health(tmp_path: Path, hosts: str, serving: str) -> dict[str, dict[str, Any]]:
    """The rendered healthcheck entry of every host of one deployment."""
    from servespec.render import render_fleet
    from servespec.spec.fleet import load_fleet

    (tmp_path / "inventory.yaml").write_text(RENDER_INVENTORY)
    group = ", hosts_per_replica: 2" if "," in hosts else ""
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\ninventory: inventory.yaml\nmetadata: {name: big}\n"
        "model: {source: meta-llama/Llama-3.1-8B-Instruct, revision: 0123456789abcdef0123456789abcdef01234567, "
        "max_model_len: 8192}\n"
        f'engine: {{name: vllm, version: "0.11.0"}}\nplacement: {{hosts: [{hosts}]{group}}}\n{serving}'
    )
    rendered = render_fleet(load_fleet([tmp_path / "spec.yaml"]))
    return {host: container.to_json()["healthcheck"] for (_, host), container in rendered.containers.items()}


@pytest.mark.parametrize(
    ("hosts", "serving", "expected"),
    [
        ("a, b", "serving: {bind: 10.0.0.5}\n", "10.0.0.5"),
        ("a, b", 'serving: {bind: "2001:db8::10"}\n', "2001:db8::10"),
        ("a, b", 'serving: {bind: "::1"}\n', "::1"),
        ("a, b", "", None),  # the default bind: 127.0.0.1 already reaches it, so nothing changes
        ("a, b", "serving: {bind: 0.0.0.0}\n", None),
        ("one", "serving: {bind: 10.0.0.5}\n", None),  # bridge network: the probe reads ports
    ],
)
def test_the_description_names_the_probe_address_of_a_host_network_engine(
    tmp_path: Path, hosts: str, serving: str, expected: str | None
) -> None:
    for health in _health(tmp_path, hosts, serving).values():
        assert health.get("host") == expected


# 10. Host-side names and model roots --------------------------------------------------------------


def test_role_modules_refuse_reserved_and_unsafe_deployment_names(common: ModuleType) -> None:
    for name in ("models", "images", "../etc", "a/b", "", ".", "{{ x }}", "-x"):
        assert common.deployment_problem(name), name
    assert common.deployment_problem("llama-chat") == ""


def test_every_role_module_checks_its_deployment_name() -> None:
    for path in sorted((ROLE / "library").glob("*.py")):
        text = path.read_text()
        if "deployment" in text and path.name != "servespec_collect.py":
            assert "check_deployment(module" in text, path.name


def test_model_paths_must_resolve_inside_the_model_roots(tmp_path: Path, common: ModuleType) -> None:
    root = tmp_path / "srv"
    (root / "models").mkdir(parents=True)
    (root / "models" / "m.gguf").write_text("x")
    (root / "run").symlink_to("/var/run" if Path("/var/run").exists() else "/tmp")
    roots = [str(root)]
    assert common.model_path_problem(str(root / "models" / "m.gguf"), roots) == ""
    assert "outside" in common.model_path_problem(str(root / "run"), roots)
    assert "outside" in common.model_path_problem(str(root / ".." / "x"), roots)
    assert "outside" in common.model_path_problem("/etc", roots)
    assert "does not exist" in common.model_path_problem(str(root / "missing"), roots)


def test_the_role_keeps_no_copy_of_the_model_roots(common: ModuleType) -> None:
    """One definition (spec.models.DEFAULT_MODEL_ROOTS): the role's default is empty and refuses every path."""
    import yaml

    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    options = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert defaults["servespec_model_roots"] == [] and options["servespec_model_roots"]["default"] == []
    preflight = (ROLE / "library" / "servespec_preflight.py").read_text()
    documented = yaml.safe_load(preflight.split('DOCUMENTATION = r"""')[1].split('"""')[0])
    assert documented["options"]["model_roots"]["default"] == []
    assert "MODEL_ROOTS" not in preflight and "/opt/models" not in preflight
    assert "outside the model roots" in common.model_path_problem("/srv/models/m.gguf", [])


def test_secrets_dir_comes_from_the_option_else_the_inventory(tmp_path: Path) -> None:
    from servespec.spec.fleet import load_fleet

    (tmp_path / "inv").mkdir()
    (tmp_path / "inv" / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {secrets_dir: keys}\n"
        "hosts:\n  h1:\n    address: 127.0.0.1\n    hardware: {gpus: {count: 0}, cpus: 2, memory_gib: 8}\n"
    )
    (tmp_path / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: demo}\ninventory: inv/inventory.yaml\n"
        "model: {source: /srv/models/demo.gguf, quantization: gguf, max_model_len: 256}\n"
        "engine: {name: llama.cpp, version: b11434}\nplacement: {hosts: [h1]}\nserving: {port: 8080}\n"
    )
    deployment = load_fleet([tmp_path / "spec.yaml"]).deployments[0]
    assert rollout.secrets_dir(deployment, rollout.ApplyOptions()) == (tmp_path / "inv" / "keys").resolve()
    chosen = tmp_path / "elsewhere"
    assert rollout.secrets_dir(deployment, rollout.ApplyOptions(secrets_dir=chosen)) == chosen
