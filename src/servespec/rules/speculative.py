"""SPD rules: ``model.speculative`` checked against what the engine release renders and refuses."""

from __future__ import annotations

from collections.abc import Iterator

from servespec.engines.catalog import version_key
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule, refusal
from servespec.spec.fleet import DeploymentDoc, Fleet

_VLLM_TOKENS = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/speculative.py#L518-L524"
_VLLM_METHODS = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/speculative.py#L32-L35"
_VLLM_DRAFT = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/engine/arg_utils.py#L1485-L1489"


class SpeculativeNotRendered(Rule):
    """``model.speculative`` must be a method the engine release runs as written.

    servespec renders EAGLE, EAGLE-3, MTP, n-gram and draft-model speculation for vLLM
    (``--speculative-config`` from 0.8.2, ``--speculative-model`` before), SGLang
    (``--speculative-algorithm`` EAGLE, EAGLE3, NEXTN, NGRAM, STANDALONE) and TensorRT-LLM (the
    LLM-API ``speculative_config``, its ``decoding_type`` one of the release catalog's choices), and
    n-gram for TGI (``--speculate N``). Reported:

    - a method the engine or release does not render (TGI with a draft, vLLM MTP before 0.8.2, a
      ``decoding_type`` the TensorRT-LLM release lacks, any method on llama.cpp, Ollama and the
      others): a warning, the server runs without speculation;
    - a method servespec read only in a later release than the one pinned (vLLM ``mtp`` from
      0.11.0: 0.8.5 knows MTP only as a model type; SGLang NGRAM, STANDALONE and EAGLE3 read in
      0.5.5.post3): a warning;
    - a method the release refuses at start-up: vLLM 0.11.0 runs the V1 engine only and refuses a
      draft model ("Draft model speculative decoding is not supported yet", engine/arg_utils.py
      L1485-L1489), which 0.8.5 runs on V0 and 0.33.0 on V1: an error on 0.11.0, a warning on the
      releases between that servespec did not read;
    - vLLM with ``speculative_config`` and no ``num_tokens``: the release refuses ("num_speculative_tokens
      must be provided with speculative model unless the draft model config contains an n_predict
      parameter"): an error for ngram (no draft config), a warning for a draft or EAGLE head (its
      config may carry ``n_predict``); MTP takes ``num_nextn_predict_layers``.

    Fix: pick a method the release runs, or pin a release that has it; set ``num_tokens``.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/speculative.py
    (SpeculativeMethod L32-L35, ``_verify_args`` L518-L524); SGLang srt/speculative/spec_info.py (0.5.23).
    """

    id = "SPD001"
    name = "speculative.not-rendered"
    severity = Severity.WARNING
    evidence = (
        refusal(
            _VLLM_TOKENS,
            note="vLLM's SpeculativeConfig refuses a speculative model without num_speculative_tokens or n_predict.",
        ),
        refusal(_VLLM_DRAFT, note="vLLM 0.11.0 (V1 only) refuses draft-model speculative decoding."),
    )
    summary = "model.speculative is not run as written by this engine release"
    sources = (_VLLM_METHODS, _VLLM_TOKENS, _VLLM_DRAFT)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            speculative = deployment.spec.model.speculative
            if speculative is None:
                continue
            why = resolve.resolved(deployment).engine.speculative_problem(resolve.resolved(deployment))
            if why:
                yield self.report(
                    deployment.document,
                    f"{why}: model.speculative is not rendered",
                    ("model", "speculative", "method"),
                    hint="choose a method this engine release runs, or drop model.speculative",
                )
                continue
            known = resolve.resolved(deployment)
            checked = known.engine.speculative_checked.get(speculative.method)
            version = deployment.spec.engine.version
            if checked and version_key(version) < version_key(checked):
                yield self.report(
                    deployment.document,
                    f"{known.profile.title} {version}: servespec read the {speculative.method} method only from "
                    f"{checked} on: the release may refuse it",
                    ("model", "speculative", "method"),
                    hint=f"pin {checked} or later, or check the release's speculative methods",
                )
            yield from self._refused(deployment)
            for found in known.engine_checks:  # the unit's own (vLLM: num_speculative_tokens)
                if found.rule == self.id:
                    level = None if found.error is None else (Severity.ERROR if found.error else Severity.WARNING)
                    yield self.report(deployment.document, found.message, found.path, hint=found.hint, severity=level)

    def _refused(self, deployment: DeploymentDoc) -> Iterator[Finding]:
        known = resolve.resolved(deployment)
        speculative = deployment.spec.model.speculative
        assert speculative is not None
        found = known.engine.speculative_refused.get(speculative.method)
        version = deployment.spec.engine.version
        if found is None or not version_key(found[0]) <= version_key(version) < version_key(found[1]):
            return
        read = version_key(version) == version_key(found[0])
        yield self.report(
            deployment.document,
            f"{known.profile.title} {version} refuses {speculative.method} speculation at start-up"
            if read
            else f"{known.profile.title} {found[0]} refuses {speculative.method} speculation and {found[1]} runs it; "
            f"{version} was not read",
            ("model", "speculative", "method"),
            hint=f"pin {found[1]} or later, or use eagle, eagle3, mtp or ngram",
            severity=Severity.ERROR if read else Severity.WARNING,
        )
