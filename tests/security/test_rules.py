"""Issue 9, rules and renderers: binds, cluster ports, model mounts, secrets on command lines, trust_remote_code.

Each test fails on the code before its fix (the commit that added it says which item).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from servespec.findings import Severity
from servespec.render import render_fleet
from servespec.render.common import UnsafeModelPathError
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet

INVENTORY = """apiVersion: servespec/v1
kind: Inventory
defaults: {ssh_user: deploy}
hosts:
  a:
    address: 10.2.0.1
    hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 8}, interconnect: nvswitch}
  b:
    address: 10.2.0.2
    hardware: {gpus: {model: NVIDIA H100 80GB HBM3, count: 8}, interconnect: nvswitch}
  one:
    address: 10.2.0.3
    hardware: {gpus: {model: NVIDIA L4, count: 1}}
"""
PINNED = "0123456789abcdef0123456789abcdef01234567"
SECRET = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def _fleet(tmp_path: Path, body: str) -> Fleet:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    spec = tmp_path / "spec.yaml"
    spec.write_text("apiVersion: servespec/v1\nkind: Deployment\ninventory: inventory.yaml\n" + body)
    return load_fleet([spec])


def _multi_node(engine: str, version: str, serving: str = "") -> str:
    return (
        "metadata: {name: big}\n"
        f"model: {{source: meta-llama/Llama-3.1-405B-Instruct, revision: {PINNED}, quantization: fp8, "
        "max_model_len: 8192}\n"
        f'engine: {{name: {engine}, version: "{version}"}}\n'
        "resources: {tensor_parallel: 8, pipeline_parallel: 2}\n"
        "placement: {hosts: [a, b], hosts_per_replica: 2}\n" + serving
    )


def _containers(fleet: Fleet) -> dict[str, dict[str, Any]]:
    return {host: description.to_json() for (_, host), description in render_fleet(fleet).containers.items()}


# Item 1: multi-node replicas honour serving.bind; cluster ports are named by NET002.


@pytest.mark.parametrize(("engine", "version"), [("vllm", "0.11.0"), ("vllm", "0.33.0"), ("sglang", "0.5.23")])
def test_multi_node_engine_listens_on_serving_bind(tmp_path: Path, engine: str, version: str) -> None:
    fleet = _fleet(tmp_path, _multi_node(engine, version))
    files = render_fleet(fleet).files
    leader_config = files["big/a/config.yaml"]
    assert "host: 127.0.0.1\n" in leader_config  # the default bind, not 0.0.0.0 on the host's network
    assert "0.0.0.0" not in "".join(files.values())


def test_multi_node_bind_follows_the_spec(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, _multi_node("vllm", "0.33.0", "serving: {bind: 10.2.0.1}\n"))
    assert "host: 10.2.0.1\n" in render_fleet(fleet).files["big/a/config.yaml"]


def test_single_host_still_listens_on_all_container_interfaces_behind_the_port_mapping(tmp_path: Path) -> None:
    body = (
        f"metadata: {{name: small}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        'max_model_len: 4096}\nengine: {name: vllm, version: "0.11.0"}\nplacement: {hosts: [one]}\n'
    )
    fleet = _fleet(tmp_path, body)
    description = _containers(fleet)["one"]
    assert description["network_mode"] == "bridge"
    assert description["ports"][0]["host_ip"] == "127.0.0.1"
    assert "host: 0.0.0.0\n" in render_fleet(fleet).files["small/one/config.yaml"]


def test_ray_members_advertise_their_inventory_address(tmp_path: Path) -> None:
    containers = _containers(_fleet(tmp_path, _multi_node("vllm", "0.11.0")))
    assert "--node-ip-address=10.2.0.1" in containers["a"]["command"][0]
    assert containers["b"]["command"][-1] == "--node-ip-address=10.2.0.2"


@pytest.mark.parametrize("version", ["0.11.0", "0.33.0"])
def test_vllm_members_use_their_inventory_address(tmp_path: Path, version: str) -> None:
    containers = _containers(_fleet(tmp_path, _multi_node("vllm", version)))
    assert [containers[h]["environment"].get("VLLM_HOST_IP") for h in ("a", "b")] == ["10.2.0.1", "10.2.0.2"]


@pytest.mark.parametrize(
    ("engine", "version", "words"),
    [
        ("vllm", "0.11.0", ("Ray's head port 10.2.0.1:6379", "run code", "cannot limit")),
        ("vllm", "0.33.0", ("TCPStore on 10.2.0.1:29500", "every interface")),
        ("sglang", "0.5.23", ("TCPStore on 10.2.0.1:20000", "--dist-init-addr", "every interface")),
    ],
)
def test_net002_names_cluster_ports(tmp_path: Path, engine: str, version: str, words: tuple[str, ...]) -> None:
    findings = [f for f in check_fleet(_fleet(tmp_path, _multi_node(engine, version))) if f.rule == "NET002"]
    assert len(findings) == 1
    assert findings[0].severity == Severity.WARNING
    assert all(word in findings[0].message for word in words), findings[0].message


def test_net002_cluster_ports_match_the_renderers() -> None:
    from servespec.engines import get, sglang, vllm
    from servespec.engines.sglang import render as sglang_render
    from servespec.engines.vllm import render as vllm_render

    ray, torch = get("vllm").cluster(None), get("vllm").cluster(get("vllm").select("0.33.0").release)
    assert (ray.kind, ray.port, torch.kind, torch.port) == ("ray", vllm.RAY_PORT, "torch", vllm.MASTER_PORT)
    assert get("sglang").cluster(None).port == sglang.DIST_PORT
    assert (vllm_render.RAY_PORT, vllm_render.MASTER_PORT, sglang_render.DIST_PORT) == (
        vllm.RAY_PORT,
        vllm.MASTER_PORT,
        sglang.DIST_PORT,
    )


def test_cluster_ports_have_one_definition() -> None:
    # Review of issue 9, item 5: one definition each, in the engine's unit; rules and renderers import them.
    import re

    source = Path(__file__).parents[2] / "src" / "servespec"
    pattern = re.compile(r"^(RAY_PORT|MASTER_PORT|DIST_PORT)\s*=", re.MULTILINE)
    defining = sorted(
        (str(path.relative_to(source)), name)
        for path in source.rglob("*.py")
        for name in pattern.findall(path.read_text())
    )
    assert defining == [
        ("engines/sglang/__init__.py", "DIST_PORT"),
        ("engines/vllm/__init__.py", "MASTER_PORT"),
        ("engines/vllm/__init__.py", "RAY_PORT"),
    ]


def test_multi_node_public_bind_without_key_is_reported(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, _multi_node("sglang", "0.5.23", "serving: {bind: 0.0.0.0}\n"))
    messages = [f.message for f in check_fleet(fleet) if f.rule == "NET002"]
    assert any("listens on 0.0.0.0 without an API key" in m for m in messages)


# Item 6: IPv6 binds.


def test_ipv6_bind_renders_a_bracketed_docker_mapping(tmp_path: Path) -> None:
    body = (
        f"metadata: {{name: small}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        'max_model_len: 4096}\nengine: {name: vllm, version: "0.11.0"}\nplacement: {hosts: [one]}\n'
        'serving: {bind: "::1"}\n'
    )
    readme = render_fleet(_fleet(tmp_path, body)).files["small/README.md"]
    assert "-p '[::1]:8000:8000'" in readme or "-p [::1]:8000:8000" in readme
    assert "::1:8000:8000" not in readme.replace("[::1]:8000:8000", "")


@pytest.mark.parametrize(("bind", "exposed"), [("::1", False), ("::", True), ("0:0:0:0:0:0:0:1", False)])
def test_net002_ipv6_loopback(tmp_path: Path, bind: str, exposed: bool) -> None:
    body = (
        f"metadata: {{name: small}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        'max_model_len: 4096}\nengine: {name: vllm, version: "0.11.0"}\nplacement: {hosts: [one]}\n'
        f'serving: {{bind: "{bind}"}}\n'
    )
    findings = [f for f in check_fleet(_fleet(tmp_path, body)) if f.rule == "NET002"]
    assert bool(findings) is exposed


# Item 2: local model sources stay under the model roots, in the rule and in the renderer.


@pytest.mark.parametrize("source", ["/var/run", "/srv/../var/run/x.gguf", "./model.gguf", "~/m.gguf", "/"])
def test_renderer_refuses_to_mount_outside_the_model_roots(tmp_path: Path, source: str) -> None:
    body = (
        f"metadata: {{name: local}}\nmodel: {{source: '{source}', gguf_type: Q4_K_M, max_model_len: 4096}}\n"
        "engine: {name: llama.cpp, version: b11312}\nplacement: {hosts: [one]}\n"
    )
    fleet = _fleet(tmp_path, body)
    assert any(f.rule == "SEC004" for f in check_fleet(fleet))
    with pytest.raises(UnsafeModelPathError):
        render_fleet(fleet)


def test_a_root_of_slash_is_never_honoured(tmp_path: Path) -> None:
    from servespec.hostpaths import local_source_problem

    assert local_source_problem("/var/run", ["/"])
    assert not local_source_problem("//srv/./m.gguf", ["/srv/"])


# Item 3: SEC001 in every field and spelling; other rules never echo what it protects.


def test_eng_messages_never_echo_secrets(tmp_path: Path) -> None:
    body = (
        f"metadata: {{name: small}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        'max_model_len: 4096}\nengine:\n  name: vllm\n  version: "0.11.0"\n'
        f"  options: {{max_num_seqs: {SECRET}, hf_tokn: plain-secret-words}}\n"
        f"  extra_args: [--{SECRET}]\nplacement: {{hosts: [one]}}\n"
    )
    findings = check_fleet(_fleet(tmp_path, body))
    assert {"SEC001", "ENG001", "ENG002"} <= {f.rule for f in findings}
    for finding in findings:
        assert SECRET not in finding.message + finding.hint, finding


def test_inventory_secret_named_label_is_reported(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(
        INVENTORY.replace("address: 10.2.0.3", "address: 10.2.0.3\n    labels: {api_key: abc}")
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\ninventory: inventory.yaml\nmetadata: {name: s}\n"
        f"model: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, max_model_len: 4096}}\n"
        'engine: {name: vllm, version: "0.11.0"}\nplacement: {hosts: [one]}\n'
    )
    findings = [f for f in check_fleet(load_fleet([spec])) if f.rule == "SEC001"]
    assert [Path(f.file).name for f in findings] == ["inventory.yaml"]
    assert "abc" not in findings[0].message


# Item 4: SGLang's key is never on a command line or in a rendered file.


def test_sglang_key_is_not_on_any_command_line(tmp_path: Path) -> None:
    body = (
        f"metadata: {{name: sg}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        'max_model_len: 4096}\nengine: {name: sglang, version: "0.5.23"}\nplacement: {hosts: [one]}\n'
        "serving: {api_key: {from_env: SG_KEY}}\n"
    )
    description = _containers(_fleet(tmp_path, body))["one"]
    argv = [*description["entrypoint"], *description["command"]]
    assert "--api-key" not in argv  # neither literal nor a shell expansion that puts it in argv
    assert not any("$SERVESPEC_API_KEY" in word for word in argv)
    assert description["secret_environment"] == {"SERVESPEC_API_KEY": {"from_env": "SG_KEY"}}


def test_sglang_launcher_adds_the_key_in_process_only(tmp_path: Path) -> None:
    import subprocess
    import sys

    from servespec.engines.sglang.render import KEY_LAUNCHER

    package = tmp_path / "sglang"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "launch_server.py").write_text(
        "import json, os, sys\n"
        "if __name__ == '__main__':\n"
        "    cmdline = open('/proc/self/cmdline').read().split(chr(0))\n"
        "    print(json.dumps([sys.argv[1:], cmdline, 'SERVESPEC_API_KEY' in os.environ]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", KEY_LAUNCHER, "--config", "/etc/servespec/config.yaml"],
        cwd=tmp_path,
        env={"SERVESPEC_API_KEY": "s3cret-words", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    import json

    argv, cmdline, still_in_env = json.loads(done.stdout)
    assert argv == ["--config", "/etc/servespec/config.yaml", "--api-key", "s3cret-words"]
    assert "s3cret-words" not in " ".join(cmdline)
    assert still_in_env is False


# Item 5: trust_remote_code.


@pytest.mark.parametrize(("revision", "severity"), [(PINNED, Severity.WARNING), ("main", Severity.ERROR)])
def test_trust_remote_code_severity(tmp_path: Path, revision: str, severity: Severity) -> None:
    body = (
        f"metadata: {{name: small}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {revision}, "
        'max_model_len: 4096}\nengine:\n  name: sglang\n  version: "0.5.23"\n'
        "  extra_args: [--trust-remote-code]\nplacement: {hosts: [one]}\n"
    )
    findings = [f for f in check_fleet(_fleet(tmp_path, body)) if f.rule == "SEC005"]
    assert [f.severity for f in findings] == [severity]


@pytest.mark.parametrize(("engine", "version"), [("vllm", "0.11.0"), ("tensorrt-llm", "1.2.1")])
def test_a_source_read_as_a_flag_is_never_rendered(tmp_path: Path, engine: str, version: str) -> None:
    # vLLM and trtllm-serve take the model as a positional word, where "--trust-remote-code" would be an
    # option. The loader refuses such sources; the renderer refuses them again (defence in depth).
    from servespec.render.environment import RenderError

    body = (
        f"metadata: {{name: small}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        f'max_model_len: 4096}}\nengine: {{name: {engine}, version: "{version}"}}\nplacement: {{hosts: [one]}}\n'
    )
    fleet = _fleet(tmp_path, body)
    assert _containers(fleet)["one"]["command"]
    model = fleet.deployments[0].spec.model
    object.__setattr__(model, "source", "--trust-remote-code")
    with pytest.raises(RenderError):
        render_fleet(fleet)


def test_tgi_key_reaches_only_the_router_through_its_environment(tmp_path: Path) -> None:
    import json
    import subprocess

    from servespec.engines.tgi import render as tgi

    router = tmp_path / "real-router"
    router.write_text('#!/bin/sh\nprintf \'%s\\n\' "router API_KEY=$API_KEY args=$*" >> "$OUT"\n')
    launcher = tmp_path / "entrypoint.sh"
    # Stands in for /tgi-entrypoint.sh + text-generation-launcher: logs what the launcher would see
    # (its environment's API_KEY and its argv), then spawns the router by name as spawn_webserver does.
    launcher.write_text(
        "#!/bin/bash\n"
        'printf \'%s\\n\' "launcher API_KEY=${API_KEY:-unset} args=$*" >> "$OUT"\n'
        "text-generation-router --port 80\n"
    )
    router.chmod(0o755)
    launcher.chmod(0o755)
    script = tgi.KEY_WRAPPER.replace(tgi.ROUTER, str(router)).replace(tgi.ENTRYPOINT, str(launcher))
    out = tmp_path / "out.txt"
    env = {"SERVESPEC_API_KEY": "s3cret-words", "PATH": "/usr/bin:/bin", "OUT": str(out)}
    subprocess.run(["/bin/bash", "-c", script, "tgi", "--json-output"], env=env, check=True, timeout=30)
    lines = out.read_text().splitlines()
    assert lines == [
        "launcher API_KEY=unset args=--json-output",
        "router API_KEY=s3cret-words args=--port 80",
    ], json.dumps(lines)


def test_tgi_container_with_a_key_puts_it_on_no_command_line(tmp_path: Path) -> None:
    body = (
        f"metadata: {{name: tg}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        'max_model_len: 4096}\nengine: {name: tgi, version: "3.3.7"}\nplacement: {hosts: [one]}\n'
        "serving: {api_key: {from_env: TG_KEY}}\n"
    )
    description = _containers(_fleet(tmp_path, body))["one"]
    assert description["secret_environment"] == {"SERVESPEC_API_KEY": {"from_env": "TG_KEY"}}
    assert "API_KEY" not in description["environment"]
    assert "--api-key" not in [*description["entrypoint"], *description["command"]]


def test_render_refuses_a_suppressed_sec004_source(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    body = (
        "metadata: {name: local}\nmodel: {source: /var/run/x.gguf, quantization: gguf, gguf_type: Q4_K_M, "
        "max_model_len: 4096}\n"
        "engine: {name: llama.cpp, version: b11312}\nplacement: {hosts: [one]}\n"
        "suppress:\n  - {rule: SEC004, reason: testing the renderer's own refusal}\n"
    )
    _fleet(tmp_path, body)
    result = run_cli("render", str(tmp_path / "spec.yaml"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "model.source: /var/run would expose /var/run" in result.output
    assert not (tmp_path / "out" / "local").exists()


def test_facts_documents_are_scanned_too(tmp_path: Path) -> None:
    inventory = INVENTORY.replace("address: 10.2.0.3", "address: 10.2.0.3\n    facts: one.facts.yaml")
    (tmp_path / "inventory.yaml").write_text(inventory)
    facts = tmp_path / "one.facts.yaml"
    facts.write_text(
        "version: 1\nhost: one\ncollected_at: '2026-11-30T00:00:00Z'\n"
        f"hardware: {{gpus: {{model: NVIDIA L4 {SECRET}, count: 1}}}}\n"
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\ninventory: inventory.yaml\nmetadata: {name: s}\n"
        f"model: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, max_model_len: 4096}}\n"
        'engine: {name: vllm, version: "0.11.0"}\nplacement: {hosts: [one]}\n'
    )
    fleet = load_fleet([spec])
    if not any(host.facts_document for inv in fleet.inventories for host in inv.hosts.values()):
        pytest.skip(f"facts file did not load: {[f.message for f in fleet.findings]}")
    findings = [f for f in check_fleet(fleet) if f.rule == "SEC001"]
    assert [Path(f.file).name for f in findings] == ["one.facts.yaml"]


def test_no_rule_message_quotes_a_token_shaped_value(tmp_path: Path) -> None:
    # The model source reaches several rules' messages (catalog lookups, SEC003); none may quote the token.
    body = (
        f"metadata: {{name: small}}\nmodel: {{source: 'org/{SECRET}', max_model_len: 4096}}\n"
        'engine: {name: vllm, version: "0.11.0"}\nplacement: {hosts: [one]}\n'
    )
    fleet = _fleet(tmp_path, body)
    findings = check_fleet(fleet)
    assert findings
    for finding in findings:
        assert SECRET not in finding.message + finding.hint, finding


def test_net002_does_not_invent_cluster_facts_for_other_engines(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, _multi_node("tensorrt-llm", "1.2.1"))
    messages = [f.message for f in check_fleet(fleet) if f.rule == "NET002" and "multi-node" in f.message]
    assert messages and all("TCPStore" not in m and "servespec neither chooses nor restricts" in m for m in messages)


@pytest.mark.parametrize("source", ["/var/run/models", "/var", "/etc/models", "/home", "/var/lib/servespec/x.gguf"])
def test_system_folders_are_never_mounted_even_when_a_root_allows_them(source: str) -> None:
    from servespec.hostpaths import local_source_problem

    assert "would expose" in local_source_problem(source, ["/var", "/etc", "/home", "/var/lib/servespec"])


def test_model_roots_still_allow_their_own_folders() -> None:
    from servespec.hostpaths import local_source_problem

    roots = ["/var/lib/servespec/models", "/home/alice/models", "/srv"]
    for source in ("/var/lib/servespec/models/m.gguf", "/home/alice/models/q", "/srv/models/x.gguf"):
        assert local_source_problem(source, roots) == "", source


def test_a_spec_that_fails_validation_is_still_scanned(tmp_path: Path) -> None:
    body = (
        f"metadata: {{name: broken, labels: {{ci: {SECRET}}}}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct}}\n"
        'engine: {name: vllm, version: "0.11.0", no_such_field: 1}\nplacement: {hosts: [one]}\n'
        "serving: {api_key: sk-prod-4f9a2c7e1b8d4f9a}\n"
    )
    fleet = _fleet(tmp_path, body)
    assert not fleet.deployments
    findings = [f for f in check_fleet(fleet) if f.rule == "SEC001"]  # loader findings included
    assert sorted(f.line for f in findings) == [4, 8]  # the label, and the loader's api_key finding (once)


# Review of issue 9, item 1: every user value a rule message quotes is bounded, escaped and masked.

LONG = "a" * 5000


def _small(model: str = "", engine: str = "", version: str = "0.11.0") -> str:
    return (
        f"metadata: {{name: small}}\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, revision: {PINNED}, "
        f"max_model_len: 4096{model}}}\nengine:\n  name: vllm\n  version: {version!r}\n{engine}"
        "placement: {hosts: [one]}\n"
    )


@pytest.mark.parametrize(
    ("rule", "body"),
    [
        ("ENG001", _small(engine=f"  options:\n    ? {LONG}\n    : 1\n")),  # a long key must be explicit
        ("ENG001", _small(engine=f"  extra_args: [--{LONG}]\n")),
        ("ENG002", _small(engine=f"  options: {{kv_cache_dtype: {LONG}}}\n")),
        ("ENG002", _small(engine=f"  options: {{kv_cache_dtype: hf_{LONG}}}\n")),
        ("ENG001", _small(version=f"0.12.0-{LONG}")),
        ("ENG001", _small(version=f"0.44.0-{LONG}")),
        ("SEC003", _small().replace(f"revision: {PINNED}", f"revision: {LONG}")),
        ("SEC003", _small().replace(f"revision: {PINNED}", f"revision: {SECRET}x")),
        ("SEC004", _small().replace("Qwen/Qwen2.5-7B-Instruct", f"./{LONG}")),
        ("SEC004", _small().replace("Qwen/Qwen2.5-7B-Instruct", f"/srv/m/../{LONG}")),
        ("SEC004", _small().replace("Qwen/Qwen2.5-7B-Instruct", f"/etc/{LONG}")),
        ("SEC004", _small().replace("Qwen/Qwen2.5-7B-Instruct", f"/opt/{LONG}")),
    ],
)
def test_rule_messages_quote_long_values_cut(tmp_path: Path, rule: str, body: str) -> None:
    findings = [f for f in check_fleet(_fleet(tmp_path, body)) if f.rule == rule]
    assert findings, rule
    for finding in findings:
        assert len(finding.message) < 300 and len(finding.hint) < 300, finding
        assert "a" * 61 not in finding.message + finding.hint
        assert SECRET[:12] not in finding.message + finding.hint


def test_quoted_values_are_escaped_and_masked() -> None:
    from servespec.rules.base import bare, quoted

    assert quoted("a\x1b[31m\u202e") == "'a\\x1b[31m\\u202e'"
    assert quoted(12345678901234, "API_KEY") == "'***'"
    assert quoted({"api_key": "abc"}) == "'***'"
    assert bare("Qwen/Qwen2.5-7B-Instruct") == "Qwen/Qwen2.5-7B-Instruct"
    assert bare(LONG).endswith("...") and len(bare(LONG)) <= 60


@pytest.mark.parametrize(
    ("engine", "source"),
    [("vllm", "m" * 80 + ":" + "t" * 80), ("ollama", "r" * 300 + "/ns/" + "m" * 80 + ":" + "t" * 80)],
)
def test_source_format_messages_quote_the_source_cut(tmp_path: Path, engine: str, source: str) -> None:
    body = _small().replace("Qwen/Qwen2.5-7B-Instruct", source).replace("name: vllm", f"name: {engine}")
    body = body.replace("'0.11.0'", "'0.32.15'") if engine == "ollama" else body
    findings = [f for f in check_fleet(_fleet(tmp_path, body)) if "Ollama" in f.message]
    assert findings
    assert all("m" * 61 not in f.message and "r" * 61 not in f.message for f in findings), findings


# Review of issue 9, item 2: SEC001 flags every literal of a secret-named key, whatever its type.


@pytest.mark.parametrize(
    "engine",
    [
        "  extra_args: [--api-key, '$VLLM_KEY']\n",
        "  extra_args: ['--api-key={literal}']\n",
        "  extra_args: [--api-key, '1234.5678']\n",
        "  env: {API_KEY: 12345678901234}\n",
        "  env: {API_KEY: '$HOME'}\n",
        "  env: {HF_TOKEN: 1234.5678}\n",
        "  options: {api_key: 87654321}\n",
    ],
)
def test_sec001_flags_literals_of_every_type(tmp_path: Path, engine: str) -> None:
    findings = [f for f in check_fleet(_fleet(tmp_path, _small(engine=engine))) if f.rule == "SEC001"]
    assert len(findings) == 1, engine
    assert not any(word in findings[0].message for word in ("VLLM_KEY", "literal}", "1234", "HOME", "8765"))


@pytest.mark.parametrize(
    "engine",
    [
        "  env: {MAX_BATCH_PREFILL_TOKENS: '4096'}\n",
        "  env: {HF_HUB_DISABLE_IMPLICIT_TOKEN: '1'}\n",
        "  env: {HF_TOKEN: ''}\n",
        "  extra_args: [--hf-token, 'true']\n",
        "  extra_args: [--hf-token]\n",
        "  options: {max_num_batched_tokens: 8192}\n",
    ],
)
def test_sec001_leaves_settings_and_switches_alone(tmp_path: Path, engine: str) -> None:
    findings = [f for f in check_fleet(_fleet(tmp_path, _small(engine=engine))) if f.rule == "SEC001"]
    assert findings == [], engine


# Review of issue 9, item 3: SEC005 reads 0, "0", "no", "off" as off, as the engines parse their flags.


@pytest.mark.parametrize(
    ("engine", "on"),
    [
        ("  options: {trust_remote_code: 0}\n", False),
        ("  options: {trust_remote_code: 0.0}\n", False),
        ("  options: {trust_remote_code: '0'}\n", False),
        ("  options: {trust_remote_code: 'Off'}\n", False),
        ("  env: {TRUST_REMOTE_CODE: 'no'}\n", False),
        ("  env: {TRUST_REMOTE_CODE: 'false'}\n", False),
        ("  extra_args: [--trust-remote-code=0]\n", False),
        ("  options: {trust_remote_code: 1}\n", True),
        ("  env: {TRUST_REMOTE_CODE: 'yes'}\n", True),
        ("  extra_args: [--trust-remote-code]\n", True),
    ],
)
def test_sec005_reads_off_spellings_as_off(tmp_path: Path, engine: str, on: bool) -> None:
    findings = [f for f in check_fleet(_fleet(tmp_path, _small(engine=engine))) if f.rule == "SEC005"]
    assert len(findings) == int(on), engine


# Review of issue 9, item 4: invisible characters that text.UNSAFE missed.

INVISIBLE = ["\U000e0041", "\U000e007f", "\U000e0000", "\u00ad", "\u180e", "\u115f", "\u1160", "\u3164", "\uffa0"]


@pytest.mark.parametrize("char", [*INVISIBLE, "\u2061", "\u2064"])
def test_invisible_characters_are_unsafe_and_escaped(char: str) -> None:
    from servespec.text import UNSAFE, printable, unsafe_character

    assert UNSAFE.search(f"a{char}b")
    assert unsafe_character(f"a{char}b") == f"U+{ord(char):04X}"
    shown = printable(f"a{char}b")
    assert not UNSAFE.search(shown) and shown.isascii()
    assert shown.encode().decode("unicode_escape") == f"a{char}b"  # an unambiguous escape (\\U for astral)


@pytest.mark.parametrize("char", INVISIBLE)
def test_loader_refuses_invisible_characters_in_values(tmp_path: Path, char: str) -> None:
    fleet = _fleet(tmp_path, _small().replace("name: small", f"name: small, labels: {{team: 'ml{char}ops'}}"))
    assert not fleet.deployments
    assert fleet.findings and all(char not in f.message for f in fleet.findings)


def test_sec001_and_sec004_messages_cut_long_keys_flags_and_roots(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(
        INVENTORY.replace(
            "defaults: {ssh_user: deploy}", f"defaults: {{ssh_user: deploy, model_roots: {['/' + LONG] * 20}}}"
        )
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\ninventory: inventory.yaml\n"
        + _small(
            engine=f"  options:\n    ? {'b' * 1000}_api_key\n    : abc\n  extra_args: [--{'c' * 1000}-api-key, xyz]\n"
        ).replace("Qwen/Qwen2.5-7B-Instruct", "/opt/m")
    )
    findings = [f for f in check_fleet(load_fleet([spec])) if f.rule in ("SEC001", "SEC004")]
    assert sorted({f.rule for f in findings}) == ["SEC001", "SEC004"]
    for finding in findings:
        assert len(finding.message) < 1000, finding.message
        assert not any(c * 61 in finding.message for c in "abc"), finding.message
