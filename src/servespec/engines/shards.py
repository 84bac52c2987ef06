"""What engines refuse at load when a layout shards block-quantized expert weights unevenly.

FP8 checkpoints quantized in ``[block_n, block_k]`` blocks (``quantization_config.weight_block_size``,
DeepSeek-V3, Qwen3-*-FP8) keep one scale per block. vLLM and SGLang give each rank
``moe_intermediate_size / (MoE tensor split)`` of every expert it holds and refuse at load when
that is not a multiple of ``block_n`` ("The output_size of gate's and up's weight = N is not
divisible by weight quantization block_n = 128.") or, with tensor parallelism, of ``block_k``.
Each unit passes the source line of the pinned release that raises it (its own table, read
from the release); this module does the arithmetic they share.
"""

from __future__ import annotations

import math

from servespec.engines.base import EngineCheck, Known
from servespec.engines.layout import Layout


def block_fp8_refusal(known: Known, placed: Layout, title: str, where: str, *, refines: bool) -> EngineCheck | None:
    """PAR006 where ``placed`` leaves a per-rank expert width the release refuses (``where``: its raising line).

    ``refines``: the release first refines the block scales to ``gcd(block_n, block_k, width,
    hidden_size)`` when that is at least 32 (vLLM from 0.29.0), and refuses only below it.
    """
    facts = known.model.facts
    if facts is None or not facts.is_moe or facts.weight_block_size is None or facts.quant_method != "fp8":
        return None
    if known.deployment.spec.model.quantization not in (None, "auto", "fp8"):
        return None  # quantized at load by another method: the checkpoint's blocks are not loaded as such
    width = facts.moe_intermediate_size
    shards = placed.moe_tensor
    if not width or width % shards:
        return None  # an uneven split fails elsewhere first (not modelled here)
    block_n, block_k = facts.weight_block_size
    per_rank = width // shards
    if per_rank % block_n == 0 and (placed.tensor == 1 or per_rank % block_k == 0):
        return None
    if refines and math.gcd(block_n, block_k, per_rank, facts.hidden_size) >= 32:
        return None
    refused = (
        f"The output_size of gate's and up's weight = {per_rank} is not divisible by weight quantization "
        f"block_n = {block_n}"
        if per_rank % block_n
        else f"The input_size of down's weight = {per_rank} is not divisible by weight quantization block_k = {block_k}"
    )
    fits = [
        n for n in (1, 2, 4, 8, 16, 32) if width % n == 0 and width // n % block_n == 0 and width // n % block_k == 0
    ]
    return EngineCheck(
        "PAR006",
        ("resources", "tensor_parallel"),
        f"{title} {known.release.version if known.release else ''} refuses to load {facts.name}: its experts' FP8 "
        f"blocks are {block_n}×{block_k} and moe_intermediate_size {width} split over {shards} ranks leaves "
        f'{per_rank} per rank ("{refused}", {where})',
        hint="set resources.expert_parallel: true (each GPU holds whole experts), or split the experts over "
        f"{' or '.join(str(n) for n in fits)} GPUs",
    )
