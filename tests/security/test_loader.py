"""Issue 9, the loader's part: referenced files stay inside the root, nothing foreign is quoted,
YAML and file reads are bounded, and values follow their grammars."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from servespec.spec.fleet import load_fleet
from servespec.spec.source import load_text
from tests.conftest import run_cli

CANARY = "CANARY_7f3a9c"
FORMATS = ("text", "json", "sarif", "github")

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: demo}}
inventory: {inventory}
model: {{source: Qwen/Qwen2.5-7B-Instruct, max_model_len: 4096{config}}}
engine: {{name: vllm, version: "0.11.0"}}
placement: {{hosts: [a]}}
"""
INVENTORY = """apiVersion: servespec/v1
kind: Inventory
hosts:
  a:
    address: 10.0.0.1
    facts: {facts}
"""
FACTS = '{"version": 1, "host": "a", "hardware": {"gpus": {"model": "NVIDIA L4", "count": 1}}}\n'
FOREIGN = f"{CANARY}_key: {CANARY}_value\nroot:$6$salt$hash:19000:0:99999:7:::\n"
FOREIGN_INVENTORY = f"apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  a: {{ssh_port: {CANARY}, {CANARY}: 1}}\n"


def _checkout(tmp_path: Path, *, inventory: str = "inv.yaml", facts: str = "facts/a.json", config: str = "") -> Path:
    """A checkout (with .git) holding a spec and inventory, and a foreign folder beside it with a canary."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "facts").mkdir()
    (repo / "facts" / "a.json").write_text(FACTS)
    (repo / "inv.yaml").write_text(INVENTORY.format(facts=facts))
    shown_config = f", config: {config}" if config else ""
    (repo / "spec.yaml").write_text(SPEC.format(inventory=inventory, config=shown_config))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text(FOREIGN)
    (outside / "secret.json").write_text(json.dumps({CANARY: CANARY, "hidden_size": CANARY}))
    (outside / "inventory.yaml").write_text(FOREIGN_INVENTORY)
    return repo


def _outputs(*args: str) -> dict[str, tuple[int, str]]:
    out = {}
    for fmt in FORMATS:
        result = run_cli("validate", "--format", fmt, *args)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        out[fmt] = (result.exit_code, result.output)
    return out


def _assert_refused(outputs: dict[str, tuple[int, str]], path: str, foreign: Path) -> None:
    for fmt, (code, output) in outputs.items():
        assert code == 1, (fmt, output)
        assert CANARY not in output, fmt
        assert str(foreign) not in output, fmt
        assert "Errno" not in output, fmt
    findings = json.loads(outputs["json"][1])["findings"]
    refused = [f for f in findings if f["rule"] == "REF002"]
    assert refused and refused[0]["path"] == path, findings
    assert refused[0]["line"] > 1


def test_facts_symlink_out_of_the_checkout_is_refused(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "facts" / "a.json").unlink()
    (repo / "facts" / "a.json").symlink_to(tmp_path / "outside" / "secret.yaml")
    _assert_refused(_outputs(str(repo / "spec.yaml")), "hosts.a.facts", tmp_path / "outside")


def test_facts_dotdot_escape_is_refused(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, facts="../outside/secret.yaml")
    _assert_refused(_outputs(str(repo / "spec.yaml")), "hosts.a.facts", tmp_path / "outside")


def test_absolute_inventory_is_refused(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, inventory=str(tmp_path / "outside" / "inventory.yaml"))
    _assert_refused(_outputs(str(repo / "spec.yaml")), "inventory", tmp_path / "outside")


def test_inventory_symlink_out_is_refused(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, inventory="linked.yaml")
    (repo / "linked.yaml").symlink_to(tmp_path / "outside" / "inventory.yaml")
    _assert_refused(_outputs(str(repo / "spec.yaml")), "inventory", tmp_path / "outside")


def test_model_config_outside_is_refused(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, config="../outside/secret.json")
    _assert_refused(_outputs(str(repo / "spec.yaml")), "model.config", tmp_path / "outside")


def test_model_config_symlink_out_is_refused(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, config="config.json")
    (repo / "config.json").symlink_to(tmp_path / "outside" / "secret.json")
    _assert_refused(_outputs(str(repo / "spec.yaml")), "model.config", tmp_path / "outside")


def test_references_inside_the_checkout_still_work(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, inventory="sub/../inv.yaml")
    (repo / "sub").mkdir()
    (repo / "linked.json").symlink_to("facts/a.json")  # a symlink that stays inside is fine
    (repo / "inv.yaml").write_text(INVENTORY.format(facts="linked.json"))
    result = run_cli("validate", "--format", "json", str(repo / "spec.yaml"))
    assert not [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "REF002"], result.output


def test_without_git_the_root_is_the_named_files_folder(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "inv.yaml").write_text(INVENTORY.format(facts="../facts/a.json"))
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "a.json").write_text(FACTS)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "spec.yaml").write_text(SPEC.format(inventory="../shared/inv.yaml", config=""))
    spec = str(tmp_path / "specs" / "spec.yaml")
    refused = run_cli("validate", "--format", "json", spec)
    assert [f["path"] for f in json.loads(refused.stdout)["findings"] if f["rule"] == "REF002"] == ["inventory"]
    allowed = run_cli("validate", "--format", "json", "--root", str(tmp_path), spec)
    assert not [f for f in json.loads(allowed.stdout)["findings"] if f["rule"] == "REF002"], allowed.output


def test_root_option_narrows_the_checkout(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, inventory="../repo/inv.yaml")
    (repo / "specs").mkdir()
    (repo / "spec.yaml").rename(repo / "specs" / "spec.yaml")
    (repo / "specs" / "spec.yaml").write_text(SPEC.format(inventory="../inv.yaml", config=""))
    spec = str(repo / "specs" / "spec.yaml")
    assert run_cli("validate", spec).exit_code == 0
    narrowed = run_cli("validate", "--format", "json", "--root", str(repo / "specs"), spec)
    assert [f["path"] for f in json.loads(narrowed.stdout)["findings"] if f["rule"] == "REF002"] == ["inventory"]


@pytest.mark.parametrize(
    "command", ["estimate", "render", "plan", "apply", "status", "rollback", "destroy", "discover"]
)
def test_every_loading_command_takes_root(command: str) -> None:
    result = run_cli(command, "--help")
    assert "--root" in result.output


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    result = run_cli("validate", "--root", str(tmp_path / "absent"), str(repo / "spec.yaml"))
    assert result.exit_code == 2
    assert "not a directory" in result.output


def test_directory_expansion_does_not_follow_symlinks_out(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "evil.yaml").symlink_to(tmp_path / "outside" / "secret.yaml")
    (tmp_path / "outside" / "more").mkdir()
    (tmp_path / "outside" / "more" / "x.yaml").write_text(FOREIGN)
    (repo / "linked-dir").symlink_to(tmp_path / "outside" / "more")
    outputs = _outputs(str(repo))
    for fmt, (code, output) in outputs.items():
        assert code == 1, (fmt, output)
        assert CANARY not in output, fmt
    findings = json.loads(outputs["json"][1])["findings"]
    assert [f["file"] for f in findings if f["rule"] == "REF002"] == [str(repo / "evil.yaml")]


def test_fifo_as_model_config_does_not_block(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, config="pipe.json")
    os.mkfifo(repo / "pipe.json")
    deploy = Path(sys.executable).parent / "deploy"
    proc = subprocess.run(
        [str(deploy), "validate", "--format", "json", str(repo / "spec.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert [f["path"] for f in findings if f["rule"] == "REF002"] == ["model.config"]


def test_dev_zero_as_model_config_is_refused_even_under_a_wide_root(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, config=os.path.relpath("/dev/zero", tmp_path / "repo"))
    started = time.monotonic()
    result = run_cli("validate", "--format", "json", "--root", "/", str(repo / "spec.yaml"))
    assert time.monotonic() - started < 30
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    assert [f["path"] for f in findings if f["rule"] == "REF002"] == ["model.config"]


def test_oversized_model_config_is_refused(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, config="config.json")
    (repo / "config.json").write_text('{"pad": "' + "x" * (5 * 1024 * 1024) + '"}')
    findings = json.loads(run_cli("validate", "--format", "json", str(repo / "spec.yaml")).stdout)["findings"]
    assert any(f["path"] == "model.config" and "larger" in f["message"] for f in findings), findings


@pytest.mark.parametrize("text", ['{"num_hidden_layers": Infinity}', "[" * 50_000 + "]" * 50_000])
def test_hostile_model_config_is_a_finding(tmp_path: Path, text: str) -> None:
    repo = _checkout(tmp_path, config="config.json")
    spec = (repo / "spec.yaml").read_text().replace("Qwen/Qwen2.5-7B-Instruct", "acme/in-house-7b")
    (repo / "spec.yaml").write_text(spec)  # not catalogued: the config is the only source of facts
    (repo / "config.json").write_text(text)
    result = run_cli("validate", "--format", "json", str(repo / "spec.yaml"))
    assert result.exit_code == 0, result.output  # a warning (REF003), not a crash
    assert any(f["path"] == "model.config" for f in json.loads(result.stdout)["findings"])


# --- findings about referenced files quote nothing of them ------------------------------


def test_referenced_inventory_values_are_not_quoted(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "inv.yaml").write_text(INVENTORY.format(facts="facts/a.json") + f"    ssh_port: {CANARY}\n")
    (repo / "facts" / "a.json").write_text(
        json.dumps({"version": 1, "host": "a", "hardware": {"pcie_acs": CANARY, "gpus": {"count": 0}}})
    )
    for fmt, (code, output) in _outputs(str(repo / "spec.yaml")).items():
        assert code == 1, fmt
        assert "SS003" in output, fmt
        assert CANARY not in output, fmt


def test_secret_shaped_values_are_never_quoted(tmp_path: Path) -> None:
    token = "hf_" + "Ab1" * 12
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(inventory="inv.yaml", config="").replace("{name: demo}", f"{{name: {token}}}"))
    (tmp_path / "inv.yaml").write_text(f"apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  a: {{{token}: 1}}\n")
    for fmt, (code, output) in _outputs(str(spec), str(tmp_path / "inv.yaml")).items():
        assert code == 1, fmt
        assert token not in output, fmt


def test_long_values_are_elided(tmp_path: Path) -> None:
    long = "Q" * 5000
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(inventory="inv.yaml", config="").replace("{name: demo}", f"{{name: {long}}}"))
    output = run_cli("validate", str(spec)).output
    assert "SS003" in output and "Q" * 100 not in output


# --- one budget per file and per run ----------------------------------------------------


def _bomb(width: int = 9, depth: int = 3) -> str:
    lines = ["a: &a [" + ",".join(["x"] * width) + "]"]
    prev = "a"
    for index in range(depth):
        name = f"n{index}"
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * width) + "]")
        prev = name
    return "\n".join(lines) + "\n"


def test_alias_bombs_split_over_documents_share_one_file_budget() -> None:
    one = _bomb()  # about 8,300 nodes, nearly all through aliases: under the per-document cap
    documents, findings = load_text(one, "f.yaml", Path("f.yaml"))
    assert documents and not findings
    documents, findings = load_text("---\n".join([one] * 40), "f.yaml", Path("f.yaml"))
    assert [f.rule for f in findings] == ["SS001"]
    assert "file" in findings[0].message


def test_aliasing_a_large_scalar_is_counted_in_characters() -> None:
    text = "a: &big " + "y" * 200_000 + "\nb: [" + ",".join(["*big"] * 40) + "]\n"
    _, findings = load_text(text, "f.yaml", Path("f.yaml"))
    assert [f.rule for f in findings] == ["SS001"]
    assert "characters" in findings[0].message


def test_many_documents_stop_with_one_finding() -> None:
    started = time.monotonic()
    _, findings = load_text("---\n" * 200_000, "f.yaml", Path("f.yaml"))
    assert time.monotonic() - started < 10
    assert len(findings) == 1 and findings[0].rule == "SS001"
    assert "documents" in findings[0].message


def test_many_small_scalar_documents_stop_with_one_finding(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_text("--- x\n" * 100_000)
    result = run_cli("validate", str(tmp_path / "f.yaml"))
    assert result.exit_code == 1
    assert result.output.count("\n") < 20


def test_one_budget_per_run(tmp_path: Path) -> None:
    one = _bomb()
    for index in range(30):
        (tmp_path / f"f{index:02}.yaml").write_text(one)
    fleet = load_fleet([tmp_path])
    refused = [f for f in fleet.findings if f.rule == "SS001"]
    assert len(refused) == 1 and "run" in refused[0].message


# --- grammars at validation ------------------------------------------------------------

PAYLOAD = "{{ lookup('pipe', 'id') }}"
GRAMMAR_INVENTORY = "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {defaults}\nhosts:\n  a: {host}\n"


@pytest.mark.parametrize(
    ("defaults", "host", "path"),
    [
        ("{}", f'{{address: "{PAYLOAD}"}}', "hosts.a.address"),
        ("{}", "{address: -oProxyCommand=id}", "hosts.a.address"),
        ("{}", "{address: 'gpu 01'}", "hosts.a.address"),
        ("{}", "{address: _gpu01.example}", "hosts.a.address"),
        ("{}", "{address: 'gpu01..example'}", "hosts.a.address"),
        ("{}", "{address: 'gpu{01}'}", "hosts.a.address"),
        ("{}", "{address: 'gpu%01'}", "hosts.a.address"),
        ("{}", "{address: 'gpu;id'}", "hosts.a.address"),
        ("{}", "{ssh_user: 'svc$x'}", "hosts.a.ssh_user"),
        ("{}", '{ssh_user: "o\'brien"}', "hosts.a.ssh_user"),
        ("{}", "{ssh_user: 'a%u'}", "hosts.a.ssh_user"),
        ("{}", "{ssh_user: 'a b'}", "hosts.a.ssh_user"),
        ("{}", f'{{ssh_user: "{PAYLOAD}"}}', "hosts.a.ssh_user"),
        ("{}", "{ssh_user: -oProxyCommand=id}", "hosts.a.ssh_user"),
        (f'{{ssh_user: "{PAYLOAD}"}}', "{}", "defaults.ssh_user"),
        (f'{{ssh_key: "{PAYLOAD}"}}', "{}", "defaults.ssh_key"),
        ("{ssh_key: -oProxyCommand=id}", "{}", "defaults.ssh_key"),
        ("{}", "{labels: {'bad key': x}}", "hosts.a.labels"),
        ("{}", "{labels: {pool: -x}}", "hosts.a.labels.pool"),
        ("{}", '{labels: {pool: "a\\u202eb"}}', "hosts.a.labels"),
        ("{}", "{hardware: {memory_gib: .nan}}", "hosts.a.hardware.memory_gib"),
        ("{}", "{hardware: {memory_gib: .inf}}", "hosts.a.hardware.memory_gib"),
        ("{}", "{hardware: {cpus: 99999999999999999999999}}", "hosts.a.hardware.cpus"),
    ],
)
def test_inventory_values_follow_their_grammar(tmp_path: Path, defaults: str, host: str, path: str) -> None:
    (tmp_path / "inv.yaml").write_text(GRAMMAR_INVENTORY.format(defaults=defaults, host=host))
    result = run_cli("validate", "--format", "json", str(tmp_path / "inv.yaml"))
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    assert [f["rule"] for f in findings] == ["SS003"], findings
    assert findings[0]["path"].startswith(path), findings
    assert "lookup" not in result.stdout


@pytest.mark.parametrize(
    "address", ["10.0.0.1", "fd00::1", "gpu-01.example.com", "localhost", "1host", "gpu_01.internal", "node1."]
)
def test_real_addresses_are_accepted(tmp_path: Path, address: str) -> None:
    (tmp_path / "inv.yaml").write_text(
        GRAMMAR_INVENTORY.format(defaults="{ssh_user: deploy}", host=f"{{address: '{address}'}}")
    )
    assert run_cli("validate", str(tmp_path / "inv.yaml")).exit_code == 0


@pytest.mark.parametrize("user", ["deploy", "ubuntu@corp", "ubuntu@corp.example.com", "svc$", "_svc", "a.b-c"])
def test_directory_user_names_are_accepted(tmp_path: Path, user: str) -> None:
    """SSSD/AD users (user@domain) and Samba accounts (svc$) log in to real fleets (review B4)."""
    (tmp_path / "inv.yaml").write_text(
        GRAMMAR_INVENTORY.format(defaults=f"{{ssh_user: '{user}'}}", host=f"{{ssh_user: '{user}'}}")
    )
    result = run_cli("validate", str(tmp_path / "inv.yaml"))
    assert result.exit_code == 0, result.output


def test_grammar_predicates_are_the_one_definition() -> None:
    """The rollout imports these instead of keeping its own address and user patterns."""
    from servespec.spec.grammars import is_address, is_key_path, is_user_name

    assert all(is_address(a) for a in ("10.0.0.1", "fd00::1", "gpu_01.internal", "node1.", "h"))
    for bad in ("-oProxyCommand=id", "_x", "a b", "a{b", "a}b", "a%b", "a'b", 'a"b', "a;b", "a$b", "", "a..b", "."):
        assert not is_address(bad), bad
    assert all(is_user_name(u) for u in ("deploy", "ubuntu@corp", "svc$"))
    for bad in ("-x", "a b", "a{b", "a%b", "a'b", "a;b", "a$b", "$", "a`b"):
        assert not is_user_name(bad), bad
    assert is_key_path("~/.ssh/id_ed25519") and not is_key_path("-i") and not is_key_path("%d/key")


GRAMMAR_SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: demo}}
model: {{source: Qwen/Qwen2.5-7B-Instruct, max_model_len: 4096}}
engine: {{name: vllm, version: "0.11.0"}}
"""


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("source: Qwen/Qwen2.5-7B-Instruct", "source: Qwen/Qwen2.5-7B-Instruct --trust-remote-code", "model.source"),
        ("source: Qwen/Qwen2.5-7B-Instruct", "source: --trust-remote-code", "model.source"),
        ("source: Qwen/Qwen2.5-7B-Instruct", "source: Qwen/../etc", "model.source"),
        ("source: Qwen/Qwen2.5-7B-Instruct", "source: 'a/b/c d'", "model.source"),
        ('version: "0.11.0"}', 'version: "0.11.0", image: "--privileged"}', "engine.image"),
        ('version: "0.11.0"}', 'version: "0.11.0", image: "Vllm/Vllm:latest"}', "engine.image"),
        ('version: "0.11.0"}', f'version: "0.11.0", image: "{PAYLOAD}"}}', "engine.image"),
        ('version: "0.11.0"}', 'version: "0.11.0", env: {"BAD-NAME": 1}}', "engine.env.BAD-NAME"),
        ('version: "0.11.0"}', 'version: "0.11.0", options: {max_num_seqs: 1e400}}', "engine.options.max_num_seqs"),
        ('version: "0.11.0"}', 'version: "0.11.0", options: {max_num_seqs: .nan}}', "engine.options.max_num_seqs"),
        (
            'version: "0.11.0"}',
            f'version: "0.11.0", options: {{max_num_seqs: {10**30}}}}}',
            "engine.options.max_num_seqs",
        ),
        ('version: "0.11.0"}', 'version: "0.11.0", options: {"a\\u200bb": 1}}', "engine.options"),
        ("max_model_len: 4096", "max_model_len: 4096, architecture: {layers: 1e400}", "model.architecture.layers"),
        ('version: "0.11.0"}', 'version: "0.11.0"}\nserving: {bind: -oX}', "serving.bind"),
        ('version: "0.11.0"}', "version: \"0.11.0\"}\nserving: {bind: '0.0.0.0 --trust-remote-code'}", "serving.bind"),
        ('version: "0.11.0"}', 'version: "0.11.0"}\nserving: {bind: localhost}', "serving.bind"),
        ('version: "0.11.0"}', 'version: "0.11.0"}\nserving: {bind: gpu-01.internal}', "serving.bind"),
        ('version: "0.11.0"}', 'version: "0.11.0", image: "vllm/Vllm-openai:1"}', "engine.image"),
        ("{name: demo}", "{name: models}", "metadata.name"),
        ("{name: demo}", "{name: images}", "metadata.name"),
        ("{name: demo}", '{name: demo, labels: {team: "\\u202e"}}', "metadata.labels"),
        ("{name: demo}", '{name: demo, labels: {"te\\u2028am": x}}', "metadata.labels"),
    ],
)
def test_spec_values_follow_their_grammar(tmp_path: Path, old: str, new: str, path: str) -> None:
    assert old in GRAMMAR_SPEC
    (tmp_path / "spec.yaml").write_text(GRAMMAR_SPEC.format().replace(old, new))
    result = run_cli("validate", "--format", "json", str(tmp_path / "spec.yaml"))
    assert result.exit_code == 1, result.output
    findings = [f for f in json.loads(result.stdout)["findings"] if f["rule"].startswith("SS")]
    assert [f["rule"] for f in findings] == ["SS003"], findings
    assert findings[0]["path"].startswith(path), findings


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:v0.11.0",
        "registry.internal:5000/lmsysorg/sglang",
        "ghcr.io/huggingface/text-generation-inference@sha256:" + "a" * 64,
        "servespec-llama.cpp:b11434-cpu",
        "[fd00::1]:5000/a/b:c",
    ],
)
def test_real_image_references_are_accepted(image: str) -> None:
    from servespec.spec.grammars import is_image_reference

    assert is_image_reference(image)


@pytest.mark.parametrize(
    "source", ["Qwen/Qwen2.5-7B-Instruct", "qwen2.5:7b", "hf.co/org/model:Q4_K_M", "/models/x.gguf", "gpt2"]
)
def test_real_model_sources_are_accepted(source: str) -> None:
    from servespec.spec.grammars import is_model_source

    assert is_model_source(source)


def test_header_values_of_a_referenced_inventory_are_not_quoted(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "inv.yaml").write_text(f"apiVersion: {CANARY}\nkind: Inventory\nhosts: {{a: {{}}}}\n")
    for fmt, (code, output) in _outputs(str(repo / "spec.yaml")).items():
        assert code == 1 and "SS004" in output, fmt
        assert CANARY not in output, fmt


def test_gpu_model_of_a_facts_file_is_not_quoted(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "facts" / "a.json").write_text(
        json.dumps({"version": 1, "host": "a", "hardware": {"gpus": {"model": CANARY, "count": 1}}})
    )
    for fmt, (_, output) in _outputs(str(repo / "spec.yaml")).items():
        assert "REF003" in output, fmt
        assert CANARY not in output, fmt


def test_directory_expansion_follows_symlinked_folders_that_stay_inside(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "specs").mkdir()
    (repo / "spec.yaml").rename(repo / "specs" / "spec.yaml")
    (repo / "specs" / "spec.yaml").write_text(
        SPEC.format(inventory="../inv.yaml", config="").replace("demo", "bad_name")
    )
    (repo / "alias").symlink_to(repo / "specs")
    (repo / "loop").symlink_to(repo)  # a loop back to the root is walked once
    result = run_cli("validate", "--format", "json", str(repo / "alias"), str(repo / "loop"))
    findings = json.loads(result.stdout)["findings"]
    assert [f["path"] for f in findings if f["rule"] == "SS003"] == ["metadata.name"], findings


def test_values_inside_pydantic_messages_are_cut_and_scrubbed(tmp_path: Path) -> None:
    token = "hf_" + "Zz9" * 12
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        SPEC.format(inventory="inv.yaml", config="") + f"rollout: {{health_timeout: '{token}-{'x' * 3000}'}}\n"
    )
    (tmp_path / "inv.yaml").write_text(INVENTORY.format(facts="facts.json"))
    output = run_cli("validate", str(spec)).output
    assert "SS003" in output and token not in output and "x" * 200 not in output


def test_resolve_inside_refuses_unusable_paths(tmp_path: Path) -> None:
    from servespec.spec.paths import PathRefusedError, resolve_inside

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for reference in ("a\x00b", "loop", "/etc/passwd", "~/x", "../x"):
        with pytest.raises(PathRefusedError):
            resolve_inside(reference, tmp_path, tmp_path)


def test_directory_expansion_skips_dangling_links_and_fifos_inside(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "gone.yaml").symlink_to(repo / "absent.yaml")
    os.mkfifo(repo / "pipe.yaml")
    (repo / "to-pipe.yaml").symlink_to(repo / "pipe.yaml")
    result = run_cli("validate", "--format", "json", str(repo))
    assert result.exit_code == 0, result.output


# --- review of issue 9: the root of a named path, and references the loader missed ----------

FOREIGN_KIND = "S3cretValue42"


def _linked_checkout(tmp_path: Path) -> Path:
    """A checkout with `specs -> ../outside` (holding a foreign value) and `everything -> /`."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "k.yaml").write_text(f"kind: {FOREIGN_KIND}\n")
    (repo / "specs").symlink_to("../outside")
    (repo / "everything").symlink_to("/")
    return repo


@pytest.mark.parametrize(
    "args",
    [
        ["specs"],
        ["--root", ".", "specs"],
        ["specs/k.yaml"],
        ["--root", ".", "specs/k.yaml"],
        ["everything"],
        ["--root", ".", "everything"],
        [".", "specs"],
    ],
)
def test_a_named_symlink_out_of_the_root_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """Review H1: the root comes from the path as named, and a named path that leads out is refused."""
    monkeypatch.chdir(_linked_checkout(tmp_path))
    for fmt in FORMATS:
        result = run_cli("validate", "--format", fmt, *args)
        assert result.exit_code == 2, (fmt, result.output)
        assert FOREIGN_KIND not in result.output, fmt
        assert "outside the root" in result.output, fmt


def test_a_named_inventory_symlink_out_of_the_root_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _linked_checkout(tmp_path)
    (tmp_path / "outside" / "inv.yaml").write_text(FOREIGN_INVENTORY)
    (repo / "spec.yaml").write_text(SPEC.format(inventory="inv.yaml", config=""))
    monkeypatch.chdir(repo)
    for root in ([], ["--root", "."]):
        result = run_cli("validate", "--format", "json", *root, "-i", "specs/inv.yaml", "spec.yaml")
        assert result.exit_code == 2, result.output
        assert CANARY not in result.output and "outside the root" in result.output


def test_a_named_path_inside_the_checkout_through_a_symlink_is_fine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _checkout(tmp_path)
    (repo / "alias.yaml").symlink_to("spec.yaml")
    monkeypatch.chdir(repo)
    result = run_cli("validate", "alias.yaml")
    assert result.exit_code == 0, result.output


def test_a_git_folder_behind_a_symlink_in_the_checkout_is_not_the_root(tmp_path: Path) -> None:
    """`specs -> ../other` where other holds .git: the checkout holding the link stays the root."""
    repo = _linked_checkout(tmp_path)
    (tmp_path / "outside" / ".git").mkdir()
    result = run_cli("validate", str(repo / "specs"))
    assert result.exit_code == 2 and FOREIGN_KIND not in result.output, result.output


def _fleet_without_git(tmp_path: Path) -> Path:
    (tmp_path / "inventory").mkdir(parents=True)
    (tmp_path / "inventory" / "fleet.yaml").write_text(INVENTORY.format(facts="../facts/a.json"))
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "a.json").write_text(FACTS)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "llama.yaml").write_text(SPEC.format(inventory="../inventory/fleet.yaml", config=""))
    return tmp_path


@pytest.mark.parametrize("named", ["specs/llama.yaml", ".", "specs"])
def test_without_git_the_root_is_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str
) -> None:
    """Review B3: without .git, how the files are named must not change the root."""
    monkeypatch.chdir(_fleet_without_git(tmp_path))
    result = run_cli("validate", "--format", "json", named)
    assert result.exit_code == 0, result.output
    assert not [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "REF002"]


def test_without_git_a_path_outside_the_working_directory_keeps_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = _fleet_without_git(tmp_path / "fleet")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = run_cli("validate", "--format", "json", str(checkout / "specs" / "llama.yaml"))
    assert [f["path"] for f in json.loads(result.stdout)["findings"] if f["rule"] == "REF002"] == ["inventory"]


def _archive_spec(repo: Path, archive: str) -> Path:
    spec = repo / "spec.yaml"
    spec.write_text(spec.read_text().replace('version: "0.11.0"}', f'version: "0.11.0", image_archive: "{archive}"}}'))
    return spec


@pytest.mark.parametrize("archive", ["../outside/secret.json", "/etc/passwd", "linked.tar", "images", "absent.tar"])
def test_image_archive_must_be_a_regular_file_inside_the_root(tmp_path: Path, archive: str) -> None:
    """Review M1: engine.image_archive is checked at load (REF002 at its key), like every reference."""
    repo = _checkout(tmp_path)
    (repo / "images").mkdir()
    (repo / "linked.tar").symlink_to(tmp_path / "outside" / "secret.json")
    spec = _archive_spec(repo, archive)
    for fmt, (code, output) in _outputs(str(spec)).items():
        assert code == 1, (fmt, output)
        assert CANARY not in output and str(tmp_path / "outside") not in output, fmt
    findings = json.loads(run_cli("validate", "--format", "json", str(spec)).stdout)["findings"]
    assert [f["path"] for f in findings if f["rule"] == "REF002"] == ["engine.image_archive"], findings


def test_image_archive_is_only_looked_at(tmp_path: Path) -> None:
    """A multi-gigabyte archive passes at once: it is stat'ed, never read, and has no size bound."""
    repo = _checkout(tmp_path)
    (repo / "images").mkdir()
    with (repo / "images" / "engine.tar").open("wb") as sparse:
        sparse.truncate(8 * 1024**3)
    spec = _archive_spec(repo, "images/engine.tar")
    started = time.monotonic()
    result = run_cli("validate", "--format", "json", str(spec))
    assert time.monotonic() - started < 30
    assert not [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "REF002"], result.output


def test_default_root_and_resolve_inside_suit_the_rollout(tmp_path: Path) -> None:
    """What apply calls for the archive: resolve_inside(archive, document.path.parent, document.root)."""
    from servespec.spec.paths import PathRefusedError, default_root, resolve_inside

    repo = _checkout(tmp_path)
    (repo / "images").mkdir()
    (repo / "images" / "a.tar").write_text("tar")
    fleet = load_fleet([_archive_spec(repo, "images/a.tar")])
    document = fleet.deployments[0].document
    assert document.root == repo.resolve() == default_root(document.path)
    assert resolve_inside("images/a.tar", document.path.parent, document.root) == repo / "images" / "a.tar"
    with pytest.raises(PathRefusedError):
        resolve_inside("../outside/secret.json", document.path.parent, document.root)


@pytest.mark.parametrize("field", ["facts", "inventory"])
def test_a_reference_through_a_symlink_to_an_unsafe_file_name_is_refused(tmp_path: Path, field: str) -> None:
    """Review LOW: the target's name would reach findings, like a named file's; it is refused the same way."""
    repo = _checkout(tmp_path)
    bad = "x\n::error::forged\u202e.json"
    if field == "facts":
        (repo / "facts" / "a.json").rename(repo / "facts" / bad)
        (repo / "facts" / "a.json").symlink_to(bad)
        where = "hosts.a.facts"
    else:
        (repo / "inv.yaml").rename(repo / bad)
        (repo / "inv.yaml").symlink_to(bad)
        where = "inventory"
    for fmt, (code, output) in _outputs(str(repo / "spec.yaml")).items():
        assert code == 1, (fmt, output)
        assert "forged" not in output, fmt
    findings = json.loads(run_cli("validate", "--format", "json", str(repo / "spec.yaml")).stdout)["findings"]
    assert [f["path"] for f in findings if f["rule"] == "REF002"] == [where], findings


@pytest.mark.parametrize(("image", "valid"), [("Vllm/x:1", True), ("vllm/X:1", False), ("Vllm:1", False)])
def test_image_case_follows_distribution_reference(image: str, valid: bool) -> None:
    """Upper case only in the registry host: distribution/reference's splitDockerDomain takes an
    upper-case first component for a domain ("Vllm/x:1" pulls x from registry Vllm); path
    components, and a lone name, must be lower case."""
    from servespec.spec.grammars import is_image_reference

    assert is_image_reference(image) is valid


def test_an_inventory_the_operator_names_outside_root_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--root . -i /ci/inventory.yaml`: a path named outside --root is the operator's choice, with its own root."""
    repo = _checkout(tmp_path)
    ci = tmp_path / "ci"
    (ci / "facts").mkdir(parents=True)
    (ci / "facts" / "a.json").write_text(FACTS)
    (ci / "inventory.yaml").write_text(INVENTORY.format(facts="facts/a.json"))
    monkeypatch.chdir(repo)
    result = run_cli("validate", "--root", ".", "-i", str(ci / "inventory.yaml"), "spec.yaml")
    assert result.exit_code == 0, result.output
    # Its own references still stay inside its own folder.
    (ci / "inventory.yaml").write_text(INVENTORY.format(facts="../repo/facts/a.json"))
    result = run_cli("validate", "--format", "json", "--root", ".", "-i", str(ci / "inventory.yaml"), "spec.yaml")
    assert result.exit_code == 1 and "REF002" in result.output, result.output
