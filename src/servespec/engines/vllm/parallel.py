"""vLLM's data and expert parallelism: the layout it runs, the options that render it, what it refuses at load.

``--data-parallel-size D`` runs D engine ranks of ``--tensor-parallel-size T`` GPUs each (T × D
GPUs); an MoE model's expert layers span all of them, tensor-sharded over T × D, or with
``--enable-expert-parallel`` split by expert over the same T × D GPUs: vLLM has no other
expert-parallel size (``FusedMoEParallelConfig.make``, "There are actually dp_size_ * tp_size_
devices", vllm/model_executor/layers/fused_moe/config.py; ``FusedMoE.__init__`` in fused_moe/layer.py
in 0.8.x: ``ep_size = tp_size * dp_size``), read in every catalogued wheel from 0.8.0 to 0.33.0.
The experts need not divide the group, where read: ``determine_expert_map`` (fused_moe/layer.py) gives
the last rank the rest (0.8.0 to 0.10.0) or the first ``experts % ep`` ranks one more (0.10.1 to 0.21.0);
so servespec reports no experts % EP refusal for vLLM (later releases were not read for it).

``resources.data_parallel`` renders ``data_parallel_size`` and ``resources.expert_parallel``
``enable_expert_parallel``; ``engine.options`` saying the same is accepted and rendered once (the
spec field is what is rendered), one saying otherwise is ENG003. With the spec fields unset the
options decide the layout, as in vLLM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from servespec.engines.base import EngineCheck
from servespec.engines.catalog import version_key
from servespec.engines.layout import Layout, flag, spec_expert_size, whole
from servespec.engines.shards import block_fp8_refusal

if TYPE_CHECKING:
    from servespec.engines.base import Known

FUSED_MOE_CONFIG = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/fused_moe/config.py"

# Where each catalogued release refuses an FP8 block-quantized MoE whose per-rank expert width is
# not a multiple of block_n: the line ``if intermediate_size_per_partition % block_n != 0:`` whose
# next line raises ValueError "The output_size of gate's and up's weight = N is not divisible by
# weight quantization block_n = 128." In ``Fp8MoEMethod.create_weights`` (quantization/fp8.py) up to
# 0.29.0, in ``validate_fp8_block_shape_moe`` (quantization/utils/fp8_utils.py), which it calls, from
# 0.30.0. Read from each release's wheel on PyPI, every catalogued release from 0.7.0 to 0.33.0 (0.6.x
# has no block-wise FP8 MoE). From REFINED on, vLLM first refines the block scales to
# gcd(block_n, block_k, width, hidden size) when that is at least 32 (fused_moe/oracle/fp8.py
# ``refine_fp8_moe_block_shape``) and refuses only below that.
_BLOCK_N_LINE: dict[str, int] = {
    "0.7.0": 405,
    "0.7.1": 412,
    "0.7.2": 414,
    "0.7.3": 417,
    "0.8.0": 427,
    "0.8.1": 427,
    "0.8.2": 427,
    "0.8.3": 466,
    "0.8.4": 471,
    "0.8.5": 476,
    "0.8.5.post1": 476,
    "0.9.0": 491,
    "0.9.0.1": 491,
    "0.9.1": 497,
    "0.9.2": 525,
    "0.10.0": 572,
    "0.10.1": 558,
    "0.10.1.1": 558,
    "0.10.2": 616,
    "0.11.0": 508,
    "0.11.1": 693,
    "0.11.2": 693,
    "0.12.0": 723,
    "0.13.0": 766,
    "0.14.0": 697,
    "0.14.1": 697,
    "0.15.0": 721,
    "0.15.1": 720,
    "0.16.0": 719,
    "0.17.0": 715,
    "0.17.1": 715,
    "0.18.0": 715,
    "0.18.1": 720,
    "0.19.0": 637,
    "0.19.1": 637,
    "0.20.0": 628,
    "0.20.1": 628,
    "0.20.2": 628,
    "0.21.0": 629,
    "0.22.0": 636,
    "0.22.1": 636,
    "0.23.0": 629,
    "0.24.0": 562,
    "0.25.0": 562,
    "0.25.1": 562,
    "0.26.0": 562,
    "0.27.0": 552,
    "0.27.1": 552,
    "0.28.0": 534,
    "0.29.0": 566,
    "0.30.0": 1274,
    "0.31.0": 1277,
    "0.32.0": 1361,
    "0.33.0": 1361,
}
REFINED = "0.29.0"
"""The first catalogued release that refines block scales instead of refusing."""
_FP8 = "https://github.com/vllm-project/vllm/blob/v{}/vllm/model_executor/layers/quantization/fp8.py#L{}"
_UTILS = "https://github.com/vllm-project/vllm/blob/v{}/vllm/model_executor/layers/quantization/utils/fp8_utils.py#L{}"


def block_check_source(version: str) -> str | None:
    """The source line where ``version`` refuses a block-FP8 expert shard (None: not a checked release)."""
    line = _BLOCK_N_LINE.get(version)
    if line is None:
        return None
    return (_UTILS if version_key(version) >= version_key("0.30.0") else _FP8).format(version, line)


def layout(known: Known) -> Layout:
    """The replica's layout: the spec's sizes, else vLLM's own options (``data_parallel_size``,
    ``enable_expert_parallel``); experts always span tensor × data parallel."""
    resources = known.deployment.spec.resources
    tp = resources.tensor_parallel
    data = resources.data_parallel
    if data == 1:
        data = whole(known.options.get("data_parallel_size")) or 1
    expert = spec_expert_size(resources.expert_parallel, tp * data) > 1
    return vllm_layout(
        tp, resources.pipeline_parallel, data, expert or bool(flag(known.options.get("enable_expert_parallel")))
    )


def vllm_layout(tensor: int, pipeline: int, data: int, expert_parallel: bool) -> Layout:
    """vLLM's layout of ``data`` engine ranks of ``tensor`` GPUs each, per pipeline stage.

    What each GPU holds, as the releases build it (read in v0.10.0 and v0.10.1, the same in 0.11.0 and 0.33.0):

    - attention, dense MLPs, shared experts, the embeddings and the LM head: sharded over the rank's ``tensor`` GPUs
      (the TP group) and whole on every data-parallel rank; the KV cache is each rank's own (its own engine core and
      scheduler), ``kv_heads / tensor`` heads per GPU, and the rank logs its own "GPU KV cache size";
    - the routed experts of every MoE layer: over all ``tensor × data`` GPUs of the stage. Without expert
      parallelism each expert is tensor-sharded over them (``FusedMoEParallelConfig.make``: "There are actually
      dp_size_ * tp_size_ devices. Update tp_size and tp_rank so we shard across all devices", ``flatten_tp_across_dp``,
      fused_moe/config.py v0.10.1 L273-L277); with ``--enable-expert-parallel`` each GPU holds ``experts / (tensor ×
      data)`` whole experts (``ep_size = tp_size``, ``tp_size = 1`` there, L300-L306; ``determine_expert_map``).

    The MoE group is therefore ``tensor × data`` either way (:attr:`Layout.moe_group`); ``expert`` says whether the
    experts are split by expert (``tensor × data``) or each one by tensor (1)."""
    return Layout(tensor, pipeline, data, tensor * data if expert_parallel and tensor * data > 1 else 1)


def rendered(known: Known) -> dict[str, Any]:
    """The options the spec's data and expert parallelism render to (nothing for the defaults)."""
    resources = known.deployment.spec.resources
    options: dict[str, Any] = {}
    if resources.data_parallel > 1:
        options["data_parallel_size"] = resources.data_parallel
    if spec_expert_size(resources.expert_parallel, 2) > 1:
        options["enable_expert_parallel"] = True
    return options


def checks(known: Known) -> Iterator[EngineCheck]:
    """Options that contradict the spec's layout; an expert-parallel size vLLM cannot run; block-FP8 refusals."""
    resources = known.deployment.spec.resources
    dp_option = known.effective.get("data_parallel_size")
    if resources.data_parallel > 1 and dp_option is not None and whole(dp_option.value) != resources.data_parallel:
        yield EngineCheck(
            "ENG003",
            dp_option.path,
            f"{dp_option.name} {dp_option.value} disagrees with resources.data_parallel {resources.data_parallel}",
            hint="remove the option: resources.data_parallel renders --data-parallel-size",
        )
    ep_option = known.effective.get("enable_expert_parallel")
    asked = spec_expert_size(resources.expert_parallel, 2) > 1
    if asked and ep_option is not None and flag(ep_option.value) is False:
        yield EngineCheck(
            "ENG003",
            ep_option.path,
            f"{ep_option.name} false disagrees with resources.expert_parallel {resources.expert_parallel}",
            hint="remove the option: resources.expert_parallel renders --enable-expert-parallel",
        )
    placed = known.layout
    wanted = resources.expert_parallel
    if not isinstance(wanted, bool) and wanted > 1 and wanted != placed.moe_group:
        yield EngineCheck(
            "PAR003",
            ("resources", "expert_parallel"),
            f"vLLM splits experts over tensor × data parallel ({placed.moe_group} GPUs), not a group of {wanted}: "
            f"--enable-expert-parallel has no size (FusedMoEParallelConfig, {FUSED_MOE_CONFIG})",
            hint=f"set resources.expert_parallel: true (a group of {placed.moe_group})",
        )
    yield from _block_quant(known, placed)


def _block_quant(known: Known, placed: Layout) -> Iterator[EngineCheck]:
    """FP8 block-quantized MoE weights whose per-rank expert width vLLM cannot shard (see _BLOCK_N_LINE)."""
    release = known.release
    where = block_check_source(release.version) if release else None
    if release is None or where is None:
        return
    refines = version_key(release.version) >= version_key(REFINED)
    found = block_fp8_refusal(known, placed, "vLLM", where, refines=refines)
    if found is not None:
        yield found
