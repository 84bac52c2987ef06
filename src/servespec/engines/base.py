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

from pydantic import BaseModel, ConfigDict, Field

from servespec.engines.catalog import Catalog, EngineRelease, Selection, capability
from servespec.knowledge.datafile import load_yaml_resource

if TYPE_CHECKING:
    from servespec.engines.kit import EngineContainer, Target
    from servespec.engines.lifecycle import Unmaintained
    from servespec.engines.options import Setting
    from servespec.knowledge.memory import EstimateInput, GpuEstimate
    from servespec.knowledge.models import ModelFacts
    from servespec.spec.fleet import DeploymentDoc, HostView


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Parallelism(_Strict):
    tensor: bool
    pipeline: bool
    multi_node: bool
    combined: bool = True
    """Whether tensor and pipeline parallelism can be used together in one replica."""
    source: str


class CheckpointQuantization(_Strict):
    """A quantization the engine takes from the checkpoint itself (no method flag is rendered)."""

    method: None = None
    min_capability: str | None = None
    """The minimum compute capability, for engines whose catalogs list no methods (TensorRT-LLM's support matrix)."""
    methods: tuple[str, ...] = ()
    """The release methods that load the format (``int4``: compressed-tensors): the release must
    accept one; the first it accepts gives the minimum capability. Reading the format from the
    checkpoint, the engine needs no ``--quantization`` (vLLM refuses one that differs from the
    checkpoint's, vllm/config/model.py ``_verify_quantization``)."""


class MinCapability(_Strict):
    value: str
    source: str
    text: str


class Auth(_Strict):
    option: str
    """The engine option that carries the API key."""
    env: str | None = None
    """The variable the secrets env file sets for it (None: the engine module passes it another way)."""
    own_launcher: bool = False
    """With a key, servespec starts the server with its own launcher (SGLang's in-process ``--api-key``), which
    ``engine.entrypoint`` and ``engine.command`` cannot replace (ENG005)."""


class Image(_Strict):
    repository: str
    tag: str
    """``{version}`` is replaced by ``engine.version``."""


class Startup(_Strict):
    seconds: int = Field(ge=0)
    """Seconds from container start to a healthy server, weights loading aside (ROL002)."""
    basis: str
    """Where the figure comes from (an assumption is labelled as one)."""


class ServedName(_Strict):
    """How the engine names the model it serves (``serving.model_name``, ``serving.model_aliases``)."""

    option: str | None
    """The option naming the served model, rendered only when the spec names one (None: the engine has none;
    a release whose catalog lacks it cannot be given a name either)."""
    several: bool
    """Whether it serves several names at once: the option's several values (vLLM ``nargs``), one comma-joined
    value (llama.cpp ``--alias``), or one model created per name (Ollama); False: one name."""
    default: Literal["source", "directory_name"]
    """The name served when none is given: ``model.source`` as written, or for a local directory its last path
    component (``directory_name``: trtllm-serve)."""
    other_names: str
    """What the engine does with a request naming a model it does not serve (findings quote it)."""
    source: str


class Arguments(_Strict):
    """How the engine's own parser reads options: the forms servespec renders values in and reads ``extra_args`` by."""

    parser: Literal["argparse", "clap", "click", "llama.cpp", "env", "commander"]
    abbreviations: bool = False
    """A unique prefix of a long option is that option (argparse's default ``allow_abbrev=True``)."""
    underscores: bool = False
    """``_`` in a long option's name reads as ``-`` (vLLM's FlexibleArgumentParser)."""
    several: Literal["words", "repeat"] = "words"
    """A multi-value option (nargs ``+``/``*``) takes its values as words after one flag, or one flag per value."""
    list_word: Literal["comma", "json"] = "comma"
    """How a list option that takes one word (no nargs) holds several values: comma-joined, or a JSON list."""
    source: str


class ModelStore(_Strict):
    """Where the engine keeps the models it downloads, and the settings that move it (ENG006, the cache mount).

    servespec mounts the host's model cache at the engine's default store; a setting in this
    list that names another absolute path gets the same cache mounted there too, so the
    model survives a new container.
    """

    env: tuple[str, ...] = ()
    """Environment variables (``engine.env``) that name the store, or the folder above it."""
    options: tuple[str, ...] = ()
    """Catalog keys of options that name it (``engine.options`` or ``extra_args``): vLLM ``download_dir``."""
    hub_cache: str | None = None
    """The container folder where the image's huggingface_hub keeps the Hub cache (no setting moving it):
    servespec stages a Hub model there before the old container stops. None: the engine fetches its
    model itself (llama.cpp picks a GGUF file, Ollama pulls from its registry) and nothing is staged."""
    hub_cache_before: dict[str, str] = {}
    """Releases older than a key keep the Hub cache at its value instead (TGI 2.0: ``/data``)."""
    source: str


class KvExhausted(_Strict):
    """What the engine's scheduler does when running sequences need more KV cache than it holds (MEM003)."""

    behaviour: str
    """Quoted by MEM003: ``preempts running requests and recomputes them later``."""
    advice: str
    """What the engine's own docs suggest, quoted as the hint (never the opposite of them)."""
    source: str


class Profile(_Strict):
    """Version-independent traits of an engine (``profile.yaml``)."""

    engine: str
    title: str
    homepage: str
    spec_options: dict[str, str] = {}
    """Spec field -> the engine option it renders to; setting that option again is ENG003."""
    batch_option: str | None
    """The option bounding concurrent sequences (MEM003), or the GGUF engines' slot count."""
    batch_default: int | None = None
    """The slot count when the batch option is unset or automatic (GGUF engines)."""
    kv_exhausted: KvExhausted | None = None
    """MEM003: the scheduler's behaviour beyond what the KV cache holds, with the engine's advice."""
    memory_fraction_option: str | None
    memory_fraction_of: Literal["total", "free"] = "total"
    """Whether the memory fraction is a share of the GPU's total memory or of what is free after loading."""
    kv_cache_dtype_option: str | None
    """The option that sets the KV cache's element type (the estimator reads it)."""
    model_format: Literal["hf", "gguf", "tag", "key"]
    """What ``model.source`` names: a Hugging Face repo or path, a GGUF file, an Ollama library ``name:tag``,
    or a model key of the engine's own store (LM Studio: ``lms load KEY``; GGUF arithmetic, nothing fetched)."""
    parallelism: Parallelism
    quantization: dict[str, str | CheckpointQuantization] = {}
    """Spec quantization -> the engine's method name, or taken from the checkpoint."""
    quantization_source: str | None = None
    quantization_kernels: dict[str, tuple[str, ...]] = {}
    """An engine kernel (``engine.options.quantization``) -> the checkpoint formats it runs
    (``moe_wna16``: awq, gptq): with one of them as ``model.quantization`` the two agree (ENG003)."""
    min_compute_capability: MinCapability | None
    auth: Auth | None
    health_path: str
    default_port: int
    image: Image | None
    """None: a host-native engine (LM Studio's daemon): no container image, the unit's render says how it runs."""
    startup: Startup
    security: tuple[str, ...] = ()
    """How the engine receives its API key and which ports it opens, each note with its source (docs/engines)."""
    served_name: ServedName
    arguments: Arguments
    model_store: ModelStore | None = None
    rendering: dict[str, str] = {}
    """How servespec renders what the engine would otherwise decide itself, by topic (served names, context
    length, slots, offload, ...), each note with its source: docs/engines' "How servespec renders it"."""
    after_start: tuple[Literal["modelfile", "launch_request"], ...] = ()
    """What the role does once the engine's container is up, before verify's smoke test (tasks/model.yml):
    ``modelfile`` pulls ``model.source`` and creates one model per served name from the rendered Modelfile
    (Ollama); ``launch_request`` sends the rendered launch.json to the healthy server (XInference)."""

    @property
    def tensor_parallel(self) -> bool:
        return self.parallelism.tensor

    @property
    def pipeline_parallel(self) -> bool:
        return self.parallelism.pipeline

    @property
    def multi_node(self) -> bool:
        return self.parallelism.multi_node

    @property
    def loads_gguf(self) -> bool:
        """GGUF engines: weights by GGUF type, every slot's context allocated up front, no memory fraction."""
        return self.model_format != "hf"

    @property
    def min_capability(self) -> tuple[int, int] | None:
        minimum = self.min_compute_capability
        return capability(minimum.value) if minimum else None

    def image_for(self, version: str) -> str:
        """The engine's official image for ``version`` ('' for a host-native engine, which has none)."""
        if self.image is None:
            return ""
        return f"{self.image.repository}:{self.image.tag.format(version=version)}"


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
        """The device indices the deployment uses on each host."""

    @property
    def health_timeout_s(self) -> int:
        """Seconds the rollout waits for a healthy server (``rollout.health_timeout``, or the default raised
        to the estimated load time)."""


@dataclass(frozen=True)
class EngineCheck:
    """A problem one engine's own rules find (reported by the generic rule ``rule``)."""

    rule: Literal["ENG002", "ENG003", "TOPO004", "ADP002", "ADP003", "SPD001"]
    path: tuple[str | int, ...]
    message: str
    hint: str = ""
    error: bool | None = None
    """True: an error (the release's own refusal), False: a warning; None: the rule's own level."""


class Engine:
    """One engine: its data and the few behaviours that differ between engines.

    Subclasses set ``name`` and ``package``. The unit's ``render.py`` has ``context(target)``
    and its ``memory.py`` ``estimate(inp)`` (both imported on first use, so that validate
    loads no renderer); :meth:`checks`, :meth:`host_checks` and :meth:`cluster` default to nothing.
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

    def render(self, target: Target) -> EngineContainer:
        """The engine's container on one host: command, environment, native files."""
        container: EngineContainer = importlib.import_module(f"{self.package}.render").context(target)
        return container

    def estimate(self, inp: EstimateInput) -> GpuEstimate | None:
        """The memory plan of one GPU of a replica (None when the GPU is unknown)."""
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

    def cluster(self, release: EngineRelease | None) -> ClusterPorts | None:
        """How a multi-node replica's members meet on this release (None: not known to servespec)."""
        return None
