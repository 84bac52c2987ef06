"""How an engine reads its options: ``extra_args`` flags, the spellings its parser takes, nesting, typed values."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from servespec.engines.catalog import EngineOption, EngineRelease, normalize_option
from servespec.engines.profile import Arguments
from servespec.spec.grammars import MAX_FLOAT, MAX_INT
from servespec.text import is_number


def coerce(kind: str, value: Any) -> Any:
    """A raw option value as the option's type; raises ValueError when it is not one."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "false"):
            return str(value).lower() == "true"
        raise ValueError(value)
    if kind == "int" and not isinstance(value, bool):
        whole = int(str(value), 10)
        if abs(whole) > MAX_INT:
            raise ValueError(value)
        return whole
    if kind == "float" and not isinstance(value, bool):
        number = float(str(value))
        if not abs(number) <= MAX_FLOAT:  # "inf", "nan" and "1e309" parse as floats; no option means them
            raise ValueError(value)
        return number
    return value


def extra_arg_settings(args: list[str]) -> Iterator[tuple[int, str, Any]]:
    """(index, flag, value) for each flag in ``extra_args``; a flag without a value is ``True``."""
    for index, arg in enumerate(args):
        if not arg.startswith("-") or len(arg) < 2 or arg[1:].replace(".", "").isdigit():
            continue
        flag, equals, inline = arg.partition("=")
        if equals:
            yield index, flag, inline
        elif index + 1 < len(args) and (not args[index + 1].startswith("-") or is_number(args[index + 1])):
            yield index, flag, args[index + 1]
        else:
            yield index, flag, True


@dataclass(frozen=True)
class Setting:
    """One engine option as the spec sets it, in any spelling, with where the user wrote it."""

    key: str
    """The release catalog's key (``block_size``), or the normalised name of an unknown option."""
    name: str
    """As written: ``block_size``, ``block-size``, ``--block-size`` or ``-bs``."""
    raw: Any
    """The value as written (a string for ``extra_args``; ``True`` for a flag without a value)."""
    value: Any
    """``raw`` typed by the option's catalog type; ``raw`` itself when it does not parse (``valid`` False)."""
    valid: bool
    path: tuple[str | int, ...]
    """``("engine", "options", name)`` or ``("engine", "extra_args", index)``."""
    from_extra_args: bool
    option: EngineOption | None = None
    """The release's option it sets, as the engine's parser reads the spelling (None: unknown)."""

    @property
    def at_key(self) -> bool:
        """Whether a finding about it points at the mapping key (``engine.options``) rather than a list item."""
        return not self.from_extra_args


def _has_children(release: EngineRelease, key: str) -> bool:
    """Whether the release catalogues keys below ``key`` (``kv_cache_config.dtype`` below ``kv_cache_config``)."""
    prefix = normalize_option(key) + "."
    return any(name.startswith(prefix) for name in release.options)


def nested(
    release: EngineRelease | None, name: str, value: Any, path: tuple[str | int, ...]
) -> list[tuple[str, Any, tuple[str | int, ...], bool]]:
    """One ``engine.options`` entry as settings: a mapping under a key with catalogued children, one per leaf.

    ``kv_cache_config: {dtype: fp8}`` is the setting ``kv_cache_config.dtype`` located at the
    nested key, so it is checked (and rendered) exactly as the dotted spelling is. A mapping
    under a key the release catalogues no children of (a ``dict`` option such as
    ``lora_config``, or an unknown key) stays one setting, passed through as given.
    """
    if not isinstance(value, dict) or not value or release is None or not _has_children(release, name):
        return [(name, value, path, False)]
    out: list[tuple[str, Any, tuple[str | int, ...], bool]] = []
    for child, item in value.items():
        out += nested(release, f"{name}.{child}", item, (*path, str(child)))
    return out


def _long_spellings(release: EngineRelease) -> dict[str, tuple[EngineOption, bool]]:
    """Every long option string of the release -> (its option, whether it is the ``--no-`` form)."""
    spellings: dict[str, tuple[EngineOption, bool]] = {}
    for option in release.options.values():
        for spelling in (option.flag, *option.aliases):
            if spelling and spelling.startswith("--"):
                spellings[spelling] = (option, False)
                if option.bool_form == "negatable":
                    spellings["--no-" + spelling[2:]] = (option, True)
    return spellings


def spelled(release: EngineRelease, arguments: Arguments, flag: str, value: Any) -> tuple[EngineOption | None, Any]:
    """The option an ``extra_args`` flag names as the release's own parser reads it, and its value.

    ``--no-x`` of a negatable ``--x`` is ``x: false``; vLLM reads ``_`` in a name as ``-``
    (``--max_model_len``); argparse takes a unique prefix of a long option (SGLang
    ``--tp`` for ``--tp-size``: ``allow_abbrev`` left at True) among every long spelling,
    ``--no-`` forms included. Parsers without these (clap, click, llama.cpp) match exactly:
    trtllm-serve refuses ``--max-batch-size`` for its ``--max_batch_size``.
    """
    option = release.option(flag)
    if option is not None and flag in (option.flag, *option.aliases):
        return option, value  # the release's own spelling (trtllm-serve's --max_batch_size, vLLM's -tp)
    if not flag.startswith("--"):
        return None, value
    if arguments.underscores and "_" in flag:
        option = release.option("--" + flag[2:].split(".", 1)[0].replace("_", "-"))
        if option is not None:
            return option, value
    spellings = _long_spellings(release)
    wanted = flag.replace("_", "-") if arguments.underscores else flag
    found = spellings.get(wanted)
    if found is None and arguments.abbreviations:
        prefixed = {spellings[s][0].key: spellings[s] for s in spellings if s.startswith(wanted)}
        found = next(iter(prefixed.values())) if len(prefixed) == 1 else None
    if found is None:
        return None, value
    option, negative = found
    return option, (False if negative and value is True else value)
