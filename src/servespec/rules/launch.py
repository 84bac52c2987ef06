"""ENG rules of how the server is started and named: launch words (engine.entrypoint, engine.command)
and served model names (serving.model_name, serving.model_aliases)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from servespec.engines.kit import CHAT_TEMPLATE_FIELD, triple_quote_problem
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.knowledge.served import default_served_name
from servespec.redact import scrub
from servespec.rules.base import Rule, bare, contract
from servespec.spec.fleet import DeploymentDoc, Fleet

SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "busybox"})
"""Programs that read a script from ``-c``: the words after the script are its ``$0``, ``$1``..., not the server's."""
_SCRIPT_OPTION = re.compile(r"^-[A-Za-z]*c[A-Za-z]*$")
_DOCKER_ENTRYPOINT = "https://docs.docker.com/reference/dockerfile/#entrypoint"
_BASH_C = "https://www.gnu.org/software/bash/manual/bash.html#Invoking-Bash"
_OLLAMA_PARSER = "https://github.com/ollama/ollama/blob/v0.32.15/parser/parser.go"


def _words(deployment: DeploymentDoc) -> Iterator[tuple[str, int, str]]:
    """(field, index, word) of engine.entrypoint, then engine.command."""
    engine = deployment.spec.engine
    for name in ("entrypoint", "command"):
        for index, word in enumerate(getattr(engine, name) or []):
            yield name, index, word


class LaunchWords(Rule):
    """``engine.entrypoint`` and ``engine.command`` start the server; they carry no engine options.

    For images that start the server another way (older vLLM images'
    ``python3 -m vllm.entrypoints.openai.api_server``, NGC containers whose entrypoint runs
    the words it is given), ``engine.entrypoint`` replaces the image's entrypoint and
    ``engine.command`` the words servespec starts the server with; the rendered arguments
    are appended, and ENG001-ENG003 check them as always. So the words themselves are
    refused where they would escape those checks or lose the arguments:

    - a word the release's parser reads as one of its options (``--max-model-len``,
      ``--api-key=...``): set it under ``engine.options`` or ``extra_args``, where it is checked;
    - a shell given a script (``bash -c '...'``): the words run without a shell, and the
      rendered arguments would become the script's ``$0``, ``$1``, never the server's;
    - a launcher servespec cannot replace: SGLang with ``serving.api_key`` starts through
      servespec's own key launcher (the key reaches no command line), which runs
      ``sglang.launch_server`` itself.

    Only long options (``--x``) are compared with the catalog: short ones (``-m``, ``-c``)
    are the launchers' own (``python3 -m``).

    Fix: move the option into ``engine.options``; name the program itself instead of a
    shell; drop ``engine.entrypoint``/``engine.command`` or the API key.

    Source: https://docs.docker.com/reference/dockerfile/#entrypoint ;
    https://www.gnu.org/software/bash/manual/bash.html#Invoking-Bash
    """

    id = "ENG005"
    name = "engine.launch-words"
    severity = Severity.ERROR
    evidence = (
        contract(
            "11-deployment",
            note="The rendered arguments are appended to the launch words (§5): a shell script or a replaced "
            "launcher would lose them. An engine option in the launch words only escapes the checks: a warning.",
        ),
    )
    summary = "engine.entrypoint / engine.command carries an engine option, a shell script, or cannot be used"
    sources = (_DOCKER_ENTRYPOINT, _BASH_C)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            engine = deployment.spec.engine
            if engine.entrypoint is None and engine.command is None:
                continue
            known = resolve.resolved(deployment)
            yield from self._options(known)
            yield from self._shell(deployment)
            profile = known.profile
            if profile.auth and profile.auth.own_launcher and deployment.spec.serving.api_key is not None:
                where = "entrypoint" if engine.entrypoint is not None else "command"
                yield self.report(
                    deployment.document,
                    f"engine.{where} cannot be used with serving.api_key on {profile.title}: servespec starts the "
                    "server with its own launcher, which keeps the key off every command line",
                    ("engine", where),
                    hint="drop engine.entrypoint and engine.command, or the API key",
                )

    def _options(self, known: resolve.Resolved) -> Iterator[Finding]:
        deployment, release = known.deployment, known.release
        if release is None:
            return
        for field, index, word in _words(deployment):
            if not word.startswith("--") or word == "--":
                continue
            option = release.option(word.partition("=")[0])
            if option is not None:
                yield self.report(
                    deployment.document,
                    scrub(
                        f"engine.{field}[{index}] {bare(word.partition('=')[0])} is a "
                        f"{known.profile.title} {release.version} option: in the launch words it "
                        "escapes servespec's checks"
                    ),
                    ("engine", field, index),
                    hint=f"set it under engine.options ({option.key}) instead",
                    severity=Severity.WARNING,
                )

    def _shell(self, deployment: DeploymentDoc) -> Iterator[Finding]:
        words = list(_words(deployment))
        if not words or PurePosixPath(words[0][2]).name not in SHELLS:
            return
        for field, index, word in words[1:]:
            if _SCRIPT_OPTION.match(word):
                yield self.report(
                    deployment.document,
                    f"engine.{field}[{index}] {bare(word)} runs a shell script: the rendered arguments would be "
                    "its $0, $1..., not the server's (servespec runs the words without a shell)",
                    ("engine", field, index),
                    hint="name the server program itself; put environment in engine.env",
                )
                return


class ServedNameNotRendered(Rule):
    """``serving.model_name`` and ``serving.model_aliases`` are served as written, or said otherwise.

    Unset, the engine serves under its own name (``model.source`` as written; trtllm-serve
    names a local directory by its last path component), and servespec renders no option.
    Set, they render to the engine's own option: vLLM ``--served-model-name`` (several
    names), SGLang ``--served-model-name`` (one), llama.cpp ``--alias`` (comma-separated
    names), trtllm-serve ``--served_model_name`` (one, from the releases that have it), and
    Ollama creates one model per name (``ollama create NAME``). Where that is not possible
    this warns, saying what the engine does with a request naming the model instead:

    - TGI has no served-name option: it answers whatever model a request names and lists
      ``model.source`` in ``/v1/models``;
    - a release whose catalog lacks the engine's option (trtllm-serve before 1.3.0rc24);
    - aliases on engines that serve one name (SGLang, TGI, TensorRT-LLM): only the first
      name is rendered.

    The same holds for what the engine says by default in a chat (``serving.chat_template``,
    ``serving.system_prompt``). A Jinja chat template is rendered where the engine takes a
    template file (vLLM and SGLang ``--chat-template``, llama.cpp ``--chat-template-file``,
    trtllm-serve ``--chat_template`` from 1.2.1; a partial catalog that does not list the option
    renders nothing); this warns where it is not: TGI, XInference, LM Studio
    and OpenLLM take none, and Ollama's ``TEMPLATE`` is a Go template, not Jinja. A system
    prompt is rendered only where the engine has a default one (Ollama's Modelfile ``SYSTEM``);
    elsewhere this warns. A prompt Ollama's Modelfile parser would cut short (three double
    quotes followed by white space: it has no escape) or strip (non-printable characters) is an
    error: the parser would read the rest as Modelfile commands.

    Fix: send the name the engine serves (the README shows it), pin a release with the
    option, or drop the aliases; put the chat template into the model repository, or choose
    an engine that takes one.

    Source: each engine's ``served_name`` note in its profile (docs/engines/<engine>.md), e.g.
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/api_server.py ;
    Ollama's Modelfile parser: https://github.com/ollama/ollama/blob/v0.32.15/parser/parser.go
    """

    id = "ENG004"
    name = "engine.served-name"
    severity = Severity.WARNING
    summary = (
        "serving.model_name, model_aliases, chat_template or system_prompt cannot be served as written by this "
        "engine release"
    )
    sources = (
        "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/api_server.py",
        _OLLAMA_PARSER,
    )
    evidence = (
        contract(
            "11-deployment",
            note="Only a system prompt Ollama's Modelfile cannot hold is an error: its parser has no escape for "
            '`"""` and drops non-printable characters (parser.go ParseFile/unquote, v0.32.15), so the renderer '
            "refuses to write a prompt the engine would read otherwise; every other finding of the rule warns.",
        ),
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            yield from self._chat_defaults(deployment)
            serving = deployment.spec.serving
            if serving.model_name is None and not serving.model_aliases:
                continue
            known = resolve.resolved(deployment)
            profile = known.profile
            served = profile.served_name
            release = known.release
            default = default_served_name(deployment)
            if served.option is None and not served.several:
                missing = f"{profile.title} has no option naming the served model"
            elif served.option is not None and release is not None and release.option(served.option) is None:
                missing = f"{profile.title} {release.version} has no {served.option} option"
            else:
                missing = ""
            if missing and serving.model_name is not None:
                yield self.report(
                    deployment.document,
                    f"{missing}: it serves {default!r} (a request naming {serving.model_name!r}: {served.other_names})",
                    ("serving", "model_name"),
                    hint=f"clients send {default!r}, or drop serving.model_name",
                )
            if serving.model_aliases and (missing or not served.several):
                why = missing or f"{profile.title} serves one name"
                yield self.report(
                    deployment.document,
                    f"{why}: serving.model_aliases are not rendered (a request naming one: {served.other_names})",
                    ("serving", "model_aliases"),
                    hint="drop the aliases, or choose an engine that serves several names",
                )

    def _chat_defaults(self, deployment: DeploymentDoc) -> Iterator[Finding]:
        """``serving.chat_template`` and ``serving.system_prompt`` where the engine cannot take them as written."""
        serving = deployment.spec.serving
        known = resolve.resolved(deployment)
        profile, release = known.profile, known.release
        option = profile.spec_options.get(CHAT_TEMPLATE_FIELD)
        if serving.chat_template is not None and option is None:
            yield self.report(
                deployment.document,
                f"{profile.title} takes no Jinja chat-template file: serving.chat_template is not rendered "
                "(the model's own template applies)",
                ("serving", "chat_template"),
                hint="put the template into the model repository, or choose an engine that takes one "
                "(docs/engines: Chat template)",
            )
        elif (
            serving.chat_template is not None
            and release is not None
            and release.partial
            and not release.option(option or "")
        ):
            yield self.report(
                deployment.document,
                f"{profile.title} {release.version}'s catalog is partial and lists no {option} option: "
                "serving.chat_template is not rendered (the model's own template applies)",
                ("serving", "chat_template"),
                hint="pin a release whose catalog lists it",
            )
        prompt = serving.system_prompt
        if prompt is None:
            return
        if profile.system_prompt is None:
            yield self.report(
                deployment.document,
                f"{profile.title} has no default system prompt: serving.system_prompt is not rendered",
                ("serving", "system_prompt"),
                hint="send the system message with each request, or put it into serving.chat_template",
            )
        elif problem := triple_quote_problem(prompt):
            yield self.report(
                deployment.document,
                f"serving.system_prompt cannot be written into {profile.title}'s {profile.system_prompt}: {problem}",
                ("serving", "system_prompt"),
                hint='reword the prompt without """ before a space or line break, and without invisible characters',
                severity=Severity.ERROR,
            )
