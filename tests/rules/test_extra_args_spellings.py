"""``extra_args`` read as the release's own parser reads them (issue 12, item 11).

argparse (vLLM, SGLang) takes a unique prefix of a long option (``allow_abbrev`` is left at
True: SGLang's ``prepare_server_args``, vLLM's FlexibleArgumentParser); vLLM reads ``_`` in
a name as ``-``; ``--no-x`` is a negatable ``--x`` set false; ``--flag=value`` is one word.
clap (TGI), click (trtllm-serve) and llama.cpp match exactly. A spelling that names an
option a spec field owns is ENG003, as the long form is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from servespec.knowledge import resolve
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: spell}}
model: {{source: Qwen/Qwen2.5-7B-Instruct, revision: a09a35458c702b33eeacc393d103063234e8bc28, max_model_len: 4096}}
engine:
  name: {engine}
  version: "{version}"
  extra_args: {args}
placement: {{hosts: [l4-a]}}
"""


def _check(tmp_path: Path, engine: str, version: str, args: list[str]) -> tuple[list[Any], dict[str, Any]]:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(engine=engine, version=version, args=json.dumps(args)))
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    findings = [f for f in check_fleet(fleet) if f.rule in ("ENG001", "ENG002", "ENG003")]
    return findings, resolve.resolved(fleet.deployments[0]).options


@pytest.mark.parametrize(
    ("engine", "version", "args", "key", "value"),
    [
        ("sglang", "0.5.23", ["--mem-fraction", "0.8"], "mem_fraction_static", 0.8),  # unique prefix
        ("sglang", "0.5.23", ["--mem-fraction=0.8"], "mem_fraction_static", 0.8),
        ("vllm", "0.11.0", ["--gpu_memory_utilization", "0.8"], "gpu_memory_utilization", 0.8),  # _ read as -
        ("vllm", "0.11.0", ["--gpu-memory-util=0.8"], "gpu_memory_utilization", 0.8),
        ("vllm", "0.11.0", ["--no-enable-prefix-caching"], "enable_prefix_caching", False),
        ("vllm", "0.33.0", ["--max-num-seq", "64"], "max_num_seqs", 64),
    ],
)
def test_spellings_the_parser_accepts(
    tmp_path: Path, engine: str, version: str, args: list[str], key: str, value: Any
) -> None:
    findings, options = _check(tmp_path, engine, version, args)
    assert findings == [], [f.to_text() for f in findings]  # was ENG001 "has no option"
    assert options[key] == value


def test_prefix_of_a_spec_field_option_is_eng003(tmp_path: Path) -> None:
    # SGLang --tp is --tp-size, which resources.tensor_parallel renders
    findings, _ = _check(tmp_path, "sglang", "0.5.23", ["--tp", "2"])
    assert [f.rule for f in findings] == ["ENG003"]
    assert "tensor_parallel" in findings[0].message


@pytest.mark.parametrize(
    ("engine", "version", "args"),
    [
        ("vllm", "0.11.0", ["--max-num", "8"]),  # ambiguous: --max-num-seqs, --max-num-batched-tokens, ...
        ("tgi", "3.3.7", ["--max-batch-pre", "4096"]),  # clap: no prefix matching
        ("tensorrt-llm", "1.2.1", ["--max-batch-size", "8"]),  # click: --max_batch_size only
    ],
)
def test_spellings_the_parser_refuses_stay_unknown(tmp_path: Path, engine: str, version: str, args: list[str]) -> None:
    findings, _ = _check(tmp_path, engine, version, args)
    assert [f.rule for f in findings] == ["ENG001"], [f.to_text() for f in findings]


def test_value_of_an_abbreviated_flag_is_checked(tmp_path: Path) -> None:
    findings, _ = _check(tmp_path, "sglang", "0.5.23", ["--mem-fraction", "lots"])
    assert [f.rule for f in findings] == ["ENG002"]
