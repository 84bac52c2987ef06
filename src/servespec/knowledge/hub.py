"""A model's config.json from the Hugging Face Hub, read into memory; opt-in only.

Asked only by ``deploy lock`` and by ``deploy validate --hub`` / ``deploy estimate --hub``,
never by a plain run. Everything is read from the environment when the call is made: the
endpoint (``HF_ENDPOINT``) and the token (the spec's ``model.hub_token`` when it is ``from_env``
and that variable is set, else ``HF_TOKEN``; never a token stored by ``hf auth login``, so that
what a run may read does not depend on who ran it, and never written anywhere).
``HF_HUB_OFFLINE`` set means the Hub is not asked at all. Only JSON files are fetched
(``config.json`` and, when the repository has one, ModelOpt's ``hf_quant_config.json``) and
parsed as data: no code from a repository is ever run, whatever ``trust_remote_code`` would say.

The Hub named by ``HF_ENDPOINT`` may be a mirror nobody vouches for, so its answers are data
to check, never names to build paths from (issue 20): nothing is written to disk (no
``hf_hub_download``, no cache: its paths come from the answer's revision and ETag); the
answer's ``sha`` must be 40 lowercase hex digits and its ``id`` a Hub repo id (grammars.py)
before either names a URL; every body is read with a byte cap (:data:`MAX_INFO_BYTES`,
``MAX_REFERENCED_BYTES`` for a file) and a deadline; a redirect is followed only to http(s),
at most :data:`MAX_REDIRECTS` times, and the token is dropped once one leaves the endpoint's
origin (scheme, host and port). The requests use huggingface_hub's own pieces: its configured
HTTP session (``get_session``: proxies, certificates, ``HF_HUB_OFFLINE``), file URLs
(``hf_hub_url``) and error classes (``hf_raise_for_status``); not ``build_hf_headers``, which
writes a registry it fetches from the endpoint under ``HF_HOME`` (see :func:`_headers`). A renamed repository resolves
as the Hub resolves it (the Hub's redirect is followed; the answer's ``id`` is the current name,
which the lock records). Weight bytes come from the Hub's own safetensors summary (parameters
per dtype) of the repository.

Sources: https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables,
https://huggingface.co/docs/huggingface_hub/package_reference/hf_api (``model_info``: ``GET
/api/models/{repo}[/revision/{rev}]``), https://huggingface.co/docs/huggingface_hub/package_reference/file_download
(``hf_hub_url``), https://huggingface.co/docs/huggingface_hub/package_reference/utilities (``get_session``,
``hf_raise_for_status``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import quote, urljoin, urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from servespec.spec.grammars import is_hf_repo_id
from servespec.text import printable

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT_S = 20.0
"""Seconds for each connect or read; a whole answer (redirects included) gets twice that."""
MAX_INFO_BYTES = 16 * 1024 * 1024
"""Largest model-info answer read (the Hub lists every file of a repository in it; tens of kilobytes is usual)."""
MAX_ERROR_BYTES = 64 * 1024
"""Most of an error answer read (the Hub's error bodies are one short JSON object)."""
MAX_REDIRECTS = 5
"""Redirects followed for one request (a renamed repository, then a CDN, is two)."""
MAX_PARAMS = 10**15
"""Most parameters one dtype of a model may count (1000x the largest published model)."""
_TRUE = {"1", "ON", "YES", "TRUE"}
"""Values of a boolean HF_* variable that mean yes (huggingface_hub constants.py, ``_is_true``)."""
_SHA = r"^[0-9a-f]{40}$"
_REFUSED = {
    "id": "the repository id it names is not a Hub repository id",
    "sha": "the commit it names is not 40 lowercase hex digits",
}
"""Why a model info field was refused, as a finding says it (never the value: it may be anything)."""


class HubRefusal(Exception):  # noqa: N818 - a refusal, named as what servespec does
    """The Hub's answer breaks what servespec reads it by; the message quotes nothing of the answer."""


def _repo_id(value: str) -> str:
    if not is_hf_repo_id(value):
        raise ValueError("not a Hub repository id")
    return value


class _Sibling(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    rfilename: str


class _Safetensors(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    parameters: dict[Annotated[str, Field(max_length=16)], Annotated[int, Field(ge=0, le=MAX_PARAMS, strict=True)]]


class ModelInfo(BaseModel):
    """The fields servespec reads from the Hub's model info (``GET /api/models/...``), each checked."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: Annotated[str, AfterValidator(_repo_id)]
    """The repository as the Hub names it now; it names the URL config.json is read from."""
    sha: Annotated[str, Field(pattern=_SHA)]
    """The commit the answer is of; it names the URL config.json is read from."""
    siblings: list[_Sibling] = Field(default_factory=list, max_length=1_000_000)
    safetensors: _Safetensors | None = None


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
    if isinstance(err, errors.EntryNotFoundError):
        return f"{named} has no config.json at that revision"
    if isinstance(err, errors.OfflineModeIsEnabled):
        return f"{named} not asked: HF_HUB_OFFLINE is set"
    if isinstance(err, errors.HfHubHTTPError) and status is not None:
        if status in (401, 403):
            return f"{named} refused the request (HTTP {status}): set HF_TOKEN to a token with access"
        return f"{named}: the Hub answered HTTP {status}"
    return f"{named}: the Hub cannot be reached ({type(err).__name__})"


def _headers(token: str | None) -> dict[str, str]:
    """The request headers: a user agent naming servespec, and the token when there is one.

    Not ``build_hf_headers``: for its user agent it fetches the Hub's agent-harness registry
    (unbounded) and writes it under ``HF_HOME``; and given no token it may read one stored
    on this machine. Here the token is only ever the one the caller passes.
    """
    from importlib.metadata import version

    headers = {"User-Agent": f"servespec/{version('servespec')}; hf_hub/{version('huggingface_hub')}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


def _body(response: Any, limit: int, deadline: float, what: str) -> bytes:
    """At most ``limit`` bytes of a streamed answer (the session's response); HubRefusal past the limit or deadline."""
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > limit:
        raise HubRefusal(f"{what} is larger than {limit // 1024} KiB")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():  # decoded: a compressed bomb stops at the limit too
        size += len(chunk)
        if size > limit:
            raise HubRefusal(f"{what} is larger than {limit // 1024} KiB")
        if time.monotonic() > deadline:
            raise HubRefusal(f"{what} took longer than {int(2 * TIMEOUT_S)} s")
        chunks.append(chunk)
    return b"".join(chunks)


def get(url: str, headers: dict[str, str], limit: int, what: str) -> bytes:
    """The body of ``GET url``, read into memory: bounded, redirects to http(s) only, no token off the origin.

    An error status raises huggingface_hub's own error for it (``hf_raise_for_status``:
    gated, missing repository, revision or file); a broken contract raises HubRefusal.
    """
    from huggingface_hub import get_session
    from huggingface_hub.utils import hf_raise_for_status  # type: ignore[attr-defined]

    origin, sent = _origin(url), dict(headers)
    deadline = time.monotonic() + 2 * TIMEOUT_S
    for _ in range(MAX_REDIRECTS + 1):
        if _origin(url)[0] not in ("http", "https"):
            raise HubRefusal("the Hub redirected to an address that is not http(s) (not followed)")
        if _origin(url) != origin:  # once the answer leaves the endpoint, the token stays behind
            sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
        with get_session().stream("GET", url, headers=sent, follow_redirects=False, timeout=TIMEOUT_S) as response:
            if response.is_redirect and "Location" in response.headers:
                url = urljoin(url, response.headers["Location"])
                continue
            failed = response.status_code >= 400
            body = _body(response, MAX_ERROR_BYTES if failed else limit, deadline, what)
            if failed:
                # The client's own response type (httpx's API), read now, so that its error classes apply.
                read = type(response)(response.status_code, headers=response.headers, content=body)
                read.request = response.request
                hf_raise_for_status(read)
            return body
    raise HubRefusal(f"the Hub redirected more than {MAX_REDIRECTS} times")


def model_info(hub: str, source: str, revision: str | None, headers: dict[str, str]) -> ModelInfo:
    """The Hub's model info of ``source`` at ``revision`` (else ``main``), its ``id`` and ``sha`` checked.

    The URL is the one ``HfApi.model_info`` asks (hf_api.py); ``source`` is a repo id the caller checked.
    """
    url = f"{hub}/api/models/{source}" + (f"/revision/{quote(revision, safe='')}" if revision else "")
    raw = get(url, headers, MAX_INFO_BYTES, "the Hub's model info")
    try:
        return ModelInfo.model_validate_json(raw)
    except ValidationError as err:
        fields = sorted({str(e["loc"][0]) if e["loc"] else "" for e in err.errors()})
        reasons = [_REFUSED.get(name, f"its {printable(name)[:40] or 'body'} is malformed") for name in fields[:3]]
        raise HubRefusal(f"the Hub's answer is refused: {'; '.join(reasons)}") from None


def _weights(info: ModelInfo) -> tuple[int | None, dict[str, int]]:
    """Weight bytes and elements per dtype from the Hub's safetensors summary of the repository."""
    from servespec.knowledge.safetensors import bytes_of

    counts = info.safetensors.parameters if info.safetensors else {}
    if not counts:
        return None, {}
    by_dtype = {k.upper(): v for k, v in sorted(counts.items())}
    return bytes_of(by_dtype), by_dtype


def _config(raw: bytes, name: str) -> dict[str, Any]:
    """A fetched JSON file as parse_config reads it; ValueError (quoting nothing of it) when it is not one."""
    from servespec.knowledge.models import parse_config

    try:
        return parse_config(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"{name} is not JSON (line {err.lineno}, column {err.colno})") from None
    except ValueError as err:
        raise ValueError(str(err).replace("config.json", name)) from None


def fetch(source: str, revision: str | None, token: str | None) -> HubAnswer:
    """``config.json`` of ``source`` at ``revision`` (else ``main``) from the Hub; never raises for its answers."""
    if offline():
        return HubAnswer(problem=f"{printable(source)} on the Hub not asked: HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import hf_hub_url
    except ImportError:
        return HubAnswer(problem="the huggingface_hub package is not installed (pip install huggingface_hub)")
    from servespec.spec.paths import MAX_REFERENCED_BYTES

    hub = endpoint()
    headers = _headers(token)
    try:
        info = model_info(hub, source, revision, headers)
        files = {s.rfilename for s in info.siblings}

        def download(name: str) -> dict[str, Any]:
            url = hf_hub_url(info.id, name, revision=info.sha, endpoint=hub)
            return _config(get(url, headers, MAX_REFERENCED_BYTES, name), name)

        config = download("config.json")
        if "quantization_config" not in config and "hf_quant_config.json" in files:
            config["quantization_config"] = download("hf_quant_config.json")
    except (HubRefusal, ValueError) as err:  # both quote nothing of the answer
        if type(err).__module__.startswith("huggingface_hub"):
            return HubAnswer(problem=_problem(err, source, revision))
        return HubAnswer(problem=f"{printable(source)} on the Hub: {printable(str(err))[:160]}")
    except Exception as err:  # every client failure (HTTP, connection) becomes one line
        return HubAnswer(problem=_problem(err, source, revision))
    weight_bytes, by_dtype = _weights(info)
    return HubAnswer(config, info.id, info.sha, weight_bytes, by_dtype)


def fetch_json(source: str, revision: str | None, token: str | None, name: str) -> HubAnswer:
    """One JSON file (``adapter_config.json``) of ``source`` at ``revision`` from the Hub, as :func:`fetch` reads
    ``config.json``: bounded, checked, never raising for the Hub's answers (``config`` holds the file)."""
    if offline():
        return HubAnswer(problem=f"{printable(source)} on the Hub not asked: HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import hf_hub_url
    except ImportError:
        return HubAnswer(problem="the huggingface_hub package is not installed (pip install huggingface_hub)")
    from servespec.spec.paths import MAX_REFERENCED_BYTES

    hub = endpoint()
    headers = _headers(token)
    try:
        info = model_info(hub, source, revision, headers)
        url = hf_hub_url(info.id, name, revision=info.sha, endpoint=hub)
        config = _config(get(url, headers, MAX_REFERENCED_BYTES, name), name)
    except (HubRefusal, ValueError) as err:
        if type(err).__module__.startswith("huggingface_hub"):
            return HubAnswer(problem=_problem(err, source, revision))
        return HubAnswer(problem=f"{printable(source)} on the Hub: {printable(str(err))[:160]}")
    except Exception as err:
        return HubAnswer(problem=_problem(err, source, revision))
    return HubAnswer(config, info.id, info.sha)
