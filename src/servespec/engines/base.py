"""What every engine unit provides: a typed profile, its release catalogs, its templates, one Engine object.

An engine lives in one package, ``servespec/engines/<name>/``: ``profile.yaml`` (validated
by :class:`Profile`), ``releases/<version>.json`` (``engines/FORMAT.md``), ``templates/``,
``render.py`` and ``memory.py`` (:class:`Engine` says what each provides), and its Engine
object in ``__init__.py``. The registry is the explicit
``ENGINES`` tuple in ``servespec/engines/__init__.py``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from servespec.engines.catalog import Catalog, EngineRelease, Selection, capability
from servespec.engines.layout import Layout, spec_expert_size
from servespec.engines.profile import CheckpointQuantization as CheckpointQuantization
from servespec.engines.profile import Profile as Profile
from servespec.knowledge.datafile import load_yaml_resource

if TYPE_CHECKING:
    from servespec.engines.lifecycle import Unmaintained
    from servespec.engines.options import Setting
    from servespec.knowledge.memory import EstimateInput, GpuEstimate
    from servespec.knowledge.models import ModelFacts
    from servespec.spec.fleet import DeploymentDoc, HostView


@dataclass(frozen=True)
class ClusterPorts:
    """How the members of a multi-node replica meet (NET002 names it, the renderer passes it)."""

    kind: Literal["ray", "torch"]
    port: int
    flag: str


class ModelKnown(Protocol):
    """The model's facts as a unit reads them (None: no source had them)."""

    @property
    def facts(self) -> ModelFacts | None: ...


class Known(Protocol):
    """What an engine unit reads about one deployment, resolved once by the stage that drives it.

    ``knowledge/resolve.py``'s ``Resolved`` is the one implementation; units name only this, so
    they never import the resolver.
    """

    @property
    def deployment(self) -> DeploymentDoc: ...
    @property
    def engine(self) -> Engine: ...
    @property
    def profile(self) -> Profile: ...
    @property
    def release(self) -> EngineRelease | None: ...
    @property
    def model(self) -> ModelKnown: ...
    @property
    def settings(self) -> tuple[Setting, ...]: ...
    @property
    def options(self) -> dict[str, Any]:
        """The effective engine options, by catalog key (valid values only, ``engine.options`` winning)."""

    @property
    def effective(self) -> dict[str, Setting]:
        """The setting behind each effective option."""

    @property
    def model_roots(self) -> list[str]:
        """The inventory's ``defaults.model_roots``: host folders a local path may name."""

    @property
    def gpu_ids(self) -> list[int]:
        """The device indices the deployment uses on each host (every replica's, in order)."""

    @property
    def replica_gpu_ids(self) -> list[list[int]]:
        """Each of ``placement.replicas_per_host`` replicas' devices: :attr:`gpu_ids` split in order."""

    @property
    def health_timeout_s(self) -> int:
        """Seconds the rollout waits for a healthy server (``rollout.health_timeout``, or the default raised
        to the estimated load time)."""

    @property
    def layout(self) -> Layout:
        """The replica's parallel layout as the engine runs it (:meth:`Engine.layout`)."""


@dataclass(frozen=True)
class EngineCheck:
    """A problem one engine's own rules find (reported by the generic rule ``rule``)."""

    rule: Literal["ENG002", "ENG003", "TOPO004", "PAR003", "PAR006", "ADP002", "ADP003", "SPD001"]
    path: tuple[str | int, ...]
    message: str
    hint: str = ""
    error: bool | None = None
    """True: an error (the release's own refusal), False: a warning; None: the rule's own level."""


class Engine:
    """One engine: its data and the few behaviours that differ between engines.

    Subclasses set ``name`` and ``package``. The unit's ``render.py`` has ``context(target)``
    (:func:`servespec.engines.kit.engine_container` calls it) and its ``memory.py`` ``estimate(inp)``
    (both imported on first use, so that validate loads no renderer); :meth:`checks`,
    :meth:`host_checks` and :meth:`cluster` default to nothing.
    """

    name: str
    package: str
    """The Python package holding profile.yaml, releases/ and templates/."""
    native_executable: str | None = None
    """A host-native engine's one executable name (its unit runs nothing else: ENG008); None for container engines."""
    unmaintained: Unmaintained | None = None
    """Set by a unit whose upstream publishes no more releases (ENG007 reports it); None while it is maintained."""
    adapter_option: str | None = None
    """The release option its render loads ``model.adapters`` with (vLLM ``lora_modules``); None: it renders none
    (ADP001 reports them). A release whose catalog lacks the option renders none either."""
    adapters_in_modelfile: bool = False
    """Adapters become models of their own, built by the Modelfile's ``ADAPTER`` (Ollama): no release option."""
    adapters_by_name: bool = True
    """Whether a request selects an adapter by its name as ``model`` (llama.cpp applies its ``--lora`` to all)."""
    adapter_formats: tuple[str, ...] = ("hub", "folder")
    speculative_methods: Mapping[str, str] = MappingProxyType({})
    """``model.speculative.method`` -> the engine's own name for it (vLLM ``draft`` -> ``draft_model``); a method
    not listed is not rendered (SPD001 reports it)."""
    speculative_checked: Mapping[str, str] = MappingProxyType({})
    """method -> the earliest release servespec read it in; an earlier release gets an SPD001 warning."""
    speculative_refused: Mapping[str, tuple[str, str, str]] = MappingProxyType({})
    """method -> (a release read refusing it, the first release read accepting it again, the refusal's pinned
    source): SPD001 reports the first as an error, the releases between as warnings."""
    """The adapter sources its render takes: ``hub`` (a repo id), ``folder`` (a host folder), ``gguf`` (a file)."""

    def __repr__(self) -> str:
        return f"<engine {self.name}>"

    @property
    def folder(self) -> Traversable:
        return resources.files(self.package)

    @functools.cached_property
    def profile(self) -> Profile:
        data = load_yaml_resource(self.package, "profile.yaml")
        return Profile.model_validate(data)

    @functools.cached_property
    def catalog(self) -> Catalog:
        """The release catalogs (read lazily)."""
        return Catalog(self.name, self.folder.joinpath("releases"))

    @property
    def releases(self) -> tuple[EngineRelease, ...]:
        """Every catalogued release, oldest first (parses every file)."""
        return self.catalog.all()

    def select(self, version: str) -> Selection:
        """The release a spec's ``engine.version`` is checked against."""
        return self.catalog.select(version)

    @property
    def templates(self) -> Traversable:
        return self.folder.joinpath("templates")

    def kv_unmodelled(self, model: ModelFacts, release: EngineRelease | None = None) -> str:
        """Why this engine's KV cache is not sized for ``model`` ('' when it is) on ``release`` (None: any): REF003
        says it and :meth:`estimate` makes no plan. Every engine: a DeepSeek V4 model's compressed KV cache
        (knowledge/deepseek_v4.py ``KV_UNMODELLED``)."""
        from servespec.knowledge import deepseek_v4

        return deepseek_v4.KV_UNMODELLED_SHORT if model.compress_ratios else ""

    def estimate(self, inp: EstimateInput) -> GpuEstimate | None:
        """The memory plan of one GPU of a replica (None when the GPU is unknown, or when :meth:`kv_unmodelled`
        says why the engine's KV cache is not sized for the model)."""
        if self.kv_unmodelled(inp.model, inp.release):
            return None
        plan: GpuEstimate | None = importlib.import_module(f"{self.package}.memory").estimate(inp)
        return plan

    def quantization_entry(
        self, release: EngineRelease | None, quantization: str
    ) -> str | CheckpointQuantization | None:
        """The engine's method for a spec quantization: the profile's name for it (``nvfp4`` ->
        ``modelopt_fp4``), else the name itself where the release accepts it (its catalog's
        ``quantization_methods``: every ``--quantization`` choice, ``gptq_marlin``, ``modelopt``,
        ``auto-round`` ...; ``_`` and ``-`` alike, so ``auto_round`` finds ``auto-round``); None: unknown."""
        entry = self.profile.quantization.get(quantization)
        if entry is not None or release is None:
            return entry
        methods = release.facts.quantization_methods
        for name in (quantization, quantization.replace("_", "-"), quantization.replace("-", "_")):
            if name in methods:
                return name
        return None

    def quantization_support(self, release: EngineRelease, quantization: str) -> tuple[bool, tuple[int, int] | None]:
        """(supported, minimum compute capability) of a spec quantization on ``release``."""
        entry = self.quantization_entry(release, quantization)
        if entry is None:
            return False, None
        if isinstance(entry, CheckpointQuantization):
            if not entry.methods:
                return True, capability(entry.min_capability)
            methods = release.facts.quantization_methods
            found = next((methods[name] for name in entry.methods if name in methods), None)
            return (False, None) if found is None else (True, capability(found.min_capability))
        method = release.facts.quantization_methods.get(entry)
        if method is None:
            return False, None
        return True, capability(method.min_capability)

    def layout(self, known: Known) -> Layout:
        """The replica's parallel layout: the spec's sizes as they are (units with data or expert
        parallelism read their own options too, and say how their expert layers span the ranks)."""
        resources = known.deployment.spec.resources
        tp, dp = resources.tensor_parallel, resources.data_parallel
        return Layout(tp, resources.pipeline_parallel, dp, spec_expert_size(resources.expert_parallel, tp * dp))

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        """Engine-specific option problems, read from the effective options (``known.effective``)."""
        return iter(())

    def speculative_problem(self, known: Known) -> str:
        """Why ``model.speculative`` is not rendered for this release ('' when it is): a method the unit does not
        map (``speculative_methods``); units refine it with their release's options (SPD001 reports it)."""
        speculative = known.deployment.spec.model.speculative
        if speculative is None or speculative.method in self.speculative_methods:
            return ""
        return f"servespec renders no {speculative.method} speculative decoding for {known.profile.title}"

    def default_served_name(self, known: Known) -> str | None:
        """The name the engine serves when the spec names none, where the unit knows it better than the
        profile's ``served_name.default`` (XInference: the registry name it launches); None: the profile's."""
        return None

    def host_checks(self, known: Known, host: HostView) -> Iterator[EngineCheck]:
        """Engine-specific problems of the deployment on one host it is placed on (TOPO004: thread pools vs NUMA)."""
        return iter(())

    def cluster(self, release: EngineRelease | None, options: Mapping[str, Any] | None = None) -> ClusterPorts | None:
        """How a multi-node replica's members meet on this release with these options (None: not known)."""
        return None

    def runs_on_cpu(self, options: Mapping[str, Any]) -> bool:
        """Whether these options run the model on the host's CPUs: no GPU is counted and no head split checked."""
        return False
