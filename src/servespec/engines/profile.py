"""The typed ``profile.yaml`` of an engine unit: :class:`Profile` and the parts it is made of.

A leaf below :mod:`servespec.engines.base`, :mod:`servespec.engines.options` and the engine kit, which
all read it (``Arguments`` tells options and the kit how the engine's parser reads them).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from servespec.engines.catalog import capability


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built on first use (start-up)


class Parallelism(_Strict):
    tensor: bool
    pipeline: bool
    multi_node: bool
    combined: bool = True
    """Whether tensor and pipeline parallelism can be used together in one replica."""
    data: str | None = None
    """The catalog key of the option that sets data-parallel ranks (``resources.data_parallel``); None: the
    engine has no data parallelism within a replica (PAR003), nor has a release whose catalog lacks it."""
    expert: str | None = None
    """The catalog key of the option that turns on or sizes expert parallelism (``resources.expert_parallel``)."""
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


class ShortKvCache(_Strict):
    """What the engine does at start-up when its KV cache holds less than one ``max_model_len`` sequence (MEM002).

    ``caps``: it starts and lowers the longest request it accepts to what the cache holds (SGLang:
    ``max_req_len = min(context_len - 1, max_total_num_tokens - 1)``), refusing only an empty pool; MEM002 is then
    a warning while the pool is not empty. Engines without this entry refuse (vLLM's
    ``check_enough_kv_cache_memory``, TGI's router)."""

    behaviour: Literal["caps"]
    effect: str
    """Quoted by MEM002: what a user sees instead of a refusal."""
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
    short_kv_cache: ShortKvCache | None = None
    """MEM002: an engine that starts with less KV cache than one sequence needs; None: it refuses."""
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
    system_prompt: str | None = None
    """How the engine takes ``serving.system_prompt`` (Ollama: the Modelfile's ``SYSTEM``); None: it has no
    default system prompt, and ENG004 says the field is not rendered."""
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
