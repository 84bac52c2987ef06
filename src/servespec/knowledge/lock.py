"""``models.lock.yaml``: each model's facts resolved once, committed beside the specs (contract §5).

``{version: 1, models: {<source>: {revision: <sha>, config: {...}, weight_bytes: N,
resolved_from: hub|cache|dir}}}``, keyed by ``model.source`` as the specs write it. ``deploy
lock`` writes it; ``deploy validate`` reads the one in a spec's own folder (inside the root,
bounded, symlinks not followed out) so that CI resolves every model offline and always the
same way. Besides the contract's keys an entry may carry ``repo``: the repository the Hub
answered with when it differs from the source (a renamed repository).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    TypeAdapter,
    ValidationError,
)
from typing_extensions import TypeAliasType

from servespec.findings import Finding
from servespec.spec.document import Document
from servespec.spec.files import LOCK_FILE
from servespec.spec.grammars import MAX_FLOAT, MAX_INT

HEADER = "# models.lock.yaml: written by `deploy lock`; `deploy validate` reads it (servespec contract v1, §5).\n"
"""The first line of every lock file servespec writes: ``deploy lock`` replaces only a file that starts so."""

_DROPPED = {
    "auto_map",  # names remote code; servespec never runs it and the lock must not carry it
    "id2label",
    "label2id",
    "task_specific_params",
    "_name_or_path",
    "transformers_version",
    "_commit_hash",
}
_KEPT_MAPS = {
    "quantization_config",
    "compression_config",
    "text_config",
    "vision_config",
    "audio_config",  # Gemma 4's audio tower is counted (knowledge/gemma4.py)
    "rope_scaling",
    "rope_parameters",
    "attn_config",  # MPT: kv_n_heads and qk_ln size its attention (transformers MptConfig.attn_config)
    "ffn_config",  # DBRX: its experts (knowledge/models.py _NESTED)
    "llm_config",  # InternVL's remote-code checkpoints: the language model
    "language_config",  # DeepSeek-VL2: the language model
    "img_processor",  # Phi-3-vision: the CLIP cut (layer_idx) and image_dim_out (knowledge/vision.py phi3v_params)
    # Phi-4-multimodal's towers and adapters: their presence refuses the config (knowledge/models.py _UNSIZED)
    "embd_layer",
    "audio_processor",
    "vision_lora",
    "speech_lora",
}
_NESTED_CONFIGS = ("text_config", "vision_config", "audio_config", "llm_config", "language_config")


MAX_LOCKED_TEXT = 64 * 1024
"""Longest string a lock's config may hold (config.json strings are names and dtypes)."""


def _value_kind(value: Any) -> str | None:
    """The :data:`LockedValue` member ``value`` must match (bool before int: a bool is an int in Python)."""
    for tag, kind in (("bool", bool), ("int", int), ("float", float), ("str", str), ("list", list), ("dict", dict)):
        if isinstance(value, kind):
            return tag
    return "none" if value is None else None


if TYPE_CHECKING:  # mypy cannot follow a recursive TypeAliasType; pydantic validates by the real one
    LockedValue = Any
else:
    LockedValue = TypeAliasType(
        "LockedValue",
        Annotated[
            Union[  # noqa: UP007 (a discriminated union needs the Union form for its Tag annotations)
                Annotated[StrictBool, Tag("bool")],
                Annotated[StrictInt, Field(ge=-MAX_INT, le=MAX_INT), Tag("int")],
                Annotated[StrictFloat, Field(allow_inf_nan=False, ge=-MAX_FLOAT, le=MAX_FLOAT), Tag("float")],
                Annotated[StrictStr, Field(max_length=MAX_LOCKED_TEXT), Tag("str")],
                Annotated[None, Tag("none")],
                Annotated[list["LockedValue"], Tag("list")],
                Annotated[dict[Annotated[str, Field(max_length=256)], "LockedValue"], Tag("dict")],
            ],
            Discriminator(_value_kind),
        ],
    )
"""A config.json value as a lock keeps it: a bounded number, a string, a boolean, null, or lists and maps of them."""


class LockEntry(BaseModel):
    """One model's resolved facts."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    revision: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{40}$", description="The commit the facts were read at"
    )
    config: dict[Annotated[str, Field(max_length=256)], LockedValue]
    weight_bytes: int | None = Field(default=None, ge=0, le=MAX_INT)
    resolved_from: Literal["hub", "cache", "dir"]
    repo: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$",
        description="The repository the Hub resolved the source to, when it was renamed",
    )


class LockFile(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    version: Literal[1]
    models: dict[Annotated[str, Field(max_length=1024)], LockEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class LockRead:
    """A spec folder's lock file as read: the file (None when there is none) or why it cannot be used.

    ``findings`` locate each problem inside the lock file itself (SS001 for its YAML, SS002-SS004
    for values that do not follow the lock format); ``problem`` is the one line said at each spec.
    """

    lock: LockFile | None
    problem: str = ""
    findings: tuple[Finding, ...] = ()


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


@functools.cache
def _locked_value() -> TypeAdapter[Any]:
    return TypeAdapter(LockedValue)


def _fits(value: Any) -> bool:
    """Whether a lock can hold ``value`` (what :func:`read_lock` would refuse is never written)."""
    try:
        _locked_value().validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


def locked_config(config: dict[str, Any]) -> dict[str, Any]:
    """The config.json fields a lock keeps: scalars, lists of scalars and the maps facts are read from.

    A value the lock format refuses (a string over :data:`MAX_LOCKED_TEXT`, a number beyond
    its bounds) is left out, so that ``deploy lock`` never writes a file ``deploy validate`` refuses.
    """
    kept: dict[str, Any] = {}
    for key, value in sorted(config.items()):
        if key in _DROPPED or key.endswith("_token_id") or len(key) > 256:
            continue
        if key in _KEPT_MAPS and isinstance(value, dict):
            locked = locked_config(value) if key in _NESTED_CONFIGS else value
            if _fits(locked):
                kept[key] = locked
        elif (_scalar(value) or (isinstance(value, list) and all(_scalar(v) for v in value))) and _fits(value):
            kept[key] = value
    return kept


def dumps(models: dict[str, LockEntry]) -> bytes:
    """The lock file's bytes: the header line, then the models sorted by source (the same bytes on any machine)."""
    import io

    from ruamel.yaml import YAML

    body = {
        "version": 1,
        "models": {
            source: models[source].model_dump(mode="json", exclude_none=False, exclude={"repo"})
            | ({"repo": models[source].repo} if models[source].repo else {})
            for source in sorted(models)
        },
    }
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    out = io.StringIO()
    yaml.dump(body, out)
    return (HEADER + out.getvalue()).encode("utf-8")


def load(documents: list[Document], findings: list[Finding]) -> tuple[LockFile | None, tuple[Finding, ...]]:
    """The lock file of what the budgeted loader read, or the findings, located in it, that say why not."""
    from servespec.spec.loader_rules import WRONG_TYPE, YAML_SYNTAX
    from servespec.spec.validation_findings import findings_from_error

    if findings:
        return None, tuple(findings)
    if len(documents) != 1:
        extra = documents[1]
        message = f"{LOCK_FILE} holds more than one YAML document"
        return None, (YAML_SYNTAX.at(extra, message, hint="keep the first; deploy lock writes one"),)
    document = documents[0]
    if not isinstance(document.data, dict):
        return None, (WRONG_TYPE.at(document, f"{LOCK_FILE} is not a mapping", hint="run deploy lock again"),)
    try:
        return LockFile.model_validate(document.data), ()
    except ValidationError as err:
        return None, tuple(findings_from_error(document, LockFile, err))


def parse(raw: bytes, file: str = LOCK_FILE) -> LockFile:
    """A lock file's content, read with the specs' YAML budgets; raises ValueError (quoting nothing of the file)."""
    from servespec.spec.source import load_text

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{LOCK_FILE} is not UTF-8") from None
    lock, findings = load(*load_text(text, file, Path(file), referenced=True))
    if lock is None:
        raise ValueError(_problem(findings))
    return lock


def _problem(findings: tuple[Finding, ...]) -> str:
    """The line said at each spec beside an unusable lock: where its first problem is."""
    first = findings[0] if findings else None
    where = f" (line {first.line}: {first.message})" if first else ""
    return f"{LOCK_FILE} beside the spec cannot be used{where}"


@functools.cache
def read_lock(folder: Path, root: Path) -> LockRead:
    """The lock file in ``folder`` (a spec's folder), resolved inside ``root``; cached per run.

    It is read as the specs are (:func:`servespec.spec.source.load_file`: size, node, alias and
    nesting budgets, no tag but the plain ones, no directive), then typed by :class:`LockFile`;
    every problem is a finding located in the lock file.
    """
    from servespec.spec.files import display_path
    from servespec.spec.paths import PathRefusedError, resolve_inside
    from servespec.spec.source import load_file
    from servespec.text import printable

    try:
        path = resolve_inside(LOCK_FILE, folder, root)
        documents, findings = load_file(path, display_path(path), referenced=True)
    except PathRefusedError as refused:
        if refused.missing:
            return LockRead(None)
        return LockRead(None, f"{LOCK_FILE} beside the spec {printable(refused.reason)}")
    except FileNotFoundError:
        return LockRead(None)
    except OSError:  # the operating system's text names the absolute path
        return LockRead(None, f"{LOCK_FILE} beside the spec cannot be read")
    lock, problems = load(documents, findings)
    if lock is None:
        return LockRead(None, _problem(problems), problems)
    return LockRead(lock)


def file_findings(folder: Path, root: Path) -> tuple[Finding, ...]:
    """What is wrong inside the lock file in ``folder``, located in it (none when it is fine or absent)."""
    return read_lock(folder, root).findings


def write(folder: Path, models: dict[str, LockEntry]) -> Path:
    """Write ``folder``/models.lock.yaml (no symlink followed; only a file servespec wrote is replaced)."""
    from servespec import outdir

    outdir.write_files(folder, {LOCK_FILE: dumps(models)}, lambda _, data: data.startswith(HEADER.encode("utf-8")))
    read_lock.cache_clear()  # a later read in this run sees what was written
    return folder / LOCK_FILE


def printable_source(source: str) -> str:
    """A model source quoted for a message."""
    from servespec.spec.source import quote_value

    return quote_value(source)
