"""A model's config.json from the Hugging Face Hub, through the real ``huggingface_hub`` client; opt-in only.

Asked only by ``deploy lock`` and by ``deploy validate --hub`` / ``deploy estimate --hub``,
never by a plain run. The client is given everything explicitly, read from the environment
when the call is made: the endpoint (``HF_ENDPOINT``), the cache (``HF_HUB_CACHE``, else
``HF_HOME``/hub), the token (the spec's ``model.hub_token`` when it is ``from_env`` and that
variable is set, else ``HF_TOKEN``; never a token stored by ``hf auth login``, so that what a run
may read does not depend on who ran it, and never written anywhere). ``HF_HUB_OFFLINE`` set
means the Hub is not asked at all. Only JSON files are fetched (``config.json`` and, when the
repository has one, ModelOpt's ``hf_quant_config.json``) and parsed as data: no code from a
repository is ever run, whatever ``trust_remote_code`` would say. A renamed repository resolves
as the Hub resolves it (the client follows the Hub's redirect; the answer's ``id`` is the
current name, which the lock records). Weight bytes come from the Hub's own safetensors summary
(parameters per dtype) of the repository.

Sources: https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables,
https://huggingface.co/docs/huggingface_hub/package_reference/hf_api (``model_info``),
https://huggingface.co/docs/huggingface_hub/guides/download (``hf_hub_download``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servespec.text import printable

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 20.0
_TRUE = {"1", "ON", "YES", "TRUE"}
"""Values of a boolean HF_* variable that mean yes (huggingface_hub constants.py, ``_is_true``)."""


@dataclass(frozen=True)
class HubAnswer:
    """What the Hub gave for one model, or why it gave nothing."""

    config: dict[str, Any] | None = None
    repo: str | None = None
    """The repository as the Hub names it now (differs from the source after a rename)."""
    revision: str | None = None
    """The commit sha the config was read at."""
    weight_bytes: int | None = None
    params_by_dtype: dict[str, int] = field(default_factory=dict)
    problem: str = ""


def offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids asking the Hub."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in _TRUE


def endpoint() -> str:
    """The Hub to ask: ``HF_ENDPOINT``, else huggingface.co."""
    return os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or DEFAULT_ENDPOINT


def _problem(err: Exception, source: str, revision: str | None) -> str:
    """One line for a failed Hub call: names the model and what to do, never the client's text (URLs, paths)."""
    from huggingface_hub import errors

    named = f"{printable(source)} on the Hub"
    status = getattr(getattr(err, "response", None), "status_code", None)
    if isinstance(err, errors.GatedRepoError):
        return f"{named} is gated: set HF_TOKEN (or model.hub_token) to a token that was granted access"
    if isinstance(err, errors.RevisionNotFoundError):
        return f"{named}: revision {printable(str(revision))} not found"
    if isinstance(err, errors.RepositoryNotFoundError):
        if status == 401:
            return f"{named} was refused without a token (private, gated or missing): set HF_TOKEN if you have access"
        return f"{named} not found (check model.source)"
    if isinstance(err, errors.EntryNotFoundError) and not isinstance(err, errors.LocalEntryNotFoundError):
        return f"{named} has no config.json at that revision"
    if isinstance(err, errors.HFValidationError):
        return f"{printable(source)} is not a Hub repository id (org/name)"
    if isinstance(err, errors.OfflineModeIsEnabled):
        return f"{named} not asked: HF_HUB_OFFLINE is set"
    if isinstance(err, errors.HfHubHTTPError) and status is not None:
        if status in (401, 403):
            return f"{named} refused the request (HTTP {status}): set HF_TOKEN to a token with access"
        return f"{named}: the Hub answered HTTP {status}"
    return f"{named}: the Hub cannot be reached ({type(err).__name__})"


def _weights(info: Any) -> tuple[int | None, dict[str, int]]:
    """Weight bytes and elements per dtype from the Hub's safetensors summary of the repository."""
    from servespec.knowledge.safetensors import bytes_of

    summary = getattr(info, "safetensors", None)
    counts = getattr(summary, "parameters", None)
    if isinstance(counts, dict) and counts and all(isinstance(v, int) for v in counts.values()):
        by_dtype = {str(k).upper(): int(v) for k, v in sorted(counts.items())}
        return bytes_of(by_dtype), by_dtype
    return None, {}


def _read_json(path: str) -> dict[str, Any]:
    from servespec.knowledge.models import parse_config
    from servespec.spec.paths import MAX_REFERENCED_BYTES, read_bounded

    raw = read_bounded(Path(path), MAX_REFERENCED_BYTES)
    if len(raw) > MAX_REFERENCED_BYTES:
        raise ValueError("config.json is too large")
    return parse_config(raw)


def fetch(source: str, revision: str | None, token: str | None, cache_dir: Path) -> HubAnswer:
    """``config.json`` of ``source`` at ``revision`` (else ``main``) from the Hub; never raises for its answers."""
    if offline():
        return HubAnswer(problem=f"{printable(source)} on the Hub not asked: HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import HfApi, hf_hub_download
        from huggingface_hub.utils import disable_progress_bars  # type: ignore[attr-defined]
    except ImportError:
        return HubAnswer(problem="the huggingface_hub package is not installed (pip install huggingface_hub)")
    disable_progress_bars()
    hub = endpoint()
    credential: str | bool = token or False  # False: never a token stored on this machine
    try:
        info = HfApi(endpoint=hub, token=credential).model_info(
            source, revision=revision, timeout=TIMEOUT_S, files_metadata=False
        )
        repo, sha = str(info.id or source), str(info.sha or "")
        if not sha:
            return HubAnswer(problem=f"{printable(source)} on the Hub: the answer names no commit")
        files = {s.rfilename for s in (info.siblings or [])}

        def download(name: str) -> dict[str, Any]:
            path = hf_hub_download(
                repo, name, revision=sha, cache_dir=cache_dir, endpoint=hub, token=credential, etag_timeout=TIMEOUT_S
            )
            return _read_json(str(path))

        config = download("config.json")
        if "quantization_config" not in config and "hf_quant_config.json" in files:
            config["quantization_config"] = download("hf_quant_config.json")
    except (ValueError, KeyError) as err:  # parse_config's messages quote nothing of the file
        if type(err).__module__.startswith("huggingface_hub"):
            return HubAnswer(problem=_problem(err, source, revision))
        return HubAnswer(problem=f"{printable(source)} on the Hub: {printable(str(err))[:160]}")
    except Exception as err:  # every client failure (HTTP, connection, cache) becomes one line
        return HubAnswer(problem=_problem(err, source, revision))
    weight_bytes, by_dtype = _weights(info)
    return HubAnswer(config, repo, sha, weight_bytes, by_dtype)
