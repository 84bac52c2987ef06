"""The engine kit: what every engine unit's ``render.py`` builds its container from.

A unit's ``context(target)`` turns a :class:`Target` (one host of one deployment, with every
value the unit needs already resolved by the render driver) into an :class:`EngineContainer`
(command, environment, native files) with the helpers here: option flags and environment words
in the release parser's forms, the launch words, served names, secret references. The kit is a
floor below the units: it imports neither the units, the resolver nor ``render/``, which wraps
the container into ``container.yaml`` (``render/common.py``).

A host-native engine (LM Studio's headless daemon, installed by its own installer into a user's
home) renders a systemd service instead of a container: :class:`NativeUnit` is the part of the
host's description (``container.yaml``'s ``native``) that the role's ``servespec_native`` module
reads to install and start it; ``image`` is empty and the Docker fields describe no container.
"""

from __future__ import annotations

import importlib
import ipaddress
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from servespec.engines.base import Known
from servespec.engines.catalog import EngineOption, EngineRelease
from servespec.engines.profile import Arguments, Profile
from servespec.spec.fleet import DeploymentDoc, HostView
from servespec.text import UNSAFE

CONFIG_DIR = "/etc/servespec"
"""Where a deployment's rendered files appear inside its container (read-only)."""


CHAT_TEMPLATE_FILE = "chat-template.jinja"
"""``serving.chat_template``'s text beside container.yaml (SGLang reads a path ending in ``.jinja`` as Jinja)."""
CHAT_TEMPLATE_PATH = f"{CONFIG_DIR}/{CHAT_TEMPLATE_FILE}"
"""Where the engine reads it: the deployment's rendered files are mounted read-only at :data:`CONFIG_DIR`."""
CHAT_TEMPLATE_FIELD = "serving.chat_template"
"""The spec field a profile maps to the engine's chat-template option (``spec_options``); unmapped: ENG004."""


class RenderError(ValueError):
    """A value that cannot be written safely into its target syntax."""


def host_and_port(host: str, port: int) -> str:
    """``host:port`` with an IPv6 literal in brackets (``[::1]:8000``), as URLs and Docker write it."""
    try:
        literal = ipaddress.ip_address(host).version == 6
    except ValueError:
        literal = False
    return f"[{host}]:{port}" if literal else f"{host}:{port}"


@dataclass(frozen=True)
class Volume:
    """A bind mount of a host folder."""

    host: str
    container: str
    mode: Literal["ro", "rw"]

    def to_json(self) -> dict[str, Any]:
        """One entry of container.yaml's ``volumes``."""
        return {"host": self.host, "container": self.container, "mode": self.mode}

    @property
    def bind(self) -> str:
        """``HOST:CONTAINER:MODE``, as ``docker run -v`` and the SDK's list of binds write it."""
        return f"{self.host}:{self.container}:{self.mode}"


@dataclass(frozen=True)
class NativeUnit:
    """How the role installs and starts a host-native engine (read by library/servespec_native.py)."""

    manager: Literal["systemd"]
    unit: str
    """The systemd unit's name (``servespec-<deployment>.service``)."""
    unit_file: str
    """The rendered file (in the revision's folder) the role installs as ``/etc/systemd/system/<unit>``."""
    executable: str
    """The absolute path of the engine's CLI the unit runs (preflight checks that it is there)."""
    commands: tuple[tuple[str, ...], ...]
    """The unit's commands in order, as argv lists (its ExecStart, then each ExecStartPost)."""
    stop: tuple[str, ...]
    """The unit's ExecStop argv."""

    def __post_init__(self) -> None:
        if not self.executable.startswith("/") or not self.commands:
            raise ValueError("a native unit runs an absolute executable and at least one command")

    def to_json(self) -> dict[str, Any]:
        """container.yaml's ``native`` mapping."""
        return {
            "manager": self.manager,
            "unit": self.unit,
            "unit_file": self.unit_file,
            "executable": self.executable,
            "commands": [list(command) for command in self.commands],
            "stop": list(self.stop),
        }


def _ansi_c_quote(word: str) -> str:
    """``$'...'`` (bash's ANSI-C quoting) with every unsafe character written as an escape."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        return "\\n" if code == 10 else f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"

    body = word.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + UNSAFE.sub(escape, body) + "'"


def shell_join(words: list[Any]) -> str:
    """One shell command line; every word quoted so nothing in it is interpreted.

    A word holding a line break, control or bidi character is written in bash's ``$'...'``
    quoting with that character escaped, so the line stays one line and reads as it runs.
    """
    return " ".join(_ansi_c_quote(str(word)) if UNSAFE.search(str(word)) else shlex.quote(str(word)) for word in words)


@dataclass(frozen=True)
class Target:
    """One host of one deployment, with its place in the replica and what the unit reads about it.

    The render driver (``render/common.py``'s ``targets``) fills every field once; nothing here
    calls back into the resolver.
    """

    deployment: DeploymentDoc
    host: HostView
    replica: int
    rank: int
    leader: HostView
    hosts_in_replica: int
    options: dict[str, Any]
    """``engine.options`` by catalog key, typed (the flags of ``extra_args`` are appended verbatim instead)."""
    release: EngineRelease | None
    known: Known
    """What servespec knows about the deployment (``known.options`` includes ``extra_args``)."""
    gpu_ids: list[int]
    """Device indices on this host (empty on CPU-only hosts)."""
    served_names: list[str]
    """Every name the deployment is served under: :attr:`served_name`, then ``serving.model_aliases``."""
    model_roots: list[str]
    """The inventory's ``defaults.model_roots``: host folders a local path may name."""
    adapters: list[AdapterPath] = field(default_factory=list)
    """``model.adapters`` as the engine reads them inside the container (render/common.py ``adapter_paths``)."""
    draft: AdapterPath | None = None
    """``model.speculative.draft`` as the engine reads it (named ``draft``), the same way as an adapter."""

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
    def profile(self) -> Profile:
        """The engine's profile."""
        return self.known.profile

    @property
    def served_name(self) -> str:
        """The model name clients send: ``serving.model_name``, else the name the engine itself serves."""
        return self.served_names[0]

    @property
    def max_model_len(self) -> int | None:
        """The context length the spec sets; None renders nothing (the engine's default for the release)."""
        return self.deployment.spec.model.max_model_len

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


@dataclass(frozen=True)
class AdapterPath:
    """One ``model.adapters`` entry as the engine reads it: the name clients send and the path inside the container.

    ``path`` is the staged snapshot folder in the engine's Hub cache (a Hub adapter at a commit), the
    host path itself (mounted read-only at the same path), or the Hub id where the engine fetches it
    (``staged`` False: a branch revision, or an engine without a Hub cache servespec stages into).
    """

    name: str
    path: str
    source: str
    local: bool
    staged: bool

    @property
    def kind(self) -> str:
        """``hub`` (a repo id), ``gguf`` (a GGUF file on the hosts) or ``folder`` (a host folder)."""
        if not self.local:
            return "hub"
        return "gguf" if self.source.endswith(".gguf") else "folder"

    @property
    def pair(self) -> str:
        """``name=path``: vLLM ``--lora-modules``, SGLang ``--lora-paths`` and TGI ``LORA_ADAPTERS`` read this."""
        return f"{self.name}={self.path}"


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
    ports: list[int] = field(default_factory=list)
    """Ports besides serving.port the engine listens on, published alike (XInference's worker metrics exporter)."""
    native: NativeUnit | None = None
    """A host-native engine's systemd unit instead of a container (LM Studio): :class:`NativeUnit`."""


def engine_container(target: Target) -> EngineContainer:
    """The engine's container on one host: its unit's ``render.py`` ``context(target)`` (imported on first use)."""
    container: EngineContainer = importlib.import_module(f"{target.known.engine.package}.render").context(target)
    return container


def loadable_adapters(target: Target) -> list[AdapterPath]:
    """The ``model.adapters`` the engine release loads: its unit names an adapter option the release's catalog
    has (``Engine.adapter_option``), and the adapter is in a form the unit takes (``adapter_formats``).
    ADP001 reports the others, which are not rendered."""
    engine = target.known.engine
    option = engine.adapter_option
    if engine.adapters_in_modelfile:
        option = None
    elif option is None or (target.release is not None and target.option(option) is None):
        return []
    return [adapter for adapter in target.adapters if adapter.kind in engine.adapter_formats]


def speculative_method(target: Target) -> str | None:
    """The engine's name for ``model.speculative.method``, or None (no speculative decoding, or one the unit does
    not render: SPD001)."""
    speculative = target.spec.model.speculative
    if speculative is None:
        return None
    return target.known.engine.speculative_methods.get(speculative.method)


def served_name_options(target: Target) -> dict[str, Any]:
    """The engine's served-name option, only where the spec names the model (else the engine's own name holds).

    Engines taking several names (profile ``served_name.several``) get every name: as the
    option's several values where it takes them (vLLM ``nargs``), else joined by commas
    (llama.cpp ``--alias``); the others the first name only. Nothing is rendered where the
    engine or the release has no such option: ENG004 reports what is not served then.
    """
    serving = target.spec.serving
    served = target.profile.served_name
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


def positional_model(target: Target) -> str:
    """``model.source`` for a command line that takes it as a positional word (``vllm serve``, ``trtllm-serve``).

    A word starting with ``-`` there is read as an option (``--trust-remote-code``). The
    loader refuses such sources; this refuses them again for anything that skips it.
    """
    source = str(target.spec.model.source)
    if source.startswith("-") or not source.strip():
        raise RenderError("model.source would be read as a command-line option")
    return source


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
    auth = target.profile.auth
    if key is not None and auth and auth.env:
        secrets[auth.env] = key
    return secrets


def model_options(target: Target) -> dict[str, Any]:
    """Revision, dtype, quantization method, context length and the chat template's path in the container,
    named as the engine's profile maps them."""
    names = target.profile.spec_options
    model = target.spec.model
    values = {
        "model.revision": model.revision,
        "model.dtype": model.dtype if model.dtype != "auto" else None,
        "model.quantization": quantization_method(target),
        "model.max_model_len": target.max_model_len,
    }
    return {
        **{names[field]: value for field, value in values.items() if value and field in names},
        **chat_template_option(target),
    }


def ships_chat_template(target: Target) -> bool:
    """Whether the chat template goes to the host: it is set and read, the engine takes a Jinja template file,
    and the release's catalog lists the option (a partial catalog without it: ENG004 says it is not rendered)."""
    option = target.profile.spec_options.get(CHAT_TEMPLATE_FIELD)
    listed = target.release is None or not target.release.partial or target.option(option or "") is not None
    return target.deployment.chat_template is not None and option is not None and listed


def chat_template_option(target: Target) -> dict[str, str]:
    """The engine's chat-template option (profile ``spec_options``) naming the shipped file, or nothing."""
    if not ships_chat_template(target):
        return {}
    return {target.profile.spec_options[CHAT_TEMPLATE_FIELD]: CHAT_TEMPLATE_PATH}


def chat_template_files(target: Target) -> dict[str, tuple[str, dict[str, Any]]]:
    """The chat template as a rendered file (its text as written, no header: a comment would change it), or none."""
    if not ships_chat_template(target):
        return {}
    return {CHAT_TEMPLATE_FILE: ("_common/chat-template.jinja.j2", {"text": target.deployment.chat_template})}


TRIPLE_QUOTE = '"""'


def triple_quote_problem(text: str) -> str:
    """Why ``text`` cannot be one Modelfile ``\"\"\"`` string ('' when it can).

    Ollama's Modelfile parser (parser/parser.go ``ParseFile``/``unquote``) has no escape: at every
    space, tab or line break it ends a value whose text so far, trimmed, starts and ends with three
    quotes. So three quotes followed by white space inside the text would end it early and the rest
    would be read as commands. It also drops every rune ``strconv.IsPrint`` refuses but white space.
    """
    for index, char in enumerate(text):
        if char in " \t\n\r":
            so_far = (TRIPLE_QUOTE + text[:index]).rstrip()
            if len(so_far) >= 6 and so_far.endswith(TRIPLE_QUOTE):
                return 'it holds """ followed by white space, which ends a Modelfile string (no escape exists)'
        elif not char.isprintable() or UNSAFE.match(char):
            return f"it holds U+{ord(char):04X}, which Ollama's Modelfile parser drops"
    return ""


def triple_quoted(text: str) -> str:
    """``text`` as one Modelfile ``\"\"\"`` string (check :func:`triple_quote_problem` first)."""
    return TRIPLE_QUOTE + text + TRIPLE_QUOTE


def quantization_method(target: Target) -> str | None:
    """The engine's name for the spec's quantization (profile ``quantization``), or None when it takes none."""
    chosen = target.spec.model.quantization
    if chosen in (None, "auto"):
        return None  # the engine reads the checkpoint's quantization_config itself
    method = target.known.engine.quantization_entry(target.release, chosen)
    return method if isinstance(method, str) else None


def arguments(target: Target) -> Arguments:
    """How the engine's parser reads options (profile ``arguments``)."""
    return target.profile.arguments


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
    Negatable and ``--x true|false`` booleans, deprecated flags, and lists of several words,
    stay on the command line (SGLang's config reader refuses BooleanOptionalAction and repeats no
    flag; from 0.5.23 it takes only argparse's own store_true among the valueless actions, so a
    deprecated flag such as ``--enable-dp-attention`` (DeprecatedStoreTrueAction) is refused:
    "Unsupported config option ... with action 'DeprecatedStoreTrueAction'",
    sglang/srt/utils/server_args_config_parser.py; vLLM's writes a list after one flag).
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
            deprecated = option is not None and option.deprecated
            if value and ((option.bool_form if option else None) or "flag") == "flag" and not deprecated:
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


def resolve_timeout(target: Target) -> int:
    """rollout.health_timeout in seconds (unset: the default raised to the estimated load time)."""
    return target.known.health_timeout_s
