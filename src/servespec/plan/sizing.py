"""What a restart does to memory and what it downloads: per host and GPU, before -> after.

A :class:`Footprint` is what one deployment takes on one host as servespec estimates it
(:mod:`servespec.plan.footprint` builds it from the specs): each GPU's weights, KV cache,
KV tokens, full-length sequences and the context they count, plus the model (source and
revision) and its weight bytes. The functions here are pure: they compare
the footprint the host runs ("before") with the one the specs want ("after").

"Before" is known when the host runs exactly the files the specs render (an unchanged host, a
re-applied revision: before is after), when nothing runs there (a new host), or when the
previous specs (``deploy plan --previous``) render the revision the host runs; otherwise it is
unknown and said to be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GIB_DIGITS = 2
"""GiB and sequence counts are rounded to this many decimals (the plan is compared byte for byte)."""

_VALUES = ("weights_gib", "kv_cache_gib", "kv_tokens", "max_sequences", "context_tokens", "beside_gib")


@dataclass(frozen=True)
class GpuMemory:
    """One GPU's memory plan as the plan shows it (``deploy estimate``'s numbers, rounded)."""

    index: int
    model: str
    weights_gib: float
    kv_cache_gib: float
    kv_tokens: int
    max_sequences: float
    """Sequences of ``context_tokens`` tokens the KV cache holds at once."""
    context_tokens: int
    beside_gib: float = 0.0
    """GiB that LoRA slots and a speculative draft take beside the weights (the estimate's ``beside_gib``)."""

    def values(self) -> dict[str, float | int]:
        """The compared numbers, by name (``beside_gib`` only where adapters or a draft take some)."""
        return {name: getattr(self, name) for name in _VALUES if name != "beside_gib" or self.beside_gib}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GpuMemory:
        """The inverse of :meth:`values` plus ``index`` and ``model`` (JSON plan cases)."""
        return cls(**data)


@dataclass(frozen=True)
class Footprint:
    """One deployment on one host: its GPUs' memory (empty: no estimate), its model and weight bytes."""

    gpus: tuple[GpuMemory, ...] = ()
    model: str = ""
    """``model.source`` as the spec writes it."""
    revision: str | None = None
    """``model.revision`` as the spec pins it (None: unpinned)."""
    weight_bytes: int | None = None
    """Bytes of the checkpoint's weights (lock file, safetensors headers, GGUF size, Hub); None: unknown."""
    weight_bytes_estimated: bool = False
    """``weight_bytes`` is estimated from the model's facts (parameters and stored dtype), not measured."""
    local: bool = False
    """The model is a path on the host: it is never downloaded."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Footprint:
        """A footprint from a JSON plan case."""
        fields = dict(data)
        fields["gpus"] = tuple(GpuMemory.from_json(g) for g in fields.get("gpus", ()))
        return cls(**fields)


def _delta(before: GpuMemory | None, after: GpuMemory | None) -> dict[str, float | int] | None:
    if before is None or after is None:
        return None
    old, new = before.values(), after.values()
    names = [name for name in _VALUES if name in old or name in new]
    return {name: round(new.get(name, 0) - old.get(name, 0), GIB_DIGITS) for name in names}


@dataclass(frozen=True)
class GpuChange:
    """One GPU of the host: its plan before and after (None: the deployment does not use it on that side)."""

    index: int
    model: str
    before: GpuMemory | None
    after: GpuMemory | None

    def to_json(self) -> dict[str, Any]:
        """``{index, model, before, after, delta}``; ``delta`` is after - before (None when a side is missing)."""
        return {
            "index": self.index,
            "model": self.model,
            "before": self.before.values() if self.before else None,
            "after": self.after.values() if self.after else None,
            "delta": _delta(self.before, self.after),
        }


@dataclass(frozen=True)
class MemoryChange:
    """The memory plan of one host before and after the action, GPU by GPU.

    ``before_from``: ``host`` (the host runs the files the specs render, so before is after),
    ``nothing`` (nothing is deployed there), ``previous`` (the ``--previous`` specs render
    the revision the host runs) or None (unknown: ``note`` says why).
    """

    gpus: tuple[GpuChange, ...] = ()
    before_from: str | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """A plain dict for JSON output and test cases."""
        return {"before_from": self.before_from, "note": self.note, "gpus": [g.to_json() for g in self.gpus]}


@dataclass(frozen=True)
class Download:
    """What the restart fetches: the model's weight bytes (0: nothing; None: unknown) and a changed image."""

    size_bytes: int | None
    why: str
    image: str | None = None
    """The engine image the new container runs, when it differs from the running one (its size is not known)."""
    estimated: bool = False
    """``size_bytes`` is estimated from the model's facts (no lock entry or header measured it)."""

    def to_json(self) -> dict[str, Any]:
        """``{bytes, estimated, why, image}``."""
        return {"bytes": self.size_bytes, "estimated": self.estimated, "why": self.why, "image": self.image}


def gpu_changes(before: Footprint | None, after: Footprint | None) -> tuple[GpuChange, ...]:
    """The GPUs of either side paired by index, in index order."""
    old = {g.index: g for g in before.gpus} if before else {}
    new = {g.index: g for g in after.gpus} if after else {}
    out = []
    for index in sorted(set(old) | set(new)):
        was, now = old.get(index), new.get(index)
        out.append(GpuChange(index, now.model if now else was.model if was else "", was, now))
    return tuple(out)


NO_ESTIMATE = "no estimate: model facts or the host's GPUs are unknown (deploy estimate says which)"


def memory_change(
    kind: str, after: Footprint | None, before: Footprint | None, before_from: str | None, unknown: str
) -> MemoryChange:
    """The host's memory before and after; ``unknown`` is the note when ``before_from`` is None."""
    if kind == "remove":
        after = None
    if before_from == "nothing":
        before = None
    gpus = gpu_changes(before, after)
    note = ""
    if before_from is None:
        note = unknown
    elif after is not None and not after.gpus:
        note = NO_ESTIMATE
    return MemoryChange(gpus, before_from, note)


def _revision(revision: str | None) -> str:
    """A revision as the plan's text shows it: a commit sha cut to 12 characters, a branch or tag whole."""
    if revision is None:
        return "unpinned"
    return revision[:12] if len(revision) == 40 and all(c in "0123456789abcdef" for c in revision) else revision


def _model(footprint: Footprint) -> str:
    return footprint.model + (f"@{_revision(footprint.revision)}" if footprint.revision else "")


def _weights(after: Footprint, why: str, image: str | None) -> Download:
    if after.local:
        return Download(0, f"{after.model} is a path on the host", image)
    if after.weight_bytes is None:
        return Download(None, f"{why}; the weight size is unknown (deploy lock records it)", image)
    if after.weight_bytes_estimated:
        why += " (estimated from the model's parameters and stored dtype; deploy lock records the exact size)"
    return Download(after.weight_bytes, why, image, after.weight_bytes_estimated)


def download(
    kind: str,
    same_files: bool,
    after: Footprint | None,
    before: Footprint | None,
    image: str | None,
    unknown: str = "before unknown",
) -> Download:
    """The weights (and image) a restart of this kind fetches.

    ``before`` is the footprint the host runs when known (``unknown`` says why it is not);
    ``image`` the image the new container.yaml names when it differs from the running one
    (or is new on the host).
    """
    if kind in ("unchanged", "remove"):
        return Download(0, "no restart" if kind == "unchanged" else "removed: nothing is started")
    if same_files:
        return Download(0, "the host already runs these files (the same model and revision)", image)
    if after is None:
        return Download(None, "no model facts for this host", image)
    if kind == "create":
        return _weights(after, f"not deployed on this host: the weights of {_model(after)}", image)
    if before is None:
        return Download(None, f"the running model is not known ({unknown})", image)
    if (before.model, before.revision) == (after.model, after.revision):
        return Download(0, "model and revision unchanged", image)
    what = (
        f"revision {_revision(before.revision)} -> {_revision(after.revision)}"
        if before.model == after.model
        else f"model {_model(before)} -> {_model(after)}"
    )
    return _weights(after, f"{what}: the weights of {_model(after)}", image)
