"""Each host's :class:`~servespec.plan.sizing.Footprint` from a loaded fleet, and a previous fleet's desired state.

The only part of :mod:`servespec.plan` that reads specs: it takes ``deploy estimate``'s
numbers (:func:`servespec.estimate.estimates`, the per-deployment ``Resolved``) and the
model's weight bytes (lock file, safetensors headers, GGUF size, Hub: ``ModelFacts.weight_bytes``).
Nothing here reads a host.
"""

from __future__ import annotations

from servespec.estimate import HostEstimate, estimates
from servespec.knowledge import resolve
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
        )
        for index in row.gpu_indices or [0]
    )


def _model(deployment: DeploymentDoc) -> tuple[str, str | None, int | None, bool]:
    model = deployment.spec.model
    facts = resolve.model_answer(deployment).facts
    source = str(model.source)
    return source, model.revision, facts.weight_bytes if facts else None, resolve.is_local_path(source)


def footprints(fleet: Fleet) -> dict[tuple[str, str], Footprint]:
    """(deployment, host) -> what the deployment takes there, for every placed host."""
    out = {}
    for row in estimates(fleet, []):
        source, revision, weight_bytes, local = _model(row.deployment)
        out[(row.deployment.name, row.host.name)] = Footprint(
            gpus=_gpus(row), model=source, revision=revision, weight_bytes=weight_bytes, local=local
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
