"""What a rule is: a small class with plain attributes whose docstring is its explain page."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
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


class EvidenceKind(Enum):
    """What may make a finding an error (contract §5, "Severity is evidence"); anything else is a warning."""

    ENGINE_REFUSAL = "engine-refusal"
    """The software that would run it refuses: the engine release (or the driver, Docker, the OS it runs on),
    cited at a source line of that release."""
    ARITHMETIC = "arithmetic"
    """A shortfall larger than the estimator's measured error (or an exact count: GPUs, ports)."""
    SECURITY_POLICY = "security-policy"
    """A documented security policy (a section of docs/security.md)."""
    SPEC_CONTRACT = "spec-contract"
    """The file cannot be read as the contract's grammar says (docs/contract.md)."""


@dataclass(frozen=True)
class Evidence:
    """Why a rule's error level holds: its kind and where that is written (pinned URLs, docs sections)."""

    kind: EvidenceKind
    cites: tuple[str, ...]
    note: str = ""
    """Which findings the evidence covers when the rule also reports weaker cases (as warnings)."""

    def text(self) -> str:
        """One paragraph for ``deploy explain`` and the rule's page."""
        what = {
            EvidenceKind.ENGINE_REFUSAL: "the engine release (or the runtime it runs on) refuses it",
            EvidenceKind.ARITHMETIC: "an arithmetic shortfall beyond the estimator's measured error",
            EvidenceKind.SECURITY_POLICY: "a documented security policy",
            EvidenceKind.SPEC_CONTRACT: "the spec's own grammar and contract: the file cannot be read as written",
        }[self.kind]
        note = f" {self.note}" if self.note else ""
        return f"Evidence for its error level ({self.kind.value}): {what}.{note} Cited: " + " ; ".join(self.cites)


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
    evidence: ClassVar[tuple[Evidence, ...]] = ()
    """Why an error of this rule is a proof (one entry per kind of error it reports); empty: the rule never
    errors (:meth:`report` demotes one to a warning)."""

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        """Yield this rule's findings over the whole fleet."""
        return iter(())

    @classmethod
    def explain(cls) -> str:
        """The rule's explain page: its docstring, cleaned, then the evidence behind its error level."""
        page = inspect.cleandoc(cls.__doc__ or "")
        if cls.evidence:
            page += "\n\n" + "\n\n".join(evidence.text() for evidence in cls.evidence)
        else:
            page += "\n\nEvidence: none declared, so it never reports an error (at most a warning)."
        return page

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
        An error from a rule that declares no :attr:`evidence` is reported as a warning:
        an error must be a proof (tests/rules/test_evidence.py keeps every rule honest).
        """
        chosen = severity or self.severity
        if chosen is Severity.ERROR and not self.evidence:
            chosen = Severity.WARNING
        return document.finding(
            self.id,
            scrub(message),
            path,
            severity=chosen,
            hint=scrub(self.hint if hint is None else hint),
            at_key=at_key,
        )


SECURITY_MD = "docs/security.md"
CONTRACT_MD = "docs/contract.md"
ESTIMATOR_ACCURACY = "bench/estimator_accuracy.py"


def refusal(*cites: str, note: str = "") -> Evidence:
    """The engine release (or the runtime under it) refuses: ``cites`` are pinned source URLs."""
    return Evidence(EvidenceKind.ENGINE_REFUSAL, cites, note)


def policy(section: str, note: str = "") -> Evidence:
    """A documented security policy: ``section`` is the anchor of docs/security.md."""
    return Evidence(EvidenceKind.SECURITY_POLICY, (f"{SECURITY_MD}#{section}",), note)


def contract(section: str, note: str = "") -> Evidence:
    """The spec's own grammar and contract: ``section`` is the anchor of docs/contract.md."""
    return Evidence(EvidenceKind.SPEC_CONTRACT, (f"{CONTRACT_MD}#{section}",), note)


def arithmetic(note: str = "", *cites: str) -> Evidence:
    """A shortfall beyond the estimator's measured error (``bench/estimator_accuracy.py``), or an exact count."""
    return Evidence(EvidenceKind.ARITHMETIC, cites or (ESTIMATOR_ACCURACY,), note)
