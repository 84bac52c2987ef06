"""deploy plan says when an update moves to an engine release that renames or drops metrics (issue 25, item 5).

The names come from the releases' own metric facts (engines/<unit>/metrics.json, extracted from
each release's source): vLLM 0.9.2 renamed ``vllm:gpu_cache_usage_perc`` to
``vllm:kv_cache_usage_perc`` (vllm PR #18354), 0.10.2 moved inter-token latency to
``vllm:inter_token_latency_seconds``, and later releases stopped serving the old names.
"""

from __future__ import annotations

import itertools
import json

from servespec.metrics.facts import for_release, versions
from servespec.plan import Desired, Observed, plan
from servespec.plan.metric_names import metric_names
from servespec.plan.report import plan_output


def _container(engine: str, version: str) -> dict[str, str]:
    return {"container.yaml": f"engine:\n  name: {engine}\n  version: {version}\nimage: img:{version}\n"}


def _update(before: str, after: str, engine: str = "vllm") -> list[object]:
    seen = Observed("chat", "h1", current=3, good=3, digest="a", status="good", files=_container(engine, before))
    return list(plan([Desired("chat", "h1", "b", _container(engine, after))], [seen]))


def test_the_kv_cache_rename_is_named_from_the_release_facts() -> None:
    names = metric_names(_container("vllm", "0.9.1"), _container("vllm", "0.9.2"))
    assert names is not None
    old = for_release("vllm", "0.9.1")
    new = for_release("vllm", "0.9.2")
    assert old is not None and new is not None
    assert ("kv_cache_usage", old.roles["kv_cache_usage"], new.roles["kv_cache_usage"]) in names.renamed
    assert names.renamed[0][1:] == ("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc")


def test_a_release_that_no_longer_serves_a_metric_lists_it() -> None:
    names = metric_names(_container("vllm", "0.9.1"), _container("vllm", "0.34.0"))
    assert names is not None
    old, new = for_release("vllm", "0.9.1"), for_release("vllm", "0.34.0")
    assert old is not None and new is not None
    assert set(names.dropped) == old.served - new.served
    assert "vllm:gpu_cache_usage_perc" in names.dropped


def test_nothing_is_said_when_the_names_stay() -> None:
    assert metric_names(_container("vllm", "0.9.2"), _container("vllm", "0.9.2")) is None
    # Consecutive catalogued releases serving the same names for the same roles: no line.
    releases = versions("vllm")
    same = []
    for before, after in itertools.pairwise(releases):
        old, new = for_release("vllm", before), for_release("vllm", after)
        assert old is not None and new is not None
        if old.roles == new.roles and old.served <= new.served:
            same.append((before, after))
            assert metric_names(_container("vllm", before), _container("vllm", after)) is None
        else:
            assert metric_names(_container("vllm", before), _container("vllm", after)) is not None
    assert len(same) > 10


def test_host_text_that_is_not_a_release_says_nothing() -> None:
    good = _container("vllm", "0.9.1")
    for hostile in (
        {"container.yaml": ": : :\n"},
        {"container.yaml": "engine:\n  name: ../../etc\n  version: 1\n"},
        {"container.yaml": "engine:\n  name: vllm\n  version: $(id)\n"},
        {},
    ):
        assert metric_names(hostile, good) is None
        assert metric_names(good, hostile) is None


def test_plan_outputs_carry_the_change() -> None:
    actions = _update("0.9.1", "0.10.2")
    (action,) = actions
    assert action.metric_names is not None
    text = plan_output(actions, "text", list)
    assert "metric names: vllm 0.9.1 -> vllm 0.10.2: kv_cache_usage vllm:gpu_cache_usage_perc" in text
    assert "itl vllm:time_per_output_token_seconds -> vllm:inter_token_latency_seconds" in text
    markdown = plan_output(actions, "markdown", list)
    assert "#### Metric names that change" in markdown
    assert "| chat | h1 | vllm 0.9.1 -> vllm 0.10.2 |" in markdown
    shown = json.loads(plan_output(actions, "json", list))["actions"][0]["metric_names"]
    assert shown["before"] == "vllm 0.9.1" and shown["after"] == "vllm 0.10.2"
    assert {"role": "kv_cache_usage", "before": "vllm:gpu_cache_usage_perc", "after": "vllm:kv_cache_usage_perc"} in (
        shown["renamed"]
    )


def test_an_update_within_one_release_has_no_metric_line() -> None:
    (action,) = _update("0.9.2", "0.9.2")
    assert action.metric_names is None
    assert "metric names" not in plan_output([action], "text", list)


def test_plan_says_what_apply_verify_benchmarks() -> None:
    files = _container("vllm", "0.9.2")
    want = Desired("chat", "h1", "b", files, verify="6 requests of 16+8 tokens at concurrency 2, at most 120 s")
    kept = Desired("chat", "h2", "a", files, verify="6 requests")
    seen = [Observed("chat", "h2", current=1, good=1, digest="a", status="good", files=files)]
    actions = plan([want, kept], seen)
    assert [a.verify for a in actions] == [want.verify, ""]  # an unchanged host is not benchmarked
    assert f"verify (apply --verify, after health): {want.verify}" in plan_output(actions, "text", list)
    assert "#### apply --verify" in plan_output(actions, "markdown", list)
    assert json.loads(plan_output(actions, "json", list))["actions"][0]["verify"] == want.verify
