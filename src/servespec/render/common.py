"""What every engine's rendering shares: targets, the container description, volumes, secrets.

An engine's ``render`` (``servespec/engines/<name>/render.py``) turns a :class:`Target` into an
:class:`EngineContainer` (command, environment, native files); this module wraps that into a
:class:`~servespec.render.container.ContainerSpec` (``container.yaml``), the single
description the rollout starts a container from.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

from servespec import hostpaths
from servespec.engines.base import Arguments
from servespec.engines.catalog import EngineOption, EngineRelease
from servespec.knowledge import resolve
from servespec.knowledge.served import served_names
from servespec.render.container import ContainerSpec, EngineRef, Gpus, Healthcheck, Port, Volume
from servespec.render.container import host_and_port as host_and_port
from servespec.render.environment import RenderError
from servespec.render.native import NativeUnit
from servespec.spec.fleet import DeploymentDoc, HostView
from servespec.text import printable

CONFIG_DIR = "/etc/servespec"
"""Where a deployment's rendered files appear inside its container (read-only)."""
HOST_CONFIG_ROOT = "/etc/servespec"
HOST_STATE_ROOT = "/var/lib/servespec"
MODEL_CACHE = f"{HOST_STATE_ROOT}/models"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Target:
    """One host of one deployment, with its place in the replica."""

    deployment: DeploymentDoc
    host: HostView
    replica: int
    rank: int
    leader: HostView
    hosts_in_replica: int
    options: dict[str, Any]
    release: EngineRelease | None

    @property
    def spec(self) -> Any:
        """The deployment spec."""
        return self.deployment.spec

    @property
    def role(self) -> Literal["leader", "worker"]:
        """``leader`` for rank 0 of a replica, else ``worker``."""
        return "leader" if self.rank == 0 else "worker"

    @property
    def multi_node(self) -> bool:
        """Whether the replica spans several hosts."""
        return self.hosts_in_replica > 1

    @property
    def gpu_ids(self) -> list[int]:
        """Device indices on this host (empty on CPU-only hosts)."""
        count = resolve.host_gpus(self.host).count
        return [] if count == 0 else resolve.gpu_ids(self.deployment)

    @property
    def served_name(self) -> str:
        """The model name clients send: ``serving.model_name``, else the name the engine itself serves."""
        return served_names(self.deployment)[0]

    @property
    def served_names(self) -> list[str]:
        """Every name the deployment is served under: :attr:`served_name`, then ``serving.model_aliases``."""
        return served_names(self.deployment)

    @property
    def max_model_len(self) -> int | None:
        """The context length the spec sets; None renders nothing (the engine's default for the release)."""
        return resolve.max_model_len(self.deployment, resolve.model_answer(self.deployment).facts)

    def option(self, key: str) -> EngineOption | None:
        """The release catalog's entry for option ``key`` (None: unknown option or release)."""
        return self.release.option(key) if self.release else None

    def command_line_flag(self, key: str) -> str | None:
        """The release's command-line flag for option ``key``, or None (unknown, or config-file only)."""
        return self.release.flag(key) if self.release else None

    def option_flag(self, key: str) -> str:
        """The engine's own spelling of an option (``--max-num-seqs``)."""
        return self.command_line_flag(key) or "--" + key.replace("_", "-")

    @property
    def extra_args(self) -> list[str]:
        """``engine.extra_args``, appended verbatim to the engine's command line (never shell-evaluated)."""
        return [str(arg) for arg in self.spec.engine.extra_args]


@dataclass
class EngineContainer:
    """What an engine module decides about its container."""

    command: list[str]
    entrypoint: list[str] | None = None
    secret_env: dict[str, dict[str, str]] = field(default_factory=dict)
    files: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """Rendered file name -> (template, context)."""
    env_files: list[str] = field(default_factory=list)
    """Rendered files the container reads as environment files (TGI's and Ollama's settings)."""
    container_model_cache: str = "/root/.cache/huggingface"
    human_command: list[str] = field(default_factory=list)
    """The command as a person would type it inside the image (for the README)."""
    environment: dict[str, str] = field(default_factory=dict)
    """Variables the engine module sets (never secrets); ``engine.env`` of the spec overrides them."""
    volumes: list[Volume] = field(default_factory=list)
    """Host folders the engine module mounts besides the model's (KTransformers' ``--kt-weight-path``)."""
    native: NativeUnit | None = None
    """A host-native engine's systemd unit instead of a container (LM Studio): render/native.py."""


def targets(deployment: DeploymentDoc) -> list[Target]:
    """Every host of the deployment with its replica, rank and leader."""
    hosts = resolve.placed_hosts(deployment)
    group = deployment.spec.placement.hosts_per_replica
    options = resolve.effective_options(deployment, extra_args=False)
    release = resolve.release(deployment)
    out = []
    for index, host in enumerate(hosts):
        replica, rank = divmod(index, group)
        leader = hosts[replica * group]
        out.append(Target(deployment, host, replica, rank, leader, group, options, release))
    return out


def content_hash(target: Target) -> str:
    """sha256 of everything the rendered files depend on: the spec document, the host, the release."""
    payload = {
        "format": FORMAT_VERSION,
        "spec": target.deployment.document.data,
        "host": target.host.spec.model_dump(mode="json"),
        "hardware": target.host.hardware.model_dump(mode="json") if target.host.hardware else None,
        "release": target.release.version if target.release else None,
        "replica": [target.replica, target.rank, target.leader.name, target.hosts_in_replica],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def header(target: Target, digest: str, *, per_host: bool = True) -> str:
    """The generated-file comment: origin (and host, for per-host files) and content hash; no timestamps.

    It lands inside ``#`` and ``<!-- -->`` comments, so every name in it is escaped: no line
    break, control or bidi character (text.printable), and no ``<``/``>`` to close a comment.
    """

    def inert(text: str) -> str:
        return printable(text).replace("<", "\\x3c").replace(">", "\\x3e")

    source = inert(PurePosixPath(target.deployment.document.file).name)
    host = f", host {inert(target.host.name)}" if per_host else ""
    return (
        f"Generated by servespec from {source} (deployment {inert(target.deployment.name)}{host}); "
        f"do not edit. Content sha256:{inert(digest)}"
    )


def served_name_options(target: Target) -> dict[str, Any]:
    """The engine's served-name option, only where the spec names the model (else the engine's own name holds).

    Engines taking several names (profile ``served_name.several``) get every name: as the
    option's several values where it takes them (vLLM ``nargs``), else joined by commas
    (llama.cpp ``--alias``); the others the first name only. Nothing is rendered where the
    engine or the release has no such option: ENG004 reports what is not served then.
    """
    serving = target.spec.serving
    served = resolve.profile(target.deployment).served_name
    option = target.option(served.option) if served.option else None
    if (serving.model_name is None and not serving.model_aliases) or served.option is None or option is None:
        return {}
    names = target.served_names if served.several else target.served_names[:1]
    if len(names) == 1:
        return {served.option: names[0]}
    return {served.option: names if option.nargs else ",".join(names)}


def launch(target: Target, launcher: list[str], arguments: list[str]) -> tuple[list[str] | None, list[str]]:
    """The container's entrypoint and command: ``engine.entrypoint`` (else the image's), ``engine.command``
    (else the engine's ``launcher`` words), then the rendered ``arguments``."""
    engine = target.spec.engine
    words = list(engine.command) if engine.command is not None else launcher
    return (list(engine.entrypoint) if engine.entrypoint else None), [*words, *arguments]


def launch_words(target: Target, image_words: list[str], launcher: list[str]) -> list[str]:
    """The words before the rendered arguments as a person types them in the image (the README's command).

    ``engine.entrypoint`` in place of ``image_words`` (what the image's own entrypoint
    runs: ``vllm serve``, ``llama-server``), then ``engine.command`` in place of ``launcher``.
    """
    engine = target.spec.engine
    first = list(engine.entrypoint) if engine.entrypoint else image_words
    return [*first, *(list(engine.command) if engine.command is not None else launcher)]


def engine_host(target: Target) -> str:
    """The address the engine itself listens on.

    One host per replica runs on Docker's bridge network: inside its own network namespace
    the engine listens on 0.0.0.0 and Docker publishes the port on ``serving.bind`` only.
    A multi-node replica runs on the host's network (its members reach each other
    directly), so there the engine must listen on ``serving.bind`` itself.
    """
    return str(target.spec.serving.bind) if target.multi_node else "0.0.0.0"


class UnsafeModelPathError(RenderError):
    """A local model source that may not be mounted into a container."""


def positional_model(target: Target) -> str:
    """``model.source`` for a command line that takes it as a positional word (``vllm serve``, ``trtllm-serve``).

    A word starting with ``-`` there is read as an option (``--trust-remote-code``). The
    loader refuses such sources; this refuses them again for anything that skips it.
    """
    source = str(target.spec.model.source)
    if source.startswith("-") or not source.strip():
        raise RenderError("model.source would be read as a command-line option")
    return source


def local_model_folder(source: str, roots: list[str]) -> str:
    """The host folder a local model source mounts, refusing anything outside the model roots.

    SEC004 reports such specs; this is the renderer's own check, so that nothing that
    skips validation can mount ``/var/run`` (docker.sock) or ``/etc`` into an engine.
    """
    problem = hostpaths.local_source_problem(source, roots)
    if problem:
        raise UnsafeModelPathError(f"model.source: {problem}")
    return hostpaths.mounted_folder(source)


def cache_mode(target: Target) -> Literal["ro", "rw"]:
    """How the engine mounts the host's model cache: read-only when servespec stages its weights.

    The role's weights modules write the cache as root on the host; an engine container that could
    write it too could plant links for them (issue 20). An engine that reads a Hub model from its
    profile's Hub cache (``model_store.hub_cache``) gets it staged (rollout/staging.py stages only
    through a read-only cache mount), and huggingface_hub reads a fully cached model from a
    read-only cache (file_download.py, v2.4.0: "the cache may be mounted read-only"). An engine that
    fetches its model itself (llama.cpp's GGUF, Ollama's registry), or serves a host path, keeps
    the cache read-write: the modules walk it without following links either way.
    """
    model_store = resolve.profile(target.deployment).model_store
    staged = model_store is not None and model_store.hub_cache is not None
    return "ro" if staged and not hostpaths.is_local_path(str(target.spec.model.source)) else "rw"


def model_volumes(target: Target, container_cache: str) -> list[Volume]:
    """The host model cache, and a local model path (under a model root) mounted read-only at the same path.

    The cache is also mounted wherever the spec moves the engine's model store (``OLLAMA_MODELS``,
    ``HF_HOME``, ``--download-dir``: :func:`servespec.knowledge.store.mounts`), so a new container
    finds the model there instead of downloading it again.
    """
    from servespec.knowledge import store

    mode = cache_mode(target)
    volumes = [Volume(MODEL_CACHE, container_cache, mode)]
    volumes += [Volume(MODEL_CACHE, path, mode) for path in store.mounts(target.deployment, container_cache)]
    source = str(target.spec.model.source)
    if hostpaths.is_local_path(source):
        folder = local_model_folder(source, resolve.model_roots(target.deployment))
        volumes.append(Volume(folder, folder, "ro"))
    return volumes


def hub_token_env(target: Target) -> dict[str, dict[str, str]]:
    """HF_TOKEN from the spec's secret reference (the value is resolved only while applying)."""
    token = target.spec.model.hub_token
    return {"HF_TOKEN": token.model_dump(exclude_none=True)} if token is not None else {}


def api_key_ref(target: Target) -> dict[str, str] | None:
    """The serving API key's reference, or None."""
    key = target.spec.serving.api_key
    return key.model_dump(exclude_none=True) if key is not None else None


def engine_secrets(target: Target) -> dict[str, dict[str, str]]:
    """The secrets env file: HF_TOKEN, and the API key under the variable the engine reads (profile ``auth.env``)."""
    secrets = hub_token_env(target)
    key = api_key_ref(target)
    auth = resolve.profile(target.deployment).auth
    if key is not None and auth and auth.env:
        secrets[auth.env] = key
    return secrets


def model_options(target: Target) -> dict[str, Any]:
    """Revision, dtype, quantization method and context length, named as the engine's profile maps them."""
    names = resolve.profile(target.deployment).spec_options
    model = target.spec.model
    values = {
        "model.revision": model.revision,
        "model.dtype": model.dtype if model.dtype != "auto" else None,
        "model.quantization": quantization_method(target),
        "model.max_model_len": target.max_model_len,
    }
    return {names[field]: value for field, value in values.items() if value and field in names}


def quantization_method(target: Target) -> str | None:
    """The engine's name for the spec's quantization (profile ``quantization``), or None when it takes none."""
    chosen = target.spec.model.quantization
    if chosen in (None, "auto"):
        return None  # the engine reads the checkpoint's quantization_config itself
    method = resolve.profile(target.deployment).quantization.get(chosen)
    return method if isinstance(method, str) else None


def numa_pinning(target: Target) -> dict[str, str]:
    """cpuset_mems (and cpuset_cpus when the facts list the node's CPUs) for ``numa: auto`` or a node."""
    chosen = target.spec.resources.numa
    hardware = target.host.hardware
    if chosen == "off" or hardware is None or not hardware.gpu_numa_nodes:
        return {}
    if chosen == "auto":
        nodes = {hardware.gpu_numa_nodes[i] for i in target.gpu_ids if i < len(hardware.gpu_numa_nodes)}
        if len(nodes) != 1 or -1 in nodes:
            return {}  # GPUs on several nodes (TOPO001) or unknown: leave placement to the kernel
        node = nodes.pop()
    else:
        node = int(chosen)
    pinning = {"cpuset_mems": str(node)}
    cpus = (hardware.numa_cpus or {}).get(node)
    if cpus:
        pinning["cpuset_cpus"] = cpus
    return pinning


def arguments(target: Target) -> Arguments:
    """How the engine's parser reads options (profile ``arguments``)."""
    return resolve.profile(target.deployment).arguments


def _word(value: Any) -> str:
    """One value as a command-line or environment word: booleans as ``true``/``false``."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def negated(flag: str) -> str:
    """``--no-x`` for ``--x``: argparse's BooleanOptionalAction (vLLM 0.33's EnableDisableAction still
    accepts ``--no-enable-x``: vllm/utils/argparse_utils.py), llama.cpp's ``--x/--no-x`` pairs."""
    return "--no-" + flag.removeprefix("--")


def option_words(target: Target, key: str, value: Any) -> list[str]:
    """One option on the command line in the form the release's parser reads ([]: nothing to pass).

    Booleans by the catalog's ``bool_form`` (``--x``; ``--no-x``; ``--x true|false``, argparse's
    ``type=bool`` false as the empty word; a false store_true flag is left out); lists by
    ``nargs`` and the parser (argparse ``--x a b``, clap/click ``--x a --x b``,
    ``action=append`` repeated; a one-word list comma-joined or JSON, profile
    ``arguments.list_word``); mappings, and lists of a JSON-typed option, as JSON.
    """
    if value is None:
        return []
    option = target.option(key)
    flag = target.option_flag(key)
    if isinstance(value, bool):
        form = (option.bool_form if option else None) or "flag"
        if form == "value":
            # argparse type=bool (vLLM 0.11's --guided-decoding-disable-fallback, SGLang 0.4's
            # --prefill-only-one-req) calls bool(word): every word but the empty one is true
            falsy = "" if arguments(target).parser == "argparse" else "false"
            return [flag, _word(value) if value else falsy]
        if value:
            return [flag]
        return [negated(flag)] if form == "negatable" else []
    if isinstance(value, dict) or (isinstance(value, list) and option is not None and option.type == "dict"):
        return [flag, _json(value)]
    if isinstance(value, list):
        if not value:
            return []
        nargs = option.nargs if option else "+"
        if nargs == "append" or (nargs in ("+", "*") and arguments(target).several == "repeat"):
            return [word for item in value for word in (flag, _word(item))]
        if nargs in ("+", "*"):
            return [flag, *(_word(item) for item in value)]
        return [flag, one_word_list(target, value)]
    return [flag, _word(value)]


def one_word_list(target: Target, value: list[Any]) -> str:
    """A list as one word: comma-joined (clap ``value_delimiter = ','``, Go's ``strings.Split(s, ",")``) or JSON."""
    if arguments(target).list_word == "json":
        return _json(value)
    return ",".join(_word(item) for item in value)


def env_text(target: Target, key: str, value: Any) -> str | None:
    """An option's value for its environment variable, or None when one variable cannot hold it.

    Booleans as ``true``/``false`` (Go's strconv.ParseBool, clap's boolish parser), lists
    comma-joined as the engine splits them (Ollama ``OLLAMA_ORIGINS``, TGI ``CUDA_GRAPHS``),
    mappings as JSON. A clap ``Vec`` without a delimiter (TGI ``CORS_ALLOW_ORIGIN``) reads its
    variable as one value: several values are left to the command line (None).
    """
    option = target.option(key)
    if isinstance(value, dict) or (isinstance(value, list) and option is not None and option.type == "dict"):
        return _json(value)
    if isinstance(value, list):
        several = option is not None and option.nargs in ("+", "*", "append")
        if several and len(value) > 1:
            return None
        return one_word_list(target, value)
    return _word(value)


def split_config(target: Target, options: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Options for a config file, and the flags that must stay on the command line.

    Keys are the engine's own flag spelling without dashes (``model-path``): SGLang's
    config reader turns each key into ``--<key>`` verbatim, and vLLM accepts either
    spelling. A config file holds scalars and true store_true flags; mappings go in as JSON
    text (vLLM 0.11 writes a YAML mapping as ``str(dict)``, which its JSON parsers refuse).
    Negatable and ``--x true|false`` booleans, and lists of several words, stay on the
    command line (SGLang's config reader refuses BooleanOptionalAction and repeats no
    flag; vLLM's writes a list after one flag).
    """
    config: dict[str, Any] = {}
    argv: list[str] = []
    for key, value in options.items():
        option = target.option(key)
        words = option_words(target, key, value)
        name = target.option_flag(key).removeprefix("--")
        if not words:
            continue
        if isinstance(value, bool):
            if value and ((option.bool_form if option else None) or "flag") == "flag":
                config[name] = True
            else:
                argv += words
        elif len(words) == 2 and not (isinstance(value, list) and _several_words(option)):
            config[name] = value if isinstance(value, int | float | str) else words[1]
        else:
            argv += words
    return config, argv


def _several_words(option: EngineOption | None) -> bool:
    """Whether a list value of the option goes on the command line as several words (not one JSON or comma word)."""
    return option is None or (option.type != "dict" and option.nargs in ("+", "*", "append"))


def flags(target: Target, options: dict[str, Any]) -> list[str]:
    """Options as command-line flags in the engine's spelling, each as its parser reads it (:func:`option_words`)."""
    return [word for key, value in options.items() for word in option_words(target, key, value)]


def container_description(target: Target, engine: EngineContainer, digest: str) -> ContainerSpec:
    """Everything the rollout needs to run the engine (written as container.yaml)."""
    spec = target.spec
    deployment = target.deployment.name
    gpu_ids = target.gpu_ids
    multi_gpu = len(gpu_ids) > 1 or target.multi_node
    pinning = numa_pinning(target)
    return ContainerSpec(
        deployment=deployment,
        model_name=spec.serving.model_name,
        host=target.host.name,
        revision=digest[:12],
        engine=EngineRef(spec.engine.name, spec.engine.version),
        role=target.role,
        replica=target.replica,
        rank=target.rank,
        image=spec.engine.image or resolve.profile(target.deployment).image_for(spec.engine.version),
        image_archive=spec.engine.image_archive,
        name=f"servespec-{deployment}",
        entrypoint=tuple(engine.entrypoint) if engine.entrypoint else None,
        command=tuple(engine.command),
        environment=_environment(target, engine),
        secret_environment=dict(sorted(engine.secret_env.items())),
        env_files=(
            *(f"{HOST_CONFIG_ROOT}/{deployment}/{name}" for name in engine.env_files),
            *([f"{HOST_CONFIG_ROOT}/{deployment}/secrets.env"] if engine.secret_env else []),
        ),
        gpus=Gpus(tuple(str(i) for i in gpu_ids)) if gpu_ids else None,
        ipc_mode="host" if multi_gpu else None,
        shm_size=None if multi_gpu or engine.native else "2g",
        network_mode="host" if target.multi_node else "bridge",
        # Host networking publishes nothing: the engine listens on serving.bind itself (engine_host).
        ports=() if target.multi_node else (Port(str(spec.serving.bind), spec.serving.port, spec.serving.port),),
        volumes=()
        if engine.native  # a host-native unit mounts nothing
        else (
            *model_volumes(target, engine.container_model_cache),
            *engine.volumes,
            Volume(f"{HOST_CONFIG_ROOT}/{deployment}", CONFIG_DIR, "ro"),
        ),
        cpuset_mems=pinning.get("cpuset_mems"),
        cpuset_cpus=pinning.get("cpuset_cpus"),
        healthcheck=Healthcheck(
            path=resolve.profile(target.deployment).health_path,
            port=spec.serving.port,
            timeout_s=5,
            start_period_s=resolve_timeout(target),
            host=health_host(target),
        ),
        smoke_test=bool(spec.rollout.smoke_test) and target.role == "leader",
        restart_policy="unless-stopped",
        labels={
            "servespec.deployment": deployment,
            "servespec.host": target.host.name,
            "servespec.revision": digest[:12],
            "servespec.role": target.role,
        },
        files=tuple(sorted(engine.files)),
        native=engine.native,
    )


DEFAULT_PROBE_REACHES = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::"))
"""Listen addresses the role's probe reaches without being told: it probes 127.0.0.1 by default
(module_utils ``base_url``), and the wildcards are reachable on loopback."""


def health_host(target: Target) -> str | None:
    """The address for a host-network engine the role's probe cannot reach on 127.0.0.1, else None.

    A bridge-network container publishes its port on ``serving.bind`` (the role reads the
    address from ``ports``). A multi-node member runs on the host's network with
    ``ports: []`` and listens on ``serving.bind`` itself (:func:`engine_host`), so the
    address is named (``healthcheck.host``). It is left out where 127.0.0.1 reaches the
    engine (the default bind and the wildcards), so those descriptions stay as they were.
    """
    if not target.multi_node:
        return None
    address = engine_host(target)
    try:
        reached = ipaddress.ip_address(address) in DEFAULT_PROBE_REACHES
    except ValueError:  # a host name: name it
        reached = False
    return None if reached else address


MODULES_CACHE = "/tmp/servespec-hf-modules"  # inside the engine container, not on the host
"""Where transformers writes a model's remote code (``HF_MODULES_CACHE``) when the cache is read-only.

Its default is ``$HF_HOME/modules`` (transformers ``utils/hub.py``), inside the read-only cache
mount, so a ``trust_remote_code`` model could not load; the container's own file system takes it."""


def _environment(target: Target, engine: EngineContainer) -> dict[str, str]:
    """The engine module's variables overridden by the spec's ``engine.env``, sorted by name."""
    own = dict(engine.environment)
    if not engine.native and cache_mode(target) == "ro":
        own.setdefault("HF_MODULES_CACHE", MODULES_CACHE)
    spec_env = {name: _env_text(value) for name, value in target.spec.engine.env.items()}
    return dict(sorted({**own, **spec_env}.items()))


def _env_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def resolve_timeout(target: Target) -> int:
    """rollout.health_timeout in seconds."""
    from servespec.spec.models import duration_seconds

    return duration_seconds(target.spec.rollout.health_timeout)
