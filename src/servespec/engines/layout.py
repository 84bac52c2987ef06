"""A replica's parallel layout as its engine runs it: tensor, pipeline, data and expert parallelism.

``resources.data_parallel`` and ``resources.expert_parallel`` (and the engine options that say the
same, such as vLLM ``--enable-expert-parallel`` or SGLang ``--dp-size``) mean different layouts on
different engines; each engine unit turns them into one :class:`Layout` (``Engine.layout``), which
placement (GPUs per replica), the memory estimate and the divisibility checks read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Layout:
    """How one replica's GPUs split the model.

    ``tensor`` GPUs shard each attention layer (and the KV cache) of one data-parallel rank;
    ``data`` ranks each serve their own requests. With ``moe_spans_data`` an MoE model's expert
    layers span every rank's GPUs (vLLM data parallel, SGLang ``--enable-dp-attention``,
    TensorRT-LLM ``enable_attention_dp``); without it each rank is a whole copy of the model
    (SGLang ``--dp-size`` alone). Within that MoE group, ``expert`` GPUs each hold a share of the
    routed experts (1: every GPU holds a tensor slice of every expert).
    """

    tensor: int = 1
    pipeline: int = 1
    data: int = 1
    expert: int = 1
    moe_spans_data: bool = True

    @property
    def gpus(self) -> int:
        """GPUs one replica takes: tensor × pipeline × data parallel."""
        return self.tensor * self.pipeline * self.data

    @property
    def moe_group(self) -> int:
        """GPUs (of one pipeline stage) that one MoE layer's routed experts are split over."""
        return self.tensor * self.data if self.moe_spans_data else self.tensor

    @property
    def moe_tensor(self) -> int:
        """The tensor split of each routed expert: the MoE group over the expert-parallel size."""
        return max(1, self.moe_group // max(1, self.expert))


def spec_expert_size(expert_parallel: bool | int, group: int) -> int:
    """``resources.expert_parallel`` as a group size: true is the engine's default ``group``, false 1."""
    if expert_parallel is True:
        return group
    if expert_parallel is False:
        return 1
    return int(expert_parallel)


def whole(value: Any) -> int | None:
    """An option's value as a positive int, or None (unset, or not one: ENG002 reports it)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 1:
        return None
    return int(value)


def flag(value: Any) -> bool | None:
    """An option's boolean value, or None when unset."""
    return None if value is None else bool(value)
