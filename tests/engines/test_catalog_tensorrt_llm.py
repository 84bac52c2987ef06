"""TensorRT-LLM release catalogs: each release's own trtllm-serve spellings and LLM-API keys.

The catalogs were extracted by hand from NVIDIA's published docs build of each release
(the sphinx-click ``trtllm-serve`` page and the viewcode page of ``llmapi/llm_args.py``,
stored as files of NVIDIA/TensorRT-LLM's gh-pages branch; provenance names each file and
commit) because the repository is too large to check out here and PyPI holds only stub
sdists. They are ``partial``: an option they do not list is a warning, not an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.findings import Finding, Severity
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

TRT = engines.get("tensorrt-llm")
INVENTORY = """apiVersion: servespec/v1
kind: Inventory
hosts:
  h100x8:
    address: 10.0.0.11
    hardware:
      gpus: {model: NVIDIA H100 80GB HBM3, count: 8}
      interconnect: nvswitch
      driver_version: "580.95.05"
"""
RELEASES = ("0.21.0", "1.0.0", "1.1.0", "1.2.1", "1.3.0rc24")

# option -> the catalogued releases that list it (checked against each release's docs pages)
HISTORY = {
    "use_cuda_graph": {"0.21.0"},  # flat CUDA-graph knobs; 1.0 nests them in cuda_graph_config
    "cuda_graph_config": {"1.0.0", "1.1.0", "1.2.1", "1.3.0rc24"},
    "fail_fast_on_attention_window_too_large": {"1.0.0", "1.1.0", "1.2.1", "1.3.0rc24"},
    "kv_cache_config.dtype": {"1.0.0", "1.1.0", "1.2.1", "1.3.0rc24"},
    "moe_backend": {"0.21.0"},  # 1.0 moves it to moe_config.backend
    "tool_parser": {"1.2.1", "1.3.0rc24"},
    "grpc": {"1.3.0rc24"},  # PR #11037, merged after the 1.2 branch
    "served_model_name": {"1.3.0rc24"},
}


def _spec(tmp_path: Path, version: str, options: str = "{}") -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / f"trt-{version}.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\ninventory: inventory.yaml\n"
        "model: {source: meta-llama/Llama-3.1-8B-Instruct, max_model_len: 8192}\n"
        f"engine: {{name: tensorrt-llm, version: '{version}', options: {options}}}\n"
        "resources: {tensor_parallel: 2}\nplacement: {hosts: [h100x8]}\n"
    )
    return path


def _eng001(tmp_path: Path, version: str, option: str) -> list[Finding]:
    findings = check_fleet(load_fleet([_spec(tmp_path, version, f"{{{option}: true}}")]))
    return [f for f in findings if f.rule == "ENG001" and f"'{option}'" in f.message]


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_resolves_exactly_and_says_where_it_came_from(version: str) -> None:
    selection = TRT.select(version)
    assert selection.relation == "exact" and selection.release is not None
    release = selection.release
    assert release.version == version and release.partial
    raw = TRT.catalog.folder.joinpath(f"{version}.json").read_text()
    assert "NVIDIA/TensorRT-LLM@" in raw and f"{version}/" in raw  # the docs build of that very release


@pytest.mark.parametrize("option", sorted(HISTORY))
def test_an_option_exists_exactly_in_the_releases_that_list_it(tmp_path: Path, option: str) -> None:
    for version in RELEASES:
        listed = TRT.catalog.release(version).option(option) is not None
        assert listed == (version in HISTORY[option]), (option, version)
    absent = sorted(set(RELEASES) - HISTORY[option])[0]
    found = _eng001(tmp_path, absent, option)
    assert found and all(f.severity is Severity.INFO for f in found)  # partial catalogs only note it
    assert not _eng001(tmp_path, sorted(HISTORY[option])[0], option)


@pytest.mark.parametrize(
    ("version", "tp", "memory"),
    [
        ("0.21.0", "--tp_size", "--kv_cache_free_gpu_memory_fraction"),
        ("1.0.0", "--tp_size", "--kv_cache_free_gpu_memory_fraction"),
        ("1.1.0", "--tp_size", "--kv_cache_free_gpu_memory_fraction"),
        ("1.2.1", "--tensor_parallel_size", "--free_gpu_memory_fraction"),
        ("1.3.0rc24", "--tensor_parallel_size", "--free_gpu_memory_fraction"),
    ],
)
def test_the_command_line_uses_each_releases_own_spelling(tmp_path: Path, version: str, tp: str, memory: str) -> None:
    """trtllm-serve 1.0 rejects --tensor_parallel_size: its only spelling is --tp_size."""
    fleet = load_fleet([_spec(tmp_path, version, "{free_gpu_memory_fraction: 0.85}")])
    assert not [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    (container,) = render_fleet(fleet).containers.values()
    argv = list(container.command)
    assert argv[argv.index(tp) + 1] == "2" and argv[argv.index(memory) + 1] == "0.85"
    assert argv[argv.index("--max_seq_len") + 1] == "8192"
    flags = {word for word in argv if word.startswith("--")}
    assert {tp, memory} <= flags and not ({"--tensor_parallel_size", "--tp_size"} - {tp}) & flags
