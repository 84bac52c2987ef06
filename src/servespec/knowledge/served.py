"""The names a deployment's model is served under (``serving.model_name``, ``serving.model_aliases``)."""

from __future__ import annotations

from pathlib import PurePosixPath

from servespec import hostpaths
from servespec.knowledge import resolve
from servespec.spec.fleet import DeploymentDoc


def default_served_name(deployment: DeploymentDoc) -> str:
    """The name the engine serves when the spec names none (profile ``served_name.default``).

    ``model.source`` as written (vLLM's model argument, SGLang's ``model_path``, TGI's
    ``model_id``, llama.cpp's ``-hf`` repo or ``-m`` path, an Ollama ``name:tag``); for
    trtllm-serve a local directory is served by its last path component; where the engine
    unit names it (XInference: the registry's ``model_name``), the unit's.
    """
    known = resolve.resolved(deployment)
    source = str(deployment.spec.model.source)
    own = known.engine.default_served_name(known)
    if own:
        return own
    if known.profile.served_name.default == "directory_name" and hostpaths.is_local_path(source):
        return PurePosixPath(source).name or source
    return source


def served_names(deployment: DeploymentDoc) -> list[str]:
    """The names clients may send as ``model``: ``serving.model_name`` (else the engine's own), then the aliases."""
    serving = deployment.spec.serving
    return [serving.model_name or default_served_name(deployment), *serving.model_aliases]
