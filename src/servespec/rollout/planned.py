"""The plan `deploy plan` shows: the fleet's plan from live host state, sized against the specs deployed before."""

from __future__ import annotations

from collections.abc import Sequence

import click

from servespec.findings import Severity
from servespec.plan import Desired, sized
from servespec.plan.footprint import desired, footprints
from servespec.rollout.orchestrate import FleetPlan, plan_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet


def previous_desired(fleet: Fleet) -> list[Desired]:
    """What the ``--previous`` specs render for each host, with footprints (read before any host is).

    Their errors do not stop the plan: a warning on stderr says their estimates may be missing.
    """
    errors = [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    if errors:
        click.echo(
            f"warning: the --previous specs have {len(errors)} error(s) (deploy validate lists them); "
            "their estimates may be missing",
            err=True,
        )
    return desired(fleet)


def sized_plan(fleet: Fleet, previous: Sequence[Desired] = ()) -> FleetPlan:
    """:func:`~servespec.rollout.plan_fleet`, each action sized: memory per GPU before -> after, downloads."""
    planned = plan_fleet(fleet)
    return FleetPlan(sized(planned.actions, footprints(fleet), previous), planned.unread)
