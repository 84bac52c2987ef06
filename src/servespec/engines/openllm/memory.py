"""OpenLLM's memory: vLLM's arithmetic (vllm/memory.py) for the vLLM release the bento pins.

OpenLLM pins no vLLM itself (pyproject.toml pins bentoml); every bento of the catalogued
model repository pins ``vllm==0.8.5`` in env/python/requirements.txt (bentos.json), and
``openllm serve`` installs exactly that into the bento's venv. vLLM then runs with the
bento's own argument defaults (``max_model_len``, ``max_num_seqs``, ...), overridden by the
``--arg`` values rendered, and vLLM 0.8.5's defaults for everything the bento leaves alone
(``gpu_memory_utilization`` 0.9).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from servespec import engines
from servespec.engines.catalog import EngineRelease
from servespec.engines.openllm.bentos import Bento, bento_for, repository
from servespec.knowledge.memory import EstimateInput, GpuEstimate


def vllm_release(version: str | None) -> EngineRelease | None:
    """servespec's catalog of that vLLM release (None: not catalogued, or no pin)."""
    return engines.get("vllm").select(version).release if version else None


def estimate(inp: EstimateInput) -> GpuEstimate | None:
    """vLLM's KV budget with the bento's settings (None without a GPU or a bento)."""
    from servespec.engines.vllm.memory import estimate as vllm_estimate

    bento = bento_for(inp.model.name)  # the facts' name is model.source as the spec writes it
    if bento is None:  # ENG003: no bento serves it; sized as vLLM of the repository's pin would run it
        pins = sorted({b.vllm for b in repository().bentos if b.vllm})
        return vllm_estimate(dataclasses.replace(inp, release=vllm_release(pins[-1] if pins else None)))
    return vllm_estimate(bento_input(inp, bento))


def bento_input(inp: EstimateInput, bento: Bento) -> EstimateInput:
    """The estimator's input as the bento's vLLM sees it."""
    options: dict[str, Any] = {
        key: argument.default for key, argument in bento.arguments.items() if argument.default is not None
    }
    options.update(inp.options)
    length = inp.max_model_len
    basis = inp.context_basis
    default = bento.default("max_model_len")
    if inp.context_basis != "model.max_model_len" and isinstance(default, int):
        length, basis = default, f"bento {bento.tag} default: max_model_len {default}"
    return dataclasses.replace(
        inp,
        release=vllm_release(bento.vllm),
        options=options,
        max_model_len=length,
        context_basis=basis,
        context_default=None,
        engine_version=bento.vllm or inp.engine_version,
    )
