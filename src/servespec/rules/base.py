"""What a rule is: a small class with plain attributes whose docstring is its explain page."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any, ClassVar

from servespec.findings import Finding, Severity
from servespec.redact import scrub
from servespec.spec.document import quote_value
from servespec.spec.fleet import DeploymentDoc, Fleet, HostView
from servespec.spec.source import Document, KeyPath


def placements(fleet: Fleet) -> Iterator[tuple[DeploymentDoc, HostView]]:
    """Every (deployment, host) pair the fleet places, in file order."""
    from servespec.knowledge.resolve import resolved

    for deployment in fleet.deployments:
        for host in resolved(deployment).hosts:
            yield deployment, host


def quoted(value: Any, name: str = "") -> str:
    """A user value as a rule message quotes it: repr'd, masked, cut and escaped (``spec.document.quote_value``)."""
    return quote_value(value, name)


def bare(text: str, name: str = "") -> str:
    """A user string as a message shows it unquoted: itself when :func:`quoted` would show it unchanged.

    A value that is long, secret-shaped or holds characters needing an escape is shown in
    its quoted, cut form instead.
    """
    shown = quoted(text, name)
    return text if shown == repr(text) else shown


class Rule:
    """Base class. Subclasses set the attributes and override :meth:`check`.

    Rules reported while loading (syntax, schema, missing files) keep ``check`` empty and
    take id, name, severity and summary from their declaration in
    :mod:`servespec.spec.loader_rules`, which builds their findings; they still own their
    docs and case file.
    """

    id: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    hint: ClassVar[str] = ""
    sources: ClassVar[tuple[str, ...]]

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        """Yield this rule's findings over the whole fleet."""
        return iter(())

    @classmethod
    def explain(cls) -> str:
        """The rule's explain page: its docstring, cleaned."""
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def docs_url(cls) -> str:
        """The first upstream source: where the rule's facts come from."""
        return cls.sources[0] if cls.sources else ""

    def report(
        self,
        document: Document,
        message: str,
        path: KeyPath = (),
        *,
        hint: str | None = None,
        severity: Severity | None = None,
        at_key: bool = False,
    ) -> Finding:
        """A finding of this rule located at ``path`` in ``document``.

        Token-shaped substrings are masked: a message may quote a spec value (a model
        source, an option) that SEC001 reports as a secret, and findings reach CI logs.
        """
        return document.finding(
            self.id,
            scrub(message),
            path,
            severity=severity or self.severity,
            hint=scrub(self.hint if hint is None else hint),
            at_key=at_key,
        )
