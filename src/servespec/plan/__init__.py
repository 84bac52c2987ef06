"""``plan``: what ``apply`` would change on each host, as a pure function.

Inputs are the desired state (what the specs render for each deployment and host) and
the observed state (what each host reports: its active revision and files). The output is
one action per (deployment, host): ``create``, ``update`` (with unified diffs of the
rendered files), ``unchanged`` or ``remove``. ``deploy apply`` executes exactly these
actions; nothing else decides what changes.

Each action also says why it restarts the engine (the rendered fields that differ,
:mod:`servespec.plan.changes`) and, once :func:`sized` is given each host's footprint, what
the restart does to memory, GPU by GPU, and what it downloads (:mod:`servespec.plan.sizing`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from servespec.plan.changes import Change, changes, image_of
from servespec.plan.metric_names import MetricNames, metric_names
from servespec.plan.sizing import Download, Footprint, MemoryChange, download, memory_change
from servespec.plan.strategy import HostCapacity, Need, Strategy, decide


@dataclass(frozen=True)
class Desired:
    """What the specs render for one deployment on one host."""

    deployment: str
    host: str
    digest: str
    files: dict[str, str]
    footprint: Footprint | None = None
    """What it takes on the host (memory per GPU, model, weights, image); None: not computed."""
    rollout: str = "rolling"
    """``rollout.strategy`` of the deployment (``auto``: :mod:`servespec.plan.strategy` decides per host)."""
    need: Need | None = None
    """The GPUs and memory the revision allocates on the host (``auto`` only; None: unknown)."""
    verify: str = ""
    """What ``apply --verify`` benchmarks on this host after health (the spec's slo, in words); '': no slo."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Desired:
        """A desired state from a JSON plan case (``footprint`` as :meth:`Footprint.from_json` reads it)."""
        fields = dict(data)
        if fields.get("footprint") is not None:
            fields["footprint"] = Footprint.from_json(fields["footprint"])
        if fields.get("need") is not None:
            fields["need"] = Need.from_json(fields["need"])
        return cls(**fields)


@dataclass(frozen=True)
class Observed:
    """What a host reports for one deployment (``current`` is None when nothing is deployed)."""

    deployment: str
    host: str
    current: int | None = None
    good: int | None = None
    digest: str | None = None
    status: str | None = None
    """Status of the current revision: good, failed or pending (an apply that did not finish)."""
    files: dict[str, str] = field(default_factory=dict)
    healthy: bool = False
    container: str | None = None
    capacity: HostCapacity | None = None
    """GPU and host memory free now, and whether the front proxy runs (``auto`` only; None: not reported)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observed:
        """An observed state from a JSON plan case (``capacity`` as :meth:`HostCapacity.from_json` reads it)."""
        fields = dict(data)
        if fields.get("capacity") is not None:
            fields["capacity"] = HostCapacity.from_json(fields["capacity"])
        return cls(**fields)


@dataclass(frozen=True)
class Action:
    """One change ``apply`` makes on one host."""

    deployment: str
    host: str
    kind: str
    current: int | None
    digest: str | None
    diffs: dict[str, str]
    reason: str
    changes: tuple[Change, ...] = ()
    """The rendered fields that differ between the host's files and the specs' (create: none)."""
    restart_reason: str | None = None
    """Why the engine restarts, naming the fields that changed (None when it does not restart)."""
    memory: MemoryChange | None = None
    """The host's memory plan before and after, per GPU (None until :func:`sized`)."""
    download: Download | None = None
    """The weights (and image) the restart fetches (None until :func:`sized`)."""
    seen_digest: str | None = field(default=None, repr=False)
    """The digest of the revision the host runs (to match it with ``--previous``; not shown)."""
    seen_files: str | None = field(default=None, repr=False)
    """sha256 of the files the host runs (to match them with ``--previous``; not shown)."""
    image: str | None = field(default=None, repr=False)
    """The image the new container runs when the host does not run it yet (None: unchanged)."""
    strategy: Strategy | None = None
    """``rollout.strategy: auto``: surge or in place on this host, and why (None: another strategy)."""
    metric_names: MetricNames | None = None
    """The metric names the update changes (a new engine release that renamed or dropped some; None: none)."""
    verify: str = ""
    """A create or update: what ``apply --verify`` benchmarks after health ('' when the spec has no slo)."""

    @property
    def restart(self) -> bool:
        """Whether the engine container is (re)started: on create and update only."""
        return self.kind in ("create", "update")

    def to_json(self) -> dict[str, Any]:
        """A plain dict for JSON output and test cases (``version`` 1 keys first, then the additions)."""
        return {
            "deployment": self.deployment,
            "host": self.host,
            "kind": self.kind,
            "current": self.current,
            "digest": self.digest,
            "diffs": dict(self.diffs),
            "reason": self.reason,
            "restart": self.restart,
            "restart_reason": self.restart_reason,
            "changes": [c.to_json() for c in self.changes],
            "memory": self.memory.to_json() if self.memory else None,
            "download": self.download.to_json() if self.download else None,
            "strategy": self.strategy.to_json() if self.strategy else None,
            "metric_names": self.metric_names.to_json() if self.metric_names else None,
            "verify": self.verify or None,
        }


def files_hash(files: Mapping[str, str]) -> str:
    """sha256 of a host's files (names and contents), the same on any machine."""
    return hashlib.sha256(json.dumps(dict(files), sort_keys=True).encode()).hexdigest()


MAX_REASONS = 4
"""A restart reason names at most this many fields, then how many more the changes list."""


def restart_reason(kind: str, reason: str, found: Sequence[Change], diffs: Mapping[str, str]) -> str | None:
    """Why the engine restarts: the rendered fields that changed, or why the same files restart."""
    if kind not in ("create", "update"):
        return None
    if kind == "create":
        return "not deployed on this host"
    if not diffs:
        return reason
    if not found:
        return "only the content hash changed (file headers and the revision label)"
    named = "; ".join(c.describe() for c in found[:MAX_REASONS])
    more = len(found) - MAX_REASONS
    return named + (f"; and {more} more field(s)" if more > 0 else "")


def _diffs(before: dict[str, str], after: dict[str, str], deployment: str, host: str) -> dict[str, str]:
    out = {}
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, ""), after.get(name, "")
        if old == new:
            continue
        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{deployment}/{host}/{name}" if name in before else "/dev/null",
            tofile=f"b/{deployment}/{host}/{name}" if name in after else "/dev/null",
        )
        out[name] = "".join(lines)
    return out


def _action_for(want: Desired, seen: Observed | None) -> Action:
    if seen is None or seen.current is None:
        return Action(
            want.deployment,
            want.host,
            "create",
            None,
            want.digest,
            _diffs({}, want.files, want.deployment, want.host),
            "not deployed",
            restart_reason=restart_reason("create", "", (), {}),
            image=image_of(want.files),
        )
    seen_files = files_hash(seen.files)
    if seen.digest == want.digest and seen.files == want.files and seen.status == "good":
        reason = "up to date" + ("" if seen.healthy else " (but not healthy: see deploy status)")
        return Action(
            want.deployment,
            want.host,
            "unchanged",
            seen.current,
            seen.digest,
            {},
            reason,
            seen_digest=seen.digest,
            seen_files=seen_files,
        )
    diffs = _diffs(seen.files, want.files, want.deployment, want.host)
    if not diffs and seen.status != "good":
        reason = f"revision {seen.current} is {seen.status}: apply it again"
    elif not diffs:
        reason = "same files, new content hash (inventory or release changed)"
    else:
        reason = f"{len(diffs)} file(s) changed"
    found = tuple(changes(seen.files, want.files))
    image = image_of(want.files)
    return Action(
        want.deployment,
        want.host,
        "update",
        seen.current,
        want.digest,
        diffs,
        reason,
        found,
        restart_reason("update", reason, found, diffs),
        seen_digest=seen.digest,
        seen_files=seen_files,
        image=image if image != image_of(seen.files) else None,
        metric_names=metric_names(seen.files, want.files),
    )


def plan(desired: list[Desired], observed: list[Observed], previous: Sequence[Desired] = ()) -> list[Action]:
    """Actions that bring every host from ``observed`` to ``desired``; deterministic order.

    When the desired states carry footprints (or ``previous`` is given) the actions are
    :func:`sized` too.
    """
    seen = {(o.deployment, o.host): o for o in observed}
    wanted = {(d.deployment, d.host) for d in desired}
    actions = [
        _with_verify(_with_strategy(_action_for(want, seen.get((want.deployment, want.host))), want, seen), want)
        for want in desired
    ]
    for (deployment, host), state in sorted(seen.items()):
        if (deployment, host) not in wanted and state.current is not None:
            actions.append(
                Action(
                    deployment,
                    host,
                    "remove",
                    state.current,
                    state.digest,
                    {},
                    "no longer placed here",
                    seen_digest=state.digest,
                    seen_files=files_hash(state.files),
                )
            )
    footprints = {(d.deployment, d.host): d.footprint for d in desired if d.footprint is not None}
    if footprints or previous:
        return sized(actions, footprints, previous)
    return actions


def _with_verify(action: Action, want: Desired) -> Action:
    """``action`` with what apply --verify benchmarks (creates and updates of a deployment with an slo)."""
    return replace(action, verify=want.verify) if want.verify and action.restart else action


def _with_strategy(action: Action, want: Desired, seen: Mapping[tuple[str, str], Observed]) -> Action:
    """``action`` with its rollout strategy (``auto`` deployments' creates and updates only)."""
    host = seen.get((want.deployment, want.host))
    chosen = decide(want.rollout, action.kind, want.need, host.capacity if host else None)
    return replace(action, strategy=chosen) if chosen else action


UNKNOWN_BEFORE = "before unknown: give --previous with the specs the host runs"
UNMATCHED_BEFORE = "before unknown: the --previous specs do not render the revision the host runs"


def _before(action: Action, previous: Mapping[tuple[str, str], Desired]) -> tuple[Footprint | None, str | None, str]:
    """The footprint the host runs, where it is known from, and the note when it is not."""
    if action.kind == "create":
        return None, "nothing", ""
    earlier = previous.get((action.deployment, action.host))
    if earlier is not None and (earlier.digest == action.seen_digest or files_hash(earlier.files) == action.seen_files):
        return earlier.footprint, "previous", ""
    return None, None, UNMATCHED_BEFORE if previous else UNKNOWN_BEFORE


def sized(
    actions: list[Action], footprints: Mapping[tuple[str, str], Footprint], previous: Sequence[Desired] = ()
) -> list[Action]:
    """The actions with their memory change and download (pure).

    ``footprints``: (deployment, host) -> what the specs want there. ``previous``: what the
    specs the hosts were deployed from render (``deploy plan --previous``), used for a host
    whose running revision (digest or files) it renders.
    """
    earlier = {(d.deployment, d.host): d for d in previous}
    out = []
    for action in actions:
        after = footprints.get((action.deployment, action.host))
        same = action.kind == "unchanged" or (action.kind == "update" and not action.diffs)
        before, source, note = (after, "host", "") if same else _before(action, earlier)
        memory = memory_change(action.kind, after, before, source, note)
        fetched = download(action.kind, same, after, before, action.image, note)
        out.append(replace(action, memory=memory, download=fetched))
    return out
