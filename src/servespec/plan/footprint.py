"""Each host's :class:`~servespec.plan.sizing.Footprint` from a loaded fleet, and a previous fleet's desired state.

The only part of :mod:`servespec.plan` that reads specs: it takes ``deploy estimate``'s
numbers (:func:`servespec.estimate.estimates`, the per-deployment ``Resolved``) and the
model's weight bytes (lock file, safetensors headers, GGUF size, Hub: ``ModelFacts.weight_bytes``;
else estimated from the model's facts as its checkpoint stores them).
Nothing here reads a host.
"""

from __future__ import annotations

from dataclasses import replace

from servespec import hostpaths
from servespec.estimate import HostEstimate, estimates
from servespec.knowledge import resolve
from servespec.knowledge.memory import weight_bytes
from servespec.plan import Desired
from servespec.plan.sizing import GIB_DIGITS, Footprint, GpuMemory
from servespec.render import render_fleet
from servespec.spec.fleet import DeploymentDoc, Fleet


def _gpus(row: HostEstimate) -> tuple[GpuMemory, ...]:
    plan = row.plan
    if plan is None:
        return ()
    return tuple(
        GpuMemory(
            index=index,
            model=row.gpu_name,
            weights_gib=round(plan.weights_gib, GIB_DIGITS),
            kv_cache_gib=round(plan.kv_cache_gib, GIB_DIGITS),
            kv_tokens=plan.kv_tokens,
            max_sequences=round(plan.max_sequences, GIB_DIGITS),
            context_tokens=plan.context_tokens,
            beside_gib=round(plan.beside_gib, GIB_DIGITS),
        )
        for index in row.gpu_indices or [0]
    )


def stored_weight_bytes(deployment: DeploymentDoc) -> tuple[int | None, bool]:
    """The checkpoint's weight bytes as stored (what a download fetches), and whether they are estimated.

    Measured: ``ModelFacts.weight_bytes`` (lock file, safetensors headers, GGUF header, Hub).
    Else estimated from the facts as the checkpoint stores them, not as the engine loads them
    (no load-time quantization, the checkpoint's own dtype): :func:`servespec.knowledge.memory.weight_bytes`.
    None without model facts.
    """
    known = resolve.resolved(deployment)
    facts = known.model.facts
    if facts is None:
        return None, False
    if facts.weight_bytes:
        return facts.weight_bytes, False
    inp = known.estimate_input(weights_only=True)
    if inp is None:
        return None, False
    stored = "float32" if facts.torch_dtype == "float32" else "auto"
    return round(weight_bytes(replace(inp, dtype=stored, quantization=None))), True


def footprints(fleet: Fleet) -> dict[tuple[str, str], Footprint]:
    """(deployment, host) -> what the deployment takes there, for every placed host."""
    out = {}
    sizes: dict[str, tuple[int | None, bool]] = {}
    for row in estimates(fleet, []):
        deployment = row.deployment
        if deployment.name not in sizes:
            sizes[deployment.name] = stored_weight_bytes(deployment)
        size, estimated = sizes[deployment.name]
        source = str(deployment.spec.model.source)
        out[(deployment.name, row.host.name)] = Footprint(
            gpus=_gpus(row),
            model=source,
            revision=deployment.spec.model.revision,
            weight_bytes=size,
            weight_bytes_estimated=estimated,
            local=hostpaths.is_local_path(source),
        )
    return out


def desired(fleet: Fleet) -> list[Desired]:
    """What the fleet renders for every host, each with its footprint (for ``deploy plan --previous``)."""
    rendered = render_fleet(fleet)
    sizes = footprints(fleet)
    return [
        Desired(name, host, container.revision, rendered.host_files(name, host), sizes.get((name, host)))
        for (name, host), container in sorted(rendered.containers.items())
    ]
