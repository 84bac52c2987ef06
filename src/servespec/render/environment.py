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
import shlex
from pathlib import Path
from typing import Any

RENDERERS = Path(__file__).resolve().parents[3] / "renderers"
"""Template folders, one per engine, plus ``_common``. Installed copies ship them as package data."""


class RenderError(ValueError):
    """A value that cannot be written safely into its target syntax."""


def to_yaml(value: Any) -> str:
    """Serialize with ruamel.yaml: block style, keys in the order given, no anchors."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.representer.ignore_aliases = lambda *_: True
    yaml.width = 4096
    stream = io.StringIO()
    yaml.dump(value, stream)
    return stream.getvalue()


def to_json(value: Any) -> str:
    """Serialize as indented JSON with a trailing newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def shell_join(words: list[Any]) -> str:
    """One shell command line; every word quoted so nothing in it is interpreted."""
    return " ".join(shlex.quote(str(word)) for word in words)


def env_value(value: Any) -> str:
    """A value for a Docker env file (``KEY=value``, taken literally up to the line end)."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if "\n" in text or "\r" in text or "\x00" in text:
        raise RenderError(f"environment value {text!r} spans lines")
    return text


def modelfile_value(value: Any) -> str:
    """A Modelfile PARAMETER/FROM value; quoted when it holds spaces or quotes."""
    text = env_value(value)
    if any(ch in text for ch in ' "\\\t#'):
        return json.dumps(text)
    return text


def _template_root() -> Path:
    packaged = Path(__file__).resolve().parent / "templates"
    return packaged if packaged.is_dir() else RENDERERS


@functools.cache
def environment() -> Any:
    """The Jinja2 environment: StrictUndefined, trailing newlines kept, blocks trimmed."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_template_root())),
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
    )
    return env


def render_template(name: str, context: dict[str, Any]) -> str:
    """Render ``renderers/<name>`` with ``context``."""
    return str(environment().get_template(name).render(**context))
