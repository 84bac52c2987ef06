"""SEC rules: code an engine fetches and runs when it starts (the model repository's Python, packages from an index).

Engine options nest: XInference forwards a block per engine (``engine.options.vllm``, an
unchecked ``transformers`` mapping) and its own ``envs`` in the launch request, TensorRT-LLM's
LLM-API options are a YAML mapping, OpenLLM's bento arguments are ``--arg key=value,...``
words. A setting is found wherever it sits: in any mapping or list under ``engine.options``,
in ``extra_args`` and in ``engine.env``, in every spelling (``trust_remote_code``,
``trust-remote-code``, ``--trust-remote-code``, ``--trust-remote-code=true``, a dotted
``vllm.trust_remote_code``, a ``key=value`` word).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from servespec.engines.catalog import EngineRelease
from servespec.engines.options import extra_arg_settings
from servespec.findings import Finding, Severity
from servespec.hostpaths import is_local_path
from servespec.knowledge import resolve
from servespec.rules.base import Rule, bare, policy
from servespec.rules.security import canonical_option
from servespec.spec.fleet import DeploymentDoc, Fleet

Path = tuple[str | int, ...]

_REMOTE_CODE = "trust_remote_code"
_PACKAGES = ("virtual_env_packages", "virtual_env_package")
"""XInference's launch request field (restful_api.py ``launch_model``) and its ``xinference launch`` option."""
_COMMIT = re.compile(r"[0-9a-f]{40}")
_EXACT_PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,\s-]*\])?\s*===?\s*[A-Za-z0-9][A-Za-z0-9.+!_-]*")
"""A requirement pinned to one release: ``name==1.2.3`` (``name[extra]==1.2.3``, ``===``); ``==1.*`` is a range."""
_OFF = ("", "0", "false", "f", "no", "n", "off")
"""Spellings that turn a boolean off: clap's FalseyValueParser (TGI's ``TRUST_REMOTE_CODE``) and YAML's."""


def _enabled(value: Any) -> bool:
    """Whether a ``trust_remote_code`` value turns it on: ``false``, ``0``, ``"no"``, ``"off"`` and null do not."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int | float):
        return value != 0
    return not (isinstance(value, str) and value.strip().lower() in _OFF)


def _plain(name: str) -> str:
    """A nested key or flag as one setting name: the last dotted part, dashes stripped, ``-`` to ``_``, lower case."""
    return name.rsplit(".", 1)[-1].strip().lstrip("-").replace("-", "_").lower()


def _word(text: str) -> tuple[str, Any] | None:
    """A ``--flag``, ``--flag=value`` or ``key=value`` word as (name, value); None for any other text."""
    name, equals, value = text.partition("=")
    if equals:
        return _plain(name), value
    return (_plain(name), True) if text.startswith("--") else None


def _in_words(text: str, names: tuple[str, ...]) -> bool:
    """Whether comma-separated ``key=value`` words (bentoml's ``--arg`` splits on ``,``) set one of ``names`` on."""
    for part in text.split(","):
        found = _word(part.strip())
        if found is not None and found[0] in names and _enabled(found[1]):
            return True
    return False


def nested(data: Any, path: Path, names: tuple[str, ...]) -> Iterator[tuple[Path, Any]]:
    """Where ``names`` is set, at any depth of mappings and lists, with its value (a bare ``--flag`` is ``True``)."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = (*path, str(key))
            if isinstance(key, str) and _plain(key) in names and not isinstance(value, dict):
                yield where, value
            else:
                yield from nested(value, where, names)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            found = _word(item) if isinstance(item, str) else None
            if found is not None and found[0] in names:
                yield (*path, index), found[1]
            else:
                yield from nested(item, (*path, index), names)
    elif isinstance(data, str) and _in_words(data, names):
        yield path, True


def _option_paths(
    deployment: DeploymentDoc, names: tuple[str, ...], chosen: EngineRelease | None
) -> Iterator[tuple[Path, Any]]:
    """``engine.options`` at any depth (top-level names as the engine's parser reads them) and ``extra_args``."""
    engine = deployment.spec.engine
    for name, value in engine.options.items():
        where: Path = ("engine", "options", name)
        if _plain(canonical_option(name, chosen)) in names and not isinstance(value, dict):
            yield where, value
        else:
            yield from nested(value, where, names)
    for index, flag, value in extra_arg_settings(engine.extra_args):
        if _plain(canonical_option(flag, chosen)) in names:
            yield ("engine", "extra_args", index), value
        elif isinstance(value, str) and _in_words(value, names):  # OpenLLM: --arg trust_remote_code=true
            yield ("engine", "extra_args", index + 1), True


def remote_code_paths(known: resolve.Resolved) -> Iterator[Path]:
    """Where a deployment turns trust_remote_code on: options at any depth, extra_args or env, in any spelling."""
    deployment, chosen = known.deployment, known.release
    engine = deployment.spec.engine
    for path, value in _option_paths(deployment, (_REMOTE_CODE,), chosen):
        if _enabled(value):
            yield path
    for name, value in engine.env.items():
        # TGI reads TRUST_REMOTE_CODE (clap env); any engine's env spelling counts the same.
        if name.lower().replace("-", "_").endswith(_REMOTE_CODE) and _enabled(value):
            yield ("engine", "env", name)


class TrustRemoteCode(Rule):
    """``trust_remote_code`` runs Python from the model repository inside the engine, with its GPUs and mounts.

    With it, Transformers imports the repository's own modelling and tokenizer code
    (``auto_map`` in config.json) instead of refusing it; whoever can push to that
    repository runs code on every host that pulls it. vLLM and SGLang (``--trust-remote-code``),
    TGI (``--trust-remote-code`` / ``TRUST_REMOTE_CODE``, whose launcher itself warns
    "Trusting that model ... do not contain malicious code") and TensorRT-LLM
    (``--trust_remote_code``, the LLM API's ``trust_remote_code``) all default it to off.
    It is found in ``engine.options`` at any depth (XInference's engine blocks such as
    ``engine.options.vllm`` or an unchecked ``transformers`` mapping, which its launch request
    forwards to the engine, and its ``envs``; TensorRT-LLM's nested LLM-API mappings; a
    dotted ``vllm.trust_remote_code``; list items such as ``--trust-remote-code``), in
    ``extra_args`` (an OpenLLM ``--arg trust_remote_code=true``, bentoml's comma-separated
    words too) and in ``engine.env``, in every spelling the engine's parser accepts
    (``--trust_remote_code``, ``--trust-remote``, ``true``/``1``); ``false``, ``0``, ``no``,
    ``off`` and empty are off, as clap's FalseyValueParser reads them.

    A warning when the model is pinned to a commit (``model.revision`` is a 40-character
    sha) or is a local path; an error for a hub model without a pinned commit, where the
    code that runs can change under the fleet.

    Fix: drop it (most architectures are built into the engines), or pin ``model.revision``
    to a commit whose code you reviewed.

    Source: Transformers, custom models (trust_remote_code):
    https://huggingface.co/docs/transformers/en/custom_models ;
    https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs ;
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/engine/arg_utils.py ;
    XInference, the launch request's keyword options forwarded to the engine:
    https://github.com/xorbitsai/inference/blob/v2.12.0/xinference/api/restful_api.py
    """

    id = "SEC005"
    name = "security.trust-remote-code"
    severity = Severity.WARNING
    evidence = (policy("exposure-on-the-hosts", note="trust_remote_code at a revision that is not a commit."),)
    summary = "trust_remote_code runs the model repository's Python (error when the revision is not a commit)"
    hint = "remove it, or pin model.revision to a commit whose code you reviewed"
    sources = (
        "https://huggingface.co/docs/transformers/en/custom_models",
        "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs",
        "https://github.com/xorbitsai/inference/blob/v2.12.0/xinference/api/restful_api.py",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            model = deployment.spec.model
            pinned = model.revision is not None and bool(_COMMIT.fullmatch(model.revision))
            local = is_local_path(str(model.source))
            for path in remote_code_paths(resolve.resolved(deployment)):
                yield self.report(
                    deployment.document,
                    "trust_remote_code runs Python from the model repository"
                    + ("" if pinned or local else " at a revision that is not a pinned commit"),
                    path,
                    severity=self.severity if pinned or local else Severity.ERROR,
                )


def _requirements(value: Any) -> list[str]:
    """The package requirements a ``virtual_env_packages`` value names (a list, or one comma/space-separated string)."""
    items = value if isinstance(value, list) else [value] if value not in (None, False, "") else []
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.extend(part for part in re.split(r"[,\s]+", item.strip()) if part)
        else:
            out.append(str(item))
    return out


class InstallAtLaunch(Rule):
    """Packages installed when the engine starts run code from a package index on the host's GPUs.

    XInference's launch request can name ``virtual_env_packages`` (the ``xinference launch``
    option ``--virtual-env-package``): XInference creates a virtual environment for the model
    and pip-installs them into it before the model starts, on every launch, from whatever
    index the container reaches. Installing a package runs its build and its code with the
    engine's GPUs, mounts (the model cache) and network; whoever can publish to that index,
    or to the package's name on it, runs code on every host. It is found at any depth of
    ``engine.options`` and ``extra_args``, in every spelling (``virtual_env_packages``,
    ``virtual-env-package``, ``--virtual-env-package=NAME``).

    Severity follows SEC005's policy (code fetched at start-up that can change under the
    fleet is an error): an error when a requirement is not pinned to one release
    (``name==1.2.3``; a bare name, a range, ``==1.*``, a URL or ``git+`` reference move),
    a warning when every requirement is pinned (PyPI never reuses a release's file names, but
    the index is still trusted at every start). Put the packages in the image instead.

    Not reported: what an engine installs of its own accord (OpenLLM's bento venv, installed
    by ``openllm serve`` unless the image ships it: docs/engines/openllm.md), which no spec
    setting names.

    Fix: build an image that contains the packages (``engine.image``) and remove
    ``virtual_env_packages``; at the least pin each to ``name==version``.

    Source: XInference, virtual environments for models:
    https://inference.readthedocs.io/en/latest/models/virtualenv.html ;
    https://github.com/xorbitsai/inference/blob/v2.12.0/xinference/api/restful_api.py ;
    PyPI, file name reuse: https://pypi.org/help/#file-name-reuse
    """

    id = "SEC006"
    name = "security.install-at-launch"
    severity = Severity.WARNING
    evidence = (policy("exposure-on-the-hosts", note="A launch-time requirement not pinned with ==."),)
    summary = "packages pip-installed when the engine starts (error when a requirement is not pinned with ==)"
    hint = "build an image with the packages (engine.image); at the least pin each as name==version"
    sources = (
        "https://inference.readthedocs.io/en/latest/models/virtualenv.html",
        "https://github.com/xorbitsai/inference/blob/v2.12.0/xinference/api/restful_api.py",
        "https://pypi.org/help/#file-name-reuse",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            chosen = resolve.resolved(deployment).release
            for path, value in _option_paths(deployment, _PACKAGES, chosen):
                wanted = [] if value is True else _requirements(value)
                if value is not True and not wanted:
                    continue  # an empty list installs nothing
                loose = [req for req in wanted if not _EXACT_PIN.fullmatch(req)] if wanted else ["(unnamed)"]
                what = f"{len(wanted)} package(s)" if wanted else "packages"
                yield self.report(
                    deployment.document,
                    f"the engine pip-installs {what} when it starts"
                    + (f", not pinned to one release: {bare(', '.join(loose))}" if loose else ""),
                    path,
                    severity=Severity.ERROR if loose else self.severity,
                )
