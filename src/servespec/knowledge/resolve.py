"""Join a deployment with what servespec knows: its model, engine release, and each host's GPUs.

:func:`resolved` builds one :class:`Resolved` per deployment, once, and rules, ``deploy
estimate``, ``deploy render`` and the rollout read it; no other public function here takes a deployment.
:func:`host_gpus` reads one host's GPUs from the inventory.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from servespec import engines, hostpaths
from servespec.engines.base import Engine, EngineCheck, Profile
from servespec.engines.catalog import EngineRelease, Selection, normalize_option
from servespec.engines.gguf import DeviceFreeKv, GgufEngine
from servespec.engines.layout import Layout
from servespec.engines.options import Setting, coerce, extra_arg_settings, nested, spelled
from servespec.knowledge import gpus, sources
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import GIB, EstimateInput, GpuEstimate, default_context, weight_bytes
from servespec.knowledge.models import ModelFacts
from servespec.knowledge.sources import ModelAnswer
from servespec.spec.fleet import DeploymentDoc, HostView
from servespec.spec.models import duration_seconds

LOAD_GIB_PER_SECOND = 1.0
"""Assumed read rate of weights from a host's local model cache (a conservative NVMe/SATA figure)."""


@dataclass(frozen=True)
class HostGpus:
    """A host's GPUs as the inventory or its facts file state them."""

    model: GpuModel | None
    name: str | None
    count: int | None

    @property
    def known(self) -> bool:
        """Whether the GPU model resolved against the catalog."""
        return self.model is not None


def host_gpus(host: HostView) -> HostGpus:
    """The host's GPU model and count, resolved against the catalog."""
    hardware = host.hardware
    if hardware is None or hardware.gpus is None:
        return HostGpus(None, None, None)
    name = hardware.gpus.model
    return HostGpus(gpus.resolve(name) if name else None, name, hardware.gpus.count)


def _placed_hosts(deployment: DeploymentDoc) -> list[HostView]:
    inventory = deployment.inventory
    if inventory is None:
        return []
    names = deployment.spec.placement.hosts or list(inventory.hosts)
    return [inventory.hosts[name] for name in names if name in inventory.hosts]


def _settings(deployment: DeploymentDoc, chosen: EngineRelease | None) -> tuple[Setting, ...]:
    """Every engine option the spec sets: the flags of ``extra_args``, then ``engine.options``."""
    engine = deployment.spec.engine
    raw: list[tuple[str, Any, tuple[str | int, ...], bool]] = [
        (flag, value, ("engine", "extra_args", index), True)
        for index, flag, value in extra_arg_settings(engine.extra_args)
    ]
    for name, value in engine.options.items():
        raw += nested(chosen, name, value, ("engine", "options", name))
    out = []
    arguments = engines.get(engine.name).profile.arguments
    for name, value, path, extra in raw:
        if extra and chosen is not None:
            option, value = spelled(chosen, arguments, name, value)
        else:
            option = chosen.option(name) if chosen else None
        key = option.key if option else normalize_option(name)
        try:
            typed, valid = (coerce(option.type, value) if option else value), True
        except ValueError:
            typed, valid = value, False
        out.append(Setting(key, name, value, typed, valid, path, extra, option))
    return tuple(out)


@dataclass(frozen=True)
class Resolved:
    """What servespec knows about one deployment, computed once (:func:`resolved`)."""

    deployment: DeploymentDoc
    engine: Engine
    selection: Selection
    model: ModelAnswer
    settings: tuple[Setting, ...]
    hosts: tuple[HostView, ...]
    """The inventory hosts it is placed on (unknown names skipped: REF001 reports them)."""

    @property
    def profile(self) -> Profile:
        return self.engine.profile

    @property
    def release(self) -> EngineRelease | None:
        """The catalogued release it is checked against, or None outside the catalogued range."""
        return self.selection.release

    @functools.cached_property
    def options(self) -> dict[str, Any]:
        """The effective engine options, by catalog key: valid values only, ``engine.options`` winning."""
        return {s.key: s.value for s in self.settings if s.valid}

    @functools.cached_property
    def effective(self) -> dict[str, Setting]:
        """The setting behind each effective option (where a finding about it points)."""
        return {s.key: s for s in self.settings if s.valid}

    @functools.cached_property
    def engine_checks(self) -> tuple[EngineCheck, ...]:
        """The engine unit's own checks, run once per deployment (ENG002 and ENG003 each report theirs)."""
        return tuple(self.engine.checks(self))

    @property
    def model_roots(self) -> list[str]:
        """The inventory's ``defaults.model_roots``: host folders a local path may name."""
        return hostpaths.model_roots(self.deployment)

    @functools.cached_property
    def layout(self) -> Layout:
        """The replica's parallel layout as its engine runs it (data and expert parallelism included)."""
        return self.engine.layout(self)

    @property
    def gpus_per_host(self) -> int:
        """GPUs each host of a replica contributes (a multi-node replica splits them evenly)."""
        spec = self.deployment.spec
        return math.ceil(self.layout.gpus / spec.placement.hosts_per_replica)

    @property
    def replicas_per_host(self) -> int:
        """``placement.replicas_per_host``: replicas of the deployment on each placed host."""
        return int(self.deployment.spec.placement.replicas_per_host)

    @property
    def gpu_ids(self) -> list[int]:
        """The device indices the deployment uses on each host (every replica's, in order)."""
        chosen = self.deployment.spec.resources.gpu_ids
        if chosen == "auto":
            return list(range(self.gpus_per_host * self.replicas_per_host))
        return list(chosen)

    @property
    def replica_gpu_ids(self) -> list[list[int]]:
        """Each replica's devices on a host: :attr:`gpu_ids` split in order into ``replicas_per_host`` equal parts."""
        ids, count = self.gpu_ids, self.replicas_per_host
        size = len(ids) // count
        return [ids[index * size : (index + 1) * size] for index in range(count)]

    @property
    def max_model_len(self) -> int | None:
        """The context length the spec sets (None: the engine's default, which :meth:`context` finds)."""
        return self.deployment.spec.model.max_model_len

    @functools.cached_property
    def load_seconds(self) -> float | None:
        """Estimated seconds from container start to a healthy server (None without model facts).

        The weights one host loads, read at :data:`LOAD_GIB_PER_SECOND`, plus the engine's fixed
        start-up work (profile ``startup``); the first download of the weights is not counted.
        """
        inp = self.estimate_input(weights_only=True)
        if inp is None:
            return None
        per_host = weight_bytes(inp) / GIB / self.deployment.spec.placement.hosts_per_replica
        return per_host / LOAD_GIB_PER_SECOND + self.profile.startup.seconds

    @property
    def health_timeout_s(self) -> int:
        """How long the rollout waits for a healthy server: ``rollout.health_timeout`` as written.

        Unset, servespec's default (15m) is raised to the estimated load time, rounded up to the
        minute, for a model that loads slower than that: the default never rolls back a healthy host.
        """
        rollout = self.deployment.spec.rollout
        chosen = duration_seconds(rollout.health_timeout)
        if "health_timeout" in rollout.model_fields_set or self.load_seconds is None:
            return chosen
        return max(chosen, 60 * math.ceil(self.load_seconds / 60))

    def context(self, vram_gib: float | None = None) -> tuple[int | None, str]:
        """The context per sequence served, and why: the spec's, else the release's default for the model.

        ``vram_gib`` is the memory of the GPUs the engine sees on a host (0 on a CPU host), for
        defaults chosen by VRAM; the engine units refine the rest (TGI's KV capacity,
        llama.cpp's ``--fit``) when they size the memory.
        """
        spec = self.deployment.spec
        if spec.model.max_model_len:
            return spec.model.max_model_len, "model.max_model_len"
        facts = self.model.facts
        if facts is None:
            return None, ""
        fact = self.release.facts.context_default if self.release else None
        tokens, why = default_context(fact, facts, vram_gib)
        if tokens is None:
            return None, ""
        where = f"{spec.engine.name} {self.release.version}" if self.release else f"{spec.engine.name} (not catalogued)"
        return tokens, f"engine default for {where}: {tokens} ({why})"

    @functools.cached_property
    def estimates(self) -> dict[str, GpuEstimate | None]:
        """Host name -> the memory plan of one GPU of the deployment there (None when facts are missing)."""
        return {host.name: self._estimate(host) for host in self.hosts}

    def estimate_on(self, host: HostView) -> GpuEstimate | None:
        """The plan on ``host`` (computed for hosts it is not placed on too, for what-if callers)."""
        return self.estimates[host.name] if host.name in self.estimates else self._estimate(host)

    def estimate_input(
        self,
        gpu: GpuModel | None = None,
        host_memory_gib: float | None = None,
        *,
        weights_only: bool = False,
        gpu_count: int = 1,
        host_ram_gib: float | None = None,
    ) -> EstimateInput | None:
        """The estimator's input for one GPU (None without model facts, or without a context length
        unless only the weights are wanted); ``gpu_count`` GPUs of the host are the engine's."""
        facts = self.model.facts
        length, basis = self.context(gpu.memory_gib * gpu_count if gpu else 0.0)
        if facts is None or (length is None and not weights_only):
            return None
        spec = self.deployment.spec
        release = self.release
        unset = not spec.model.max_model_len
        quantization: str | None = spec.model.quantization
        if quantization in (None, "auto") and facts.quant_method is None:
            # a kernel for pre-quantized checkpoints (engine.options quantization: moe_wna16) says the
            # weights are stored in its format even where the checkpoint's config is not at hand
            formats = self.profile.quantization_kernels.get(str(self.options.get("quantization")), ())
            quantization = formats[0] if formats else quantization
        return EstimateInput(
            engine=spec.engine.name,
            release=self.release,
            model=facts,
            gpu=gpu,
            tensor_parallel=self.layout.tensor,
            pipeline_parallel=self.layout.pipeline,
            data_parallel=self.layout.data,
            moe_group=self.layout.moe_group,
            expert_parallel=self.layout.expert,
            dtype=spec.model.dtype,
            quantization=quantization,
            gguf_type=spec.model.gguf_type or facts.file_type,
            max_model_len=length or 0,
            options=self.options,
            host_memory_gib=host_memory_gib,
            engine_version=spec.engine.version,
            kv_cache_dtype_option=self.profile.kv_cache_dtype_option,
            context_basis=basis,
            context_default=release.facts.context_default if unset and release else None,
            host_memory_total_gib=host_ram_gib,
            adapters=len(spec.model.adapters),
            speculative=spec.model.speculative.method if spec.model.speculative else None,
            draft=_draft_facts(self.deployment) if spec.model.speculative else None,
            speculative_tokens=spec.model.speculative.num_tokens if spec.model.speculative else None,
            image=spec.engine.image,
            env={name: str(value) for name, value in spec.engine.env.items()},
        )

    def kv_without_device(self, host: HostView) -> DeviceFreeKv | None:
        """A GGUF engine on a host whose GPU the catalogue lacks (Apple silicon, Jetson, any unified-memory or
        uncatalogued device), where :meth:`_estimate` has no plan: the KV cache it lays out over all its devices
        when no device changes it, tried on host memory and on the smallest and largest catalogued GPU (never
        standing in for the host's own). None for other engines and hosts (their plan covers it)."""
        hardware = host_gpus(host)
        if not isinstance(self.engine, GgufEngine) or hardware.known or not hardware.count:
            return None
        memory = host.hardware.memory_gib if host.hardware else None
        cards = sorted(gpus.catalog(), key=lambda card: card.memory_mib)

        def build(device: GpuModel | None) -> EstimateInput | None:
            return self.estimate_input(device, memory or 0.0, host_ram_gib=memory)

        return self.engine.kv_without_device(build, [None, cards[0], cards[-1]])

    def _estimate(self, host: HostView) -> GpuEstimate | None:
        hardware = host_gpus(host)
        if not hardware.known and not (self.profile.model_format != "hf" and hardware.count == 0):
            return None
        memory = host.hardware.memory_gib if host.hardware else None
        seen = len(self.replica_gpu_ids[0]) if hardware.count else 0  # one replica's GPUs
        inp = self.estimate_input(
            hardware.model if hardware.count else None, memory, gpu_count=seen, host_ram_gib=memory
        )
        return self.engine.estimate(inp) if inp is not None else None


def _draft_facts(deployment: DeploymentDoc) -> ModelFacts | None:
    from servespec.knowledge.adapters import draft_facts

    return draft_facts(deployment)


def resolved(deployment: DeploymentDoc) -> Resolved:
    """The deployment's :class:`Resolved`, built on first use and kept on the deployment."""
    found = deployment.resolved
    if not isinstance(found, Resolved):
        engine = engines.get(deployment.spec.engine.name)
        chosen = engine.select(deployment.spec.engine.version)
        found = Resolved(
            deployment=deployment,
            engine=engine,
            selection=chosen,
            model=sources.answer(deployment),
            settings=_settings(deployment, chosen.release),
            hosts=tuple(_placed_hosts(deployment)),
        )
        deployment.resolved = found
    return found
