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
        ("{}", "{address: gpu_01.example}", "hosts.a.address"),
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


@pytest.mark.parametrize("address", ["10.0.0.1", "fd00::1", "gpu-01.example.com", "localhost", "1host"])
def test_real_addresses_are_accepted(tmp_path: Path, address: str) -> None:
    (tmp_path / "inv.yaml").write_text(
        GRAMMAR_INVENTORY.format(defaults="{ssh_user: deploy}", host=f"{{address: '{address}'}}")
    )
    assert run_cli("validate", str(tmp_path / "inv.yaml")).exit_code == 0


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
