"""``plan``: what ``apply`` would change on each host, as a pure function.

Inputs are the desired state (what the specs render for each deployment and host) and
the observed state (what each host reports: its active revision and files). The output is
one action per (deployment, host): ``create``, ``update`` (with unified diffs of the
rendered files), ``unchanged`` or ``remove``. ``deploy apply`` executes exactly these
actions; nothing else decides what changes.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Desired:
    """What the specs render for one deployment on one host."""

    deployment: str
    host: str
    digest: str
    files: dict[str, str]


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

    @property
    def restart(self) -> bool:
        """Whether the engine container is (re)started: on create and update only."""
        return self.kind in ("create", "update")

    def to_json(self) -> dict[str, Any]:
        """A plain dict for JSON output and test cases."""
        return {**asdict(self), "restart": self.restart}


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
        )
    if seen.digest == want.digest and seen.files == want.files and seen.status == "good":
        reason = "up to date" + ("" if seen.healthy else " (but not healthy: see deploy status)")
        return Action(want.deployment, want.host, "unchanged", seen.current, seen.digest, {}, reason)
    diffs = _diffs(seen.files, want.files, want.deployment, want.host)
    if not diffs and seen.status != "good":
        reason = f"revision {seen.current} is {seen.status}: apply it again"
    elif not diffs:
        reason = "same files, new content hash (inventory or release changed)"
    else:
        reason = f"{len(diffs)} file(s) changed"
    return Action(want.deployment, want.host, "update", seen.current, want.digest, diffs, reason)


def plan(desired: list[Desired], observed: list[Observed]) -> list[Action]:
    """Actions that bring every host from ``observed`` to ``desired``; deterministic order."""
    seen = {(o.deployment, o.host): o for o in observed}
    wanted = {(d.deployment, d.host) for d in desired}
    actions = [_action_for(want, seen.get((want.deployment, want.host))) for want in desired]
    for (deployment, host), state in sorted(seen.items()):
        if (deployment, host) not in wanted and state.current is not None:
            actions.append(Action(deployment, host, "remove", state.current, state.digest, {}, "no longer placed here"))
    return actions
