"""The model-facts chain without the Hub: model.config, a model directory, a GGUF file, the HF cache, the lock file."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from servespec.cli import main
from servespec.knowledge import resolve, sources
from servespec.knowledge.lock import LOCK_FILE, parse
from servespec.spec.fleet import load_fleet

SHA = "0123456789abcdef0123456789abcdef01234567"
OTHER = "89abcdef0123456789abcdef0123456789abcdef"
CONFIG: dict[str, Any] = {
    "model_type": "qwen2",
    "num_hidden_layers": 24,
    "hidden_size": 896,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "intermediate_size": 4864,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
}


@pytest.fixture(autouse=True)
def _no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _spec(tmp_path: Path, model: str, *, inventory: bool = False) -> Path:
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    folder = tmp_path / "specs"
    folder.mkdir(exist_ok=True)
    lines = ["apiVersion: servespec/v1", "kind: Deployment", "metadata: {name: app}"]
    if inventory:
        (folder / "hosts.yaml").write_text(
            "apiVersion: servespec/v1\nkind: Inventory\n"
            f"defaults: {{model_roots: [{tmp_path / 'models'}]}}\n"
            "hosts:\n  gpu-01:\n    connection: local\n    hardware: {gpus: {model: NVIDIA L4, count: 1}}\n"
        )
        lines.append("inventory: hosts.yaml")
    lines += [
        "model:",
        *("  " + line for line in model.strip().splitlines()),
        'engine: {name: vllm, version: "0.11.0"}',
    ]
    spec = folder / "app.yaml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def _found(spec: Path) -> sources.Found:
    return sources.find(load_fleet([spec]).deployments[0])


def _answer(spec: Path) -> sources.ModelAnswer:
    return resolve.resolved(load_fleet([spec]).deployments[0]).model


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    """A safetensors file with the given (dtype, shape, bytes) tensors and zeroed data."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, size) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def _model_dir(folder: Path, config: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config or CONFIG))
    _safetensors(folder / "model-00001-of-00002.safetensors", {"a": ("BF16", [4, 8], 64), "s": ("F32", [4], 16)})
    _safetensors(folder / "model-00002-of-00002.safetensors", {"b": ("F8_E4M3", [16, 16], 256)})
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def _cache(root: Path, repo: str, sha: str, config: dict[str, Any], ref: str | None = "main") -> Path:
    repo_dir = root / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / sha
    snapshot.mkdir(parents=True)
    blob = repo_dir / "blobs" / f"blob-{sha[:6]}"
    blob.parent.mkdir(exist_ok=True)
    blob.write_text(json.dumps(config))
    (snapshot / "config.json").symlink_to(blob)  # the cache's own layout: snapshots link to blobs
    if ref:
        (repo_dir / "refs").mkdir(exist_ok=True)
        (repo_dir / "refs" / ref).write_text(sha)
    return repo_dir


def test_model_config_wins_over_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    _cache(tmp_path / "hf", "acme/chat", SHA, {**CONFIG, "num_hidden_layers": 2})
    spec = _spec(tmp_path, "source: acme/chat\nconfig: config.json")
    (spec.parent / "config.json").write_text(json.dumps(CONFIG))
    answer = _answer(spec)
    assert answer.facts is not None and answer.facts.layers == 24


def test_model_directory_config_quant_config_and_safetensors_headers(tmp_path: Path) -> None:
    folder = _model_dir(tmp_path / "models" / "chat")
    (folder / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": {}}))
    found = _found(_spec(tmp_path, f"source: {folder}", inventory=True))
    assert found.origin == "dir" and found.facts is not None
    assert found.facts.layers == 24 and found.facts.name == str(folder)
    assert found.facts.weight_bytes == 64 + 16 + 256  # from data_offsets, shard index followed
    assert dict(found.facts.params_by_dtype) == {"BF16": 32, "F32": 4, "F8_E4M3": 256}
    assert found.config is not None and found.config["quantization_config"]["producer"]["name"] == "modelopt"


def test_model_directory_absent_here_says_where_it_is_read(tmp_path: Path) -> None:
    spec = _spec(tmp_path, f"source: {tmp_path / 'models' / 'elsewhere'}", inventory=True)
    answer = _answer(spec)
    assert answer.facts is None and "not readable on this machine" in answer.problem and "deploy lock" in answer.problem


def test_model_directory_outside_the_model_roots_is_never_read(tmp_path: Path) -> None:
    folder = _model_dir(tmp_path / "private" / "chat")
    assert _found(_spec(tmp_path, f"source: {folder}", inventory=True)).facts is None


def test_broken_model_directory_is_a_problem_without_paths(tmp_path: Path) -> None:
    folder = _model_dir(tmp_path / "models" / "chat")
    (folder / "config.json").write_text("{not json")
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"\xff" * 8)
    answer = _answer(_spec(tmp_path, f"source: {folder}", inventory=True))
    assert answer.facts is None and "config.json" in answer.problem
    assert "Errno" not in answer.problem


def test_corrupt_shard_keeps_the_facts_without_weight_bytes(tmp_path: Path) -> None:
    folder = _model_dir(tmp_path / "models" / "chat")
    (folder / "model-00002-of-00002.safetensors").write_bytes(struct.pack("<Q", 1 << 40))
    found = _found(_spec(tmp_path, f"source: {folder}", inventory=True))
    assert found.facts is not None and found.facts.weight_bytes is None
    assert found.warnings and "model-00002-of-00002.safetensors" in found.warnings[0]
    assert str(tmp_path) not in found.warnings[0]


def _gguf(path: Path) -> None:
    import gguf
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(22)
    writer.add_embedding_length(2048)
    writer.add_head_count(32)
    writer.add_head_count_kv(4)
    writer.add_context_length(4096)
    writer.add_feed_forward_length(5632)
    writer.add_vocab_size(32000)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_header(tmp_path: Path) -> None:
    path = tmp_path / "models" / "tiny.Q4_K_M.gguf"
    _gguf(path)
    found = _found(_spec(tmp_path, f"source: {path}", inventory=True))
    assert found.origin == "gguf" and found.facts is not None
    facts = found.facts
    assert (facts.model_type, facts.layers, facts.hidden_size, facts.attention_heads, facts.kv_heads) == (
        "llama",
        22,
        2048,
        32,
        4,
    )
    assert (facts.max_position_embeddings, facts.vocab_size, facts.file_type) == (4096, 32000, "Q4_K_M")
    assert facts.weight_bytes == 4 * 8 * 4


def test_not_a_gguf_file_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "models" / "broken.gguf"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GGUF" + b"\x00" * 3)
    answer = _answer(_spec(tmp_path, f"source: {path}", inventory=True))
    assert (
        answer.facts is None and "GGUF" in answer.problem and str(tmp_path) not in answer.problem.replace(str(path), "")
    )


def test_hf_cache_main_pinned_and_branch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    repo = _cache(tmp_path / "hf", "acme/chat", SHA, CONFIG)
    _cache(tmp_path / "hf", "acme/chat-old", OTHER, CONFIG, ref=None)
    (repo / "snapshots" / OTHER).mkdir()
    (repo / "snapshots" / OTHER / "config.json").write_text(json.dumps({**CONFIG, "num_hidden_layers": 12}))
    (repo / "refs" / "v1").write_text(OTHER)
    main_found = _found(_spec(tmp_path, "source: acme/chat"))
    assert main_found.origin == "cache" and main_found.revision == SHA and main_found.facts is not None
    assert main_found.facts.layers == 24
    pinned = _found(_spec(tmp_path, f"source: acme/chat\nrevision: {OTHER}"))
    assert pinned.revision == OTHER and pinned.facts is not None and pinned.facts.layers == 12
    branch = _found(_spec(tmp_path, "source: acme/chat\nrevision: v1"))
    assert branch.revision == OTHER
    assert _found(_spec(tmp_path, f"source: acme/chat\nrevision: {'f' * 40}")).facts is None


def test_hf_home_is_used_without_hf_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    _cache(tmp_path / "home" / "hub", "acme/chat", SHA, CONFIG)
    assert _found(_spec(tmp_path, "source: acme/chat")).origin == "cache"


def _lock(folder: Path, revision: str = SHA, **extra: Any) -> None:
    entry = {"revision": revision, "config": CONFIG, "weight_bytes": 988_000_000, "resolved_from": "hub", **extra}
    (folder / LOCK_FILE).write_text(json.dumps({"version": 1, "models": {"acme/chat": entry}}))


def test_lock_file_beside_the_spec(tmp_path: Path) -> None:
    spec = _spec(tmp_path, f"source: acme/chat\nrevision: {SHA}\nmax_model_len: 4096")
    _lock(spec.parent)
    found = _found(spec)
    assert found.origin == "lock" and found.facts is not None
    assert found.facts.layers == 24 and found.facts.weight_bytes == 988_000_000


def test_lock_at_another_revision_is_not_used_and_ref005_says_so(tmp_path: Path) -> None:
    spec = _spec(tmp_path, f"source: acme/chat\nrevision: {OTHER}\nmax_model_len: 4096")
    _lock(spec.parent)
    assert _found(spec).facts is None
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert "REF005" in result.stdout and SHA in result.stdout


def test_deploy_lock_from_the_cache_then_validate_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    _cache(tmp_path / "hf", "acme/chat", SHA, {**CONFIG, "auto_map": {"AutoModel": "x.Y"}, "id2label": {"0": "a"}})
    folder = _model_dir(tmp_path / "models" / "chat")
    spec = _spec(tmp_path, "source: acme/chat\nmax_model_len: 4096", inventory=True)
    other = spec.parent / "local.yaml"
    other.write_text(
        spec.read_text().replace("name: app", "name: local").replace("source: acme/chat", f"source: {folder}")
    )
    result = CliRunner().invoke(main, ["lock", str(spec.parent)])
    assert result.exit_code == 0, result.stderr
    raw = (spec.parent / LOCK_FILE).read_bytes()
    lock = parse(raw)
    assert lock.models["acme/chat"].revision == SHA and lock.models["acme/chat"].resolved_from == "cache"
    assert lock.models[str(folder)].resolved_from == "dir" and lock.models[str(folder)].weight_bytes == 336
    assert "auto_map" not in lock.models["acme/chat"].config and "id2label" not in lock.models["acme/chat"].config
    assert CliRunner().invoke(main, ["lock", str(spec.parent)]).exit_code == 0
    assert (spec.parent / LOCK_FILE).read_bytes() == raw  # the same bytes again
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "gone"))
    assert _found(spec).origin == "lock"
    validated = CliRunner().invoke(main, ["validate", str(spec.parent)])
    assert "REF003" not in validated.stdout and "SS004" not in validated.stdout  # the lock is not a spec


def test_deploy_lock_never_replaces_a_file_it_did_not_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    _cache(tmp_path / "hf", "acme/chat", SHA, CONFIG)
    spec = _spec(tmp_path, "source: acme/chat")
    (spec.parent / LOCK_FILE).write_text("hand-written\n")
    result = CliRunner().invoke(main, ["lock", str(spec)])
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert (spec.parent / LOCK_FILE).read_text() == "hand-written\n"


@pytest.mark.parametrize(
    "text",
    ["version: 1\nmodels: [", "version: 2\nmodels: {}\n", '{"version": 1, "models": {"a/b": {"revision": "x"}}}'],
)
def test_unusable_lock_is_ref005_at_the_source(tmp_path: Path, text: str) -> None:
    spec = _spec(tmp_path, "source: acme/chat\nmax_model_len: 4096")
    (spec.parent / LOCK_FILE).write_text(text)
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert "app.yaml:5:" in result.stdout and "REF005" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_lock_symlinked_out_of_the_root_is_refused(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "repo", "source: acme/chat")
    outside = tmp_path / "outside.yaml"
    _lock(tmp_path)
    (tmp_path / LOCK_FILE).rename(outside)
    (spec.parent / LOCK_FILE).symlink_to(outside)
    assert _found(spec).facts is None
    result = CliRunner().invoke(main, ["validate", str(spec)])
    line = next(line for line in result.stdout.splitlines() if "REF005" in line)
    assert "outside" in line and str(tmp_path) not in line.split("REF005", 1)[1]
