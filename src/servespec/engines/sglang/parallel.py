"""SGLang's data and expert parallelism: the layout it runs and the options that render it.

SGLang's ``--dp-size D`` alone runs D copies of the model, each on ``--tp-size`` GPUs (its data
parallel controller). With ``--enable-dp-attention`` the D ranks share one ``--tp-size`` world
instead: attention runs per rank on ``tp_size / dp_size`` GPUs, the MoE layers over all
``tp_size`` GPUs. In 0.4.0 to 0.4.4 dp attention sets ``dp_size = tp_size`` itself
(srt/server_args.py ``__post_init__``: "Data parallel size is adjusted to be the same as tensor
parallel size", read in every catalogued 0.4.x wheel); from 0.4.4.post1 ``dp_size`` is kept.
Experts are split over ``--ep-size`` GPUs of the ``tp_size`` world. How EP is turned on changed
(read in every catalogued server_args.py): 0.4.0.post1 to 0.4.9.post6 ``--enable-ep-moe`` sets
``ep_size = tp_size`` and is what turns EP MoE on; 0.4.10 and 0.4.10.post1 keep the flag without
that sizing, so both it and ``--ep-size`` are rendered; from 0.4.10.post2 the catalog marks it
deprecated (0.5.x: ``DeprecatedAction`` raises ValueError "Please set `--ep-size` to the same
value as `--tp-size`"), so only ``--ep-size`` is rendered. 0.4.0 has no expert parallelism (PAR003).

``resources.data_parallel: D`` renders ``--dp-size D`` and, when the spec turns on dp attention
(``engine.options.enable_dp_attention: true``), ``--tp-size`` tensor × data parallel, so that each
rank's attention keeps ``resources.tensor_parallel`` GPUs. ``resources.expert_parallel`` renders
the release's own switch as above. Options saying the same are
accepted and rendered once; options saying otherwise are ENG003 (the spec field is rendered).
With the spec fields unset, SGLang's own options decide, as in SGLang.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from servespec.engines.base import EngineCheck
from servespec.engines.catalog import version_key
from servespec.engines.layout import Layout, flag, spec_expert_size, whole
from servespec.engines.shards import block_fp8_refusal

if TYPE_CHECKING:
    from servespec.engines.base import Known

SERVER_ARGS = "https://github.com/sgl-project/sglang/blob/v0.4.1/python/sglang/srt/server_args.py"
# Where each catalogued release refuses an FP8 block-quantized MoE whose per-rank expert width is not
# a multiple of block_n: the ``if intermediate_size... % block_n != 0:`` line of ``Fp8MoEMethod.create_weights``
# (srt/layers/quantization/fp8.py) whose next line raises ValueError "The output_size of gate's and up's
# weight = N is not divisible by weight quantization block_n = 128." Read from each release's wheel on PyPI,
# every catalogued release from 0.4.1 to 0.5.23 (0.4.0 to 0.4.0.post2 have no block-wise FP8 MoE); from
# 0.5.11 the check is skipped only on ROCm with aiter's padding (``_use_aiter``), which servespec does not target.
_BLOCK_N_LINE: dict[str, int] = {
    "0.4.1": 444,
    "0.4.1.post1": 444,
    "0.4.1.post2": 456,
    "0.4.1.post3": 456,
    "0.4.1.post4": 456,
    "0.4.1.post5": 456,
    "0.4.1.post6": 458,
    "0.4.1.post7": 461,
    "0.4.2": 461,
    "0.4.2.post1": 468,
    "0.4.2.post2": 468,
    "0.4.2.post3": 468,
    "0.4.2.post4": 468,
    "0.4.3": 468,
    "0.4.3.post1": 468,
    "0.4.3.post2": 468,
    "0.4.3.post3": 472,
    "0.4.3.post4": 472,
    "0.4.4": 477,
    "0.4.4.post1": 477,
    "0.4.4.post2": 502,
    "0.4.4.post3": 502,
    "0.4.4.post4": 502,
    "0.4.5": 502,
    "0.4.5.post1": 503,
    "0.4.5.post2": 498,
    "0.4.5.post3": 498,
    "0.4.6": 498,
    "0.4.6.post1": 498,
    "0.4.6.post2": 498,
    "0.4.6.post3": 495,
    "0.4.6.post4": 495,
    "0.4.6.post5": 497,
    "0.4.7": 499,
    "0.4.7.post1": 499,
    "0.4.8": 506,
    "0.4.8.post1": 506,
    "0.4.9": 525,
    "0.4.9.post1": 546,
    "0.4.9.post2": 546,
    "0.4.9.post3": 532,
    "0.4.9.post4": 532,
    "0.4.9.post5": 535,
    "0.4.9.post6": 535,
    "0.4.10": 532,
    "0.4.10.post1": 543,
    "0.4.10.post2": 543,
    "0.5.1": 545,
    "0.5.1.post1": 545,
    "0.5.1.post2": 545,
    "0.5.1.post3": 546,
    "0.5.2": 556,
    "0.5.3": 556,
    "0.5.3.post1": 556,
    "0.5.3.post2": 556,
    "0.5.3.post3": 556,
    "0.5.4": 556,
    "0.5.4.post1": 551,
    "0.5.4.post2": 551,
    "0.5.4.post3": 565,
    "0.5.5": 565,
    "0.5.5.post1": 565,
    "0.5.5.post2": 575,
    "0.5.5.post3": 564,
    "0.5.6": 572,
    "0.5.6.post1": 577,
    "0.5.6.post2": 580,
    "0.5.7": 588,
    "0.5.8": 647,
    "0.5.8.post1": 647,
    "0.5.9": 726,
    "0.5.10": 818,
    "0.5.10.post1": 818,
    "0.5.11": 863,
    "0.5.12": 892,
    "0.5.12.post1": 892,
    "0.5.13": 914,
    "0.5.13.post1": 914,
    "0.5.14": 939,
    "0.5.15": 999,
    "0.5.15.post1": 999,
    "0.5.16": 1082,
    "0.5.17": 1135,
    "0.5.18": 1165,
    "0.5.19": 1180,
    "0.5.20": 1256,
    "0.5.21": 1402,
    "0.5.22": 1478,
    "0.5.23": 1588,
}
_FP8 = "https://github.com/sgl-project/sglang/blob/v{}/python/sglang/srt/layers/quantization/fp8.py#L{}"
DP_KEPT_FROM = "0.4.4.post1"
"""The first release whose dp attention keeps ``--dp-size`` (earlier: ``dp_size = tp_size``)."""


def _value(known: Known, name: str) -> Any:
    """The effective value of an option by any release's key for it (``dp_size`` is 0.4's ``data_parallel_size``)."""
    return known.options.get(_key(known, name))


def _dp_attention(known: Known) -> bool:
    return bool(flag(_value(known, "enable_dp_attention")))


EP_FLAG_ONLY_BEFORE = "0.4.10"
"""Releases before it turn EP MoE on with ``--enable-ep-moe`` alone, sized ``tp_size`` (SERVER_ARGS)."""


def _ep_era(known: Known) -> Literal["switch", "both", "size"]:
    """How the release turns expert parallelism on: ``--enable-ep-moe`` alone (``switch``), the flag with
    ``--ep-size`` (``both``: 0.4.10, 0.4.10.post1), or ``--ep-size`` (the flag absent or deprecated)."""
    release = known.release
    option = release.option("enable_ep_moe") if release else None
    if release is None or option is None or option.deprecated:
        return "size"
    return "switch" if version_key(release.version) < version_key(EP_FLAG_ONLY_BEFORE) else "both"


def _ep_switch(known: Known) -> bool:
    return _ep_era(known) == "switch"


def tp_world(known: Known) -> int:
    """SGLang's ``--tp-size``: every GPU of the replica with dp attention, one rank's without."""
    resources = known.deployment.spec.resources
    tp = resources.tensor_parallel
    return tp * resources.data_parallel if _dp_attention(known) else tp


def layout(known: Known) -> Layout:
    """The replica's layout, from the spec's sizes and SGLang's dp/ep options."""
    resources = known.deployment.spec.resources
    world = tp_world(known)
    attention = _dp_attention(known)
    data = resources.data_parallel
    if data == 1:
        data = whole(_value(known, "dp_size")) or 1
        release = known.release
        if attention and release is not None and version_key(release.version) < version_key(DP_KEPT_FROM):
            data = world  # dp attention sets dp_size = tp_size (SERVER_ARGS)
    expert = spec_expert_size(resources.expert_parallel, world)
    if expert == 1:
        expert = whole(_value(known, "ep_size")) or 1
        if flag(_value(known, "enable_ep_moe")):
            expert = world  # every release where the flag runs sets ep_size = tp_size with it
        elif _ep_switch(known):
            expert = 1  # no EP MoE without the flag (--ep-size alone is not read)
    if attention:
        return Layout(max(1, world // data), resources.pipeline_parallel, data, expert, moe_spans_data=True)
    return Layout(world, resources.pipeline_parallel, data, expert, moe_spans_data=False)


def rendered(known: Known) -> dict[str, Any]:
    """The options the spec's sizes render to: ``tp_size`` always, ``dp_size`` and EP when set."""
    resources = known.deployment.spec.resources
    world = tp_world(known)
    options: dict[str, Any] = {"tp_size": world}
    if resources.data_parallel > 1:
        options[_key(known, "dp_size")] = resources.data_parallel
    expert = spec_expert_size(resources.expert_parallel, world)
    if expert > 1:
        era = _ep_era(known)
        if era in ("switch", "both") and expert == world:
            options["enable_ep_moe"] = True
        if era in ("both", "size"):
            options[_key(known, "ep_size")] = expert
    return options


def _key(known: Known, name: str) -> str:
    """The release's own catalog key for an option (0.4.x keys ``--dp-size`` as ``data_parallel_size``), so that
    the spec's value and an ``engine.options`` entry saying the same are one key, rendered once."""
    option = known.release.option(name) if known.release else None
    return option.key if option else name


def checks(known: Known) -> Iterator[EngineCheck]:
    """Options that contradict the spec's data or expert parallelism; an EP size the release cannot set;
    block-FP8 experts the release refuses to shard (_BLOCK_N_LINE)."""
    resources = known.deployment.spec.resources
    world = tp_world(known)
    wanted = spec_expert_size(resources.expert_parallel, world)
    for name, spec_value, field in (
        ("dp_size", resources.data_parallel, "data_parallel"),
        ("ep_size", wanted, "expert_parallel"),
    ):
        setting = known.effective.get(_key(known, name))
        if spec_value > 1 and setting is not None and whole(setting.value) != spec_value:
            yield EngineCheck(
                "ENG003",
                setting.path,
                f"{setting.name} {setting.value} disagrees with resources.{field} (SGLang {name} {spec_value})",
                hint=f"remove the option: resources.{field} renders it",
            )
    placed = known.layout
    line = _BLOCK_N_LINE.get(known.release.version) if known.release else None
    if line is not None and known.release is not None:
        found = block_fp8_refusal(known, placed, "SGLang", _FP8.format(known.release.version, line), refines=False)
        if found is not None:
            yield found
    if wanted > 1 and _ep_switch(known) and wanted != world:
        yield EngineCheck(
            "PAR003",
            ("resources", "expert_parallel"),
            f"SGLang {known.release.version if known.release else ''} runs expert parallelism over its whole "
            f"--tp-size ({world} GPUs: --enable-ep-moe sets ep_size = tp_size, {SERVER_ARGS}), not a group of {wanted}",
            hint=f"set resources.expert_parallel: true (a group of {world}), or pin a release with --ep-size",
        )
