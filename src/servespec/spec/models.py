"""The file formats users write (contract §1), as pydantic models: shape, types and ranges.

Two things here know about engines, because every spec needs them before any rule runs:
``engine.name`` is one of the engine names the registry lists, and strings that
reach a command line refuse what any engine would misread (a served name starting with
``-``, a comma llama.cpp's ``--alias`` splits on). Everything that needs a host's hardware,
an engine release's options or other documents is a rule (``servespec.rules``), so that it
is reported with its own id, hint and source.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from servespec.engines.registry import names as engine_names
from servespec.spec.grammars import (
    MAX_FLOAT,
    MAX_INT,
    Address,
    Duration,
    ImageReference,
    IpAddress,
    KeyPath,
    Labels,
    ModelSource,
    UserName,
    check_numbers,
    not_reserved,
)
from servespec.spec.grammars import duration_seconds as duration_seconds  # re-exported: rules and render use it
from servespec.text import UNSAFE

API_VERSION = "servespec/v1"
ENGINE_NAMES: tuple[str, ...] = engine_names()
"""The engine names a spec may use: the registry's table (servespec.engines.registry)."""
if TYPE_CHECKING:
    EngineName = str
else:
    EngineName = Literal[ENGINE_NAMES]  # one Literal of the registry's names (its error lists them)
KnownQuantization = Literal[
    "auto",
    "awq",
    "gptq",
    "fp8",
    "int8",
    "int4",
    "w4a16",
    "w8a8",
    "auto_round",
    "nvfp4",
    "mxfp4",
    "bitsandbytes",
    "gguf",
]
"""servespec's own names, which each engine's profile maps to its method (``int4``: compressed-tensors'
pack-quantized INT4, as Kimi-K2-Thinking ships; ``auto_round``: Intel AutoRound)."""
QUANTIZATIONS: tuple[str, ...] = tuple(name for name in get_args(KnownQuantization) if name != "auto")
"""The methods a spec can name explicitly by servespec's names (``auto`` names none)."""
Quantization = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$"),
    Field(examples=["auto", *QUANTIZATIONS, "gptq_marlin", "awq_marlin", "modelopt", "modelopt_fp4"]),
]
"""``auto``, one of servespec's names, or a method the engine release itself accepts (its catalog's
``quantization_methods``: ``gptq_marlin``, ``modelopt``, ...); a name the release does not know is HW003."""
DnsLabel = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$"),
    Field(description="DNS label: lower-case letters, digits and '-', 1 to 63 characters, starting with a letter"),
]
DeploymentName = Annotated[DnsLabel, AfterValidator(not_reserved)]
HostName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,252})$"),
    Field(description="Inventory host name: letters, digits, '.', '_' and '-'"),
]
# POSIX.1-2017 Base Definitions §8.1: portable names are letters, digits and '_', not starting with a digit.
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=256)]
Port = Annotated[int, Field(ge=1, le=65535)]
GpuIndex = Annotated[int, Field(ge=0, le=1023)]
CpuList = Annotated[str, StringConstraints(pattern=r"^\d+(-\d+)?(,\d+(-\d+)?)*$")]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]
BoundedInt = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT)]
FiniteFloat = Annotated[float, Field(ge=-MAX_FLOAT, le=MAX_FLOAT, allow_inf_nan=False)]
Scalar = str | BoundedInt | FiniteFloat | bool
ServedName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9_/][A-Za-z0-9._:/@+-]{0,255}$"),
    Field(
        description="A model name as clients send it (Qwen/Qwen2.5-7B-Instruct, qwen2.5:7b, chat): letters, "
        "digits and ._:/@+-, not starting with '-', '.', ':', '@' or '+'; no spaces or commas"
    ),
]
"""No leading ``-`` (an engine would read the name as a flag), no comma (llama.cpp's ``--alias`` splits on it),
no space or quote (the README's curl example and Ollama's ``ollama create NAME`` take it as one word)."""
LaunchWord = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
LaunchWords = Annotated[
    list[LaunchWord],
    Field(min_length=1, max_length=64, description="Words run as given (exec form): no shell reads them"),
]

DEFAULT_MODEL_ROOTS = ("/var/lib/servespec/models", "/srv", "/data", "/models", "/mnt", "/opt/models")
"""Where local model weights usually live on GPU hosts; never system folders (/, /etc, /var/run, /proc)."""


def _one_message(kind: str, message: str) -> WrapValidator:
    """Replace a union's per-member errors with one readable error."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError(kind, message) from None

    return WrapValidator(validate)


def _reject_control_characters(value: Any) -> None:
    # text.UNSAFE: line breaks, C0/C1 controls, bidi overrides, zero-width characters, U+2028/9.
    if isinstance(value, str) and UNSAFE.search(value):
        raise PydanticCustomError(
            "control_character",
            "value contains a line break, control, bidi or zero-width character, which no rendered file "
            "can carry safely",
        )
    if isinstance(value, list | tuple):
        for item in value:
            _reject_control_characters(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _reject_control_characters(key)
            _reject_control_characters(item)


MULTI_LINE_FIELDS = frozenset({"system_prompt"})
"""Fields whose text keeps its line breaks (each checks the other characters itself)."""


class _Model(BaseModel):
    # defer_build: a model's validator is built on its first use, not at import, and a nested model's only
    # inside its parent's (start-up time: validate builds the few top-level validators it uses).
    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=False, validate_default=False, allow_inf_nan=False, defer_build=True
    )

    @field_validator("*", mode="after")
    @classmethod
    def _single_line(cls, value: Any, info: ValidationInfo) -> Any:
        # Values end up in command lines, env files and YAML: one line each, no control bytes.
        if not isinstance(value, BaseModel) and info.field_name not in MULTI_LINE_FIELDS:
            _reject_control_characters(value)
        return value


class SecretRef(_Model):
    """Where a secret comes from: an environment variable or a file on the host. Never a literal."""

    from_env: EnvName | None = Field(default=None, description="Environment variable holding the secret")
    from_file: NonEmpty | None = Field(default=None, description="Absolute path of a file holding the secret")

    @model_validator(mode="before")
    @classmethod
    def _not_literal(cls, value: Any) -> Any:
        if isinstance(value, str | int | float):
            raise PydanticCustomError(
                "inline_secret", "secret written inline; give from_env: VAR or from_file: /absolute/path"
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        if (self.from_env is None) == (self.from_file is None):
            raise PydanticCustomError("secret_ref", "give exactly one of from_env or from_file")
        if self.from_file is not None and not self.from_file.startswith("/"):
            raise PydanticCustomError("secret_ref", "from_file must be an absolute path on the host")
        return self


SECRET_ENV_RESERVED = frozenset(
    {
        "HF_TOKEN",  # model.hub_token
        "HUGGING_FACE_HUB_TOKEN",  # huggingface_hub's older name for it
        "HF_MODULES_CACHE",  # set where the model cache is read-only (render/common.py)
        "CUDA_VISIBLE_DEVICES",  # the GPUs: resources.gpu_ids, through Docker's device request
        "NVIDIA_VISIBLE_DEVICES",  # read by the NVIDIA container runtime for the same request
        "NVIDIA_DRIVER_CAPABILITIES",
        "VLLM_HOST_IP",  # a multi-node vLLM member's address (engines/vllm/render.py)
    }
)
"""Variables servespec sets itself in every engine container it may render: never an ``engine.secret_env`` name."""
SECRET_ENV_RESERVED_PREFIX = "SERVESPEC_"
"""servespec's own variables (``SERVESPEC_API_KEY``, the key launcher's): never an ``engine.secret_env`` name."""


def _secret_env_name(name: str) -> str:
    if name in SECRET_ENV_RESERVED or name.upper().startswith(SECRET_ENV_RESERVED_PREFIX):
        raise PydanticCustomError(
            "secret_env_name",
            "servespec sets {name} itself (hub token, GPUs, its own variables); give the hub token as "
            "model.hub_token and the GPUs as resources.gpu_ids",
            {"name": name},
        )
    return name


SecretEnvName = Annotated[EnvName, AfterValidator(_secret_env_name)]
"""An ``engine.secret_env`` name: the environment-variable grammar, and none servespec sets itself."""
MAX_SYSTEM_PROMPT = 65_536
"""Characters of ``serving.system_prompt`` at most (a Modelfile SYSTEM holds it in one quoted string)."""


def _system_prompt(value: str) -> str:
    # Line breaks and tabs are the prompt's own; every other unsafe character is refused as elsewhere.
    bad = re.search(r"(?![\n\t])" + UNSAFE.pattern, value)
    if bad:
        raise PydanticCustomError(
            "control_character",
            "value contains a control, bidi or zero-width character (only line breaks and tabs are kept)",
        )
    return value


SystemPrompt = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_SYSTEM_PROMPT), AfterValidator(_system_prompt)
]


class Metadata(_Model):
    name: DeploymentName
    labels: Labels = Field(default_factory=dict)


class Architecture(_Model):
    """Model architecture facts given inline, for models servespec cannot look up."""

    params_b: Annotated[float, Field(gt=0, le=1e6, description="Parameters, in billions")] | None = None
    layers: Annotated[int, Field(ge=1, le=100_000)] | None = None
    hidden_size: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    intermediate_size: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    attention_heads: Annotated[int, Field(ge=1, le=100_000)] | None = None
    kv_heads: Annotated[int, Field(ge=1, le=100_000)] | None = None
    head_dim: Annotated[int, Field(ge=1, le=100_000)] | None = None
    vocab_size: Annotated[int, Field(ge=1, le=100_000_000)] | None = None
    max_position_embeddings: Annotated[int, Field(ge=1, le=1_000_000_000)] | None = None
    experts: Annotated[int, Field(ge=1, le=100_000)] | None = None
    active_experts: Annotated[int, Field(ge=1, le=100_000)] | None = None
    kv_lora_rank: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        default=None, description="MLA (DeepSeek-V2/V3): rank of the cached KV latent"
    )
    qk_rope_head_dim: Annotated[int, Field(ge=0, le=100_000)] | None = Field(
        default=None, description="MLA: the rotary part of each key, cached beside the latent"
    )
    sliding_window: Annotated[int, Field(ge=1, le=1_000_000_000)] | None = Field(
        default=None, description="Tokens a sliding-window (local) attention layer attends to"
    )
    layer_types: (
        list[Literal["full_attention", "sliding_attention", "chunked_attention", "linear_attention"]] | None
    ) = Field(default=None, description="Attention kind of each layer, as config.json's layer_types spells it")


AdapterName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9._/@+-]{0,127}$"),
    Field(
        description="The name clients send as `model` to get the adapter: letters, digits and ._/@+-, not "
        "starting with '-', '.', '@' or '+'; no ':' (SGLang's model:adapter syntax), '=' or ',' (the "
        "engines' name=path lists)"
    ),
]


class Adapter(_Model):
    """One LoRA adapter served beside the model under ``name`` (spec-v1 section 6: ``model.adapters``)."""

    name: AdapterName
    source: ModelSource = Field(
        description="Hugging Face repo id of the adapter (staged like the weights), or an absolute path on the "
        "hosts inside the inventory's model roots (a folder; a .gguf file for llama.cpp and Ollama)"
    )
    revision: NonEmpty | None = Field(default=None, description="Commit sha (recommended) or branch of a Hub adapter")

    @model_validator(mode="after")
    def _path_fits_the_engines_lists(self) -> Adapter:
        if str(self.source).startswith("/") and any(mark in str(self.source) for mark in ",=:"):
            raise PydanticCustomError(
                "adapter_path",
                "an adapter's host path may not hold ',', '=' or ':': the engines' adapter lists split on them "
                "(llama.cpp --lora, TGI LORA_ADAPTERS, name=path) and Docker's volume syntax on ':'",
            )
        return self


SpeculativeMethod = Literal["eagle", "eagle3", "mtp", "ngram", "draft", "dflash"]


class Speculative(_Model):
    """Speculative decoding (spec-v1 section 6: ``model.speculative``)."""

    method: SpeculativeMethod = Field(
        description="eagle / eagle3: an EAGLE head (draft); mtp: the model's own multi-token-prediction layers; "
        "ngram: prompt lookup, no draft; draft: a smaller model of the same vocabulary; dflash: a DFlash block "
        "diffusion draft (draft)"
    )
    draft: ModelSource | None = Field(
        default=None, description="The draft model or EAGLE head: a Hugging Face repo id or a host path"
    )
    draft_revision: NonEmpty | None = Field(default=None, description="Commit sha (recommended) or branch")
    num_tokens: Annotated[int, Field(ge=1, le=64)] | None = Field(
        default=None, description="Tokens proposed per step (vLLM num_speculative_tokens, SGLang num steps)"
    )

    @model_validator(mode="after")
    def _draft_where_needed(self) -> Speculative:
        if self.method in ("eagle", "eagle3", "draft", "dflash") and self.draft is None:
            raise PydanticCustomError(
                "speculative_draft",
                "model.speculative.method {method} needs model.speculative.draft",
                {"method": self.method},
            )
        if self.draft is not None and str(self.draft).startswith("/") and ":" in str(self.draft):
            raise PydanticCustomError(
                "speculative_draft", "a draft's host path may not hold ':' (Docker's volume syntax splits on it)"
            )
        if self.method in ("ngram", "mtp") and self.draft is not None:
            raise PydanticCustomError(
                "speculative_draft",
                "model.speculative.method {method} uses no separate draft model: drop model.speculative.draft",
                {"method": self.method},
            )
        return self


class ModelSpec(_Model):
    source: ModelSource
    revision: NonEmpty | None = Field(default=None, description="Commit sha (recommended) or branch")
    config: NonEmpty | None = Field(
        default=None, description="Path to a Hugging Face config.json, relative to this file"
    )
    architecture: Architecture | None = None
    dtype: Literal["auto", "float16", "bfloat16", "float32"] = "auto"
    quantization: Quantization | None = Field(
        default="auto",
        description="auto: as the checkpoint's quantization_config says; another value: the engine's method "
        f"(servespec's names {', '.join(QUANTIZATIONS)}, or any method the engine release accepts)",
    )
    gguf_type: NonEmpty | None = Field(default=None, description="GGUF quantization type, e.g. Q4_K_M")
    max_model_len: Annotated[int, Field(ge=1, le=16_777_216)] | None = Field(
        default=None, description="Tokens of context per sequence (prompt + output); default: the model's maximum"
    )
    hub_token: SecretRef | None = Field(default=None, description="Hugging Face token for gated models")
    archive: NonEmpty | None = Field(
        default=None,
        description="A tar archive of the model's files on the controller, relative to this file (air-gapped "
        "hosts): copied to each host and unpacked into its Hub cache at model.revision, a commit",
    )
    adapters: list[Adapter] = Field(
        default_factory=list,
        max_length=256,
        description="LoRA adapters served beside the model, each under its own name",
    )
    speculative: Speculative | None = Field(default=None, description="Speculative decoding")

    @model_validator(mode="after")
    def _archive_at_a_commit(self) -> ModelSpec:
        if self.archive is not None and not re.fullmatch(r"[0-9a-f]{40}", str(self.revision or "")):
            raise PydanticCustomError(
                "archive_revision",
                "model.archive needs model.revision set to the 40-hex commit the files are filed under",
            )
        return self

    @model_validator(mode="after")
    def _adapter_names_unique(self) -> ModelSpec:
        seen: set[str] = set()
        for adapter in self.adapters:
            if adapter.name in seen:
                raise PydanticCustomError(
                    "adapter_name",
                    "model.adapters names {name} twice: each adapter needs its own name",
                    {"name": adapter.name},
                )
            seen.add(adapter.name)
        return self


class EngineSpec(_Model):
    name: EngineName
    version: Annotated[
        str, StringConstraints(pattern=r"^v?\d+(\.\d+)*([.-]?[A-Za-z0-9.+-]*)?$|^b\d+$|^[0-9a-f]{7,40}$")
    ] = Field(description='The engine release the options are checked against (quote it: "0.11.0")')
    image: ImageReference | None = None
    image_archive: NonEmpty | None = None
    options: dict[str, Scalar | list[Scalar] | dict[str, Any] | None] = Field(default_factory=dict)
    extra_args: list[str] = Field(default_factory=list)
    env: dict[EnvName, Scalar] = Field(default_factory=dict)
    entrypoint: LaunchWords | None = Field(
        default=None,
        description="Replaces the image's entrypoint (exec form, no shell); engine.command, then the rendered "
        "arguments follow it",
    )
    command: LaunchWords | None = Field(
        default=None,
        description="The words that start the server, in place of servespec's own (python3 -m "
        "vllm.entrypoints.openai.api_server); the rendered arguments are appended",
    )
    secret_env: dict[SecretEnvName, SecretRef] = Field(
        default_factory=dict,
        description="Secrets the engine process reads from its environment (a tool server's EXA_API_KEY): "
        "NAME: {from_env: VAR} or {from_file: /path}, resolved on the controller while applying and given to the "
        "engine through the secrets env file, never rendered",
    )

    @field_validator("options")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_numbers(value)
        return value

    @field_validator("secret_env")
    @classmethod
    def _secret_env_not_in_env(cls, value: dict[str, SecretRef], info: ValidationInfo) -> dict[str, SecretRef]:
        both = sorted(set(value) & set(info.data.get("env") or {}))
        if both:
            raise PydanticCustomError(
                "secret_env_name",
                "{name} is set in both engine.env and engine.secret_env; keep the secret in secret_env only",
                {"name": both[0]},
            )
        return value


GpuIds = Annotated[
    Literal["auto"] | list[Annotated[int, Strict(), Field(ge=0, le=1023)]],
    _one_message("gpu_ids", "expected 'auto' or a list of GPU indices such as [0, 1]"),
]


def _numa_false_is_off(value: Any) -> Any:
    """``numa: false`` (YAML 1.1 reads ``off`` so too) means off; ``True`` stays a bool and is refused.

    A bool is an int to Python, so without this ``false`` would pin NUMA node 0 (and ``true`` node 1).
    """
    return "off" if value is False else value


Numa = Annotated[
    Literal["auto", "off"] | Annotated[int, Strict(), Field(ge=0, le=1023)],
    _one_message("numa", "expected 'auto', 'off' (or false) or a NUMA node number"),
    BeforeValidator(_numa_false_is_off),
]


ExpertParallel = Annotated[
    bool | Annotated[int, Field(ge=1, le=1024)],
    _one_message("expert_parallel", "expected true, false or an expert-parallel group size such as 8"),
]


MAX_REPLICAS_PER_HOST = 16
"""Replicas one host may run behind its front proxy (each takes two internal ports: spec/front_proxy.py)."""


class Resources(_Model):
    tensor_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    pipeline_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    data_parallel: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1,
        description="Data-parallel ranks per replica, each with tensor_parallel GPUs; a replica takes "
        "tensor × pipeline × data parallel GPUs (an MoE model's expert layers span the ranks, as the engine lays "
        "them out: docs/engines)",
    )
    expert_parallel: ExpertParallel = Field(
        default=False,
        description="true: split an MoE model's routed experts over the engine's own default group "
        "(tensor × data parallel); an int: over a group of that many GPUs; false: experts are tensor-sharded",
    )
    gpu_ids: GpuIds = "auto"
    numa: Numa = "auto"

    @field_validator("gpu_ids")
    @classmethod
    def _unique(cls, value: Any) -> Any:
        if isinstance(value, list) and len(set(value)) != len(value):
            raise PydanticCustomError("gpu_ids", "gpu_ids lists a device twice")
        return value


class Placement(_Model):
    hosts: list[HostName] | None = Field(
        default=None, min_length=1, description="Inventory host names; default: every host of the inventory"
    )
    hosts_per_replica: Annotated[int, Field(ge=1, le=4096)] = 1
    replicas_per_host: Annotated[int, Field(ge=1, le=MAX_REPLICAS_PER_HOST)] = Field(
        default=1,
        description="Replicas of the deployment on each placed host, behind the front proxy on serving.port "
        "(needs rollout.strategy auto): each on its own GPUs, resources.gpu_ids split in order (replica 0 the "
        "first tensor × pipeline × data parallel of them), each on its own internal port and container",
    )

    @field_validator("replicas_per_host")
    @classmethod
    def _one_host_replicas(cls, value: int, info: ValidationInfo) -> int:
        group = info.data.get("hosts_per_replica", 1)
        if value > 1 and group > 1:
            raise PydanticCustomError(
                "replicas_per_host",
                "placement.replicas_per_host {value} with hosts_per_replica {group}: several replicas on one host "
                "are one-host replicas; a replica that spans hosts runs once per host group",
                {"value": value, "group": group},
            )
        return value

    @field_validator("hosts")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise PydanticCustomError("hosts", "placement.hosts names a host twice")
        return value


class Serving(_Model):
    port: Port = 8000
    bind: IpAddress = Field(default="127.0.0.1", description="Address the engine listens on (an IP address)")
    api_key: SecretRef | None = None
    model_name: ServedName | None = Field(
        default=None,
        description="The name clients send as `model`; default: the name the engine itself serves (model.source)",
    )
    model_aliases: list[ServedName] = Field(
        default_factory=list, max_length=32, description="Further names the engine answers to (where it takes several)"
    )
    chat_template: NonEmpty | None = Field(
        default=None,
        description="A Jinja chat-template file, relative to this file and inside the checkout: shipped with the "
        "rendered files and given to the engine's chat-template option (vLLM/SGLang --chat-template, llama.cpp "
        "--chat-template-file)",
    )
    system_prompt: SystemPrompt | None = Field(
        default=None,
        description="A default system prompt, where the engine has one (Ollama's Modelfile SYSTEM); several lines "
        "allowed",
    )

    @field_validator("model_aliases")
    @classmethod
    def _distinct_names(cls, value: list[str], info: ValidationInfo) -> list[str]:
        names = [*([info.data["model_name"]] if info.data.get("model_name") else []), *value]
        if len(set(names)) != len(names):
            raise PydanticCustomError("model_aliases", "model_aliases repeats a name (or serving.model_name)")
        return value


MaxUnavailable = Annotated[
    Annotated[int, Field(ge=1, le=MAX_INT)] | Annotated[str, StringConstraints(pattern=r"^([1-9]\d?|100)%$")],
    _one_message("max_unavailable", "expected a host count (1 or more) or a percentage such as '25%'"),
]


class Rollout(_Model):
    strategy: Literal["rolling", "recreate", "auto"] = Field(
        default="rolling",
        description="rolling | recreate | auto: per host, start the new revision beside the running one behind a "
        "front proxy where its GPUs are free, else in place once the old one's GPU memory is freed (docs/rollout.md)",
    )
    max_unavailable: MaxUnavailable = 1
    health_timeout: Duration = "15m"
    smoke_test: bool = True
    proxy_image: ImageReference | None = Field(
        default=None, description="strategy auto: the front proxy's image (HAProxy); default haproxy:2.6"
    )
    proxy_image_archive: NonEmpty | None = Field(
        default=None, description="strategy auto: a docker save archive of proxy_image, loaded instead of pulling"
    )


class SloWorkload(_Model):
    """The load ``deploy verify`` sends (spec-v1 section 6: ``slo.workload``): bounded in requests and time."""

    prompt_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        default=None, description="Tokens per prompt (synthetic prompts, counted by the engine's own tokenizer)"
    )
    output_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        default=None, description="Tokens generated per request (max_tokens, with the end-of-sequence token ignored)"
    )
    dataset: NonEmpty | None = Field(
        default=None,
        description="Instead of prompt_tokens/output_tokens: a JSON Lines file inside the checkout, relative to this "
        'file, one {"prompt": ..., "output_tokens": N} per line',
    )
    rate: Annotated[float, Field(gt=0, le=10_000)] | None = Field(
        default=None, description="Requests started per second (open loop), or ..."
    )
    concurrency: Annotated[int, Field(ge=1, le=1024)] | None = Field(
        default=None, description="... requests in flight at once (closed loop)"
    )
    requests: Annotated[int, Field(ge=1, le=100_000)] = Field(default=100, description="Requests sent in all")
    max_seconds: Annotated[float, Field(gt=0, le=3600)] = Field(
        default=300, description="The run stops after this long; requests not finished by then count as failed"
    )

    @model_validator(mode="after")
    def _one_of_each(self) -> SloWorkload:
        synthetic = self.prompt_tokens is not None or self.output_tokens is not None
        if self.dataset is not None and synthetic:
            raise PydanticCustomError(
                "slo_workload", "slo.workload gives a dataset or prompt_tokens/output_tokens, not both"
            )
        if self.dataset is None and (self.prompt_tokens is None or self.output_tokens is None):
            raise PydanticCustomError(
                "slo_workload", "slo.workload needs prompt_tokens and output_tokens (or a dataset file)"
            )
        if (self.rate is None) == (self.concurrency is None):
            raise PydanticCustomError("slo_workload", "slo.workload needs one of rate or concurrency")
        return self


class SloTargets(_Model):
    """What ``deploy verify`` checks per replica (spec-v1 section 6: ``slo.targets``); at least one."""

    ttft_p95_ms: Annotated[float, Field(gt=0, le=3_600_000)] | None = Field(
        default=None, description="Time to first token, 95th percentile, at most (ms)"
    )
    itl_p95_ms: Annotated[float, Field(gt=0, le=3_600_000)] | None = Field(
        default=None, description="Inter-token latency (time per output token after the first), 95th percentile (ms)"
    )
    output_tokens_per_s: Annotated[float, Field(gt=0, le=1e9)] | None = Field(
        default=None, description="Output tokens per second over the run, at least"
    )
    requests_per_s: Annotated[float, Field(gt=0, le=1e9)] | None = Field(
        default=None, description="Requests completed per second over the run, at least"
    )
    error_rate: Annotated[float, Field(ge=0, le=1)] | None = Field(
        default=None, description="Failed requests / requests sent, at most (0.01 = 1 %)"
    )

    @model_validator(mode="after")
    def _some_target(self) -> SloTargets:
        if not self.model_fields_set:
            raise PydanticCustomError("slo_targets", "slo.targets names no target")
        return self


class Slo(_Model):
    """A latency/throughput target (spec-v1 section 6: ``slo``), checked by ``deploy verify`` and ``apply --verify``."""

    workload: SloWorkload
    targets: SloTargets


class Suppression(_Model):
    rule: Annotated[str, StringConstraints(pattern=r"^[A-Z]+\d{3}$")]
    reason: str | None = Field(default=None, description="Why the finding does not apply; required")


class Deployment(_Model):
    """kind: Deployment — one model served by one engine on some hosts."""

    model_config = ConfigDict(title="Deployment")

    apiVersion: Literal["servespec/v1"]  # noqa: N815 - the file format's own spelling
    kind: Literal["Deployment"]
    metadata: Metadata
    inventory: NonEmpty | None = Field(default=None, description="Inventory file, relative to this file")
    model: ModelSpec
    engine: EngineSpec
    resources: Resources = Field(default_factory=Resources)
    placement: Placement = Field(default_factory=Placement)
    serving: Serving = Field(default_factory=Serving)
    rollout: Rollout = Field(default_factory=Rollout)
    slo: Slo | None = Field(
        default=None, description="A latency/throughput target per replica: deploy verify, deploy apply --verify"
    )
    suppress: list[Suppression] = Field(default_factory=list)

    @field_validator("placement")
    @classmethod
    def _gpu_ids_split(cls, value: Placement, info: ValidationInfo) -> Placement:
        resources = info.data.get("resources")
        ids = resources.gpu_ids if resources is not None else "auto"
        if isinstance(ids, list) and value.replicas_per_host > 1 and len(ids) % value.replicas_per_host:
            raise PydanticCustomError(
                "replicas_per_host",
                "placement.replicas_per_host {replicas} does not divide resources.gpu_ids ({count} devices): the "
                "devices are split in order, the same number to each replica",
                {"replicas": value.replicas_per_host, "count": len(ids)},
            )
        return value

    @field_validator("rollout")
    @classmethod
    def _replicas_behind_proxy(cls, value: Rollout, info: ValidationInfo) -> Rollout:
        placement = info.data.get("placement")
        replicas = placement.replicas_per_host if placement is not None else 1
        if replicas > 1 and value.strategy != "auto":
            raise PydanticCustomError(
                "replicas_per_host",
                "placement.replicas_per_host {replicas} runs the replicas behind the front proxy of rollout.strategy "
                "auto; set rollout.strategy: auto",
                {"replicas": replicas},
            )
        return value

    @property
    def gpus_per_replica(self) -> int:
        """GPUs one replica needs in all (tensor × pipeline × data parallel)."""
        resources = self.resources
        return resources.tensor_parallel * resources.pipeline_parallel * resources.data_parallel


class GpuSet(_Model):
    model: NonEmpty | None = Field(
        default=None, description="GPU model; nvidia-smi spellings accepted (NVIDIA A100-SXM4-80GB)"
    )
    count: Annotated[int, Field(ge=0, le=64)]


class Hardware(_Model):
    gpus: GpuSet | None = None
    interconnect: Literal["pcie", "nvlink", "nvswitch"] | None = None
    gpu_numa_nodes: list[Annotated[int, Field(ge=-1, le=1023)]] | None = None
    pcie_acs: Literal["enabled", "disabled", "unknown"] = "unknown"
    iommu: Literal["on", "off", "passthrough", "unknown"] = "unknown"
    driver_version: Annotated[str, StringConstraints(pattern=r"^\d+(\.\d+){1,2}$")] | None = None
    cpus: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    memory_gib: Annotated[float, Field(gt=0, le=1e9)] | None = None
    numa_cpus: dict[Annotated[int, Field(ge=0, le=1023)], CpuList] | None = Field(
        default=None, description="CPUs of each NUMA node as numactl prints them, e.g. {0: '0-47,96-143'}"
    )

    @field_validator("iommu", mode="before")
    @classmethod
    def _yaml11_booleans(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare on/off as a boolean; accept what the user meant.
        if isinstance(value, bool):
            return "on" if value else "off"
        return value


class HostDefaults(_Model):
    ssh_user: UserName | None = None
    ssh_port: Port = 22
    ssh_key: KeyPath | None = Field(default=None, description="Private key file on the controller")
    become: bool = True
    facts_max_age_days: Annotated[int, Field(ge=1, le=100_000)] = Field(
        default=30, description="Facts files collected longer ago than this are reported (REF004)"
    )
    model_roots: list[NonEmpty] = Field(
        default_factory=lambda: list(DEFAULT_MODEL_ROOTS),
        description="Host folders a local model.source may name (it is mounted into the engine container)",
    )
    secrets_dir: NonEmpty | None = Field(
        default=None,
        description="Controller folder that from_file secret references must stay inside (or --secrets-dir)",
    )


class Host(_Model):
    address: Address | None = Field(default=None, description="Address Ansible connects to; default: the host name")
    ssh_user: UserName | None = None
    ssh_port: Port | None = None
    connection: Literal["ssh", "local"] = "ssh"
    labels: Labels = Field(default_factory=dict)
    facts: NonEmpty | None = Field(default=None, description="Facts file from `deploy discover`, relative to this file")
    hardware: Hardware | None = None

    @field_validator("hardware")
    @classmethod
    def _model_when_gpus(cls, hardware: Hardware | None) -> Hardware | None:
        # Declared by hand, GPUs come with their model; a facts file may count GPUs that
        # `nvidia-smi topo -m` alone showed, without a name.
        gpus = hardware.gpus if hardware else None
        if gpus is not None and gpus.count > 0 and gpus.model is None:
            raise PydanticCustomError("gpu_model", "give the GPU model when count is above 0")
        return hardware


class Inventory(_Model):
    """kind: Inventory — hosts and their hardware."""

    model_config = ConfigDict(title="Inventory")

    apiVersion: Literal["servespec/v1"]  # noqa: N815
    kind: Literal["Inventory"]
    defaults: HostDefaults = Field(default_factory=HostDefaults)
    hosts: dict[HostName, Host] = Field(min_length=1)
    suppress: list[Suppression] = Field(default_factory=list)


ContainerName = Annotated[
    str,
    StringConstraints(pattern=r"^servespec-[a-z0-9-]{1,80}$"),
    Field(description="A servespec engine container: servespec-<deployment> or servespec-<deployment>-previous"),
]


class GpuProcess(_Model):
    """A GPU that ran a compute process when facts were collected, and whose process it was."""

    gpu: Annotated[int, Field(ge=0, le=1023)]
    container: ContainerName | None = Field(
        default=None, description="The servespec container the process ran in; null: any other process"
    )


class HostRuntime(_Model):
    """What `deploy discover` saw of the host's container runtime, disk and GPU use."""

    docker_version: NonEmpty | None = None
    nvidia_runtime: bool | None = Field(default=None, description="Docker lists an `nvidia` runtime")
    cdi: bool | None = Field(default=None, description="Docker has CDI spec directories (CDI device injection on)")
    model_cache_free_gib: Annotated[float, Field(ge=0, le=1e12)] | None = Field(
        default=None, description="Free space where engines cache model weights (/var/lib/servespec/models)"
    )
    busy_gpus: list[Annotated[int, Field(ge=0, le=1023)]] | None = Field(
        default=None, description="Indices of GPUs that ran compute processes when facts were collected"
    )
    gpu_processes: list[GpuProcess] | None = Field(
        default=None,
        description="Each (GPU, container) pair of those processes, once: tells servespec's own engines from others",
    )


class FactsFile(_Model):
    """A facts file written by `deploy discover` (contract §2.3)."""

    model_config = ConfigDict(title="Facts")

    version: Literal[1]
    host: NonEmpty
    collected_at: str | None = None
    hardware: Hardware
    links: list[tuple[GpuIndex, GpuIndex, NonEmpty]] = Field(default_factory=list)
    runtime: HostRuntime | None = None


KINDS: dict[str, type[Deployment] | type[Inventory]] = {"Deployment": Deployment, "Inventory": Inventory}
