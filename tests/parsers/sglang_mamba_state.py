"""Run in an SGLang parser environment: the release's own bytes of one request's Gated DeltaNet states.

Reads ``{"tp": N, "config": {...}}`` (a Qwen3-Next / Qwen3.5 text config) on stdin and prints
``{"per_req": bytes}`` from ``Mamba2StateShape.create`` / ``Mamba2CacheParams.mamba_cache_per_req`` and
``mamba2_state_dtype(config)`` (sglang/srt/configs/mamba_utils.py), with the shape arguments of
``Qwen3NextConfig.mamba2_cache_params`` (configs/qwen3_next.py) and its linear layers
(``layer_types``, else every layer but each ``full_attention_interval``-th). ``sglang.srt.configs``' package
``__init__`` imports every config class (transformers, absent from the environment), so the module is loaded alone.
"""

from __future__ import annotations

import json
import sys
import types

import sglang.srt

package = types.ModuleType("sglang.srt.configs")
package.__path__ = [sglang.srt.__path__[0] + "/configs"]
sys.modules["sglang.srt.configs"] = package

from sglang.srt.configs.mamba_utils import Mamba2CacheParams, Mamba2StateShape, mamba2_state_dtype  # noqa: E402

ask = json.load(sys.stdin)
config = ask["config"]
shape = Mamba2StateShape.create(
    tp_world_size=ask["tp"],
    intermediate_size=config["linear_value_head_dim"] * config["linear_num_value_heads"],
    n_groups=config["linear_num_key_heads"],
    num_heads=config["linear_num_value_heads"],
    head_dim=config["linear_value_head_dim"],
    state_size=config["linear_key_head_dim"],
    conv_kernel=config["linear_conv_kernel_dim"],
)
types_ = config.get("layer_types") or [
    "full_attention" if (i + 1) % config["full_attention_interval"] == 0 else "linear_attention"
    for i in range(config["num_hidden_layers"])
]
layers = [i for i, kind in enumerate(types_) if kind == "linear_attention"]
params = Mamba2CacheParams(shape=shape, layers=layers, dtype=mamba2_state_dtype(types.SimpleNamespace(**config)))
print(json.dumps({"per_req": params.mamba_cache_per_req}))
