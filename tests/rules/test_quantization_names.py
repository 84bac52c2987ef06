"""model.quantization takes servespec's names and every method the engine release accepts.

Before: a Literal of nine names, so ``int4`` (compressed-tensors pack-quantized, as
moonshotai/Kimi-K2-Thinking ships) and ``auto_round`` were SS003 although the engines load them.
Now a name the release does not know is HW003 (the release's ``--quantization`` choices, from its
catalog), formats the engine reads from the checkpoint render no flag, and each is sized from
the checkpoint's quantization_config where known, else from the name.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from servespec.findings import Finding, Severity
from servespec.knowledge import models, resolve
from servespec.knowledge.memory import GIB, weight_bytes
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

FLEET = Path(__file__).parent / "cases" / "_fleet"
QWEN = Path(__file__).resolve().parent.parent / "data" / "modelopt" / "nvidia--Qwen3-235B-A22B-NVFP4" / "config.json"


def _spec(tmp_path: Path, quantization: str, version: str = "0.12.0", host: str = "nvs8", config: str = "") -> Path:
    shutil.copytree(FLEET, tmp_path, dirs_exist_ok=True)
    spec = tmp_path / "spec.yaml"
    model = config or "  source: meta-llama/Llama-3.1-8B-Instruct\n"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\ninventory: inventory.yaml\n"
        f"model:\n{model}  max_model_len: 8192\n  quantization: {quantization}\n"
        f'engine: {{name: vllm, version: "{version}"}}\nresources: {{gpu_ids: [0]}}\nplacement: {{hosts: [{host}]}}\n'
    )
    return spec


def _findings(spec: Path, *rules: str) -> list[Finding]:
    fleet = load_fleet([spec])
    found = list(fleet.findings) + ([] if not fleet.deployments else check_fleet(fleet))
    return [f for f in found if f.rule in rules]


@pytest.mark.parametrize(
    "name",
    ["int4", "auto_round", "w4a16", "w8a8", "gptq_marlin", "awq_marlin", "modelopt", "modelopt_fp4", "moe_wna16"],
)
def test_names_the_release_accepts_are_not_refused(tmp_path: Path, name: str) -> None:
    found = _findings(_spec(tmp_path, name), "SS003", "HW003")
    assert found == [], [f.message for f in found]


def test_a_name_the_release_lacks_is_hw003_not_a_schema_refusal(tmp_path: Path) -> None:
    found = _findings(_spec(tmp_path, "exl2"), "SS003", "HW003")
    assert [(f.rule, f.severity) for f in found] == [("HW003", Severity.ERROR)]
    assert "not one of the release's quantization methods" in found[0].message


def test_a_name_that_is_no_method_name_is_still_a_schema_error(tmp_path: Path) -> None:
    assert [f.rule for f in _findings(_spec(tmp_path, '"int4; rm -rf /"'), "SS003")] == ["SS003"]


def test_checkpoint_format_without_its_loader_in_the_release_is_a_warning(tmp_path: Path) -> None:
    """vLLM 0.24-0.32 list neither auto-round nor inc: not a refusal seen at a source line."""
    found = _findings(_spec(tmp_path, "auto_round", version="0.24.0"), "HW003")
    assert [(f.rule, f.severity) for f in found] == [("HW003", Severity.WARNING)]


def test_hw002_stays_the_release_minimum(tmp_path: Path) -> None:
    """ModelOpt FP8 needs 8.9 on vLLM 0.12 (ModelOptFp8Config.get_min_capability 89); compressed-tensors 7.0."""
    assert [f.rule for f in _findings(_spec(tmp_path / "a", "modelopt", host="acs4"), "HW002")] == ["HW002"]
    assert _findings(_spec(tmp_path / "b", "int4", host="t4"), "HW002") == []


def _quantization_lines(spec: Path) -> list[str]:
    """The rendered vLLM option lines naming a quantization (config.yaml keys or flags)."""
    text = "\n".join(render_fleet(load_fleet([spec])).files.values())
    return [line.strip() for line in text.splitlines() if line.strip().startswith(("quantization:", "--quantization"))]


def test_checkpoint_formats_render_no_flag_and_method_names_render_as_given(tmp_path: Path) -> None:
    assert _quantization_lines(_spec(tmp_path / "a", "int4")) == []
    assert _quantization_lines(_spec(tmp_path / "b", "gptq_marlin")) == ["quantization: gptq_marlin"]
    assert _quantization_lines(_spec(tmp_path / "c", "nvfp4")) == ["quantization: modelopt_fp4"]


def _weights(spec: Path) -> float:
    known = resolve.resolved(load_fleet([spec]).deployments[0])
    inp = known.estimate_input()
    assert inp is not None
    return weight_bytes(inp) / GIB


def test_sized_from_the_checkpoint_config_where_known_else_from_the_name(tmp_path: Path) -> None:
    config = json.loads(QWEN.read_text())
    bf16 = weight_bytes_of(config)
    # An unquantized checkpoint named int4: sized from the name (4 bits + a 16-bit scale and 4-bit zero per 128).
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text(json.dumps(config))
    by_name = _weights(_spec(tmp_path / "a", "int4", config="  source: acme/qwen\n  config: config.json\n"))
    assert by_name < 0.3 * bf16
    # A compressed-tensors pack-quantized checkpoint (groups of 32, symmetric): 4 + 16/32 bits from its config.
    quant = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 32},
            }
        },
        "ignore": ["lm_head"],
    }
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config.json").write_text(json.dumps({**config, "quantization_config": quant}))
    from_config = _weights(_spec(tmp_path / "b", "int4", config="  source: acme/qwen\n  config: config.json\n"))
    embeddings = 2 * 151936 * 4096 * 2 / GIB
    assert from_config == pytest.approx((bf16 - embeddings) * 4.5 / 16 + embeddings, rel=0.01)
    assert from_config > by_name


def weight_bytes_of(config: dict[str, object]) -> float:
    from servespec.knowledge.memory import EstimateInput

    facts = models.facts_from_config(config, "qwen")
    return weight_bytes(EstimateInput(engine="vllm", release=None, model=facts, gpu=None)) / GIB


def test_engine_without_a_method_list_warns_on_a_name_it_cannot_check(tmp_path: Path) -> None:
    """TensorRT-LLM's catalog lists no quantization methods: an unmapped name is no proven refusal."""
    spec = _spec(tmp_path, "w4a16")
    spec.write_text(spec.read_text().replace('name: vllm, version: "0.12.0"', 'name: tensorrt-llm, version: "1.2.1"'))
    found = _findings(spec, "SS003", "HW003")
    assert [(f.rule, f.severity) for f in found] == [("HW003", Severity.WARNING)], [f.message for f in found]


def test_compressed_tensors_ignore_list_stays_in_the_model_dtype() -> None:
    """``ignore`` names (or ``re:`` patterns) modules left unquantized, as llm-compressor writes them."""
    config = json.loads(QWEN.read_text())
    scheme = {"weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}}
    quant = {"quant_method": "compressed-tensors", "config_groups": {"group_0": scheme}, "ignore": ["lm_head"]}
    plain = models.facts_from_config({**config, "quantization_config": quant}, "q")
    ignored = {**quant, "ignore": ["lm_head", "re:.*self_attn.*", "re:.*mlp.gate$"]}
    facts = models.facts_from_config({**config, "quantization_config": ignored}, "q")
    assert ("attention", 1.0, None) in facts.quant_parts
    extra = models.part_params(facts)["attention"] * (2 - (4 + 16 / 128) / 8) / GIB
    assert weight_bytes_of({**config, "quantization_config": ignored}) - weight_bytes_of(
        {**config, "quantization_config": quant}
    ) == pytest.approx(extra, rel=0.001)
    assert plain.quant_bits == facts.quant_bits == 4 + 16 / 128
