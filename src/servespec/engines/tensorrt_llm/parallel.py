"""TensorRT-LLM's attention data parallelism and MoE expert parallelism: the layout and what renders it.

trtllm-serve runs ``tensor_parallel_size × pipeline_parallel_size`` ranks. ``enable_attention_dp``
turns the tensor-parallel ranks into attention data-parallel ranks: each runs attention (and keeps
its KV cache) alone, and the MoE layers span all of them, split into ``moe_expert_parallel_size``
expert groups × ``moe_tensor_parallel_size`` (``tp_size`` must equal their product:
tensorrt_llm/mapping.py ``Mapping.__init__``). The LLM API has no attention tensor-parallel size
beside it, so ``resources.data_parallel: D`` with ``tensor_parallel: T`` renders
``tensor_parallel_size`` T × D with ``enable_attention_dp: true``, which TensorRT-LLM runs as
T × D attention ranks of one GPU each (the layout servespec sizes memory by).
``resources.expert_parallel`` renders ``moe_expert_parallel_size`` (true: every rank). Options that
say the same are accepted and rendered once; options that say otherwise are ENG003.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from servespec.engines.base import EngineCheck
from servespec.engines.layout import Layout, flag, spec_expert_size, whole

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.engines.options import Setting

EP_KEYS = ("moe_expert_parallel_size", "ep_size")
"""The LLM-API field and trtllm-serve's flag (``--ep_size``, 0.21 to 1.1) that set the expert-parallel size."""


def _setting(known: Known, keys: tuple[str, ...]) -> Setting | None:
    return next((known.effective[key] for key in keys if key in known.effective), None)


def layout(known: Known) -> Layout:
    """The replica's layout: attention DP over every rank where asked, experts over the EP size."""
    resources = known.deployment.spec.resources
    world = resources.tensor_parallel * resources.data_parallel
    ep_setting = _setting(known, EP_KEYS)
    expert = spec_expert_size(resources.expert_parallel, world)
    if expert == 1 and ep_setting is not None:
        expert = whole(ep_setting.value) or 1
    dp_setting = _setting(known, ("enable_attention_dp",))
    if resources.data_parallel > 1 or (dp_setting is not None and flag(dp_setting.value)):
        return Layout(1, resources.pipeline_parallel, world, expert, moe_spans_data=True)
    return Layout(world, resources.pipeline_parallel, 1, expert, moe_spans_data=True)


def rendered(known: Known) -> dict[str, Any]:
    """``tensor_parallel_size`` (every rank), and ``enable_attention_dp`` / ``moe_expert_parallel_size`` where the
    spec sets them and no option already does."""
    resources = known.deployment.spec.resources
    world = resources.tensor_parallel * resources.data_parallel
    options: dict[str, Any] = {"tensor_parallel_size": world}
    if resources.data_parallel > 1 and _setting(known, ("enable_attention_dp",)) is None:
        options["enable_attention_dp"] = True
    expert = spec_expert_size(resources.expert_parallel, world)
    if expert > 1 and _setting(known, EP_KEYS) is None:
        options["moe_expert_parallel_size"] = expert
    return options


def checks(known: Known) -> Iterator[EngineCheck]:
    """Options that contradict the spec's data or expert parallelism (ENG003)."""
    resources = known.deployment.spec.resources
    world = resources.tensor_parallel * resources.data_parallel
    dp_setting = _setting(known, ("enable_attention_dp",))
    if resources.data_parallel > 1 and dp_setting is not None and flag(dp_setting.value) is False:
        yield EngineCheck(
            "ENG003",
            dp_setting.path,
            f"{dp_setting.name} false disagrees with resources.data_parallel {resources.data_parallel}",
            hint="remove the option: resources.data_parallel renders enable_attention_dp",
        )
    expert = spec_expert_size(resources.expert_parallel, world)
    ep_setting = _setting(known, EP_KEYS)
    if expert > 1 and ep_setting is not None and whole(ep_setting.value) != expert:
        yield EngineCheck(
            "ENG003",
            ep_setting.path,
            f"{ep_setting.name} {ep_setting.value} disagrees with resources.expert_parallel (an expert-parallel "
            f"size of {expert})",
            hint="remove the option: resources.expert_parallel renders moe_expert_parallel_size",
        )
