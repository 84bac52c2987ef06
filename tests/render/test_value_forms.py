"""Option values rendered in the forms each engine's own parser reads (issue 12, item 8).

Booleans by the release catalog's ``bool_form``, lists by ``nargs`` and the engine's parser
(profile ``arguments``), mappings as JSON, environment variables as the engine splits them.
The ``parsers`` tier at the end hands the rendered vLLM and SGLang command lines to the
releases' own parsers (skipped where ``scripts/parser-envs`` made no environment).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.findings import Severity
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
_yaml = YAML(typ="safe")

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: forms}}
model: {{source: {source}, revision: a09a35458c702b33eeacc393d103063234e8bc28{extra}}}
engine:
  name: {engine}
  version: "{version}"
  options: {options}
placement: {{hosts: [{host}]}}
"""
HF = "Qwen/Qwen2.5-7B-Instruct"


def _render(
    tmp_path: Path, engine: str, version: str, options: dict[str, Any], *, source: str = HF, host: str = "l4-a"
) -> tuple[dict[str, str], list[Any]]:
    extra = ", max_model_len: 4096" if engine not in ("ollama", "llama.cpp") else ""
    text = SPEC.format(
        engine=engine, version=version, options=json.dumps(options), source=source, extra=extra, host=host
    )
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    findings = [f for f in check_fleet(fleet) if f.rule.startswith("ENG")]
    return render_fleet(fleet).files, findings


def _container(files: dict[str, str]) -> dict[str, Any]:
    return dict(_yaml.load(next(text for name, text in files.items() if name.endswith("container.yaml"))))


def _file(files: dict[str, str], suffix: str) -> str:
    return next(text for name, text in files.items() if name.endswith(suffix))


def _config(files: dict[str, str]) -> dict[str, Any]:
    return dict(_yaml.load(_file(files, "/config.yaml")))


def _after(command: list[str], flag: str) -> list[str]:
    """The words following each occurrence of ``flag``, up to the next option."""
    words: list[str] = []
    for index, word in enumerate(command):
        if word == flag:
            for value in command[index + 1 :]:
                if value.startswith("--"):
                    break
                words.append(value)
    return words


# --- Ollama: OLLAMA_* variables as envconfig/config.go parses them ---------------------


def test_ollama_debug_false_is_valid_and_written_as_parsebool_reads_it(tmp_path: Path) -> None:
    files, findings = _render(tmp_path, "ollama", "0.32.15", {"debug": False}, source="qwen2.5:7b")
    assert [f for f in findings if f.severity is Severity.ERROR] == []  # was ENG002 "expects an integer"
    assert "OLLAMA_DEBUG=false\n" in _file(files, "ollama.env")


def test_ollama_debug_level_still_an_integer(tmp_path: Path) -> None:
    files, findings = _render(tmp_path, "ollama", "0.32.15", {"debug": 2}, source="qwen2.5:7b")
    assert findings == []
    assert "OLLAMA_DEBUG=2\n" in _file(files, "ollama.env")
    _, findings = _render(tmp_path, "ollama", "0.32.15", {"debug": "loud"}, source="qwen2.5:7b")
    assert [f.rule for f in findings] == ["ENG002"]


def test_ollama_list_options_comma_joined_as_strings_split_reads_them(tmp_path: Path) -> None:
    options = {"origins": ["*", "http://app.example"], "remotes": ["ollama.com"]}
    files, _ = _render(tmp_path, "ollama", "0.32.15", options, source="qwen2.5:7b")
    env = _file(files, "ollama.env")
    assert "OLLAMA_ORIGINS=*,http://app.example\n" in env  # was ['*', 'http://app.example']
    assert "OLLAMA_REMOTES=ollama.com\n" in env
    assert "[" not in env.split("\n", 2)[2]


def test_ollama_modelfile_list_parameter_one_line_per_value(tmp_path: Path) -> None:
    files, _ = _render(tmp_path, "ollama", "0.32.15", {"modelfile.stop": ["<|im_end|>", "</s>"]}, source="qwen2.5:7b")
    modelfile = _file(files, "Modelfile")
    assert "PARAMETER stop <|im_end|>\nPARAMETER stop </s>\n" in modelfile


# --- TGI: clap env variables and flags ---------------------------------------------------


def test_tgi_delimited_list_in_its_variable_and_bools_as_words(tmp_path: Path) -> None:
    files, _ = _render(tmp_path, "tgi", "3.3.7", {"cuda_graphs": [1, 2, 4], "trust_remote_code": True})
    env = _file(files, "tgi.env")
    assert "CUDA_GRAPHS=1,2,4\n" in env  # value_delimiter = ','
    assert "TRUST_REMOTE_CODE=true\n" in env


def test_tgi_vec_without_delimiter_repeats_its_flag(tmp_path: Path) -> None:
    files, _ = _render(tmp_path, "tgi", "3.3.7", {"cors_allow_origin": ["https://a.example", "https://b.example"]})
    command = _container(files)["command"]
    # one CORS_ALLOW_ORIGIN would be one origin "a,b": each value gets its own --cors-allow-origin
    assert "CORS_ALLOW_ORIGIN" not in _file(files, "tgi.env")
    assert command.count("--cors-allow-origin") == 2
    assert _after(command, "--cors-allow-origin") == ["https://a.example", "https://b.example"]
    files, _ = _render(tmp_path, "tgi", "3.3.7", {"cors_allow_origin": ["https://a.example"]})
    assert "CORS_ALLOW_ORIGIN=https://a.example\n" in _file(files, "tgi.env")


# --- vLLM: argparse (FlexibleArgumentParser) and its config file ------------------------


def test_vllm_booleans_by_form(tmp_path: Path) -> None:
    options = {"enable_prefix_caching": False, "disable_log_stats": False, "guided_decoding_disable_fallback": False}
    files, _ = _render(tmp_path, "vllm", "0.11.0", options)
    command, config = _container(files)["command"], _config(files)
    assert "--no-enable-prefix-caching" in command  # BooleanOptionalAction
    assert "--disable-log-stats" not in command and "disable-log-stats" not in config  # store_true, false: omitted
    # type=bool: bool("false") is True, so false is the empty word
    assert _after(command, "--guided-decoding-disable-fallback") == [""]


def test_vllm_mappings_as_json_and_lists_by_nargs(tmp_path: Path) -> None:
    options = {
        "compilation_config": {"level": 3},
        "allowed_origins": ["*"],  # type=json.loads: a JSON list, not the word *
        "middleware": ["a.b", "c.d"],  # action=append
        "cuda_graph_sizes": [1, 2],  # nargs=+
    }
    files, _ = _render(tmp_path, "vllm", "0.11.0", options)
    command, config = _container(files)["command"], _config(files)
    # vLLM 0.11's config reader writes a YAML mapping as str(dict), which json.loads refuses
    assert config["compilation-config"] == '{"level":3}'
    assert config["allowed-origins"] == '["*"]'
    assert [command[i + 1] for i, w in enumerate(command) if w == "--middleware"] == ["a.b", "c.d"]
    assert _after(command, "--cuda-graph-sizes") == ["1", "2"]


# --- SGLang: argparse and its config reader ----------------------------------------------


def test_sglang_negatable_booleans_stay_on_the_command_line(tmp_path: Path) -> None:
    options = {"dcp_replicate_q_proj": True, "enable_fused_qk_norm_rope": False, "enable_metrics": True}
    files, _ = _render(tmp_path, "sglang", "0.5.23", options)
    command, config = _container(files)["command"], _config(files)
    # SGLang's ConfigArgumentMerger refuses BooleanOptionalAction keys in the config file
    assert "dcp-replicate-q-proj" not in config and "--dcp-replicate-q-proj" in command
    assert "--no-enable-fused-qk-norm-rope" in command
    assert config["enable-metrics"] is True  # store_true: the config file holds it


def test_sglang_deprecated_flags_stay_on_the_command_line(tmp_path: Path) -> None:
    # 0.5.23's config reader takes argparse's own store_true only: --enable-dp-attention is a
    # DeprecatedStoreTrueAction there, and a config file naming it is refused at start-up
    files, _ = _render(tmp_path, "sglang", "0.5.23", {"enable_dp_attention": True, "enable_metrics": True})
    command, config = _container(files)["command"], _config(files)
    assert "enable-dp-attention" not in config and "--enable-dp-attention" in command
    assert config["enable-metrics"] is True


def test_sglang_one_word_lists_as_json(tmp_path: Path) -> None:
    files, _ = _render(tmp_path, "sglang", "0.5.23", {"sidecar_args": ["--a", "b"], "lora_target_modules": ["q", "v"]})
    command, config = _container(files)["command"], _config(files)
    assert config["sidecar-args"] == '["--a","b"]'  # json_list_type
    assert _after(command, "--lora-target-modules") == ["q", "v"]  # nargs=*


# --- llama.cpp and TensorRT-LLM ------------------------------------------------------------


def test_llama_cpp_negatable_false(tmp_path: Path) -> None:
    files, _ = _render(
        tmp_path,
        "llama.cpp",
        "b11312",
        {"cont_batching": False},
        source="/srv/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
    )
    assert "--no-cont-batching" in _container(files)["command"]


def test_tensorrt_llm_click_multiple_repeats_its_flag(tmp_path: Path) -> None:
    files, _ = _render(tmp_path, "tensorrt-llm", "1.2.1", {"custom_module_dirs": ["/m/a", "/m/b"]})
    command = _container(files)["command"]
    assert [command[i + 1] for i, w in enumerate(command) if w == "--custom_module_dirs"] == ["/m/a", "/m/b"]


# --- the engines' own parsers ----------------------------------------------------------------

ENVS = Path(os.environ.get("SERVESPEC_PARSER_ENVS") or Path.home() / ".cache/servespec/parser-envs")
PARSE_ARGV = Path(__file__).resolve().parents[1] / "parsers" / "parse_argv.py"
PARSED = {
    ("vllm", "0.11.0"): (
        {
            "enable_prefix_caching": False,
            "compilation_config": {"level": 3},
            "allowed_origins": ["*"],
            "middleware": ["a.b", "c.d"],
            "guided_decoding_disable_fallback": False,
        },
        {"enable_prefix_caching": False, "allowed_origins": ["*"], "middleware": ["a.b", "c.d"]},
    ),
    ("vllm", "0.33.0"): (
        {"enable_prefix_caching": False, "compilation_config": {"mode": 3}, "middleware": ["a.b", "c.d"]},
        {"enable_prefix_caching": False, "middleware": ["a.b", "c.d"]},
    ),
    ("sglang", "0.5.23"): (
        {
            "enable_dp_attention": True,
            "dcp_replicate_q_proj": True,
            "enable_fused_qk_norm_rope": False,
            "sidecar_args": ["--a", "b"],
            "cuda_graph_config": {"decode": {"max_bs": 64}},
        },
        {
            "enable_dp_attention": True,
            "dcp_replicate_q_proj": True,
            "enable_fused_qk_norm_rope": False,
            "sidecar_args": ["--a", "b"],
            "cuda_graph_config": {"decode": {"max_bs": 64}},
        },
    ),
}


@pytest.mark.parsers
@pytest.mark.slow
@pytest.mark.parametrize(("engine", "version"), list(PARSED), ids=[f"{e}-{v}" for e, v in PARSED])
def test_engine_parser_reads_rendered_values(engine: str, version: str, tmp_path: Path) -> None:
    from tests.render.test_engine_parsers import STAMP, engine_argv

    env = ENVS / f"{engine}-{version}"
    if not (env / STAMP).is_file():
        pytest.skip(f"no parser environment for {engine} {version} (scripts/parser-envs)")
    options, expected = PARSED[(engine, version)]
    files, _ = _render(tmp_path, engine, version, options)
    argv = engine_argv(engine, _container(files))
    assert argv is not None
    config = tmp_path / "config.yaml"
    config.write_text(_file(files, "/config.yaml"))
    argv[argv.index("--config") + 1] = str(config)
    (tmp_path / "argv.json").write_text(json.dumps(argv))
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    clean.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1")
    done = subprocess.run(
        [str(env / "bin" / "python"), str(PARSE_ARGV), engine, str(tmp_path / "argv.json")],
        capture_output=True,
        text=True,
        env=clean,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    parsed = json.loads(done.stdout)
    for key, value in expected.items():
        assert parsed[key] == value, (key, parsed[key])
