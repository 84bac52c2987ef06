"""rollout.strategy auto: the per-host decision (pure), the host report's checks, and how the plan shows it."""

from __future__ import annotations

from typing import Any

import pytest

from servespec.plan import Action, Desired, Observed, plan
from servespec.plan.report import restarts_markdown, restarts_text
from servespec.plan.strategy import GpuUse, HostCapacity, Need, checked_capacity, decide
from servespec.spec.models import Rollout

H100 = 81559
"""memory.total of an H100 80GB HBM3 as nvidia-smi prints it (MiB; tests/data/facts/samples)."""


def _capacity(*used: int, proxy: bool = True) -> HostCapacity:
    return HostCapacity(tuple(GpuUse(i, H100, u) for i, u in enumerate(used)), 64000, proxy)


def test_auto_is_a_strategy_and_rolling_stays_the_default() -> None:
    assert Rollout(strategy="auto").strategy == "auto"
    assert Rollout().strategy == "rolling"


def test_surge_needs_every_gpu_of_the_revision_to_have_its_memory_free() -> None:
    need = Need((0, 1), 30000)
    assert decide("auto", "update", need, _capacity(40000, 40000)).path == "surge"  # type: ignore[union-attr]
    held = decide("auto", "update", need, _capacity(40000, 60000))
    assert held is not None and held.path == "in_place"
    assert held.wait_gpus == (0, 1) and held.need_mib == 30000
    assert "GPU 1 has 21.1 GiB free" in held.reason


def test_the_free_memory_is_exactly_enough() -> None:
    exact = decide("auto", "update", Need((0,), H100 - 1000), _capacity(1000))
    short = decide("auto", "update", Need((0,), H100 - 999), _capacity(1000))
    assert exact is not None and exact.path == "surge"
    assert short is not None and short.path == "in_place"


@pytest.mark.parametrize(
    ("need", "capacity", "why"),
    [
        (Need((0,), None), _capacity(0), "no memory estimate"),
        (Need((0,), 100), HostCapacity(None, 1000, True), "nvidia-smi did not answer"),
        (Need((3,), 100), _capacity(0), "does not list GPU(s) [3]"),
        (Need((0,), 100), None, "reported no capacity"),
        (Need((0,), 100), _capacity(0, proxy=False), "front proxy does not run here yet"),
        (Need((), None, 100), HostCapacity(None, None, True), "no available memory"),
        (Need((0,), 100, multi_node=True), _capacity(0), "multi-node replica"),
    ],
)
def test_anything_unknown_means_in_place(need: Need, capacity: HostCapacity | None, why: str) -> None:
    chosen = decide("auto", "update", need, capacity)
    assert chosen is not None and chosen.path == "in_place"
    assert why in chosen.reason


def test_a_multi_node_replica_is_not_proxied() -> None:
    chosen = decide("auto", "update", Need((0,), 100, multi_node=True), _capacity(0))
    assert chosen is not None and not chosen.proxied


def test_other_strategies_and_actions_have_no_decision() -> None:
    assert decide("rolling", "update", Need((0,), 1), _capacity(0)) is None
    assert decide("recreate", "update", Need((0,), 1), _capacity(0)) is None
    assert decide("auto", "unchanged", Need((0,), 1), _capacity(0)) is None
    assert decide("auto", "remove", Need((0,), 1), _capacity(0)) is None


@pytest.mark.parametrize(
    "report",
    [
        "nope",
        {"gpus": "0"},
        {"gpus": [{"index": True, "total_mib": 1, "used_mib": 0}]},
        {"gpus": [{"index": 0, "total_mib": -1, "used_mib": 0}]},
        {"gpus": [{"index": 0, "total_mib": 1 << 41, "used_mib": 0}]},
        {"gpus": [["0", "1", "2"]]},
        {"gpus": None, "mem_available_mib": "many"},
        {"gpus": None, "proxy": "yes"},
    ],
)
def test_a_host_report_that_is_not_what_servespec_writes_is_not_used(report: Any) -> None:
    assert checked_capacity(report) is None


def test_a_checked_report_keeps_its_numbers() -> None:
    report = {"gpus": [{"index": 0, "total_mib": 100, "used_mib": 30}], "mem_available_mib": 5, "proxy": True}
    assert checked_capacity(report) == HostCapacity((GpuUse(0, 100, 30),), 5, True)


def _planned(capacity: HostCapacity | None) -> list[Action]:
    files = {"config.yaml": "port: 8000\nmax-model-len: 2\n"}
    desired = [Desired("chat", "gpu|<01>", "b", files, rollout="auto", need=Need((0,), 10240))]
    seen = Observed(
        "chat", "gpu|<01>", 1, 1, "a", "good", {"config.yaml": "port: 8000\nmax-model-len: 1\n"}, capacity=capacity
    )
    return plan(desired, [seen])


def test_the_plan_shows_the_path_and_why_in_text_json_and_markdown() -> None:
    actions = _planned(_capacity(75000))
    assert actions[0].to_json()["strategy"]["path"] == "in_place"
    text = restarts_text(actions)
    assert "  rollout: in place: GPU 0 has 6.4 GiB free of 79.6 GiB, the new revision needs 10.0 GiB" in text
    markdown = restarts_markdown(actions)
    assert "#### Rollout: surge or in place (strategy auto)" in markdown
    assert "| chat | gpu\\|&lt;01> | in place | GPU 0 has 6.4 GiB free" in markdown
    surged = _planned(_capacity(1000))
    assert "  rollout: surge: GPU(s) 0 have at least 78.7 GiB free" in restarts_text(surged)


def test_a_plan_without_auto_shows_no_rollout_line() -> None:
    files = {"config.yaml": "port: 1\n"}
    (action,) = plan([Desired("d", "h", "b", files)], [Observed("d", "h", 1, 1, "a", "good", {"config.yaml": "x\n"})])
    assert action.strategy is None and action.to_json()["strategy"] is None
    assert "rollout:" not in restarts_text([action])


def test_replicas_are_named_in_the_plan_with_their_gpus() -> None:
    """placement.replicas_per_host: the chosen path carries each replica's GPUs, in JSON and in the text."""
    need = Need((0, 1, 2, 3), 30000, replicas=((0, 1), (2, 3)))
    chosen = decide("auto", "update", need, _capacity(40000, 40000, 40000, 40000))
    assert chosen is not None and chosen.path == "surge"
    assert chosen.to_json()["replicas"] == [{"replica": 0, "gpus": [0, 1]}, {"replica": 1, "gpus": [2, 3]}]
    assert chosen.describe().endswith("; 2 replicas, one at a time behind the front proxy (r0 GPUs 0,1; r1 GPUs 2,3)")
    cpu = decide("auto", "create", Need((), None, 2048, replicas=((), ())), None)
    assert cpu is not None and "(r0 CPU; r1 CPU)" in cpu.describe()
    assert "replicas" not in decide("auto", "update", Need((0,), 30000), _capacity(40000)).to_json()  # type: ignore[union-attr]
