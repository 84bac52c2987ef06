"""KTransformers' own checks (ENG002, ENG003; its thread pools: TOPO004), read from sglang-kt and kt-kernel 0.7.2.

- sglang-kt asserts that the served name has no ``:`` (``ServerArgs`` in
  sglang/srt/server_args.py of 0.6.4 and 0.7.2, without SGLang's later object-store exemption).
- ``--kt-weight-path`` is what turns the CPU/GPU expert split on; ``--kt-*`` options without it
  do nothing (kt_ep_wrapper.py ``create_kt_config_from_server_args`` returns None), and
  neither does a weight path without ``--kt-num-gpu-experts`` / ``--kt-gpu-experts-ratio``
  (``_init_kt_gpu_experts_masks``: "Either kt_num_gpu_experts or kt_gpu_experts_ratio is
  required but not set.") or on a model without routed experts.
- With the split on, ``--kt-cpuinfer`` is required: it has no default (``kt_cpuinfer: Optional[int] = None``)
  and kt-kernel divides it by the pool count (``cpuinfer_threads // threadpool_count``).
- ``--kt-numa-nodes`` must list one node per thread pool (kt-kernel ``_get_cpu_infer``:
  "numa_nodes length ... must match threadpool_count").
- ``--kt-lora-path`` / ``--kt-expert-lora-path`` need ``--kt-weight-path`` (``_validate_kt_lora_serving_paths``).
- ``--kt-weight-path`` is a host folder the container mounts read-only: an absolute path under
  the inventory's ``model_roots``, like a local ``model.source``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec import hostpaths
from servespec.engines.base import EngineCheck
from servespec.engines.sglang import kt
from servespec.knowledge.served import default_served_name

if TYPE_CHECKING:
    from servespec.engines.base import Known


def _path(known: Known, key: str) -> tuple[str | int, ...]:
    setting = known.effective.get(key)
    return setting.path if setting is not None else ("engine", "options")


def _served_name(known: Known) -> Iterator[EngineCheck]:
    spec = known.deployment.spec
    option = known.effective.get("served_model_name")
    path: tuple[str | int, ...]
    if spec.serving.model_name is not None:
        path, name = ("serving", "model_name"), spec.serving.model_name
    elif option is not None and isinstance(option.value, str):
        path, name = option.path, option.value
    else:
        path, name = ("model", "source"), default_served_name(known.deployment)
    if ":" in name:
        yield EngineCheck(
            "ENG002",
            path,
            f"KTransformers (sglang-kt) refuses the served name {name!r}: `:` is reserved for its "
            '`model:adapter` LoRA syntax (ServerArgs asserts "served_model_name cannot contain a colon")',
            hint="set serving.model_name to a name without `:`",
        )


def checks(known: Known) -> Iterator[EngineCheck]:
    yield from _served_name(known)
    if known.release is None:
        return
    settings = kt.read(known.options, known.release)
    if settings.weight_path is None:
        yield from _without_weights(known)
    else:
        yield from _split(known, settings)


def _without_weights(known: Known) -> Iterator[EngineCheck]:
    """``--kt-*`` options without ``--kt-weight-path``: nothing they ask for happens (LoRA ones are refused)."""
    given = sorted(k for k in known.effective if k.startswith("kt_") and k != "kt_weight_path")
    for key in ("kt_lora_path", "kt_expert_lora_path"):
        if key in known.effective:
            yield EngineCheck(
                "ENG003",
                _path(known, key),
                f"{key} needs kt_weight_path: sglang-kt refuses KT LoRA serving without the base routed "
                "expert weights (ServerArgs._validate_kt_lora_serving_paths)",
                hint="set kt_weight_path to the converted expert weights",
            )
            return
    if given:
        yield EngineCheck(
            "ENG003",
            _path(known, given[0]),
            f"{', '.join(given)} without kt_weight_path do nothing: sglang-kt only splits experts between "
            "CPU and GPU when --kt-weight-path is set, so every expert stays on the GPUs (plain SGLang)",
            hint="set kt_weight_path to the CPU expert weights, or remove the kt_* options",
        )


def _split(known: Known, settings: kt.Kt) -> Iterator[EngineCheck]:
    """The CPU/GPU expert split: a mountable weight path, a GPU-expert count, threads and pools that fit."""
    assert settings.weight_path is not None
    problem = hostpaths.local_source_problem(settings.weight_path, known.model_roots)
    if problem:
        yield EngineCheck(
            "ENG003",
            _path(known, "kt_weight_path"),
            f"kt_weight_path: {problem}",
            hint="put the CPU expert weights under one of the inventory's model_roots and name them by absolute path",
        )
    if not settings.split:
        yield EngineCheck(
            "ENG003",
            _path(known, "kt_weight_path"),
            'kt_weight_path without kt_num_gpu_experts or kt_gpu_experts_ratio: sglang-kt logs "Either '
            'kt_num_gpu_experts or kt_gpu_experts_ratio is required but not set." and keeps every expert on the '
            "GPUs",
            hint="set kt_num_gpu_experts (routed experts per MoE layer on the GPU), e.g. 0",
        )
        return
    facts = known.model.facts
    if facts is not None and not facts.is_moe:
        yield EngineCheck(
            "ENG003",
            _path(known, "kt_weight_path"),
            f"{known.deployment.spec.model.source} has no routed experts: KTransformers' CPU experts do not apply "
            "(kt_ep_wrapper finds no num_experts and leaves the model on the GPUs)",
            hint="use engine sglang for a dense model, or a mixture-of-experts model",
        )
    if settings.cpuinfer is None:
        yield EngineCheck(
            "ENG003",
            _path(known, "kt_weight_path"),
            "kt_cpuinfer is not set: it has no default in sglang-kt and kt-kernel divides it by "
            "kt_threadpool_count when the model loads (`cpuinfer_threads // threadpool_count` on None fails)",
            hint="set kt_cpuinfer to the CPU threads for the experts (kt run uses 80% of the host's threads)",
        )
    elif settings.cpuinfer < settings.threadpool_count:
        yield EngineCheck(
            "ENG003",
            _path(known, "kt_cpuinfer"),
            f"kt_cpuinfer {settings.cpuinfer} is below kt_threadpool_count {settings.threadpool_count}: some "
            "thread pools get no thread (kt-kernel gives each pool cpuinfer // count)",
            hint="raise kt_cpuinfer or lower kt_threadpool_count",
        )
    if settings.numa_nodes is not None and len(settings.numa_nodes) != settings.threadpool_count:
        yield EngineCheck(
            "ENG003",
            _path(known, "kt_numa_nodes"),
            f"kt_numa_nodes lists {len(settings.numa_nodes)} node(s) for kt_threadpool_count "
            f'{settings.threadpool_count}: kt-kernel raises "numa_nodes length ... must match threadpool_count"',
            hint="list one NUMA node per thread pool, or set kt_threadpool_count to the list's length",
        )
