"""``python scripts/catalog/transformers_params.py CONFIG.json``: the parameters transformers builds for a config.

Run with a parser environment's interpreter (``scripts/parser-envs``: transformers and torch CPU, e.g.
~/.cache/servespec/parser-envs/vllm-0.33.0/bin/python). The model is built on the meta device
(no memory, no weights), from the config's own model class (``AutoConfig.for_model``): the image-text class
for a config with a ``vision_config`` (its count includes the vision tower, as servespec's does), else the
causal-LM one. Prints ``{"model": <class>, "params": <sum of numel>, "vision": <visual/vision_tower parameters>}``,
the reference a new family's arithmetic is checked against (tests/knowledge/test_model_families.py holds the
measured counts).

``quantization_config`` and ``auto_map`` are dropped: the count is of the architecture, not of a
checkpoint's packing or remote code. This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def count(config_path: Path) -> dict[str, object]:
    """Build the config's model on the meta device and count its parameters."""
    import torch
    import transformers

    config = json.loads(config_path.read_text())
    for key in ("quantization_config", "auto_map"):
        config.pop(key, None)
    hf_config = transformers.AutoConfig.for_model(**config)
    multimodal = "vision_config" in config
    with torch.device("meta"):
        if multimodal:
            model = transformers.AutoModelForImageTextToText.from_config(hf_config)
        else:
            model = transformers.AutoModelForCausalLM.from_config(hf_config)
    params = sum(p.numel() for p in model.parameters())
    vision = sum(p.numel() for name, p in model.named_parameters() if ".visual." in name or "vision_tower" in name)
    return {"model": type(model).__name__, "params": params, "vision": vision}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    print(json.dumps(count(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
