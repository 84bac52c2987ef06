"""What the engine reads besides its options: the chat-template file and the secret environment.

Helpers of ENG002 (a chat template the engine's Jinja parser refuses) and ENG003 (an
``engine.secret_env`` name servespec or the engine's own options already use); each yields
``(message, path, hint)`` for the rule to report.
"""

from __future__ import annotations

from collections.abc import Iterator

from servespec.engines.kit import CHAT_TEMPLATE_FIELD
from servespec.knowledge import resolve
from servespec.spec.document import KeyPath
from servespec.spec.fleet import DeploymentDoc

Problem = tuple[str, KeyPath, str]


def chat_template_syntax(deployment: DeploymentDoc) -> Iterator[Problem]:
    """The chat template's first Jinja syntax error, where the engine compiles it (its profile maps the field).

    Parsed with transformers' environment and never rendered; the message names the template's
    line and never repeats its text (a referenced file's contents stay out of findings).
    """
    from servespec.knowledge.chat_template import syntax_problem

    text = deployment.chat_template
    if text is None or CHAT_TEMPLATE_FIELD not in resolve.resolved(deployment).profile.spec_options:
        return
    problem = syntax_problem(text)
    if problem is not None:
        yield (
            f"the chat template is not valid Jinja: line {problem.line} of the file: {problem.reason} "
            "(the engine's template compiler refuses it, so every chat request fails)",
            ("serving", "chat_template"),
            f"fix line {problem.line} of the template",
        )


def secret_env_collisions(deployment: DeploymentDoc) -> Iterator[Problem]:
    """``engine.secret_env`` names the engine's API-key variable or a variable one of its options is read from.

    Either way two values would meet under one name in the container's environment (Docker keeps
    the last one given), so the secret or the setting would be lost without a word.
    """
    known = resolve.resolved(deployment)
    profile, release = known.profile, known.release
    by_env = {option.env: key for key, option in (release.options.items() if release else ()) if option.env}
    for name in deployment.spec.engine.secret_env:
        path: KeyPath = ("engine", "secret_env", name)
        if profile.auth is not None and name == profile.auth.env:
            yield (
                f"engine.secret_env.{name} is the variable servespec gives serving.api_key to on {profile.title}",
                path,
                "set the key as serving.api_key (the smoke test then sends it too)",
            )
        elif name in by_env:
            yield (
                f"engine.secret_env.{name} is the variable {profile.title} {release.version if release else ''} reads "
                f"its option {by_env[name]} from",
                path,
                f"set engine.options.{by_env[name]} instead, or choose another name",
            )
