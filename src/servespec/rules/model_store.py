"""ENG006: the engine's model store stays inside the persisted model cache, or the cache mount follows it."""

from __future__ import annotations

from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import store
from servespec.rules.base import Rule, bare
from servespec.spec.fleet import Fleet

_OLLAMA_MODELS = "https://github.com/ollama/ollama/blob/v0.32.15/envconfig/config.go"
_VLLM_DOWNLOAD = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/model_loader/weight_utils.py"


class ModelStoreOutsideCache(Rule):
    """A setting that moves the engine's model store must name a path the model cache can be mounted at.

    servespec keeps downloaded models on the host (``/var/lib/servespec/models``) by mounting
    that folder at the engine's default store in the container. Settings that move the store
    (Ollama ``OLLAMA_MODELS``; ``HF_HOME``, ``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE`` for
    vLLM, SGLang, TGI, TensorRT-LLM and llama.cpp; vLLM and SGLang ``--download-dir``, TGI
    ``--huggingface-hub-cache``, llama.cpp ``LLAMA_CACHE``: each engine's page lists its own)
    get the same folder mounted at their path too, so the model survives a new container. A
    path that cannot be a mount point is reported here: a relative or ``~`` path (the engine
    resolves it against its working directory or home), ``..``, a system folder of the image
    (``/usr``, ``/etc``, ...) or the read-only model folder. There the store lies in the
    container's own layer, and each new container downloads the model again.

    Fix: give an absolute path outside the image's system folders, or remove the setting
    (the engine's default store is mounted).

    Source: https://github.com/ollama/ollama/blob/v0.32.15/envconfig/config.go (``Models()``);
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/model_loader/weight_utils.py
    (``cache_dir=load_config.download_dir``); docs/engines/<engine>.md "Model store"
    """

    id = "ENG006"
    name = "engine.model-store"
    severity = Severity.WARNING
    summary = "model store setting outside the persisted model cache (each new container downloads again)"
    sources = (_OLLAMA_MODELS, _VLLM_DOWNLOAD)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            for setting in store.settings(deployment):
                problem = store.problem(deployment, setting.value)
                if not problem:
                    continue
                yield self.report(
                    deployment.document,
                    f"{setting.what} {bare(setting.value)} {problem}; the model cache is not mounted there, "
                    "so what the engine downloads into it is lost with the container (a new one downloads the model "
                    "again)",
                    setting.path,
                    hint="use an absolute path outside the image's system folders, or remove it "
                    "(the engine's default store is mounted)",
                    at_key=setting.at_key,
                )
