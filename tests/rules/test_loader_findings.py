"""Issue 10, item 5: the loader's findings are owned once, REF003 does not repeat REF002, and no
finding message carries the operating system's error text or an absolute path."""

from __future__ import annotations

import ast
import errno
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

import servespec.spec.fleet
from servespec.findings import Finding
from servespec.rules import RULES_BY_ID
from servespec.rules.base import Rule
from servespec.rules.runner import check_fleet
from servespec.spec import paths
from servespec.spec.fleet import MODEL_CONFIG, load_fleet
from servespec.spec.loader_rules import LOADER_RULES, LoaderRule

SPEC_DIR = Path(servespec.spec.fleet.__file__).parent

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: in-house}}
inventory: {inventory}
model:
  source: acme/support-bot-7b
  config: {config}
  max_model_len: 4096
engine: {{name: vllm, version: "0.11.0"{archive}}}
placement: {{hosts: [{host}]}}
"""
INVENTORY = """apiVersion: servespec/v1
kind: Inventory
hosts:
  a:
    address: 10.0.0.1
    facts: {facts}
"""
FACTS = '{"version": 1, "host": "a", "hardware": {"gpus": {"model": "NVIDIA L4", "count": 1}}}\n'
CONFIG = (
    '{"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,'
    ' "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064}\n'
)
OS_TEXTS = ("Errno", "No such file", "Permission denied", "Is a directory", "Not a directory", "Too many levels")


# --- one declaration per loader rule ---------------------------------------------------


@pytest.mark.parametrize("declared", LOADER_RULES, ids=[d.id for d in LOADER_RULES])
def test_each_loader_rule_is_its_rule_class(declared: LoaderRule) -> None:
    rule = RULES_BY_ID[declared.id]
    assert (rule.id, rule.name, rule.severity, rule.summary, rule.hint) == (
        declared.id,
        declared.name,
        declared.severity,
        declared.summary,
        declared.hint,
    )


def _rule_id_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    rule_id = re.compile(r"(SS|REF|SEC)\d{3}")
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and rule_id.fullmatch(node.value)
    ]


def test_the_loader_names_no_rule_id_outside_its_declarations() -> None:
    """Every SS/REF finding the loader builds goes through spec.loader_rules (id and severity once)."""
    found = {
        path.name: ids
        for path in sorted(SPEC_DIR.glob("*.py"))
        if path.name != "loader_rules.py" and (ids := _rule_id_literals(path))
    }
    assert found == {}


def test_no_rule_says_where_it_is_reported() -> None:
    assert not hasattr(Rule, "reported_by")
    assert not [rule.id for rule in RULES_BY_ID.values() if "reported_by" in vars(rule)]


def test_errors_module_is_gone() -> None:
    assert not (SPEC_DIR / "errors.py").exists()


# --- REF003 does not repeat REF002 -----------------------------------------------------


def _checkout(tmp_path: Path, *, config: str = "config.json", host: str = "a") -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "facts").mkdir()
    (repo / "facts" / "a.json").write_text(FACTS)
    (repo / "inv.yaml").write_text(INVENTORY.format(facts="facts/a.json"))
    (repo / "spec.yaml").write_text(SPEC.format(inventory="inv.yaml", config=config, archive="", host=host))
    return repo


def _validate(spec: Path, cwd: Path, inventory: Path | None = None) -> list[Finding]:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return check_fleet(load_fleet([spec], inventory))
    finally:
        os.chdir(old)


def _missing(repo: Path) -> None:
    pass  # config.json is never written


def _directory(repo: Path) -> None:
    (repo / "config.json").mkdir()


def _dangling(repo: Path) -> None:
    (repo / "config.json").symlink_to("gone.json")


def _fifo(repo: Path) -> None:
    os.mkfifo(repo / "config.json")


def _oversized(repo: Path) -> None:
    (repo / "config.json").write_text('{"pad": "' + "x" * (paths.MAX_REFERENCED_BYTES + 1) + '"}')


BROKEN: dict[str, Callable[[Path], None]] = {
    "missing": _missing,
    "directory": _directory,
    "dangling symlink": _dangling,
    "fifo": _fifo,
    "oversized": _oversized,
}


@pytest.mark.parametrize("make", BROKEN.values(), ids=list(BROKEN))
def test_ref003_is_silent_when_ref002_reported_the_model_config(tmp_path: Path, make: Callable[[Path], None]) -> None:
    repo = _checkout(tmp_path)
    make(repo)
    findings = _validate(repo / "spec.yaml", repo)
    assert [f.path for f in findings if f.rule == "REF002"] == ["model.config"], findings
    assert not [f for f in findings if f.rule == "REF003"], findings
    (deployment,) = load_fleet([repo / "spec.yaml"]).deployments
    assert MODEL_CONFIG in deployment.broken_references


def test_ref003_is_silent_for_an_unreadable_model_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _checkout(tmp_path)
    (repo / "config.json").write_text(CONFIG)
    _deny(monkeypatch, repo / "config.json")
    findings = _validate(repo / "spec.yaml", repo)
    assert [f.path for f in findings if f.rule == "REF002"] == ["model.config"], findings
    assert not [f for f in findings if f.rule == "REF003"], findings


def test_ref003_still_reports_a_config_that_holds_no_architecture(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "config.json").write_text('{"model_type": "qwen2"}')
    findings = _validate(repo / "spec.yaml", repo)
    assert not [f for f in findings if f.rule == "REF002"], findings
    assert [f.path for f in findings if f.rule == "REF003"] == ["model.config"], findings


def test_ref003_names_every_missing_field_and_the_config_it_read(tmp_path: Path) -> None:
    """Issue 23 item 4: a config of an architecture servespec cannot size names all the fields it lacks."""
    repo = _checkout(tmp_path)
    # GPT-2's config (transformers GPT2Config) spells its sizes n_layer / n_embd / n_head / n_positions: the fields
    # it lacks are named as GPT-2 spells them
    (repo / "config.json").write_text('{"model_type": "gpt2", "n_embd": 768, "n_head": 12}')
    (finding,) = [f for f in _validate(repo / "spec.yaml", repo) if f.rule == "REF003"]
    assert "config.json" in finding.message, finding.message
    for name in ("'n_layer'", "'n_positions'", "'gpt2'"):
        assert name in finding.message, finding.message
    assert "'n_embd'" not in finding.message and "num_hidden_layers" not in finding.message, finding.message
    assert (finding.path, finding.line, finding.column) == ("model.config", 7, 11), finding  # located at the spec's key
    # MLA named without its rope key: the KV cache cannot be sized, and that field is named
    mla = {"model_type": "deepseek_v3", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4}
    repo = _checkout(tmp_path / "mla")  # another file: facts are cached per path
    (repo / "config.json").write_text(json.dumps({**mla, "kv_lora_rank": 32, "v_head_dim": 16}))
    (finding,) = [f for f in _validate(repo / "spec.yaml", repo) if f.rule == "REF003"]
    assert "field 'qk_rope_head_dim' is missing" in finding.message, finding.message


def test_a_readable_model_config_gives_neither(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    (repo / "config.json").write_text(CONFIG)
    findings = _validate(repo / "spec.yaml", repo)
    assert not [f for f in findings if f.rule in ("REF002", "REF003")], findings


# --- messages carry no errno text and no absolute path ---------------------------------


def _deny(monkeypatch: pytest.MonkeyPatch, *denied: Path) -> None:
    """Make ``os.open`` of ``denied`` fail as chmod 000 would for a user who is not root."""
    real_open = os.open
    targets = {os.path.realpath(p) for p in denied}

    def fake_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if os.path.realpath(str(path)) in targets:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", fake_open)


def _hostile_checkout(tmp_path: Path, broken: str, *, inventory_broken: bool = False) -> tuple[Path, list[Path]]:
    """A checkout whose facts file (or inventory), model config and image archive are all ``broken``.

    Returns the spec and the files to make unreadable (for "denied").
    """
    repo = tmp_path / "checkout"
    for folder in (".git", "specs", "inventory/facts", "models", "images"):
        (repo / folder).mkdir(parents=True)
    spec = SPEC.format(
        inventory="../inventory/fleet.yaml",
        config="../models/config.json",
        archive=", image_archive: ../images/vllm.tar",
        host="a",
    )
    (repo / "specs" / "spec.yaml").write_text(spec)
    inventory = repo / "inventory" / "fleet.yaml"
    contents = {
        repo / "models" / "config.json": CONFIG,
        repo / "images" / "vllm.tar": "tar",
        inventory: INVENTORY.format(facts="facts/a.json"),
        repo / "inventory" / "facts" / "a.json": FACTS,
    }
    if not inventory_broken:
        inventory.write_text(contents.pop(inventory))
    else:
        contents.pop(repo / "inventory" / "facts" / "a.json")  # not reached: its inventory is broken
    for target, text in contents.items():
        if broken == "directory":
            target.mkdir()
        elif broken == "dangling symlink":
            target.symlink_to("nowhere")
        elif broken == "denied":
            target.write_text(text)
    denied = list(contents) if broken == "denied" else []
    return repo / "specs" / "spec.yaml", denied


HOSTILE = ["missing", "directory", "dangling symlink", "denied"]


@pytest.mark.parametrize("broken", HOSTILE)
@pytest.mark.parametrize("inventory_broken", [False, True], ids=["facts", "inventory"])
def test_messages_hold_no_errno_text_nor_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str, inventory_broken: bool
) -> None:
    """The spec is named by its absolute path from another directory, so a path shown as found would be absolute."""
    spec, denied = _hostile_checkout(tmp_path, broken, inventory_broken=inventory_broken)
    (elsewhere := tmp_path / "elsewhere").mkdir()
    _deny(monkeypatch, *denied)
    findings = _validate(spec.resolve(), elsewhere)
    assert len([f for f in findings if f.rule == "REF002"]) == 3, findings
    for finding in findings:
        for text in (finding.message, finding.hint):
            assert not [os_text for os_text in OS_TEXTS if os_text in text], finding
        assert str(tmp_path) not in finding.message, finding
        assert "checkout/" not in finding.message, finding


@pytest.mark.parametrize("broken", HOSTILE)
def test_each_broken_reference_is_reported_at_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    spec, denied = _hostile_checkout(tmp_path, broken)
    _deny(monkeypatch, *denied)
    findings = _validate(spec, tmp_path / "checkout")
    where = sorted((f.file, f.path) for f in findings if f.rule == "REF002")
    assert where == [
        ("inventory/fleet.yaml", "hosts.a.facts"),
        ("specs/spec.yaml", "engine.image_archive"),
        ("specs/spec.yaml", "model.config"),
    ], findings


def test_a_missing_inventory_is_named_as_the_spec_wrote_it(tmp_path: Path) -> None:
    spec, _ = _hostile_checkout(tmp_path, "missing", inventory_broken=True)
    (elsewhere := tmp_path / "elsewhere").mkdir()
    (refused,) = [f for f in _validate(spec.resolve(), elsewhere) if f.rule == "REF002" and f.path == "inventory"]
    assert refused.message == "inventory file '../inventory/fleet.yaml' not found"


def test_an_unknown_host_names_the_inventory_as_the_spec_wrote_it(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, host="b")
    (repo / "config.json").write_text(CONFIG)
    (elsewhere := tmp_path / "elsewhere").mkdir()
    (unknown,) = [f for f in _validate((repo / "spec.yaml").resolve(), elsewhere) if f.rule == "REF001"]
    assert unknown.message == "host 'b' is not in the inventory inv.yaml"
    assert str(tmp_path) not in unknown.hint


def test_an_unreadable_named_file_is_a_usage_error_without_errno(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import run_cli

    repo = _checkout(tmp_path)
    _deny(monkeypatch, repo / "spec.yaml")
    result = run_cli("validate", str(repo / "spec.yaml"))
    assert result.exit_code == 2, result.output
    assert "Errno" not in result.output


def test_facts_read_from_a_model_config_are_named_by_the_spec_not_the_real_path(tmp_path: Path) -> None:
    """MEM005 and PAR001 quote the model's name; a config's facts used to be named by its absolute path."""
    repo = _checkout(tmp_path)
    (repo / "config.json").write_text(CONFIG.replace("}", ', "max_position_embeddings": 2048}'))
    spec = (repo / "spec.yaml").read_text().replace("placement: {hosts: [a]}", "resources: {tensor_parallel: 3}")
    (repo / "spec.yaml").write_text(spec)
    findings = _validate(repo / "spec.yaml", repo)
    named = [f for f in findings if f.rule in ("MEM005", "PAR001")]
    assert sorted(f.rule for f in named) == ["MEM005", "PAR001"], findings
    for finding in named:
        assert "acme/support-bot-7b" in finding.message and str(tmp_path) not in finding.message, finding
