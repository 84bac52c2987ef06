"""TensorRT-LLM nested LLM-API keys (issue 12 item 6): dotted or nested, checked, rendered nested and deep-merged.

``kv_cache_config.dtype: fp8`` and ``kv_cache_config: {dtype: fp8}`` are one key: both are
checked against the release catalog (ENG001 at the nested key, ENG002 its type, choices and
bounds), ENG003 reports the two spellings (or a flag that sets the key) disagreeing, and the
YAML file holds one deep-merged ``kv_cache_config``. Command-line-only options never go into
the YAML and YAML-only keys never become flags, in every catalogued release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec import engines
from servespec.engines.catalog import EngineRelease
from servespec.engines.kit import Target
from servespec.engines.tensorrt_llm import render as trt_render
from servespec.findings import Finding, Severity
from servespec.render import render_fleet
from servespec.render.common import targets
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.golden.regen import GOLDEN

ENGINE = engines.get("tensorrt-llm")
RELEASES = [ENGINE.catalog.release(version) for version in sorted(ENGINE.catalog.files)]

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: trt}}
model:
  source: meta-llama/Llama-3.1-8B-Instruct
  revision: 0123456789abcdef0123456789abcdef01234567
  max_model_len: 8192
engine:
  name: tensorrt-llm
  version: "{version}"
  options:
{options}
placement: {{hosts: [l4-a]}}
rollout: {{health_timeout: 20m}}
"""


def _write(tmp_path: Path, options: str, version: str = "1.2.1") -> Path:
    path = tmp_path / "trt.yaml"
    body = "\n".join("    " + line for line in options.strip("\n").splitlines())
    path.write_text(SPEC.format(version=version, options=body))
    return path


def _findings(path: Path) -> list[Finding]:
    return [f for f in check_fleet(load_fleet([path], GOLDEN / "inventory.yaml")) if f.rule.startswith("ENG")]


def _render(path: Path) -> tuple[list[str], dict[str, Any]]:
    files = render_fleet(load_fleet([path], GOLDEN / "inventory.yaml")).host_files("trt", "l4-a")
    container = YAML(typ="safe").load(files["container.yaml"])
    config = YAML(typ="safe").load(files.get("extra_llm_api_options.yaml", "{}")) or {}
    return [str(word) for word in container["command"]], config


def _line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_nested_and_dotted_keys_render_one_deep_merged_mapping(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
kv_cache_config:
  dtype: fp8
kv_cache_config.free_gpu_memory_fraction: 0.8
moe_config.backend: TRTLLM
cuda_graph_config: {batch_sizes: [1, 2, 4], enable_padding: true}
speculative_config: {decoding_type: MTP, num_nextn_predict_layers: 3}
""",
    )
    assert [f for f in _findings(path) if f.severity is Severity.ERROR] == []
    argv, config = _render(path)
    assert config["kv_cache_config"] == {"dtype": "fp8", "free_gpu_memory_fraction": 0.8}
    assert config["moe_config"] == {"backend": "TRTLLM"}
    assert config["cuda_graph_config"] == {"batch_sizes": [1, 2, 4], "enable_padding": True}
    assert config["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    assert not [word for word in argv if "kv_cache_config" in word or "moe_config" in word]


def test_dotted_key_after_its_mapping_still_merges(tmp_path: Path) -> None:
    path = _write(tmp_path, "kv_cache_config.dtype: fp8\nkv_cache_config: {enable_block_reuse: false}\n")
    _, config = _render(path)
    assert config["kv_cache_config"] == {"dtype": "fp8", "enable_block_reuse": False}


def test_unknown_nested_key_is_noted_at_the_nested_key_with_the_nearest_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "kv_cache_config:\n  free_gpu_memory_fractio: 0.8\n")
    [finding] = [f for f in _findings(path) if f.rule == "ENG001"]
    assert finding.severity is Severity.INFO  # the 1.2.1 catalog is partial: not known to be missing
    assert finding.line == _line(path, "free_gpu_memory_fractio")
    assert "kv_cache_config.free_gpu_memory_fraction" in (finding.hint or "")


@pytest.mark.parametrize(
    ("options", "needle", "problem"),
    [
        ("kv_cache_config: {free_gpu_memory_fraction: 1.5}", "free_gpu_memory_fraction", "≤ 1"),
        ("moe_config: {backend: FAST}", "backend", "must be one of"),
        ("speculative_config:\n  num_nextn_predict_layers: 0", "num_nextn_predict_layers", "≥ 1"),
        ("cuda_graph_config: {enable_padding: 'yes'}", "enable_padding", "true or false"),
        ("cuda_graph_config.enable_padding: 'yes'", "enable_padding", "true or false"),
    ],
)
def test_nested_values_are_checked_against_the_catalog(tmp_path: Path, options: str, needle: str, problem: str) -> None:
    path = _write(tmp_path, options)
    [finding] = [f for f in _findings(path) if f.rule == "ENG002"]
    assert problem in finding.message
    assert finding.line == _line(path, needle)


def test_dotted_and_nested_disagreeing_is_eng003(tmp_path: Path) -> None:
    path = _write(tmp_path, "kv_cache_config: {dtype: fp8}\nkv_cache_config.dtype: auto\n")
    [finding] = [f for f in _findings(path) if f.rule == "ENG003"]
    assert finding.line == _line(path, "kv_cache_config.dtype")
    assert "fp8" in finding.message and "auto" in finding.message


def test_same_value_twice_is_no_finding(tmp_path: Path) -> None:
    path = _write(tmp_path, "kv_cache_config: {dtype: fp8}\nkv_cache_config.dtype: fp8\n")
    assert [f for f in _findings(path) if f.rule == "ENG003"] == []


def test_flag_and_yaml_setting_the_same_key_is_eng003_and_the_flag_is_not_lost(tmp_path: Path) -> None:
    # trtllm-serve merges the YAML over the flags; before 1.2 a YAML kv_cache_config replaces
    # the one --kv_cache_free_gpu_memory_fraction built (update_llm_args_with_extra_dict)
    path = _write(tmp_path, "free_gpu_memory_fraction: 0.5\nkv_cache_config: {free_gpu_memory_fraction: 0.8}\n")
    [finding] = [f for f in _findings(path) if f.rule == "ENG003"]
    assert finding.line == _line(path, "free_gpu_memory_fraction: 0.8")
    agree = _write(tmp_path, "kv_cache_free_gpu_memory_fraction: 0.5\nkv_cache_config: {dtype: fp8}\n", "1.0.0")
    argv, config = _render(agree)
    assert "--kv_cache_free_gpu_memory_fraction" not in argv
    assert config["kv_cache_config"] == {"dtype": "fp8", "free_gpu_memory_fraction": 0.5}


def test_dict_option_without_catalogued_children_is_passed_through(tmp_path: Path) -> None:
    path = _write(tmp_path, "lora_config: {max_lora_rank: 8, lora_dir: [/loras/a]}\n")
    assert _findings(path) == []
    _, config = _render(path)
    assert config["lora_config"] == {"max_lora_rank": 8, "lora_dir": ["/loras/a"]}


def _target(release: EngineRelease, tmp_path: Path) -> Target:
    path = _write(tmp_path, "{}", release.version)
    return targets(load_fleet([path], GOLDEN / "inventory.yaml").deployments[0])[0]


def _sample(kind: str) -> Any:
    return {"bool": True, "int": 2, "float": 0.5, "list": ["a"], "dict": {"k": 1}}.get(kind, "x")


@pytest.mark.parametrize("release", RELEASES, ids=[r.version for r in RELEASES])
def test_every_option_of_every_release_lands_where_the_release_reads_it(release: EngineRelease, tmp_path: Path) -> None:
    """Each release's own options: a flag on the command line, an LLM-API key in the YAML; and
    every other release's command-line-only options never in this release's YAML."""
    every = {key: option for other in RELEASES for key, option in other.options.items()}
    target = _target(release, tmp_path)
    for key, option in every.items():
        argv, api = trt_render.split(target, {}, {key: _sample(option.type)})
        own = release.option(key)
        flag = release.flag(key)
        if flag:
            assert flag in argv and not api, (release.version, key)
        elif own is not None:
            assert argv == [] and key in api, (release.version, key)
        cli_only = all(o.flag and not o.config_key for o in (r.options.get(key) for r in RELEASES) if o)
        if cli_only:
            assert not api, (release.version, key, api)
        if "." in key:
            assert argv == [], (release.version, key, argv)
