"""ENG007: the engine is no longer maintained upstream."""

from __future__ import annotations

from collections.abc import Iterator

from servespec import engines
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule
from servespec.spec.fleet import Fleet


class UnmaintainedEngine(Rule):
    """The engine's upstream publishes no more releases: no fixes, no new models or GPUs.

    An engine unit that knows its upstream stopped says so (its ``unmaintained`` record:
    the last release and its date as the package index records the upload, what shows the
    project stopped, and the engine that does the same job). servespec still validates,
    renders and deploys it as it is; this finding is information, for the next migration.

    OpenLLM: the last release on PyPI is 0.6.30, uploaded 2025-04-21; the repository's
    later commits bump dependencies and add a SECURITY.md note, and its model repository
    (bentoml/openllm-models) last changed on 2025-04-30. Every OpenLLM bento runs vLLM 0.8.5
    on the bento's Hugging Face model, so ``engine: {name: vllm}`` with the same
    ``model.source`` serves the same model with ``vllm serve``, without the bento.

    Fix: move to the engine named (change ``engine.name`` and ``engine.version``; servespec
    reports what does not carry over), or suppress the finding with a reason.

    Source: https://pypi.org/pypi/openllm/json (the release history) ;
    https://github.com/bentoml/OpenLLM (commits after v0.6.30) ; docs/engines/openllm.md
    """

    id = "ENG007"
    name = "engine.unmaintained"
    severity = Severity.INFO
    summary = "the engine is unmaintained upstream (last release, and the engine that does the same job)"
    hint = ""
    sources = ("https://pypi.org/pypi/openllm/json", "https://github.com/bentoml/OpenLLM", "docs/engines/openllm.md")

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            engine = resolve.resolved(deployment).engine
            record = engine.unmaintained
            if record is None:
                continue
            title = engine.profile.title
            other = engines.get(record.replacement).profile.title
            yield self.report(
                deployment.document,
                f"{title} is unmaintained upstream: its last release is {record.last_release} ({record.released} "
                f"on {record.sources[0]}); {other} does the same job (engine.name {record.replacement})",
                ("engine", "name"),
                hint=record.replacement_how,
            )
