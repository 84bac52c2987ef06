"""XInference (``xinference-local``, then a launch request): a model platform over vLLM, SGLang, llama.cpp, ...

The server starts with no model; a model is started by ``POST /v1/models`` (what ``xinference
launch`` sends), naming a model of XInference's built-in registry (``model_name``,
``model_format``, ``model_size_in_billions``, ``quantization``), the engine that runs it
(``model_engine``) and keyword options forwarded to that engine. In a spec the forwarded
options are a block named after the engine (``engine.options.vllm``, ``engine.options.sglang``),
checked against the catalog of the engine release the XInference image bundles (the
release file's ``bundled``, read from the image's Dockerfile by scripts/catalog/xinference.py).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from servespec.engines.base import Engine, EngineCheck
from servespec.engines.catalog import Catalog, ContextDefault, EngineOption, EngineRelease, ExclusiveBounds
from servespec.engines.xinference.blocks import BLOCKS, UNCHECKED

if TYPE_CHECKING:
    from servespec.engines.base import Known

CORE_SOURCE = "https://github.com/xorbitsai/inference/blob/{tag}/xinference/model/llm/vllm/core.py"


@dataclass(frozen=True)
class Bundled:
    """The engine release an XInference image carries, and how servespec knows."""

    engine: str
    version: str
    how: str
    source: str
    release: EngineRelease | None


@dataclass(frozen=True)
class XinferenceCatalog(Catalog):
    """XInference's own options, plus each bundled engine's options under its block (``vllm.max_num_seqs``)."""

    @functools.cache  # noqa: B019 - one Catalog per engine, kept for the process
    def raw(self, version: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.folder.joinpath(f"{version}.json").read_text(encoding="utf-8"))
        return data

    @functools.cache  # noqa: B019
    def bundled(self, version: str) -> dict[str, Bundled | None]:
        """Block -> the engine release the image of ``version`` bundles (None: none, or not pinned)."""
        from servespec import engines

        out: dict[str, Bundled | None] = {}
        for block, entry in (self.raw(version).get("bundled") or {}).items():
            if not entry:
                out[block] = None
                continue
            chosen = engines.get(BLOCKS[block]).select(str(entry["version"]))
            release = chosen.release if chosen.relation == "exact" else None
            out[block] = Bundled(BLOCKS[block], str(entry["version"]), str(entry["how"]), str(entry["source"]), release)
        return out

    def forwarded_defaults(self, version: str, block: str) -> dict[str, Any]:
        """What XInference sets before calling the engine (``_sanitize_model_config``'s setdefault)."""
        return dict((self.raw(version).get("forwarded_defaults") or {}).get(block) or {})

    @functools.cache  # noqa: B019
    def release(self, version: str) -> EngineRelease:
        own = super().release(version)
        options = dict(own.options)
        bounds = dict(own.facts.option_bounds_exclusive)
        bundled = self.bundled(version)
        partial = own.partial
        for block, found in bundled.items():
            if found is None and not any(bundled.values()):
                # an image with no engine at all (3.0 on: installed per model): only what XInference itself
                # sets is known, so the catalog is partial (an option it lacks may exist: ENG001 warns)
                partial = True
                for key, value in self.forwarded_defaults(version, block).items():
                    options[f"{block}.{key}"] = _set_by_xinference(f"{block}.{key}", key, value)
                continue
            if found is None or found.release is None:
                why = "the image bundles no pinned release of it" if found is None else "its release is not catalogued"
                options[block] = _unchecked(block, f"{BLOCKS[block]}: {why}; forwarded unchecked")
                continue
            defaults = self.forwarded_defaults(version, block)
            for key, option in found.release.options.items():
                name = f"{block}.{key}"
                default = defaults[key] if key in defaults and defaults[key] is not None else option.default
                options[name] = dataclasses.replace(
                    option, key=name, flag=None, aliases=(), env=None, config_key=key, default=default
                )
            for key, bound in found.release.facts.option_bounds_exclusive.items():
                bounds[f"{block}.{key}"] = ExclusiveBounds.model_validate(bound.model_dump())
        for block, why in UNCHECKED.items():
            options.setdefault(block, _unchecked(block, why))
        update: dict[str, Any] = {"option_bounds_exclusive": bounds}
        for found in self.bundled(version).values():
            if found is not None and found.release is not None and found.release.facts.context_default is not None:
                # the context served when the spec sets none: the bundled engine's (vLLM's first)
                update.setdefault("context_default", found.release.facts.context_default)
        # nothing bundled: the engine derives the context from the model (XInference passes max_model_len None:
        # vllm/core.py _sanitize_model_config), as vLLM and SGLang do
        update.setdefault("context_default", ContextDefault(source=CORE_SOURCE.format(tag=f"v{version}")))
        facts = own.facts.model_copy(update=update)
        return dataclasses.replace(own, options=options, facts=facts, partial=partial)


def _set_by_xinference(name: str, key: str, value: Any) -> EngineOption:
    """An engine option XInference itself sets (its setdefault), where the engine's release is not known."""
    kind = {bool: "bool", int: "int", float: "float"}.get(type(value), "str")
    return EngineOption(
        key=name, flag=None, aliases=(), env=None, config_key=key, type=kind, choices=None, min=None, max=None,
        default=value, bool_form=None, nargs=None, help="set by XInference before it calls the engine "
        "(_sanitize_model_config); the engine release is installed per model, so nothing else is known",
        deprecated=False,
    )  # fmt: skip


def _unchecked(block: str, why: str) -> EngineOption:
    return EngineOption(
        key=block, flag=None, aliases=(), env=None, config_key=None, type="dict", choices=None, min=None, max=None,
        default=None, bool_form=None, nargs=None, help=f"options forwarded to the engine as given ({why})",
        deprecated=False,
    )  # fmt: skip


class Xinference(Engine):
    name = "xinference"
    package = __name__

    @functools.cached_property
    def catalog(self) -> XinferenceCatalog:
        return XinferenceCatalog(self.name, self.folder.joinpath("releases"))

    def bundled(self, release: EngineRelease | None, block: str) -> Bundled | None:
        """The bundled engine release of ``block`` in the image of ``release``."""
        if release is None or release.version not in self.catalog.files:
            return None
        return self.catalog.bundled(release.version).get(block)

    def checks(self, known: Known) -> Iterator[EngineCheck]:
        from servespec.engines.xinference.checks import checks

        return checks(known)

    def default_served_name(self, known: Known) -> str | None:
        """XInference's own model UID when the launch request names none: the registry ``model_name`` it launches."""
        from servespec.engines.xinference.registry import launched_name

        release = known.release
        source = str(known.deployment.spec.model.source)
        return launched_name(source, release.version if release else None, known.options)


ENGINE = Xinference()
