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
"""Names of variables, options and labels that hold secrets (HF_TOKEN, api_key, admin-api-key)."""

_TOKEN = (
    r"hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}|nvapi-[A-Za-z0-9_-]{20,}|xox[abp]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}"
)
SECRET_VALUE = re.compile(rf"^({_TOKEN})$")
"""A whole value shaped like a known token kind (Hugging Face, OpenAI, AWS, GitHub, NVIDIA, Slack, GitLab)."""
_TOKEN_ANYWHERE = re.compile(rf"(?<![A-Za-z0-9])({_TOKEN})")

MASK = "***"


def looks_secret(name: str, value: Any) -> bool:
    """Whether ``name: value`` is a literal secret: a secret-named key with a literal, or a token-shaped value."""
    if not isinstance(value, str) or not value or value.startswith(("$", "{")):
        return False
    if value.lower() in ("true", "false", "none", "null") or value.replace(".", "", 1).isdigit():
        return False  # settings such as MAX_BATCH_PREFILL_TOKENS: "4096" are not secrets
    return bool(SECRET_NAME.search(name)) or bool(SECRET_VALUE.match(value))


def has_token(text: str) -> bool:
    """Whether ``text`` contains a token-shaped substring anywhere."""
    return bool(_TOKEN_ANYWHERE.search(text))


def scrub(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """``text`` with token-shaped substrings and each of ``secrets`` (known values) masked."""
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _TOKEN_ANYWHERE.sub(MASK, text)
