"""Where a model's facts come from: the model itself first, the Hub last and only when asked.

:func:`answer` reads ``model.config`` first; :func:`find` walks the chain after it (the first
source that has the model wins):

1. a local model directory: ``model.source`` an absolute path under the model roots the
   controller reads (:mod:`servespec.knowledge.controller_roots`: ``--model-roots``, else the
   inventory's, never widened by the checkout), read *on the machine deploy runs on* (the
   controller): ``config.json``,
   ``hf_quant_config.json`` (ModelOpt) and the safetensors headers. That is the host itself
   with a local inventory, or any machine holding a copy of the model at the same path;
   elsewhere the folder is simply not there and the chain goes on;
2. a GGUF file (``model.source`` ending in ``.gguf``), on this machine likewise: its header;
3. the local Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
   ~/.cache/huggingface/hub): ``models--org--name/snapshots/<sha>/config.json`` at
   ``model.revision`` when it is pinned (a branch through ``refs/<branch>``), else ``refs/main``;
4. ``models.lock.yaml`` in the spec's own folder (written by ``deploy lock``), unless its entry
   disagrees with the spec's pinned revision (REF005 reports that);
5. the built-in catalog (``data/models.yaml``);
6. the Hub, only inside :func:`hub_access` (``deploy validate --hub``, ``deploy lock``):
   :mod:`servespec.knowledge.hub`.

Nothing here raises for a bad model or file: every failure is a ``problem`` line that names
the model as the spec does, never an absolute path of this machine or the operating system's
error text.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from servespec.knowledge import config_fields, models
from servespec.knowledge.models import ModelFacts
from servespec.spec.paths import PathRefusedError, default_root, resolve_inside
from servespec.spec.source import quote_value
from servespec.text import printable

if TYPE_CHECKING:
    from servespec.knowledge.hub import HubAnswer
    from servespec.knowledge.lock import LockEntry
    from servespec.spec.fleet import DeploymentDoc

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
"""A Hub repository id (huggingface_hub validators.py, ``validate_repo_id``: no ``--`` nor ``..``)."""
SHA = re.compile(r"^[0-9a-f]{40}$")
GGUF_TYPE_KEY = "gguf_file_type"
"""Where a lock entry of a GGUF file keeps its llama.cpp file type, beside the header's config fields."""


@dataclass(frozen=True)
class Found:
    """The model's facts from the first source that had them, or why none had."""

    facts: ModelFacts | None
    origin: str = ""
    """``dir``, ``gguf``, ``cache``, ``lock``, ``catalog`` or ``hub``; "" when nothing was found."""
    problem: str = ""
    revision: str | None = None
    repo: str | None = None
    config: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    """Problems that did not stop the facts (a shard header that cannot be read: no weight bytes)."""

    @property
    def described(self) -> str:
        """Where the facts were read, in words."""
        at = f" at {self.revision[:12]}" if self.revision else ""
        return {
            "dir": "the model directory on this machine",
            "gguf": "the GGUF file's header on this machine",
            "cache": f"the local Hugging Face cache{at}",
            "lock": f"models.lock.yaml{at}",
            "catalog": "the built-in catalog",
            "hub": f"the Hugging Face Hub{at}",
        }.get(self.origin, "nowhere")


@dataclass
class _HubSession:
    answers: dict[tuple[str, str | None, str | None], HubAnswer] = field(default_factory=dict)


_HUB: ContextVar[_HubSession | None] = ContextVar("servespec_hub", default=None)


@contextlib.contextmanager
def hub_access() -> Iterator[None]:
    """Let :func:`find` ask the Hub for models no other source has, within this block (each model once)."""
    token = _HUB.set(_HubSession())
    try:
        yield
    finally:
        _HUB.reset(token)


def cache_root() -> Path:
    """The Hugging Face hub cache as huggingface_hub finds it (constants.py: HF_HUB_CACHE, HF_HOME, XDG)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "huggingface" / "hub"


def _facts(config: dict[str, Any], name: str, **extra: Any) -> tuple[ModelFacts | None, str]:
    """Facts from a config dict, or why not (the message quotes at most a field name)."""
    try:
        facts = models.facts_from_config(config, name)
    except KeyError as err:
        return None, config_fields.missing_message(err)
    except (ValueError, TypeError, OverflowError, ZeroDivisionError) as err:
        return None, quote_value(str(err), limit=120)[1:-1]
    given = {key: value for key, value in extra.items() if value is not None}
    return replace(facts, **given), ""


def _read_json(path: Path) -> dict[str, Any]:
    from servespec.spec.paths import MAX_REFERENCED_BYTES, read_bounded

    raw = read_bounded(path, MAX_REFERENCED_BYTES)
    if len(raw) > MAX_REFERENCED_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_REFERENCED_BYTES // (1024 * 1024)} MiB")
    return models.parse_config(raw)


def folder_facts(folder: Path, name: str, origin: str, revision: str | None = None) -> Found:
    """Facts of a checkpoint folder (a model directory or a cache snapshot): config, quant config, shard headers."""
    from servespec.knowledge.safetensors import HeaderError, checkpoint_weights

    where = "the model directory" if origin == "dir" else "the cached snapshot"
    try:
        config = _read_json(folder / "config.json")
        if "quantization_config" not in config and (folder / "hf_quant_config.json").is_file():
            # vLLM reads ModelOpt's file as the quantization_config (vllm/transformers_utils/config.py, get_config)
            config["quantization_config"] = _read_json(folder / "hf_quant_config.json")
    except OSError:
        return Found(None, problem=f"cannot read config.json of {where} of {quote_value(name)}")
    except ValueError as err:
        return Found(None, problem=f"config.json of {where} of {quote_value(name)}: {printable(str(err))}")
    warnings: tuple[str, ...] = ()
    try:
        weights = checkpoint_weights(folder)
    except HeaderError as err:
        weights, warnings = None, (f"safetensors of {quote_value(name)}: {printable(str(err))}",)
    except OSError:
        weights, warnings = None, (f"a safetensors shard of {quote_value(name)} cannot be read",)
    facts, problem = _facts(
        config,
        name,
        weight_bytes=weights.bytes if weights else None,
        params_by_dtype=tuple(weights.params_by_dtype.items()) if weights else None,
    )
    if facts is None:
        return Found(None, problem=f"config.json of {where} of {quote_value(name)}: {problem}")
    return Found(facts, origin, revision=revision, config=config, warnings=warnings)


def gguf_facts(path: Path, name: str) -> Found:
    """Facts from a GGUF file's header."""
    from servespec.knowledge.gguf_header import GgufError, read_gguf

    try:
        header = read_gguf(path)
    except ImportError:
        return Found(None, problem="the gguf package is not installed: the GGUF header cannot be read")
    except OSError:
        return Found(None, problem=f"cannot read the GGUF file {quote_value(name)}")
    except GgufError as err:
        return Found(None, problem=f"the GGUF file {quote_value(name)} {err}")
    config = {**header.config, GGUF_TYPE_KEY: header.file_type}
    facts, problem = _facts(header.config, name, weight_bytes=header.weight_bytes, file_type=header.file_type)
    if facts is None:
        return Found(None, problem=f"the GGUF header of {quote_value(name)}: {problem}")
    return Found(facts, "gguf", config=config)


def _local(deployment: DeploymentDoc) -> Found | None:
    """Steps 1-2: the model directory or GGUF file at ``model.source``, when it is here; None to go on."""
    from servespec.knowledge.controller_roots import read_problem

    source = deployment.spec.model.source
    if not source.startswith("/"):
        return None  # SEC004 reports a relative path; it is never read
    refused = read_problem(source, deployment)
    if refused is None:
        return None  # SEC004 reports a path outside the model roots; it is never read
    if refused:
        return Found(None, problem=refused)
    path = Path(source)
    if source.endswith(".gguf"):
        return gguf_facts(path, source) if path.is_file() else None
    return folder_facts(path, source, "dir") if (path / "config.json").is_file() else None


def cache_snapshot(source: str, revision: str | None) -> tuple[Path, str] | None:
    """(snapshot folder, sha) of ``source`` at ``revision`` (else ``main``) in the local cache, when it is there."""
    if not REPO_ID.match(source) or "--" in source or ".." in source:
        return None
    repo = cache_root() / ("models--" + source.replace("/", "--"))
    wanted = revision or "main"
    if ".." in wanted.split("/") or wanted.startswith("/"):
        return None
    ref = repo / "refs" / wanted
    sha = wanted.lower() if SHA.match(wanted.lower()) else None
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if ref.is_file():
            sha = ref.read_text(encoding="utf-8").strip()
    if not sha or not SHA.match(sha):
        return None
    snapshot = repo / "snapshots" / sha
    return (snapshot, sha) if (snapshot / "config.json").is_file() else None


def _cache(deployment: DeploymentDoc) -> Found | None:
    model = deployment.spec.model
    found = cache_snapshot(model.source, model.revision)
    if found is None:
        return None
    return folder_facts(found[0], model.source, "cache", revision=found[1])


def lock_entry(deployment: DeploymentDoc) -> tuple[LockEntry | None, str]:
    """The lock entry of the deployment's model in its spec's folder, or the lock file's problem."""
    from servespec.spec.files import LOCK_FILE

    document = deployment.document
    if not os.path.lexists(document.path.parent / LOCK_FILE):
        return None, ""  # most specs have none: the lock module (pydantic models) is not even imported
    from servespec.knowledge.lock import read_lock
    from servespec.spec.paths import default_root

    read = read_lock(document.path.parent, document.root or default_root(document.path))
    if read.lock is None:
        return None, read.problem
    return read.lock.models.get(deployment.spec.model.source), ""


def revision_conflict(pinned: str | None, locked: str | None) -> bool:
    """Whether a lock's sha contradicts the spec's pinned revision (a branch or tag name never does)."""
    if not pinned or not locked:
        return False
    pin = pinned.lower()
    if not re.fullmatch(r"[0-9a-f]{7,40}", pin):
        return False  # a branch or tag: the lock records the commit it resolved to
    return not locked.lower().startswith(pin)


def _locked(deployment: DeploymentDoc) -> Found | None:
    entry, _ = lock_entry(deployment)
    if entry is None:
        return None  # a lock file that cannot be used: REF005 reports it
    if revision_conflict(deployment.spec.model.revision, entry.revision):
        return None  # REF005 reports it; the lock's facts are of another revision
    config = dict(entry.config)
    file_type = config.pop(GGUF_TYPE_KEY, None)
    facts, why = _facts(
        config,
        deployment.spec.model.source,
        weight_bytes=entry.weight_bytes,
        file_type=str(file_type) if file_type else None,
    )
    if facts is None:
        return Found(None, problem=f"models.lock.yaml entry of {quote_value(deployment.spec.model.source)}: {why}")
    return Found(facts, "lock", revision=entry.revision, repo=entry.repo, config=entry.config)


def hub_token(deployment: DeploymentDoc) -> str | None:
    """The token for the Hub: the spec's ``hub_token`` variable when set here, else ``HF_TOKEN``."""
    ref = deployment.spec.model.hub_token
    if ref is not None and ref.from_env and os.environ.get(ref.from_env):
        return os.environ[ref.from_env]
    return os.environ.get("HF_TOKEN") or None


def from_hub(deployment: DeploymentDoc) -> Found:
    """Step 6: the Hub (the caller checked it is allowed)."""
    from servespec.knowledge import hub

    model = deployment.spec.model
    if not REPO_ID.match(model.source):
        return Found(None, problem=f"{quote_value(model.source)} is not a Hub repository id (org/name)")
    session = _HUB.get() or _HubSession()
    token = hub_token(deployment)
    key = (model.source, model.revision, token)
    if key not in session.answers:
        session.answers[key] = hub.fetch(model.source, model.revision, token)
    answer = session.answers[key]
    if answer.config is None:
        return Found(None, problem=answer.problem)
    facts, problem = _facts(
        answer.config,
        model.source,
        weight_bytes=answer.weight_bytes,
        params_by_dtype=tuple(answer.params_by_dtype.items()) or None,
    )
    if facts is None:
        return Found(None, problem=f"config.json of {quote_value(model.source)} from the Hub: {problem}")
    return Found(facts, "hub", revision=answer.revision, repo=answer.repo, config=answer.config)


def find(deployment: DeploymentDoc) -> Found:
    """The facts of the deployment's model from the first source of the chain that has them."""
    model = deployment.spec.model
    first_problem = ""
    for step in (_local, _cache, _locked):
        found = step(deployment)
        if found is None:
            continue
        if found.facts is not None:
            return found
        first_problem = first_problem or found.problem
    catalogued = models.catalogued(model.source)
    if catalogued is not None:
        return Found(catalogued, "catalog")
    if _HUB.get() is not None and not model.source.startswith("/") and not model.source.endswith(".gguf"):
        found = from_hub(deployment)
        if found.facts is not None:
            return found
        first_problem = first_problem or found.problem
    return Found(None, problem=first_problem)


def for_lock(deployment: DeploymentDoc) -> Found:
    """The model's facts for ``deploy lock``: the model directory or GGUF file, the HF cache, else the Hub.

    Neither the lock itself nor the catalog (which records no commit) is a source here.
    """
    first_problem = ""
    for step in (_local, _cache):
        found = step(deployment)
        if found is None:
            continue
        if found.facts is not None:
            return found
        first_problem = first_problem or found.problem
    source = deployment.spec.model.source
    if source.startswith("/") or source.endswith(".gguf"):
        problem = first_problem or (
            f"{quote_value(source)} is not readable on this machine: run deploy lock on the host, or where a copy "
            "lies at the same path"
        )
        return Found(None, problem=problem)
    found = from_hub(deployment)
    return found if found.facts is not None else Found(None, problem=first_problem or found.problem)


@dataclass(frozen=True)
class ModelAnswer:
    """The model's facts, or why there are none."""

    facts: ModelFacts | None
    problem: str = ""


@functools.cache
def _config_facts(path: Path) -> ModelAnswer:
    name = printable(path.name)
    try:
        return ModelAnswer(models.read_config(path))
    except OSError:
        # The operating system's text names the absolute path: say only that it failed.
        return ModelAnswer(None, f"cannot read model config {name}")
    except KeyError as err:
        return ModelAnswer(None, f"cannot read model config {name}: {config_fields.missing_message(err)}")
    except (ValueError, TypeError, OverflowError) as err:
        return ModelAnswer(None, f"cannot read model config {name}: {quote_value(str(err), limit=120)[1:-1]}")


def config_path(deployment: DeploymentDoc) -> Path:
    """The deployment's ``model.config`` resolved inside its root; raises :class:`PathRefusedError`."""
    document = deployment.document
    root = document.root or default_root(document.path)
    return resolve_inside(str(deployment.spec.model.config), document.path.parent, root)


def answer(deployment: DeploymentDoc) -> ModelAnswer:
    """Facts from model.config, else the first source of :func:`find` that has them, overlaid with
    model.architecture."""
    spec = deployment.spec.model
    facts: ModelFacts | None = None
    problem = ""
    if spec.config:
        try:
            answer = _config_facts(config_path(deployment))
        except PathRefusedError as refused:  # REF002 reports it at model.config
            answer = ModelAnswer(None, f"model config {'not found' if refused.missing else 'refused'}")
        facts, problem = answer.facts, answer.problem
        if facts is not None:  # messages quote facts.name: the model as the spec names it, not the config's real path
            facts = replace(facts, name=spec.source)
    if facts is None:
        found = find(deployment)
        facts, problem = found.facts, problem or found.problem
    facts = models.apply_inline(facts, spec.architecture, spec.source)
    if facts is None and not problem:
        problem = _no_facts(deployment)
    return ModelAnswer(facts, problem)


def _no_facts(deployment: DeploymentDoc) -> str:
    """Why no source had the model's facts, and what to do."""
    spec = deployment.spec.model
    if spec.architecture is not None:
        needed = ("layers", "hidden_size", "attention_heads")
        absent = [key for key in needed if getattr(spec.architecture, key) is None]
        named = ", ".join(absent) or "layers, hidden_size and attention_heads"
        return (
            f"model.architecture of {quote_value(spec.source)} is incomplete: it needs at least "
            f"layers, hidden_size and attention_heads; missing: {named}"
        )
    if spec.source.startswith("/"):
        return (
            f"model {quote_value(spec.source)} is not readable on this machine (a model directory or GGUF file is "
            "read where deploy runs: on the host, or where a copy lies at the same path); run deploy lock there and "
            "commit models.lock.yaml, or give model.config or model.architecture"
        )
    return (
        f"model {quote_value(spec.source)} is not in model.config, the local Hugging Face cache, models.lock.yaml "
        "or the built-in catalog; run deploy lock (or deploy validate --hub), or give model.config or "
        "model.architecture"
    )
