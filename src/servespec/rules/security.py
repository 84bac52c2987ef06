"""SEC rules: secrets stay out of specs; images and model revisions are pinned."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from servespec.findings import Finding, Severity
from servespec.knowledge.resolve import extra_arg_settings, is_local_path
from servespec.redact import SECRET_VALUE as _SECRET_VALUE
from servespec.redact import looks_secret as _looks_secret
from servespec.rules.base import Rule
from servespec.spec.fleet import Fleet

_SECRET_FLAGS = ("--api-key", "--admin-api-key", "--hf-token", "--token")
_FLOATING_TAGS = {"latest", "nightly", "main", "master", "edge", "dev"}
_DOCKER_PIN = "https://docs.docker.com/reference/cli/docker/image/pull/#pull-an-image-by-digest-immutable-identifier"
_HF_REVISION = "https://huggingface.co/docs/huggingface_hub/guides/download#from-specific-version"
_OWASP_SECRETS = "https://cheatsheetseries.owasp.org/cheatsheets/Secrets_Management_Cheat_Sheet.html"


class InlineSecret(Rule):
    """Secrets are never written in a spec: API keys and hub tokens come from the environment or a file.

    ``serving.api_key`` and ``model.hub_token`` accept only ``{from_env: VAR}`` or
    ``{from_file: /path}`` (reported while loading). ``engine.env``, ``engine.options``
    and ``extra_args`` are scanned too: a variable or option named like a secret
    (``*TOKEN*``, ``*API_KEY*``, ``*SECRET*``, ``*PASSWORD*``) with a literal value, a
    value shaped like a known token (``hf_…``, ``sk-…``, ``AKIA…``, ``ghp_…``), or
    ``--api-key VALUE`` in ``extra_args``. Specs are committed and rendered files are
    reviewed in pull requests, so a literal secret leaks; servespec resolves references
    only on the controller while applying and writes them to a mode-0600 env file.

    Fix: move the value to an environment variable or file and reference it; rotate the
    exposed secret.

    Source: OWASP Secrets Management Cheat Sheet:
    https://cheatsheetseries.owasp.org/cheatsheets/Secrets_Management_Cheat_Sheet.html
    """

    id = "SEC001"
    name = "security.inline-secret"
    severity = Severity.ERROR
    summary = "a secret written inline instead of from_env/from_file"
    hint = "reference it with {from_env: VAR} or {from_file: /path}, and rotate the exposed value"
    sources = (_OWASP_SECRETS,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            engine = deployment.spec.engine
            for name, value in engine.env.items():
                if _looks_secret(name, value):
                    yield self.report(
                        deployment.document, f"engine.env {name} holds a literal secret", ("engine", "env", name)
                    )
            for name, option_value in engine.options.items():
                if _looks_secret(name, option_value):
                    yield self.report(
                        deployment.document,
                        f"engine option {name} holds a literal secret",
                        ("engine", "options", name),
                        hint="use serving.api_key with from_env/from_file",
                    )
            yield from self._extra_args(deployment.document, engine.extra_args)

    def _extra_args(self, document: Any, args: list[str]) -> Iterator[Finding]:
        # Messages name the flag, never the value: findings end up in CI logs and SARIF.
        reported: set[int] = set()
        for index, flag, value in extra_arg_settings(args):
            if (flag in _SECRET_FLAGS and value is not True) or (isinstance(value, str) and _SECRET_VALUE.match(value)):
                reported.add(index)
                yield self.report(
                    document,
                    f"extra_args passes a literal secret with {flag}",
                    ("engine", "extra_args", index),
                    hint="use serving.api_key with from_env/from_file",
                )
        for index, arg in enumerate(args):
            if _SECRET_VALUE.match(arg) and not {index, index - 1} & reported:
                yield self.report(
                    document,
                    "extra_args holds a token-shaped literal",
                    ("engine", "extra_args", index),
                    hint="use serving.api_key with from_env/from_file",
                )


class ImageNotPinned(Rule):
    """Container images must be pinned: a version tag at least, a digest preferably.

    ``latest`` (or no tag, which means latest), ``nightly`` and branch tags move: two hosts
    pulling at different times run different engines, and a rollback cannot restore the
    old one. The default image (``engine.image`` unset) is the engine's official image
    tagged with ``engine.version``. Pin ``repo@sha256:…`` for immutability.

    Fix: use a release tag matching ``engine.version``, or a digest.

    Source: Docker, pull an image by digest:
    https://docs.docker.com/reference/cli/docker/image/pull/#pull-an-image-by-digest-immutable-identifier
    """

    id = "SEC002"
    name = "security.image-pin"
    severity = Severity.WARNING
    summary = "image not pinned (latest, no tag); digest pin recommended"
    sources = (_DOCKER_PIN,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            image = deployment.spec.engine.image
            if image is None or "@sha256:" in image:
                continue
            name = image.rsplit("/", 1)[-1]
            tag = name.split(":", 1)[1] if ":" in name else None
            if tag is None or tag.lower() in _FLOATING_TAGS:
                yield self.report(
                    deployment.document,
                    f"image {image!r} is not pinned ({'no tag' if tag is None else tag + ' moves'})",
                    ("engine", "image"),
                    hint="pin a release tag or a digest (repo@sha256:...)",
                )


class RevisionNotPinned(Rule):
    """A Hugging Face model should be pinned to a commit with ``model.revision``.

    Without a revision, hosts download whatever ``main`` is at the time they pull: weights,
    tokenizer or config can change under a running fleet, and replicas disagree. A branch
    or tag name moves too; a 40-character commit sha does not. Local paths, ``.gguf``
    files and Ollama tags are not hub downloads and are not checked.

    Fix: set ``model.revision`` to the commit sha you tested.

    Source: huggingface_hub, download from a specific version:
    https://huggingface.co/docs/huggingface_hub/guides/download#from-specific-version
    """

    id = "SEC003"
    name = "security.revision-pin"
    severity = Severity.WARNING
    summary = "model revision not pinned"
    sources = (_HF_REVISION,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            model = deployment.spec.model
            if deployment.spec.engine.name == "ollama" or is_local_path(model.source):
                continue
            revision = model.revision
            if revision is not None and re.fullmatch(r"[0-9a-f]{40}", revision):
                continue
            what = "no revision" if revision is None else f"revision {revision!r} is not a commit sha"
            yield self.report(
                deployment.document,
                f"{model.source}: {what}",
                ("model", "revision") if revision is not None else ("model", "source"),
                hint="set model.revision to the 40-character commit sha you tested",
            )
