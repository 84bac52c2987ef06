"""The engine image a deployment runs, whether it is the engine's official one, and the driver it needs.

One function for validate (HW005) and apply's preflight, so that both agree on what is
official: a reference names the official image when it matches the profile's image for
``engine.version`` up to a digest and Docker Hub's implicit prefixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from servespec.engines.base import Engine
from servespec.engines.catalog import EngineRelease

CUDA_COMPAT_URL = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
MIN_DRIVER_FOR_CUDA_MAJOR = {11: (450, 80, 2), 12: (525, 60, 13), 13: (580, 0, 0)}
"""NVIDIA's minimum Linux driver for each CUDA major release (minor version compatibility)."""

_HUB_PREFIXES = ("docker.io/library/", "docker.io/", "index.docker.io/library/", "index.docker.io/")


def image_name(reference: str) -> str:
    """repository:tag without a digest or Docker Hub's implicit prefixes (``docker.io/library/``)."""
    name = reference.split("@", 1)[0]
    for prefix in _HUB_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


@dataclass(frozen=True)
class ImagePolicy:
    """What servespec knows about the image a deployment runs."""

    image: str
    """The reference the container runs (``engine.image``, else the official image)."""
    official: bool
    cuda: tuple[int, int] | None
    """The CUDA major.minor the official image is built with (None: custom image, or not catalogued)."""
    cuda_source: str
    min_driver: tuple[int, ...] | None
    """The lowest driver that runs it (minor version compatibility), None when unknown."""

    @property
    def min_driver_text(self) -> str:
        return ".".join(str(part) for part in self.min_driver) if self.min_driver else ""


def image_policy(engine: Engine, version: str, image: str | None, release: EngineRelease | None) -> ImagePolicy:
    """The image of ``engine`` at ``version`` (``image``: the spec's ``engine.image``), checked against ``release``."""
    official_image = engine.profile.image_for(version)
    official = image is None or image_name(image) == image_name(official_image)
    fact = release.facts.image_cuda if release is not None and official else None
    match = re.fullmatch(r"(\d+)\.(\d+)", fact.value) if fact else None
    cuda = (int(match.group(1)), int(match.group(2))) if match else None
    minimum = MIN_DRIVER_FOR_CUDA_MAJOR.get(cuda[0]) if cuda else None
    return ImagePolicy(image or official_image, official, cuda, fact.source if fact and cuda else "", minimum)
