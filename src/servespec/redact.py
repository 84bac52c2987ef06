"""What a secret looks like, and how to keep one out of anything servespec prints or writes.

Shared by the SEC001 rule (which reports literal secrets in specs), by every finding whose
message might quote a value, and by the rollout, which scrubs engine log tails before they
reach the controller's output.
"""

from __future__ import annotations

import re
from typing import Any

SECRET_NAME = re.compile(
    r"(^|[_.-])(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)($|[_.-])", re.IGNORECASE
)
"""Names of variables, options and labels that may hold secrets (HF_TOKEN, api_key, admin-api-key).

A name pattern: it masks values in messages, and SEC001 warns on it (a guess, never an error:
``long_prefill_token_threshold`` matches it too)."""

KNOWN_SECRETS = frozenset(
    {
        # options (catalog keys) that carry a credential in the engines' own parsers
        "api_key",  # vLLM/SGLang/TGI/llama.cpp --api-key
        "admin_api_key",  # SGLang --admin-api-key
        "hf_token",  # vLLM --hf-token, llama.cpp -hft/--hf-token
        "hub_token",
        "ngrok_authtoken",  # TGI --ngrok-authtoken
        # variables credential libraries read (huggingface_hub constants.py, the engines' env readers)
        "hugging_face_hub_token",
        "huggingfacehub_api_token",
        "vllm_api_key",
        "llama_api_key",
        "openai_api_key",
        "ngc_api_key",
        "nvidia_api_key",
        "aws_secret_access_key",
        "aws_session_token",
        "github_token",
        "gh_token",
    }
)
"""Setting names known to carry a credential, compared after :func:`secret_key` (case, ``-`` and
leading dashes ignored): a literal under one is a secret by what reads it, not by its spelling."""


def secret_key(name: str) -> str:
    """``name`` as :data:`KNOWN_SECRETS` lists it: ``--API-Key`` -> ``api_key``."""
    return name.lstrip("-").replace("-", "_").lower()


_TOKEN = (
    r"hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}|nvapi-[A-Za-z0-9_-]{20,}|xox[abp]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}"
)
SECRET_VALUE = re.compile(rf"^({_TOKEN})$")
"""A whole value shaped like a known token kind (Hugging Face, OpenAI, AWS, GitHub, NVIDIA, Slack, GitLab)."""
_TOKEN_ANYWHERE = re.compile(rf"(?<![A-Za-z0-9])({_TOKEN})")

MASK = "***"

_FLAG_WORDS = ("true", "false", "yes", "no", "on", "off", "0", "1", "none", "null")
"""Values that are switches, not secrets (``HF_HUB_DISABLE_IMPLICIT_TOKEN: "1"``, vLLM ``--hf-token true``)."""


def _literal(value: Any) -> bool:
    """Whether a secret-named key's value is a literal that could be a secret: any non-empty string or number.

    ``$VAR`` and ``{...}`` count: nothing expands ``extra_args`` or container environment
    values, so they reach the engine as written. Booleans, null, empty strings and switch
    words (:data:`_FLAG_WORDS`, 0 and 1) are not secrets.
    """
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return value not in (0, 1)
    return isinstance(value, str) and bool(value.strip()) and value.strip().lower() not in _FLAG_WORDS


def looks_secret(name: str, value: Any) -> bool:
    """Whether ``name: value`` is a literal secret: a secret-named key with a literal, or a token-shaped value.

    Secret-named literals are judged whatever their type (``--api-key 1234.5678``,
    ``API_KEY: 12345678901234``); settings such as ``MAX_BATCH_PREFILL_TOKENS: "4096"`` are
    left alone because their names do not match :data:`SECRET_NAME`.
    """
    if isinstance(value, str) and SECRET_VALUE.match(value):
        return True
    return bool(SECRET_NAME.search(name)) and _literal(value)


def holds_secret(name: str, value: Any) -> bool:
    """Whether ``value`` (under key ``name``) is, or contains, what SEC001 reports as a secret."""
    if isinstance(value, dict):
        return any(holds_secret(str(key), item) or has_token(str(key)) for key, item in value.items())
    if isinstance(value, list):
        return any(holds_secret(name, item) for item in value)
    return looks_secret(name, value) or (isinstance(value, str) and has_token(value))


def has_token(text: str) -> bool:
    """Whether ``text`` contains a token-shaped substring anywhere."""
    return bool(_TOKEN_ANYWHERE.search(text))


def scrub(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """``text`` with token-shaped substrings and each of ``secrets`` (known values) masked."""
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _TOKEN_ANYWHERE.sub(MASK, text)
