"""Engine knowledge: per-release option catalogs and per-engine profiles.

``data/engines/<engine>/<version>.json`` is one release's real option catalog, extracted
from that release's source (see ``data/engines/FORMAT.md``); ``profile.yaml`` beside it
holds what does not change between releases and how spec fields map onto the engine's
options. A spec's ``engine.version`` is checked against the same release when it is
catalogued, else against the nearest earlier one.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from servespec.knowledge.datafile import load_yaml_data

GGUF_ENGINES = ("llama.cpp", "ollama")
"""Engines that load GGUF files and allocate the whole context up front (no memory fraction)."""
CUDA_COMPAT_URL = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
MIN_DRIVER_FOR_CUDA_MAJOR = {11: (450, 80, 2), 12: (525, 60, 13), 13: (580, 0, 0)}
"""NVIDIA's minimum Linux driver for each CUDA major release (minor version compatibility)."""

# Cluster ports of multi-node replicas: the renderers pass them and NET002 names them.
RAY_PORT = 6379
"""Ray's own default head port, passed explicitly to vLLM's Ray cluster (``ray start --head --port``:
https://docs.ray.io/en/latest/cluster/cli.html#ray-start)."""
MASTER_PORT = 29500
"""vLLM ``--master-port``: servespec's choice, passed explicitly to every rank (any port free on the
leader works; the 0.33.0 catalog records vLLM's own default as 29501)."""
DIST_PORT = 20000
"""SGLang ``--dist-init-addr`` port: servespec's choice (SGLang has no default; any port free on the leader works)."""


def version_key(text: str) -> tuple[int, ...]:
    """Sortable numeric key: ``v0.11.0`` -> (0, 11, 0); ``b6900`` -> (6900,); suffixes ignored."""
    match = re.match(r"^[vb]?(\d+(?:\.\d+)*)", text.strip())
    if not match:
        return ()
    return tuple(int(part) for part in match.group(1).split("."))


def capability(text: str | float | int | None) -> tuple[int, int] | None:
    """Parse a compute capability written ``8.9``, ``"8.9"`` or ``89``."""
    if text is None:
        return None
    value = str(text)
    if "." in value:
        major, minor = value.split(".", 1)
        return int(major), int(minor)
    number = int(value)
    return number // 10, number % 10


@dataclass(frozen=True)
class EngineOption:
    """One option of one engine release."""

    key: str
    flag: str | None
    aliases: tuple[str, ...]
    env: str | None
    config_key: str | None
    type: str
    choices: tuple[Any, ...] | None
    min: float | None
    max: float | None
    default: Any
    bool_form: str | None
    nargs: str | None
    help: str
    deprecated: bool

    @classmethod
    def from_json(cls, key: str, data: dict[str, Any]) -> EngineOption:
        """Build from one catalog entry."""
        choices = data.get("choices")
        return cls(
            key=key,
            flag=data.get("flag"),
            aliases=tuple(data.get("aliases") or ()),
            env=data.get("env"),
            config_key=data.get("config_key"),
            type=str(data.get("type") or "str"),
            choices=tuple(choices) if choices else None,
            min=data.get("min"),
            max=data.get("max"),
            default=data.get("default"),
            bool_form=data.get("bool_form"),
            nargs=data.get("nargs"),
            help=str(data.get("help") or ""),
            deprecated=bool(data.get("deprecated", False)),
        )


@dataclass(frozen=True)
class EngineRelease:
    """One catalogued release of an engine."""

    engine: str
    version: str
    source: str
    options: dict[str, EngineOption]
    facts: dict[str, Any]

    def option(self, name: str) -> EngineOption | None:
        """An option by key, or by any of its flag spellings (``--block-size``, ``-tp``)."""
        key = normalize_option(name)
        if key in self.options:
            return self.options[key]
        return self._flags.get(name if name.startswith("-") else f"--{name}")

    @functools.cached_property
    def _flags(self) -> dict[str, EngineOption]:
        table: dict[str, EngineOption] = {}
        for option in self.options.values():
            for spelling in (option.flag, *option.aliases):
                if spelling:
                    table[spelling] = option
        return table

    def removed(self, name: str) -> dict[str, Any] | None:
        """What the catalog records about an option removed before this release."""
        removed = self.facts.get("removed_options") or self.facts.get("removed_or_renamed_options") or {}
        if isinstance(removed, dict):
            value = removed.get("value", removed)
            if isinstance(value, dict):
                entry = value.get(normalize_option(name))
                return entry if isinstance(entry, dict) else None
        return None


def normalize_option(name: str) -> str:
    """The catalog key for an option name as users write it (dashes to underscores)."""
    return name.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Profile:
    """Version-independent traits of an engine (``profile.yaml``)."""

    engine: str
    title: str
    spec_options: dict[str, str]
    batch_option: str | None
    memory_fraction_option: str | None
    tensor_parallel: bool
    pipeline_parallel: bool
    multi_node: bool
    parallelism_source: str
    quantization: dict[str, Any]
    quantization_source: str | None
    min_capability: tuple[int, int] | None
    min_capability_source: str | None
    min_capability_text: str
    auth: dict[str, Any] | None
    health_path: str
    default_port: int
    image_repository: str
    image_tag: str
    security: tuple[str, ...] = ()
    """How the engine receives its API key and which ports it opens, each note with its source (docs/engines)."""

    def image(self, version: str) -> str:
        """The engine's official image for ``version``."""
        return f"{self.image_repository}:{self.image_tag.format(version=version)}"


@dataclass(frozen=True)
class Selection:
    """The catalogued release a spec's ``engine.version`` is checked against."""

    release: EngineRelease | None
    requested: str
    relation: str
    """``exact``, ``between`` (nearest earlier used), ``newer`` (newest used), ``older`` (none usable)."""
    known: tuple[str, ...] = field(default=())


def _engine_dir(engine: str) -> Traversable:
    return resources.files("servespec.knowledge").joinpath("data", "engines", engine)


@functools.cache
def profile(engine: str) -> Profile:
    """The profile of an engine (one of ``servespec.spec.models.ENGINES``)."""
    data = load_yaml_data("engines", engine, "profile.yaml")
    minimum = data.get("min_compute_capability") or {}
    parallel = data["parallelism"]
    image = data["image"]
    return Profile(
        engine=engine,
        title=data["title"],
        spec_options=dict(data.get("spec_options") or {}),
        batch_option=data.get("batch_option"),
        memory_fraction_option=data.get("memory_fraction_option"),
        tensor_parallel=bool(parallel["tensor"]),
        pipeline_parallel=bool(parallel["pipeline"]),
        multi_node=bool(parallel["multi_node"]),
        parallelism_source=str(parallel["source"]),
        quantization=dict(data.get("quantization") or {}),
        quantization_source=data.get("quantization_source"),
        min_capability=capability(minimum.get("value")),
        min_capability_source=minimum.get("source"),
        min_capability_text=str(minimum.get("text", "")),
        auth=data.get("auth"),
        health_path=str(data["health_path"]),
        default_port=int(data["default_port"]),
        image_repository=str(image["repository"]),
        image_tag=str(image["tag"]),
        security=tuple(str(note) for note in data.get("security") or ()),
    )


@functools.cache
def releases(engine: str) -> tuple[EngineRelease, ...]:
    """Every catalogued release of an engine, oldest first."""
    found = []
    for entry in _engine_dir(engine).iterdir():
        if not entry.name.endswith(".json"):
            continue
        data = json.loads(entry.read_text(encoding="utf-8"))
        options = {key: EngineOption.from_json(key, value) for key, value in data["options"].items()}
        found.append(
            EngineRelease(
                engine=engine,
                version=str(data["version"]),
                source=str(data.get("source", "")),
                options=options,
                facts=dict(data.get("facts") or {}),
            )
        )
    stable = [r for r in found if not re.search(r"rc|dev|alpha|beta", r.version)]
    return tuple(sorted(stable or found, key=lambda r: version_key(r.version)))


def select(engine: str, version: str) -> Selection:
    """The release to check ``version`` against: itself, the nearest earlier, or the newest."""
    known = releases(engine)
    names = tuple(r.version for r in known)
    wanted = version_key(version)
    for release in known:
        if version_key(release.version) == wanted:
            return Selection(release, version, "exact", names)
    earlier = [r for r in known if version_key(r.version) < wanted]
    if not earlier:
        return Selection(None, version, "older", names)
    relation = "between" if len(earlier) < len(known) else "newer"
    return Selection(earlier[-1], version, relation, names)


def quantization_support(
    engine: str, release: EngineRelease, quantization: str
) -> tuple[bool, tuple[int, int] | None, str]:
    """(supported, minimum compute capability, source) of a spec quantization on a release."""
    prof = profile(engine)
    entry = prof.quantization.get(quantization)
    if entry is None:
        return False, None, prof.quantization_source or prof.parallelism_source
    if isinstance(entry, dict):
        return True, capability(entry.get("min_capability")), prof.quantization_source or ""
    methods = release.facts.get("quantization_methods") or {}
    if isinstance(methods.get("value"), list):  # a plain list of accepted method names
        supported = entry in methods["value"]
        return supported, None, str(methods.get("source", release.source))
    table = methods.get("methods", methods)
    method = table.get(entry) if isinstance(table, dict) else None
    if not isinstance(method, dict):
        return False, None, str(release.source)
    return True, capability(method.get("min_capability")), str(method.get("source", release.source))


def image_cuda(release: EngineRelease) -> tuple[tuple[int, int] | None, str]:
    """The CUDA version the release's official image is built with, and where that is stated."""
    facts = release.facts
    candidates: list[tuple[Any, Any]] = []
    image = facts.get("image")
    if isinstance(image, dict):
        candidates.append((image.get("cuda_version") or image.get("wheel_cuda_version"), image.get("source")))
    images = facts.get("official_images") or facts.get("official_image")
    if isinstance(images, dict):
        value = images.get("value", images)
        if isinstance(value, dict):
            variants = value.get("variants", {})
            cuda = variants.get("cuda", {}) if isinstance(variants, dict) else {}
            candidates.append(
                (cuda.get("cuda_version") or value.get("cuda_dockerfile_default_cuda_version"), images.get("source"))
            )
            versions = value.get("cuda_versions")
            if versions:
                candidates.append((str(versions[0]).split()[0], images.get("source")))
    cuda = facts.get("image_cuda")
    if isinstance(cuda, dict):
        match = re.search(r"CUDA (\d+\.\d+)", str(cuda.get("value", "")))
        candidates.append((match.group(1) if match else None, cuda.get("source")))
    for value, source in candidates:
        if value:
            match = re.match(r"(\d+)\.(\d+)", str(value))
            if match:
                return (int(match.group(1)), int(match.group(2))), str(source or release.source)
    return None, ""
