"""A chat template checked as Jinja syntax, parsed and never rendered.

Engines that read a Hugging Face chat template compile it with transformers' environment:
``ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[AssistantTracker, jinja2.ext.loopcontrols])`` (``_compile_jinja_template`` in
transformers' utils/chat_template_utils.py), so ``{% break %}``/``{% continue %}`` and
``{% generation %}...{% endgeneration %}`` are part of the language a template may use. Parsing
runs none of the template's code; its text is data the whole way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

TRANSFORMERS_COMPILE = (
    "https://github.com/huggingface/transformers/blob/v4.57.1/src/transformers/utils/chat_template_utils.py"
)
"""Where transformers builds the environment chat templates are compiled in (``_compile_jinja_template``)."""


@dataclass(frozen=True)
class SyntaxProblem:
    """Where jinja2's parser stopped, and why (quoted parts of the template masked)."""

    line: int
    reason: str


def _generation_extension() -> Any:
    """transformers' ``AssistantTracker`` tag, for parsing: ``{% generation %}`` ... ``{% endgeneration %}``."""
    from jinja2 import nodes
    from jinja2.ext import Extension

    class Generation(Extension):
        tags = {"generation"}  # noqa: RUF012 - jinja2 declares it a set

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body, lineno=lineno)

    return Generation


def syntax_problem(text: str) -> SyntaxProblem | None:
    """The first Jinja syntax error of ``text`` (None: jinja2 parses it as transformers would)."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_generation_extension(), "jinja2.ext.loopcontrols"]
    )
    try:
        environment.parse(text)
    except jinja2.TemplateSyntaxError as err:
        # jinja2 quotes the template's own tokens ('foo'); a finding never repeats a referenced file's text.
        reason = re.sub(r"'[^']*'", "'…'", str(err.message or "syntax error"))
        return SyntaxProblem(err.lineno or 1, reason[:200])
    return None
