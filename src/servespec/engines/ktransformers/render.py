"""KTransformers: sglang-kt's ``sglang.launch_server`` in the ``kvcache/ktransformers`` image, rendered as SGLang.

The image (docker/Dockerfile of ktransformers v0.7.0) installs sglang-kt and kt-kernel in
the conda environment ``serve`` (``/opt/miniconda3/envs/serve``) and ends in ``CMD
["/bin/bash"]`` with ``/opt/miniconda3/bin`` (the base environment, without SGLang) first on
``PATH``; so the server is started with that environment's interpreter, not ``python3``.
Everything else is the SGLang unit's rendering (``--config`` file, key launcher, multi-node
flags); ``--kt-weight-path`` (a host folder under the inventory's ``model_roots``) is
mounted read-only at the same path.
"""

from __future__ import annotations

from servespec import hostpaths
from servespec.engines.kit import EngineContainer, Target, Volume
from servespec.engines.sglang import kt
from servespec.engines.sglang import render as sglang_render

PYTHON = "/opt/miniconda3/envs/serve/bin/python"
"""The ``serve`` environment's interpreter (docker/Dockerfile: ``conda create -n serve python=3.12``)."""


def context(target: Target) -> EngineContainer:
    """The KTransformers container of one host."""
    container = sglang_render.context(target, python=PYTHON)
    if "config.yaml" in container.files:
        _, values = container.files["config.yaml"]
        container.files["config.yaml"] = ("ktransformers/config.yaml.j2", values)
    path = kt.read(target.known.options, target.release).weight_path
    if path is not None and not hostpaths.local_source_problem(path, target.model_roots):
        folder = hostpaths.mounted_folder(path)
        source = str(target.spec.model.source)
        if not (hostpaths.is_local_path(source) and hostpaths.mounted_folder(source) == folder):  # mounted already
            container.volumes.append(Volume(folder, folder, "ro"))
    return container
