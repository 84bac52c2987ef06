"""SGLang's own start-up assertions, checked before start-up (ENG002)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from servespec.engines.base import EngineCheck
from servespec.knowledge.served import default_served_name

if TYPE_CHECKING:
    from servespec.engines.base import Known

COLON_FROM = Version("0.5.5.post1")
"""First release whose ServerArgs asserts ``":" not in served_model_name`` (server_args.py,
https://github.com/sgl-project/sglang/blob/v0.5.5.post1/python/sglang/srt/server_args.py); 0.5.5 has no such check."""
OBJECT_URIS_FROM = Version("0.5.10")
"""From here the assertion skips Run:ai object-store URIs (``is_runai_obj_uri``, srt/utils/runai_utils.py)."""
OBJECT_SCHEMES = ("s3://", "gs://", "az://")
"""runai_utils.SUPPORTED_SCHEMES (https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/utils/runai_utils.py)."""


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def served_names(known: Known) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """The name SGLang serves and where the spec sets it: serving.model_name, the option, else the model path."""
    spec = known.deployment.spec
    option = known.effective.get("served_model_name")
    if spec.serving.model_name is not None:
        yield ("serving", "model_name"), spec.serving.model_name
    elif option is not None and isinstance(option.value, str):
        yield option.path, option.value
    else:
        yield ("model", "source"), default_served_name(known.deployment)


def checks(known: Known) -> Iterator[EngineCheck]:
    """A served name with ``:``, which SGLang reserves for ``model:adapter`` (LoRA) and refuses at start-up."""
    version = _version(known.release.version) if known.release else None
    if version is None or version < COLON_FROM:
        return
    for path, name in served_names(known):
        if ":" not in name:
            continue
        if version >= OBJECT_URIS_FROM and name.lower().startswith(OBJECT_SCHEMES):
            continue
        yield EngineCheck(
            "ENG002",
            path,
            f"SGLang {known.release.version if known.release else ''} refuses the served name {name!r}: "
            "`:` is reserved for its `model:adapter` LoRA syntax (ServerArgs asserts "
            '"served_model_name cannot contain a colon", from 0.5.5.post1)',
            hint="set serving.model_name to a name without `:`",
        )
