"""Write tests/data/transformers_vision_param_counts.json: vision-language models built by transformers itself.

Run in a parser environment that has transformers and torch (no weights are read, nothing is downloaded):

    ~/.cache/servespec/parser-envs/vllm-0.11.0/bin/python scripts/vision_param_counts.py

Each case is a configuration transformers builds on the meta device (``AutoModelForImageTextToText.from_config``),
its parameters summed (``numel``, tied tensors once) and its vision part (every parameter outside the language model
and the LM head). The configs are each configuration class's defaults, or a catalogued config.json
(src/servespec/knowledge/data/models.yaml) where the class defaults are not a released model's shapes.
tests/knowledge/test_vision_towers.py checks servespec's count of each against these figures.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import torch
import transformers
import yaml
from transformers import AutoModelForImageTextToText

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "transformers_vision_param_counts.json"
_BOOKKEEPING = {
    "id2label", "label2id", "architectures", "output_hidden_states", "return_dict", "chunk_size_feed_forward",
    "is_encoder_decoder", "problem_type", "_name_or_path", "output_attentions", "transformers_version",
}  # fmt: skip
_DEFAULTS = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "mllama", "llama4")
_CATALOGUED = ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "Qwen/Qwen3-VL-2B-Instruct")
# granite-vision's shape (LlavaNext: a granite text model, a SigLIP tower, four feature layers): built from
# the config classes with the published widths, as no config.json of the repo was reachable.
_GRANITE_VISION = {
    "model_type": "llava_next",
    "text_config": {"model_type": "granite", "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 32,
                    "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 49156,
                    "tie_word_embeddings": True},
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
                      "num_hidden_layers": 27, "num_attention_heads": 16, "image_size": 384, "patch_size": 14},
    "vision_feature_layer": [-24, -20, -12, -1],
    "tie_word_embeddings": True,
}  # fmt: skip


class _Loader(yaml.SafeLoader):
    """PyYAML reading floats as YAML 1.2 does (``1e-05`` is a number, as ruamel reads the catalog)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+|\.[0-9_]+)$"),
    list("-+0123456789."),
)


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in _BOOKKEEPING}
    return value


def _build(config: transformers.PretrainedConfig) -> dict[str, Any]:
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    named = dict(model.named_parameters())
    vision = sum(p.numel() for n, p in named.items() if "language_model" not in n and not n.startswith("lm_head"))
    return {
        "config": _clean(config.to_dict()),
        "model": type(model).__name__,
        "params": sum(p.numel() for p in named.values()),
        "vision_params": vision,
    }


def _from_dict(raw: dict[str, Any]) -> transformers.PretrainedConfig:
    body = {k: v for k, v in raw.items() if k != "model_type"}
    return transformers.CONFIG_MAPPING[raw["model_type"]](**body)


def main() -> int:
    cases: dict[str, Any] = {}
    for model_type in _DEFAULTS:
        config = transformers.CONFIG_MAPPING[model_type]()
        cases[type(config).__name__] = _build(config)
    catalog = yaml.load((REPO / "src/servespec/knowledge/data/models.yaml").read_text(), Loader=_Loader)["models"]
    for repo in _CATALOGUED:
        cases[repo] = _build(_from_dict(catalog[repo]["config"]))
    cases["granite-vision shape (LlavaNext, granite + SigLIP)"] = _build(_from_dict(_GRANITE_VISION))
    about = (
        f"Vision-language models built by transformers {transformers.__version__} on the meta device "
        "(AutoModelForImageTextToText.from_config), parameters summed once each; vision_params: every parameter "
        "outside the language model and lm_head. Written by scripts/vision_param_counts.py."
    )
    OUT.write_text(json.dumps({"about": about, "cases": cases}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
