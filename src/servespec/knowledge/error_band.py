"""The estimator's measured error, per model class: how far a memory shortfall must go to be a proof.

``data/estimator_band.yaml`` is written by ``bench/estimator_accuracy.py --write-band`` from the
recorded start-up logs (tests/data/vllm_logs) and checked against them by
tests/test_estimator_logs.py, so it is never a hand-picked number. Per model class it holds the
largest error, in GiB, of the memory the estimator predicts for the KV cache: the error of
everything subtracted before it (weights, activations, overheads), which is what decides
MEM001 and MEM002. A shortfall within the band says "may not fit" (a warning); only a larger
one is an error.

The recorded logs are vLLM's: other engines share the weight and KV arithmetic
(knowledge/memory.py) but their own budgets are not measured, so they use the same band per
class, an approximation until their logs are recorded (issue 23).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from servespec.knowledge.datafile import load_yaml_data
from servespec.knowledge.models import ModelFacts

CLASSES = ("dense", "moe", "sliding", "linear", "mla")
"""Model classes whose memory the estimator computes differently (attention kind, then MoE)."""


def model_class(model: ModelFacts) -> str:
    """The class a model's estimate is measured in: MLA, linear-attention, windowed, MoE or dense full attention."""
    if model.is_mla:
        return "mla"
    if model.linear_layers:
        return "linear"
    if model.sliding_window and model.sliding_layers:
        return "sliding"
    return "moe" if model.is_moe else "dense"


@dataclass(frozen=True)
class ErrorBand:
    """The estimator's error for one model class."""

    gib: float
    """The largest error measured, in GiB of KV-cache memory per GPU."""
    logs: int
    """How many logs of the class it was measured on (0: the class has none; the widest band is used)."""
    how: str
    """How it was measured, for messages and docs."""


@functools.cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml_data("estimator_band.yaml")
    return data


def error_band(model: ModelFacts | None) -> ErrorBand:
    """The band of ``model``'s class; a class measured on fewer than ``min_logs`` logs (or no model)
    takes the widest band measured in any class, when wider than its own."""
    data = _data()
    classes: dict[str, Any] = data.get("classes") or {}
    entry = classes.get(model_class(model)) if model is not None else None
    widest = max((float(c["gib"]) for c in classes.values() if c.get("logs")), default=0.0)
    logs = int(entry.get("logs") or 0) if entry else 0
    own = float(entry["gib"]) if entry and logs else 0.0
    if logs >= int(data.get("min_logs", 5)):
        return ErrorBand(own, logs, str(data["measured"]))
    how = f"{data['measured']}; {logs} log(s) of this class: the widest band of any class"
    return ErrorBand(max(own, widest), logs, how)
