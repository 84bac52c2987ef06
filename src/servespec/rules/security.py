"""SEC rules: secrets stay out of specs; images and model revisions are pinned."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from servespec.engines.catalog import EngineRelease
from servespec.engines.options import extra_arg_settings
from servespec.findings import Finding, Severity
from servespec.hostpaths import is_local_path, local_source_problem, model_roots
from servespec.knowledge import resolve
from servespec.redact import KNOWN_SECRETS, SECRET_NAME, has_token, scrub, secret_key
from servespec.redact import looks_secret as _looks_secret
from servespec.rules.base import Rule, bare, policy, quoted
from servespec.spec.fleet import Fleet
from servespec.spec.loader_rules import INLINE_SECRET
from servespec.spec.source import Document

_AUTHTOKEN = re.compile(r"authtoken", re.IGNORECASE)  # TGI's ngrok_authtoken: no separator before TOKEN
_LOADER_CHECKED = {("serving", "api_key"), ("model", "hub_token"), ("engine", "secret_env")}
_COMMIT = re.compile(r"[0-9a-f]{40}")
_HINT_REF = "reference it: engine.secret_env (or serving.api_key / model.hub_token) with from_env/from_file"
_FLOATING_TAGS = {"latest", "nightly", "main", "master", "edge", "dev"}
_DOCKER_PIN = "https://docs.docker.com/reference/cli/docker/image/pull/#pull-an-image-by-digest-immutable-identifier"
_HF_REVISION = "https://huggingface.co/docs/huggingface_hub/guides/download#from-specific-version"
_OWASP_SECRETS = "https://cheatsheetseries.owasp.org/cheatsheets/Secrets_Management_Cheat_Sheet.html"


def canonical_option(name: str, chosen: EngineRelease | None) -> str:
    """The catalog key an option or flag spelling names: ``--api_key``, ``api-key``, ``-hft``, ``--api-k``.

    argparse accepts any unambiguous prefix of a long option (``allow_abbrev``), and vLLM
    and SGLang accept ``_`` for ``-``; a spelling the catalog does not know is normalised
    (dashes stripped, ``-`` to ``_``, lower case) so that name checks still see it.
    """
    plain = name.lstrip("-").replace("-", "_").lower()
    if chosen is None:
        return plain
    option = chosen.option(name) or chosen.option("--" + plain.replace("_", "-")) or chosen.option(plain)
    if option is not None:
        return option.key
    if name.startswith("--") and len(plain) >= 3:
        prefix = "--" + plain.replace("_", "-")
        matches = {o.key for o in chosen.options.values() if o.flag and o.flag.replace("_", "-").startswith(prefix)}
        if len(matches) == 1:
            return matches.pop()
    return plain


def _secret_named(name: str) -> bool:
    return bool(SECRET_NAME.search(name) or _AUTHTOKEN.search(name))


def _literal(value: Any) -> bool:
    """A literal value as redact.looks_secret judges one: a non-empty string or number, not a boolean or null."""
    return _looks_secret("SECRET", value)


def _numeric(value: Any) -> bool:
    """A number, or a word that reads as one (``extra_args`` values are words): a threshold, not a credential."""
    if isinstance(value, int | float):
        return True
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def _known_secret(name: str, auth: tuple[str, ...]) -> bool:
    """A setting that carries a credential by what reads it: the engine's API-key option or variable, HF_TOKEN ..."""
    key = secret_key(name)
    return key in KNOWN_SECRETS or key in auth


def _secret_severity(name: str, value: Any, auth: tuple[str, ...] = ()) -> Severity | None:
    """How SEC001 judges ``name: value``: an error where the value is proven a secret, a warning for a guess.

    Proven: a token-shaped value, or a literal under a setting known to carry a credential
    (:data:`servespec.redact.KNOWN_SECRETS`, the engine profile's ``auth`` option and variable).
    A guess: a name that merely looks secret (``*TOKEN*``, ``*SECRET*``) holding a word; a
    number or a boolean under such a name is a setting (``long_prefill_token_threshold: 2048``).
    """
    if isinstance(value, str) and has_token(value):
        return Severity.ERROR
    if not _literal(value):
        return None
    if _known_secret(name, auth):
        return Severity.ERROR
    if _secret_named(name) and not _numeric(value):
        return Severity.WARNING
    return None


def walk_scalars(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any, bool]]:
    """Every scalar of a loaded document with its key path; ``True`` marks a mapping key itself."""
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                yield (*path, key), key, True
            yield from walk_scalars(value, (*path, str(key)))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from walk_scalars(item, (*path, index))
    else:
        yield path, data, False


def _setting_name(path: tuple[str | int, ...], chosen: EngineRelease | None) -> str:
    names = [part for part in path if isinstance(part, str)]
    if not names:
        return ""
    if path[:2] == ("engine", "options") and len(path) == 3:
        return canonical_option(str(path[2]), chosen)
    return names[-1]


class InlineSecret(Rule):
    """Secrets are never written in a spec or an inventory: API keys and hub tokens come from the environment or a file.

    ``serving.api_key``, ``model.hub_token`` and each ``engine.secret_env`` variable (a secret
    the engine reads from its environment, such as a tool server's ``EXA_API_KEY``) accept only
    ``{from_env: VAR}`` or ``{from_file: /path}`` (reported while loading). Every other string of every document
    read (specs, inventories, facts files, one that fails validation too) is scanned, keys
    included (``metadata.labels``, host ``labels``,
    ``engine.env``, ``engine.options``, ``extra_args``, anything else). It is an error
    where the value is proven a secret: a value containing a string shaped like a known token
    (``hf_…``, ``sk-…``, ``AKIA…``, ``ghp_…``, ``nvapi-…``), or a literal (a word or number,
    also ``$VAR`` or ``{...}``, which no shell expands in ``extra_args`` or container
    environment values; not a boolean, null, empty string or switch such as ``1``/``true``)
    under a setting known to carry a credential: the engine's API-key option and variable
    (its profile's ``auth``), ``hf_token``, ``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``,
    ``ngrok_authtoken`` and the other names of ``servespec.redact.KNOWN_SECRETS``. A setting
    only *named* like a secret (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*authtoken``)
    is a guess: a word there is a warning, and a number or boolean is nothing at all
    (``long_prefill_token_threshold: 2048``, ``kt_gpu_prefill_token_threshold``). Options and ``extra_args``
    flags are matched in every spelling the engine's parser accepts: ``--api-key VALUE``,
    ``--api-key=VALUE``, ``--api_key``, an unambiguous argparse prefix (``--api-k``), the
    catalog's aliases (llama.cpp ``-hft``) and option keys in any case or separator.
    Specs are committed and rendered files are reviewed in pull requests, so a literal
    secret leaks; servespec resolves references only on the controller while applying and
    writes them to a mode-0600 env file. Messages name the setting, never its value.

    Fix: move the value to an environment variable or file and reference it; rotate the
    exposed secret.

    Source: OWASP Secrets Management Cheat Sheet:
    https://cheatsheetseries.owasp.org/cheatsheets/Secrets_Management_Cheat_Sheet.html ;
    Python argparse, prefix matching: https://docs.python.org/3/library/argparse.html#prefix-matching
    """

    id = INLINE_SECRET.id
    name = INLINE_SECRET.name
    severity = INLINE_SECRET.severity
    evidence = (
        policy(
            "secrets",
            note="A token-shaped value, or a literal under a setting known to carry a credential; "
            "a name that only looks secret warns.",
        ),
    )
    summary = INLINE_SECRET.summary
    hint = INLINE_SECRET.hint
    sources = (_OWASP_SECRETS, "https://docs.python.org/3/library/argparse.html#prefix-matching")

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        seen: set[int] = set()
        for deployment in fleet.deployments:
            seen.add(id(deployment.document))
            known = resolve.resolved(deployment)
            chosen = known.release
            auth = known.profile.auth
            names = tuple(secret_key(n) for n in (auth.option, auth.env) if n) if auth else ()
            yield from self._document(deployment.document, chosen, auth=names)
            engine = deployment.spec.engine
            for field in _WORDS:
                words = [str(word) for word in getattr(engine, field) or []]
                yield from self._extra_args(deployment.document, words, chosen, names, field)
        referenced = [
            document
            for inventory in fleet.inventories
            for document in (inventory.document, *(host.facts_document for host in inventory.hosts.values()))
        ]
        # Then every other document read (one that failed validation still leaks what it holds).
        for document in [*referenced, *fleet.documents]:
            if document is not None and id(document) not in seen:
                seen.add(id(document))
                yield from self._document(document, None, loaded=False)

    def _document(
        self, document: Document, chosen: EngineRelease | None, *, loaded: bool = True, auth: tuple[str, ...] = ()
    ) -> Iterator[Finding]:
        for path, value, is_key in walk_scalars(document.data):
            if loaded and path[:1] == ("engine",) and path[1:2] and path[1] in _WORDS:
                continue  # flag-aware below
            if not loaded and path[:2] in _LOADER_CHECKED:
                continue  # a literal there fails validation as SEC001 already
            if is_key:
                if isinstance(value, str) and has_token(value):
                    yield self.report(document, "a key holds a token-shaped literal", path, at_key=True)
                continue
            severity = _secret_severity(_setting_name(path, chosen), value, auth)
            if severity is not None:
                where = ".".join(str(part) for part in path)
                yield self.report(
                    document,
                    f"{bare(where)} {_WHAT[severity]}",
                    path,
                    hint=_HINT_REF if path[:1] == ("engine",) else self.hint,
                    severity=severity,
                )

    def _extra_args(
        self,
        document: Document,
        args: list[str],
        chosen: EngineRelease | None,
        auth: tuple[str, ...] = (),
        field: str = "extra_args",
    ) -> Iterator[Finding]:
        """Words the engine's parser reads (``extra_args``, and the launch words of ``entrypoint``/``command``)."""
        # Messages name the flag, never the value: findings end up in CI logs and SARIF.
        reported: set[int] = set()
        for index, flag, value in extra_arg_settings(args):
            if value is True:
                continue
            judged = [_secret_severity(name, value, auth) for name in (canonical_option(flag, chosen), flag)]
            severity = Severity.ERROR if Severity.ERROR in judged else Severity.WARNING if any(judged) else None
            if severity is not None:
                reported.update({index, index + 1})
                yield self.report(
                    document,
                    f"{field} passes {_WHAT_FLAG[severity]} with {bare(flag)}",
                    ("engine", field, index),
                    hint=_HINT_REF,
                    severity=severity,
                )
        for index, arg in enumerate(args):
            if has_token(arg) and index not in reported:
                yield self.report(
                    document, f"{field} holds a token-shaped literal", ("engine", field, index), hint=_HINT_REF
                )


_WORDS = ("extra_args", "entrypoint", "command")
"""The engine's word lists: judged as its parser reads them (``--api-key=VALUE``, ``--api-key VALUE``)."""
_WHAT = {
    Severity.ERROR: "holds a literal secret",
    Severity.WARNING: "is named like a secret and holds a literal word (if it is one, reference it instead)",
}
_WHAT_FLAG = {
    Severity.ERROR: "a literal secret",
    Severity.WARNING: "a literal word to an option named like a secret (if it is one, reference it instead)",
}


class ImageNotPinned(Rule):
    """Container images must be pinned: a version tag at least, a digest preferably.

    ``latest`` (or no tag, which means latest), ``nightly`` and branch tags move: two hosts
    pulling at different times run different engines, and a rollback cannot restore the
    old one. The default image (``engine.image`` unset) is the engine's official image
    tagged with ``engine.version``. ``rollout.proxy_image`` (the front proxy of
    ``rollout.strategy: auto``, which owns ``serving.port`` on every host) is held to the same
    policy. Pin ``repo@sha256:…`` for immutability.

    Fix: use a release tag matching ``engine.version``, or a digest.

    Source: Docker, pull an image by digest:
    https://docs.docker.com/reference/cli/docker/image/pull/#pull-an-image-by-digest-immutable-identifier
    """

    id = "SEC002"
    name = "security.image-pin"
    severity = Severity.WARNING
    summary = "engine or front proxy image not pinned (latest, no tag); digest pin recommended"
    sources = (_DOCKER_PIN,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            images = (
                ("image", deployment.spec.engine.image, ("engine", "image")),
                ("front proxy image", deployment.spec.rollout.proxy_image, ("rollout", "proxy_image")),
            )
            for what, image, path in images:
                moving = _unpinned(image)
                if moving:
                    yield self.report(
                        deployment.document,
                        scrub(f"{what} {quoted(image)} is not pinned ({moving})"),
                        path,
                        hint="pin a release tag or a digest (repo@sha256:...)",
                    )


def _unpinned(image: str | None) -> str:
    """Why ``image`` is not pinned (no tag, a tag that moves); empty when it is pinned or unset."""
    if image is None or "@sha256:" in image:
        return ""
    name = image.rsplit("/", 1)[-1]
    tag = name.split(":", 1)[1] if ":" in name else None
    if tag is None:
        return "no tag"
    return f"{tag} moves" if tag.lower() in _FLOATING_TAGS else ""


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
            if resolve.resolved(deployment).profile.model_format in ("tag", "key") or is_local_path(model.source):
                continue
            revision = model.revision
            if revision is not None and re.fullmatch(r"[0-9a-f]{40}", revision):
                continue
            what = "no revision" if revision is None else f"revision {quoted(revision)} is not a commit sha"
            yield self.report(
                deployment.document,
                scrub(f"{bare(model.source)}: {what}"),
                ("model", "revision") if revision is not None else ("model", "source"),
                hint="set model.revision to the 40-character commit sha you tested",
            )


class ModelPathOutsideRoots(Rule):
    """A local ``model.source`` must lie under one of the inventory's model roots.

    A local source is mounted read-only into the engine container at the same path (the
    file's folder for a ``.gguf``). Any host folder would do: ``/var/run`` hands the engine
    the Docker socket (root on the host), ``/etc`` or ``/root`` hand it credentials. The
    source must be an absolute path, without ``..``, whose mounted folder is one of
    ``defaults.model_roots`` of the inventory (default ``/var/lib/servespec/models``,
    ``/srv``, ``/data``, ``/models``, ``/mnt``, ``/opt/models``) or lies below one, compared
    after normalisation (``//`` and ``/./`` collapse). System folders are never mounted,
    whatever the roots say (an inventory is as editable as a spec): ``/proc``, ``/sys``,
    ``/dev``, ``/run``, ``/var/run``, ``/etc``, ``/boot``, ``/usr``, ``/bin``, ``/sbin``,
    ``/lib``, ``/root``, ``/var/lib/docker``, ``/var/lib/containerd``, anything below them,
    and any folder above them or above ``/home`` or ``/var/lib/servespec`` (``/``, ``/var``).
    Relative (``./m``, ``m.gguf``) and
    ``~`` sources are refused: on a host they have no meaning servespec controls (the
    container runtime has neither the author's working directory nor their home, and
    ``docker run -v`` reads a relative name as a named volume). The renderer refuses such
    a source too, so a spec that skips validation still mounts nothing else. Symbolic
    links on the host are not followed by this check: keep the model roots free of links
    that point elsewhere.

    Fix: move the model under a model root (or add its folder to ``defaults.model_roots``)
    and give its absolute path.

    Source: Docker, bind mounts (a bind mount gives the container access to that host
    path): https://docs.docker.com/engine/storage/bind-mounts/
    """

    id = "SEC004"
    name = "security.model-path"
    severity = Severity.ERROR
    evidence = (policy("exposure-on-the-hosts"),)
    summary = "local model.source outside the inventory's model roots (or relative, ~, ..)"
    hint = "use an absolute path under one of defaults.model_roots"
    sources = ("https://docs.docker.com/engine/storage/bind-mounts/",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            model = deployment.spec.model
            paths: list[tuple[str, tuple[str | int, ...]]] = [(str(model.source), ("model", "source"))]
            paths += [(str(a.source), ("model", "adapters", i, "source")) for i, a in enumerate(model.adapters)]
            if model.speculative is not None and model.speculative.draft is not None:
                paths.append((str(model.speculative.draft), ("model", "speculative", "draft")))
            for source, path in paths:
                if not is_local_path(source):
                    continue
                problem = local_source_problem(source, model_roots(deployment))
                if problem:
                    where = ".".join(str(part) if isinstance(part, str) else f"[{part}]" for part in path)
                    yield self.report(deployment.document, f"{where.replace('.[', '[')} {problem}", path)
