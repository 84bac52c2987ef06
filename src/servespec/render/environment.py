"""The one Jinja environment every renderer uses, with escaping filters for each target syntax.

Templates only lay values out. Anything a spec supplies reaches a rendered file through a
filter that escapes it for that file's syntax: shell words with ``shlex.quote``, YAML and
JSON through their serializers, env-file values checked to be single-line. Jinja never
evaluates data as a template, so ``{{ }}`` inside a value stays literal text.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from servespec.engines.kit import RenderError as RenderError
from servespec.engines.kit import shell_join as shell_join
from servespec.engines.kit import triple_quote_problem, triple_quoted
from servespec.spec.document import quote_value
from servespec.text import UNSAFE, unsafe_character

RENDERERS = Path(__file__).resolve().parents[3] / "renderers"
"""``_common``: the templates every engine shares (each engine's own are in its unit's ``templates/``)."""


_HIDDEN = re.compile(r"(?![\n\t])" + UNSAFE.pattern)
"""Unsafe characters but line breaks and tabs, which YAML and JSON serializers write safely."""


def _strings(value: Any) -> Iterator[str]:
    """Every string in ``value``: the strings themselves, mapping keys and values, list items."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _refuse_hidden(value: Any, syntax: str) -> None:
    """RenderError when a string in ``value`` holds a character that makes a file read differently than it is."""
    for text in _strings(value):
        match = _HIDDEN.search(text)
        if match:
            bad = f"U+{ord(match.group()):04X}"
            raise RenderError(f"{syntax} value {quote_value(text, limit=80)} carries {bad}, which is never rendered")


def to_yaml(value: Any) -> str:
    """Serialize with ruamel.yaml: block style, keys in the order given, no anchors.

    Bidi, zero-width, line-separator and control characters (but line breaks and tabs)
    are refused: ruamel writes some of them raw.
    """
    from ruamel.yaml import YAML

    _refuse_hidden(value, "YAML")

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.representer.ignore_aliases = lambda *_: True
    yaml.width = 4096
    stream = io.StringIO()
    yaml.dump(value, stream)
    return stream.getvalue()


def to_json(value: Any) -> str:
    """Serialize as indented JSON with a trailing newline.

    json escapes C0 controls itself; the other unsafe characters (C1, bidi, zero-width,
    U+2028/2029) become ``\\uXXXX`` escapes too: the same value, inert bytes.
    """
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    return _HIDDEN.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def env_value(value: Any) -> str:
    """A value for a Docker env file (``KEY=value``, taken literally up to the line end)."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if "\n" in text or "\r" in text or "\x00" in text:
        raise RenderError(f"environment value {quote_value(text, limit=80)} spans lines")
    bad = unsafe_character(text)
    if bad:
        raise RenderError(f"environment value {quote_value(text, limit=80)} carries {bad}, which is never rendered")
    return text


def modelfile_value(value: Any) -> str:
    """A Modelfile PARAMETER/FROM value; quoted when it holds spaces or quotes."""
    text = env_value(value)
    if any(ch in text for ch in ' "\\\t#'):
        return json.dumps(text)
    return text


def modelfile_text(value: Any) -> str:
    """A Modelfile SYSTEM value: one ``\"\"\"`` string, line breaks kept (Ollama's parser has no escape).

    Refused (RenderError) where the parser would end it early or drop characters
    (:func:`servespec.engines.kit.triple_quote_problem`); ENG004 reports such a prompt first.
    """
    text = str(value)
    problem = triple_quote_problem(text)
    if problem:
        raise RenderError(f"Modelfile text {quote_value(text, limit=80)} cannot be written: {problem}")
    return triple_quoted(text)


def _template_root() -> Path:
    packaged = Path(__file__).resolve().parent / "templates"
    return packaged if packaged.is_dir() else RENDERERS


def _loader() -> Any:
    """``_common/...`` from renderers/, ``<engine>/...`` from that engine unit's ``templates/``."""
    import jinja2

    from servespec.engines import ENGINES

    folders = {engine.name: jinja2.FileSystemLoader(str(engine.templates)) for engine in ENGINES}
    return jinja2.PrefixLoader({"_common": jinja2.FileSystemLoader(str(_template_root() / "_common")), **folders})


@functools.cache
def environment() -> Any:
    """The Jinja2 environment: StrictUndefined, trailing newlines kept, blocks trimmed."""
    import jinja2

    env = jinja2.Environment(
        loader=_loader(),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters.update(
        to_yaml=to_yaml,
        to_json=to_json,
        shell_join=shell_join,
        env_value=env_value,
        modelfile_value=modelfile_value,
        modelfile_text=modelfile_text,
    )
    return env


def render_template(name: str, context: dict[str, Any]) -> str:
    """Render the template ``<engine>/<file>`` (or ``_common/<file>``) with ``context``."""
    return str(environment().get_template(name).render(**context))
