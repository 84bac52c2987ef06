"""`deploy estimate`: the memory plan of every deployment on every host, as rows and JSON."""

from __future__ import annotations

from dataclasses import dataclass, replace

from servespec.engines.gguf import DeviceFreeKv
from servespec.findings import Finding
from servespec.knowledge import resolve
from servespec.knowledge.memory import GpuEstimate
from servespec.spec.fleet import DeploymentDoc, Fleet, HostView


@dataclass(frozen=True)
class HostEstimate:
    """One deployment's plan on one host: the same plan for each of its GPUs."""

    deployment: DeploymentDoc
    host: HostView
    plan: GpuEstimate | None
    gpu_indices: list[int]
    gpu_name: str
    findings: list[str]
    kv_without_device: DeviceFreeKv | None = None
    """A GGUF engine on a GPU the catalogue lacks: its whole KV cache where no device changes it (no ``plan``)."""

    def to_json(self) -> dict[str, object]:
        """The contract's estimate object (§2.2)."""
        spec = self.deployment.spec
        gpus = []
        if self.plan is not None:
            for index in self.gpu_indices or [0]:
                gpus.append(
                    {
                        "index": index,
                        "model": self.gpu_name,
                        "total_gib": self.plan.total_gib,
                        "weights_gib": self.plan.weights_gib,
                        "overhead_gib": self.plan.overhead_gib,
                        "kv_cache_gib": self.plan.kv_cache_gib,
                        "kv_tokens": self.plan.kv_tokens,
                        "max_sequences": self.plan.max_sequences,
                    }
                )
        out: dict[str, object] = {
            "deployment": self.deployment.name,
            "host": self.host.name,
            "engine": spec.engine.name,
            "engine_version": spec.engine.version,
            "gpus": gpus,
            "findings": self.findings,
        }
        free = self.kv_without_device
        if self.plan is None and free is not None:
            out["kv_cache_all_devices"] = {
                "bytes": free.kv_bytes,
                "gib": round(free.kv_bytes / 2**30, 3) if free.kv_bytes is not None else None,
                "context_tokens": free.context_tokens if free.kv_bytes is not None else None,
                "device": f"not catalogued: {free.device}",
                "basis": free.why,
            }
        if self.plan is not None:
            # which context max_sequences counts, and why (the spec's, or the engine's default)
            out["context"] = {"tokens": self.plan.context_tokens, "basis": self.plan.context_basis}
            offload = self.plan.offload
            if offload is not None:
                out["offload"] = {
                    "gpu_layers": offload.gpu_layers,
                    "layers": offload.layers,
                    "host_gib": offload.host_gib,
                    "host_total_gib": offload.host_total_gib,
                    "reason": offload.reason,
                    **({"unit": offload.unit} if offload.unit != "layers" else {}),
                }
        return out


def context_line(row: HostEstimate) -> str | None:
    """The context the plan assumes and why, for the text report (None without a plan)."""
    plan = row.plan
    free = getattr(row, "kv_without_device", None)  # rows built elsewhere (tests, callers) may lack it
    if plan is None and free is not None:
        head = f"{row.deployment.name} on {row.host.name}: GPU {free.device} not catalogued, no memory plan; "
        if free.kv_bytes is None:
            return head + f"KV cache not known without the device: {free.why}"
        return head + (
            f"KV cache {free.kv_bytes / 2**30:.2f} GiB over all devices at {free.context_tokens} tokens, "
            f"which no device changes ({free.why})"
        )
    if plan is None:
        return None
    line = f"{row.deployment.name} on {row.host.name}: context {plan.context_tokens} tokens ({plan.context_basis})"
    if plan.offload is not None:
        offload = plan.offload
        ram = f" of {offload.host_total_gib:g} GiB RAM" if offload.host_total_gib is not None else ""
        line += (
            f"; {offload.gpu_layers} of {offload.layers} {offload.unit} on the GPUs ({offload.reason}), "
            f"{offload.host_gib:.1f} GiB in host memory{ram}"
        )
    return line


ESTIMATE_RULES = ("MEM", "PAR", "REF", "SS")
"""The findings `deploy estimate` shows, in text beside its table and in JSON: memory, layout,
references, schema."""


def shown(findings: list[Finding]) -> list[Finding]:
    """The findings an estimate shows (text and JSON alike)."""
    return [f for f in findings if f.rule.startswith(ESTIMATE_RULES)]


def estimates(fleet: Fleet, findings: list[Finding]) -> list[HostEstimate]:
    """A plan for every (deployment, host) pair; ``plan`` is None when facts are missing.

    Each row names the rules of :func:`shown` findings located in its deployment's file.
    """
    out = []
    for deployment in fleet.deployments:
        related = sorted({f.rule for f in shown(findings) if deployment.document.contains(f)})
        known = resolve.resolved(deployment)
        for host in known.hosts:
            hardware = resolve.host_gpus(host)
            name = hardware.model.display_name if hardware.model else ("CPU" if hardware.count == 0 else "unknown")
            indices = known.gpu_ids if hardware.count else []
            plan = known.estimate_on(host)
            free = known.kv_without_device(host) if plan is None else None
            free = replace(free, device=hardware.name or "") if free is not None else None
            out.append(HostEstimate(deployment, host, plan, indices, name, related, free))
    return out
