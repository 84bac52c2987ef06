"""Issue 20, items 5, 8 and 9: every input file is read with the loader's budgets and typed.

A tag its value does not fit, a lock file that is huge, an alias bomb or wrongly typed, a
memory fraction of "inf", a GGUF length near 2**64 and wrong-typed config.json fields are
each a located finding (or "unknown" facts, a warning), never a traceback nor exit 2.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from servespec.knowledge import sources
from servespec.knowledge.safetensors import HeaderError, checkpoint_weights
from tests.conftest import run_cli

CANARY = "CANARY_5d1e"
SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: demo}}
inventory: inv.yaml
model: {{source: acme/chat, max_model_len: 4096{model}}}
engine: {{name: {engine}, version: "{version}"{options}}}
placement: {{hosts: [a]}}
"""
INVENTORY = """apiVersion: servespec/v1
kind: Inventory
hosts:
  a:
    address: 10.0.0.1
    facts: facts/a.json
"""
FACTS = '{"version": 1, "host": "a",\n "hardware": {"gpus": {"model": "NVIDIA L4", "count": 1}}}\n'
CONFIG = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}
LOCK = """version: 1
models:
  acme/chat:
    revision: 0123456789abcdef0123456789abcdef01234567
    config: {{model_type: llama, num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32}}
    weight_bytes: {weight_bytes}
    resolved_from: hub
"""


def _checkout(
    tmp_path: Path, *, model: str = "", engine: str = "vllm", version: str = "0.11.0", options: str = ""
) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "facts").mkdir()
    (repo / "facts" / "a.json").write_text(FACTS)
    (repo / "inv.yaml").write_text(INVENTORY)
    text = SPEC.format(model=model, engine=engine, version=version, options=options)
    (repo / "spec.yaml").write_text(text)
    return repo


def _run(*args: str) -> tuple[int, str]:
    result = run_cli(*args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    output = result.output
    assert result.exit_code in (0, 1), output
    assert "Traceback" not in output and "internal error" not in output, output
    return result.exit_code, output


def _located(output: str, file: str, line: int | None, rule: str) -> str:
    """The finding of ``rule`` at ``file``:``line``:col (any line when None; a column always), as printed."""
    at = str(line) if line is not None else r"\d+"
    pattern = re.compile(rf"^{re.escape(file)}:{at}:\d+: {rule} ", re.MULTILINE)
    found = [row for row in output.splitlines() if pattern.match(row)]
    assert found, f"no {rule} at {file}:{line}:\n{output}"
    return found[0]


# Item 8: a tag its value does not fit, in any input file.

MISMATCHES = [
    "!!bool abc",
    "!!int x",
    "!!float y",
    "!!null x",
    "!!int 0x",
    "!!int [1]",
    "!!str {a: 1}",
    "9" * 5000,  # beyond Python's int() digit limit: was an SS001 at 1:1, the document lost
]


@pytest.mark.parametrize("value", MISMATCHES, ids=[v[:12] for v in MISMATCHES])
@pytest.mark.parametrize("where", ["spec", "inventory", "facts", "lock"])
def test_a_tag_its_value_does_not_fit_is_a_located_finding(tmp_path: Path, where: str, value: str) -> None:
    repo = _checkout(tmp_path)
    spec, inventory, facts = repo / "spec.yaml", repo / "inv.yaml", repo / "facts" / "a.json"
    if where == "spec":
        spec.write_text(spec.read_text().replace("max_model_len: 4096", f"max_model_len: {value}"))
        file, line = "spec.yaml", 5
    elif where == "inventory":
        inventory.write_text(inventory.read_text().replace("address: 10.0.0.1", f"ssh_port: {value}"))
        file, line = "inv.yaml", 5
    elif where == "facts":
        facts.write_text(FACTS.replace('"count": 1', f'"count": {value}'))
        file, line = "facts/a.json", 2
    else:
        (repo / "models.lock.yaml").write_text(LOCK.format(weight_bytes=value))
        file, line = "models.lock.yaml", 6
    code, output = _run("validate", "--root", str(repo), str(spec))
    assert code == 1
    finding = _located(output.replace(str(repo) + "/", ""), file, line, "SS001")
    if where != "spec":  # a referenced file's values are never quoted
        assert "abc" not in finding and "999" not in finding


# Item 5: models.lock.yaml is read with the loader's budgets and typed.


def _bomb() -> str:
    """The issue's alias bomb: nine levels of nine aliases (9**9 leaves) in well under 1 KiB."""
    rows = ["version: 1", "models:", "  acme/chat:", "    resolved_from: hub", "    config:"]
    rows.append('      l0: &l0 ["x","x","x","x","x","x","x","x","x"]')
    rows += [f"      l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(rows) + "\n"


def test_a_lock_alias_bomb_is_refused_by_the_budget(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    bomb = _bomb()
    assert len(bomb.encode()) < 700
    (repo / "models.lock.yaml").write_text(bomb)
    code, output = _run("validate", "--root", str(repo), str(repo / "spec.yaml"))
    assert code == 1
    shown = output.replace(str(repo) + "/", "")
    assert "nodes" in _located(shown, "models.lock.yaml", None, "SS001")
    assert "models.lock.yaml" in _located(shown, "spec.yaml", 5, "REF005")
    code, output = _run("lock", "--root", str(repo), str(repo / "spec.yaml"))
    assert code == 1  # offline: the model resolves nowhere, and the bomb is never expanded


def test_a_huge_lock_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    entry = LOCK.format(weight_bytes=1).split("models:\n", 1)[1].replace("acme/chat", "acme/m000000")
    # Just under the 4 MiB the lock had of its own: it took 160 s and 1.7 GB to read.
    body = "".join(entry.replace("m000000", f"m{i:06}") for i in range(4 * 1024 * 1024 // len(entry) - 2))
    (repo / "models.lock.yaml").write_text("version: 1\nmodels:\n" + body)
    assert 3 * 1024 * 1024 < (repo / "models.lock.yaml").stat().st_size < 4 * 1024 * 1024
    code, output = _run("validate", "--root", str(repo), str(repo / "spec.yaml"))
    assert code == 1
    assert "larger than" in _located(output.replace(str(repo) + "/", ""), "models.lock.yaml", 1, "SS001")


@pytest.mark.parametrize(
    ("weight_bytes", "rule"),
    [
        ("99999999999999999999999999999", "SS003"),  # beyond 2**53
        ('"5"', "SS003"),  # a string where a count belongs
        ("true", "SS003"),
        ("-1", "SS003"),
        (".inf", "SS003"),
        ("!!bool abc", "SS001"),
    ],
)
def test_lock_values_are_typed_and_each_bad_one_is_located(tmp_path: Path, weight_bytes: str, rule: str) -> None:
    repo = _checkout(tmp_path)
    (repo / "models.lock.yaml").write_text(LOCK.format(weight_bytes=weight_bytes))
    code, output = _run("validate", "--root", str(repo), str(repo / "spec.yaml"))
    assert code == 1
    shown = output.replace(str(repo) + "/", "")
    _located(shown, "models.lock.yaml", 6, rule)
    _located(shown, "spec.yaml", 5, "REF005")


@pytest.mark.parametrize("value", [".nan", '"' + "x" * 70_000 + '"', "[1, .inf]", "{a: {b: 1e400}}"])
def test_lock_config_values_are_bounded(tmp_path: Path, value: str) -> None:
    repo = _checkout(tmp_path)
    lock = LOCK.format(weight_bytes=1).replace("num_attention_heads: 32}", f"num_attention_heads: 32, odd: {value}}}")
    (repo / "models.lock.yaml").write_text(lock)
    code, output = _run("validate", "--root", str(repo), str(repo / "spec.yaml"))
    assert code == 1
    _located(output.replace(str(repo) + "/", ""), "models.lock.yaml", 5, "SS003")


# Item 9: a non-finite float option, wrong-typed config.json fields, GGUF lengths near 2**64.


@pytest.mark.parametrize(
    ("engine", "version", "options"),
    [
        ("vllm", "0.11.0", ', options: {gpu_memory_utilization: "inf"}'),
        ("vllm", "0.11.0", ', options: {gpu_memory_utilization: "nan"}'),
        ("vllm", "0.11.0", ', options: {gpu_memory_utilization: "1e309"}'),
        ("vllm", "0.11.0", ", extra_args: [--gpu-memory-utilization, inf]"),
        ("sglang", "0.5.4", ', options: {mem_fraction_static: "inf"}'),
    ],
)
@pytest.mark.parametrize("command", ["validate", "estimate"])
def test_a_non_finite_memory_fraction_is_eng002(
    tmp_path: Path, engine: str, version: str, options: str, command: str
) -> None:
    repo = _checkout(tmp_path, engine=engine, version=version, options=options)
    (repo / "config.json").write_text(json.dumps(CONFIG))
    spec = repo / "spec.yaml"
    spec.write_text(spec.read_text().replace("max_model_len: 4096", "max_model_len: 4096, config: config.json"))
    _, output = _run(command, "--root", str(repo), str(spec))
    if command == "validate":
        assert "expects a number" in _located(output.replace(str(repo) + "/", ""), "spec.yaml", 6, "ENG002")


WRONG_FIELDS = [
    ("num_hidden_layers", "32"),
    ("num_hidden_layers", [32]),
    ("num_hidden_layers", None),
    ("num_hidden_layers", True),
    ("num_hidden_layers", -32),
    ("hidden_size", 2**50),
    ("num_attention_heads", 0),
    ("intermediate_size", CANARY),
    ("vocab_size", {"a": 1}),
    ("max_position_embeddings", "8192"),
    ("kv_lora_rank", [1]),
    ("tie_word_embeddings", CANARY),
    ("text_config", [CANARY]),
    ("rope_scaling", {"type": "linear", "factor": CANARY}),
    ("quantization_config", {"quant_method": "gptq", "bits": CANARY}),
    ("sliding_window", CANARY),
]


@pytest.mark.parametrize(("field", "value"), WRONG_FIELDS, ids=[f"{f}={json.dumps(v)[:12]}" for f, v in WRONG_FIELDS])
def test_a_wrong_typed_config_field_leaves_the_facts_unknown(tmp_path: Path, field: str, value: object) -> None:
    repo = _checkout(tmp_path)
    (repo / "config.json").write_text(json.dumps({**CONFIG, field: value}))
    spec = repo / "spec.yaml"
    spec.write_text(spec.read_text().replace("max_model_len: 4096", "max_model_len: 4096, config: config.json"))
    for command in ("validate", "estimate"):
        _run(command, "--root", str(repo), str(spec))
    _, output = _run("validate", "--root", str(repo), str(spec))
    finding = _located(output.replace(str(repo) + "/", ""), "spec.yaml", 5, "REF003")
    assert "warning" in finding and "cannot read model config" in finding
    assert CANARY not in output  # the field is named, its value never quoted


def _gguf_header(*entries: bytes, tensors: bytes = b"", count: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, count, len(entries)) + b"".join(entries) + tensors


_ARCHITECTURE = ("block_count", "embedding_length", "attention.head_count")
"""GGUF keys (uint32 values) enough for facts: the header is refused for its tensors alone."""


def _key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


@pytest.mark.parametrize(
    "header",
    [
        # a vocabulary whose one string claims 2**63 bytes: seek() raised OverflowError
        _gguf_header(_key("tokenizer.ggml.tokens") + struct.pack("<IIQQ", 9, 8, 1, 2**63)),
        # a skipped array of 2**62 four-byte values: 2**64 bytes to seek over
        _gguf_header(_key("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 2**62)),
        _gguf_header(_key("tokenizer.ggml.tokens") + struct.pack("<IIQQ", 9, 8, 1, 2**64 - 1)),
        # one tensor of 2**60 x 2**60 F32 elements in a file of a few hundred bytes
        _gguf_header(
            _key("general.architecture") + struct.pack("<I", 8) + _key("llama"),
            *(_key(f"llama.{key}") + struct.pack("<II", 4, 32) for key in _ARCHITECTURE),
            tensors=_key("t") + struct.pack("<I", 2) + struct.pack("<QQ", 2**60, 2**60) + struct.pack("<IQ", 0, 0),
            count=1,
        ),
    ],
)
def test_gguf_lengths_near_2_64_are_a_problem(tmp_path: Path, header: bytes) -> None:
    path = tmp_path / "crafted.gguf"
    path.write_bytes(header)
    found = sources.gguf_facts(path, str(path))
    assert found.facts is None and "GGUF" in found.problem


def test_gguf_lengths_near_2_64_through_the_cli(tmp_path: Path) -> None:
    repo = _checkout(tmp_path, engine="llama.cpp", version="b11312")
    models = repo / "models"  # a model root inside the checkout: read without --model-roots
    models.mkdir()
    (models / "crafted.gguf").write_bytes(
        _gguf_header(_key("tokenizer.ggml.tokens") + struct.pack("<IIQQ", 9, 8, 1, 2**63))
    )
    inventory = repo / "inv.yaml"
    inventory.write_text(inventory.read_text().replace("hosts:\n", f"defaults: {{model_roots: [{models}]}}\nhosts:\n"))
    spec = repo / "spec.yaml"
    spec.write_text(spec.read_text().replace("source: acme/chat", f"source: {models / 'crafted.gguf'}"))
    _, output = _run("validate", "--root", str(repo), str(spec))
    assert "GGUF" in _located(output.replace(str(repo) + "/", ""), "spec.yaml", 5, "REF003")


def _shard(path: Path, tensor: dict[str, object], data: int) -> None:
    raw = json.dumps({"w": tensor}).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(data))


@pytest.mark.parametrize(
    "tensor",
    [
        {"dtype": "BF16", "shape": [2**62, 2**62], "data_offsets": [0, 16]},  # more elements than its data
        {"dtype": "BF16", "shape": [4], "data_offsets": [0, 2**70]},  # data past the end of the file
        {"dtype": "BF16", "shape": [True, 4], "data_offsets": [0, 16]},
        {"dtype": "BF16", "shape": [1] * 100_000, "data_offsets": [0, 2]},
    ],
)
def test_safetensors_counts_never_exceed_the_file(tmp_path: Path, tensor: dict[str, object]) -> None:
    _shard(tmp_path / "model.safetensors", tensor, 16)
    with pytest.raises(HeaderError):
        checkpoint_weights(tmp_path)
