"""The grammars of the strings a spec or inventory names other things with.

Each value below reaches a command line, an SSH connection, a container runtime or a
host path, so it is checked against the grammar of the thing it names, as that thing's
own specification writes it, and nothing that could read as an option (a leading ``-``)
or as two words (whitespace) gets through. Error messages never repeat the value: the
finding's location shows it, and a value may come from a file a spec refers to.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

# RFC 1123 §2.1 host names: RFC 952 labels, except that a label may start with a digit;
# 1 to 63 letters, digits and hyphens, never starting or ending with a hyphen; 253 in all.
_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_HOST_LABEL}(?:\.{_HOST_LABEL})*$")

# What an inventory address may be besides an IP literal: an RFC 1123 host name, widened
# to what real fleets resolve (issue 9 review): '_' inside labels (DNS records and ssh_config
# Host aliases carry it, e.g. gpu_01.internal) and one trailing '.' (a fully qualified name,
# node1.). Never a leading '-' or '_' (ssh would read '-' as an option), no whitespace, no
# template delimiters, quotes or shell metacharacters: only letters, digits, '-', '_', '.'.
_ADDRESS_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
ADDRESS_NAME = re.compile(rf"^(?=.{{1,253}}\.?$){_ADDRESS_LABEL}(?:\.{_ADDRESS_LABEL})*\.?$")

# POSIX.1-2017 Base Definitions §3.437 (User Name): characters of the portable filename
# character set (§3.282: A-Z a-z 0-9 . _ -), not starting with a hyphen; widened to the
# names directory services give Linux hosts: '@' for SSSD/AD fully qualified names
# (ubuntu@corp, ubuntu@corp.example.com) and one trailing '$' (Samba/AD machine and service
# accounts, svc$). 256 characters fits AD's user@domain names; shadow-utils' own limit is 32.
POSIX_USER = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._@-]{0,255}\$?$")

# A controller path to an SSH key: portable filename characters and '/', optionally after '~'
# (Ansible expands it); never a leading '-', so ssh cannot read it as an option.
KEY_PATH = re.compile(r"^~?[A-Za-z0-9._/][A-Za-z0-9._/-]{0,4095}$")

# Docker image references, as distribution/reference's regexp.go builds them:
#   reference := name [ ":" tag ] [ "@" digest ]; name := [domain '/'] path-component ['/' path-component]*
#   domain := host [':' port]; host := domain-name | '[' IPv6 ']'; path-component := [a-z0-9]+ (separator [a-z0-9]+)*
#   separator := [_.] | __ | -+ ; tag := [\w][\w.-]{0,127}; digest := algorithm ':' hex{32,}
# Go's \w is ASCII, so it is spelt out. The name is at most 255 characters (NameTotalLengthMax).
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_REFERENCE = re.compile(rf"^(?P<name>{_NAME})(?::{_TAG})?(?:@{_DIGEST})?$")
IMAGE_NAME_MAX = 255

# Hugging Face repo ids, as huggingface_hub.utils.validate_repo_id checks them: 'name' or
# 'namespace/name' of [\w.-] (the Hub only allows ASCII), not starting or ending with '-' or
# '.', without '--' or '..', not ending in '.git', at most 96 characters.
_HF_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
HF_REPO_ID = re.compile(rf"^(?:{_HF_PART}/)?{_HF_PART}$")
HF_REPO_ID_MAX = 96

# Ollama model names, as ollama's types/model/name.go (isValidPart) parses them:
# [host/][namespace/]model[:tag]; every part starts with a letter, digit or '_' and holds
# letters, digits, '_', '-' and '.' ('.' not in a namespace; ':' only in the host's port);
# parts are at most 80 characters (the host 350).
_OLLAMA_PART = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}"
_OLLAMA_NAMESPACE = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,79}"
_OLLAMA_HOST = r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,349}"
OLLAMA_NAME = re.compile(
    rf"^(?:{_OLLAMA_HOST}/)?(?:{_OLLAMA_NAMESPACE}/)?{_OLLAMA_PART}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,79}})?$"
)

# A local model path (absolute; relative and '~' ones are let through here so that SEC004
# can say why a host cannot use them): no whitespace, nothing an engine could read as an option.
LOCAL_PATH = re.compile(r"^(?:/|\./|\.\./|~)[^\s]*$|^[^\s/-][^\s]*\.gguf$")

# Kubernetes label keys (an optional DNS-subdomain prefix and '/', then a name of at most 63
# alphanumerics, '-', '_' and '.', starting and ending alphanumeric); the same shape for
# servespec labels, which end up in host and CI tooling that expects it.
_LABEL_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?"
LABEL_KEY = re.compile(rf"^(?:(?=[^/]{{1,253}}/){_HOST_LABEL}(?:\.{_HOST_LABEL})*/)?{_LABEL_NAME}$")
LABEL_VALUE_MAX = 256

MAX_INT = 2**53
"""Largest integer any count, size or option value may be: every number stays exact as a JSON
number and as a float, so no later arithmetic overflows (issue 9: huge numbers crashed rendering)."""

_DURATION = re.compile(r"^(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?$")
MAX_DURATION_S = 30 * 24 * 3600

RESERVED_DEPLOYMENT_NAMES = ("models", "images", "incoming")
"""Folders of /var/lib/servespec that every deployment shares (the model cache of
render/common.MODEL_CACHE, the image archives of the role's tasks/image_fetch.yml and the
model archives of tasks/weights_archive.yml): a deployment of that name would keep its
state and secrets in them."""


def _check(kind: str, message: str, valid: Callable[[str], bool]) -> AfterValidator:
    def validate(value: str) -> str:
        if not valid(value):
            raise PydanticCustomError(kind, message)
        return value

    return AfterValidator(validate)


def is_ip_address(text: str) -> bool:
    """An IPv4 or IPv6 literal (what ``docker run -p ADDRESS:PORT:PORT`` and engines' host flags take)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_address(text: str) -> bool:
    """An address ssh and Ansible can reach a host at: an IP literal or a host name (see ADDRESS_NAME).

    The one definition of an inventory address: the loader checks it, and the rollout
    imports it to check again where the inventory is written.
    """
    return is_ip_address(text) or bool(ADDRESS_NAME.match(text))


def is_user_name(text: str) -> bool:
    """A user name for ssh (``ssh_user``): POSIX portable characters, '@' and a trailing '$' (POSIX_USER)."""
    return bool(POSIX_USER.match(text))


def is_key_path(text: str) -> bool:
    """A controller key file path for ``ssh_key`` (KEY_PATH): no '%', '$' or '"', which ssh would expand."""
    return bool(KEY_PATH.match(text))


def is_image_reference(value: str) -> bool:
    """A Docker image reference (distribution/reference grammar, name at most 255 characters)."""
    match = IMAGE_REFERENCE.match(value)
    return match is not None and len(match.group("name")) <= IMAGE_NAME_MAX


def is_hf_repo_id(value: str) -> bool:
    """A Hugging Face repo id (HF_REPO_ID, at most 96 characters, no '..' or '--', not ending in '.git')."""
    return (
        bool(HF_REPO_ID.match(value))
        and len(value) <= HF_REPO_ID_MAX
        and ".." not in value
        and "--" not in value
        and not value.endswith(".git")
    )


def is_model_source(value: str) -> bool:
    """A Hugging Face repo id, a local path, or an Ollama model name."""
    if LOCAL_PATH.match(value):
        return True
    if HF_REPO_ID.match(value) and len(value) <= HF_REPO_ID_MAX and ".." not in value and "--" not in value:
        return not value.endswith(".git")
    return bool(OLLAMA_NAME.match(value))


def _string(description: str, pattern: str | None = None) -> WithJsonSchema:
    schema: dict[str, Any] = {"type": "string", "description": description}
    if pattern:
        schema["pattern"] = pattern
    return WithJsonSchema(schema)


Address = Annotated[
    str,
    _check("address", "expected an IPv4 or IPv6 address or a host name (letters, digits, '-', '_', '.')", is_address),
    _string("An IPv4 or IPv6 address, or a host name (RFC 1123; '_' inside labels and a trailing '.' allowed)"),
]
IpAddress = Annotated[
    str,
    _check("ip_address", "expected an IPv4 or IPv6 address (a host name cannot be bound)", is_ip_address),
    _string("An IPv4 or IPv6 address"),
]
UserName = Annotated[
    str,
    _check(
        "user_name",
        "expected a user name (letters, digits, '.', '_', '-', '@', a trailing '$'; not starting with '-')",
        is_user_name,
    ),
    _string("User name (POSIX portable characters, '@' for directory users, a trailing '$')", POSIX_USER.pattern),
]
KeyPath = Annotated[
    str,
    _check(
        "key_path",
        "expected a file path of letters, digits, '.', '_', '-' and '/' (not starting with '-')",
        is_key_path,
    ),
    _string("Private key file on the controller", KEY_PATH.pattern),
]
ImageReference = Annotated[
    str,
    _check(
        "image_reference",
        "expected a container image reference such as 'registry/name:tag' or 'name@sha256:...'",
        is_image_reference,
    ),
    _string("Container image reference (Docker reference grammar); default: the engine's official image"),
]
ModelSource = Annotated[
    str,
    _check(
        "model_source",
        "expected a Hugging Face repo id (org/name), an absolute path, or an Ollama name ([namespace/]name[:tag])",
        is_model_source,
    ),
    _string("Hugging Face repo id, a local directory, a .gguf file, or an Ollama tag (engine ollama)"),
]
LabelKey = Annotated[
    str,
    _check(
        "label_key",
        "expected a label key: [prefix/]name of letters, digits, '-', '_' and '.'",
        lambda v: bool(LABEL_KEY.match(v)),
    ),
]
LabelValue = Annotated[
    str,
    Field(max_length=LABEL_VALUE_MAX),
    _check("label_value", "a label value must not start with '-'", lambda v: not v.startswith("-")),
]
Labels = Annotated[dict[LabelKey, LabelValue], Field(max_length=64)]


def not_reserved(name: str) -> str:
    """Refuse the deployment names the host layout keeps for shared folders."""
    if name in RESERVED_DEPLOYMENT_NAMES:
        raise PydanticCustomError(
            "reserved_name",
            "this name is reserved: /var/lib/servespec/{name} is shared by every deployment",
            {"name": name},
        )
    return name


MAX_FLOAT = 1e15
"""Largest magnitude a float may have anywhere (no real setting comes near; NaN and infinities never)."""


def oversized_number(value: Any, *, max_int: float = MAX_INT, max_float: float = MAX_FLOAT) -> int | float | None:
    """The first number inside ``value`` (dicts and lists walked) that is NaN, infinite or too large, else None."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = oversized_number(item, max_int=max_int, max_float=max_float)
            if found is not None:
                return found
        return None
    if isinstance(value, float) and not abs(value) <= max_float:  # NaN fails every comparison
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > max_int:
        return value
    return None


def check_numbers(value: Any) -> None:
    """Refuse NaN, infinities and numbers beyond MAX_INT / MAX_FLOAT anywhere inside a free-form value."""
    found = oversized_number(value)
    if isinstance(found, float):
        raise PydanticCustomError("number", f"number must be finite and at most {MAX_FLOAT:g} in size")
    if found is not None:
        raise PydanticCustomError("number", "integer must be at most 2**53 in size")


def duration_seconds(text: str) -> int:
    """Seconds in a duration such as ``15m``, ``1h30m`` or ``90s``."""
    match = _DURATION.match(text)
    if not match or not text:
        raise ValueError(f"not a duration: {text!r}")
    hours, minutes, seconds = (int(group or 0) for group in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def _check_duration(value: str) -> str:
    try:
        seconds = duration_seconds(value)
    except ValueError:
        raise PydanticCustomError(
            "duration", "expected a duration like '15m', '1h30m' or '90s', got '{value}'", {"value": value}
        ) from None
    if seconds <= 0:
        raise PydanticCustomError("duration", "duration must be longer than 0s")
    if seconds > MAX_DURATION_S:
        raise PydanticCustomError("duration", "duration must be at most 30 days")
    return value


Duration = Annotated[
    str,
    AfterValidator(_check_duration),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^(\d+h)?(\d+m)?(\d+s)?$",
            "description": "Duration: hours, minutes, seconds, e.g. 15m, 1h30m, 90s",
        }
    ),
]
