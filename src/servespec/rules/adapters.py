"""ADP rules: ``model.adapters`` (LoRA) checked against the engine release and each ``adapter_config.json``."""

from __future__ import annotations

from collections.abc import Iterator

from servespec import hostpaths
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.knowledge.adapters import AdapterConfig, adapter_config
from servespec.rules.base import Rule, quoted, refusal
from servespec.spec.fleet import DeploymentDoc, Fleet

_VLLM_RANK_0110 = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/peft_helper.py#L113-L127"
_VLLM_RANK_0330 = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/lora/peft_helper.py#L188-L202"
_VLLM_RANK_060 = "https://github.com/vllm-project/vllm/blob/v0.6.0/vllm/lora/worker_manager.py#L108-L111"
_VLLM_FEATURES = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/peft_helper.py#L42-L51"
_VLLM_FEATURES_0330 = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/lora/peft_helper.py#L53-L68"
_VLLM_LORA_MODULES = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/cli_args.py"


def _kind(source: str) -> str:
    """As engines.kit.AdapterPath.kind: ``hub``, ``gguf`` or ``folder``."""
    if not hostpaths.is_local_path(source):
        return "hub"
    return "gguf" if source.endswith(".gguf") else "folder"


class AdaptersNotServed(Rule):
    """``model.adapters`` must be servable by the engine release, under their names.

    servespec renders adapters for vLLM (``--enable-lora --lora-modules name=path``), SGLang
    (``--lora-paths name=path``), TGI (``LORA_ADAPTERS``, catalogued from 2.1.0), Ollama (a model
    per adapter, its Modelfile's ``ADAPTER``: a GGUF file or Safetensors folder on the host) and
    llama.cpp (``--lora FILE``, GGUF adapter files on the hosts only). Reported, and not rendered:

    - an engine servespec renders no adapters for (TensorRT-LLM, XInference, ...), or a
      release whose catalog lacks the engine's adapter option;
    - an adapter in a form the engine does not load: llama.cpp reads GGUF adapter files only;
      Ollama a host file or folder; the others PEFT folders (a Hub repository or a host folder), not
      ``.gguf`` files;
    - llama.cpp applies every ``--lora`` adapter to every request: no request selects one by
      name, so the names are not served (the adapter is rendered, the finding says so).

    A warning: the server starts; it serves the base model only, or the adapter for everyone.

    Fix: choose an engine and release that serves adapters by name, or convert the adapter
    (llama.cpp's ``convert_lora_to_gguf.py``).

    Source: the engines' adapter options in their catalogs (src/servespec/engines/<name>/releases/),
    e.g. https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/cli_args.py
    """

    id = "ADP001"
    name = "adapters.not-served"
    severity = Severity.WARNING
    summary = "model.adapters cannot be served by name by this engine release"
    sources = (_VLLM_LORA_MODULES,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            adapters = deployment.spec.model.adapters
            if not adapters:
                continue
            known = resolve.resolved(deployment)
            engine, release, title = known.engine, known.release, known.profile.title
            option = engine.adapter_option
            if engine.adapters_in_modelfile:
                pass
            elif option is None or (release is not None and release.option(option) is None):
                why = f"{title} {release.version} has no {option} option" if option and release else ""
                yield self.report(
                    deployment.document,
                    f"{why or f'servespec renders no LoRA adapters for {title}'}: model.adapters are not served",
                    ("model", "adapters"),
                    hint="serve them with vLLM, SGLang or TGI, or drop model.adapters",
                )
                continue
            for index, adapter in enumerate(adapters):
                kind = _kind(str(adapter.source))
                if kind not in engine.adapter_formats:
                    wanted = " or ".join(engine.adapter_formats)
                    yield self.report(
                        deployment.document,
                        f"{title} does not load a {kind} adapter ({wanted} only): adapter "
                        f"{quoted(adapter.name)} is not rendered",
                        ("model", "adapters", index, "source"),
                        hint="give the adapter in a form the engine loads",
                    )
                elif not engine.adapters_by_name:
                    yield self.report(
                        deployment.document,
                        f"{title} applies adapter {quoted(adapter.name)} to every request: no request selects it "
                        "by name",
                        ("model", "adapters", index, "name"),
                        hint="clients send the model's name; each request's `lora` field can set the scale",
                    )


def _engine_checks(rule: Rule, deployment: DeploymentDoc) -> Iterator[Finding]:
    """The engine unit's own findings for ``rule`` (engines/<name>/checks.py), at the level the unit gives."""
    for found in resolve.resolved(deployment).engine_checks:
        if found.rule == rule.id:
            level = None if found.error is None else (Severity.ERROR if found.error else Severity.WARNING)
            yield rule.report(deployment.document, found.message, found.path, hint=found.hint, severity=level)


class AdapterRankAboveLimit(Rule):
    """A LoRA adapter's rank must not exceed vLLM's ``max_lora_rank`` (16 unless set).

    vLLM refuses to load such an adapter ("LoRA rank 32 is greater than max_lora_rank 16"):
    an adapter named in ``--lora-modules`` is loaded at start-up, so the server does not come up.
    The rank is the adapter's ``adapter_config.json`` ``r``, and from 0.33.0 the largest
    ``rank_pattern`` value too (``validate_legal``). The config is read from the adapter's host
    path, the local Hugging Face cache, or the Hub (``--hub``); an adapter whose config is not at
    hand is not checked.

    Fix: set ``engine.options.max_lora_rank`` to at least the adapter's rank (one of the
    release's choices: 8, 16, 32, 64, 128, 256, 320, 512).

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/peft_helper.py#L114-L127
    (``validate_legal``), v0.33.0 L188-L202, v0.6.0 vllm/lora/worker_manager.py L108-L111; the check is the
    vLLM unit's (engines/vllm/checks.py ``adapter_checks``).
    """

    id = "ADP002"
    name = "adapters.rank"
    severity = Severity.ERROR
    evidence = (
        refusal(
            _VLLM_RANK_0110,
            _VLLM_RANK_0330,
            _VLLM_RANK_060,
            note="vLLM raises ValueError loading an adapter whose rank exceeds max_lora_rank.",
        ),
    )
    summary = "a LoRA adapter's rank is above vLLM's max_lora_rank"
    sources = (_VLLM_RANK_0110, _VLLM_RANK_0330, _VLLM_RANK_060)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            if deployment.spec.model.adapters:
                yield from _engine_checks(self, deployment)


def _base_names(deployment: DeploymentDoc) -> set[str]:
    source = str(deployment.spec.model.source).rstrip("/")
    names = {source.lower(), source.rsplit("/", 1)[-1].lower()}
    return names


class AdapterConfigMismatch(Rule):
    """Each adapter's ``adapter_config.json`` should fit the model and the engine.

    - ``base_model_name_or_path`` names another model than ``model.source`` (compared by repo id
      or its last path component): an adapter trained on another base loads if the shapes agree
      but answers badly, or fails to load when they differ;
    - vLLM refuses an adapter with ``modules_to_save`` or DoRA (``use_dora``) at load
      ("vLLM only supports modules_to_save being None", "vLLM does not yet support DoRA"),
      checked for releases from 0.8.5 (read in 0.8.5, 0.11.0 and 0.33.0; 0.33.0 accepts a
      ``classifier`` or ``score`` head there, which is never reported).

    A warning for the base model (a local copy of the same model has another name); the vLLM
    refusals are errors.

    Fix: use the adapter trained for this model, or an engine release that loads it.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/peft_helper.py#L42-L51
    """

    id = "ADP003"
    name = "adapters.config"
    severity = Severity.WARNING
    evidence = (
        refusal(
            _VLLM_FEATURES,
            _VLLM_FEATURES_0330,
            note="vLLM's PEFTHelper refuses modules_to_save and DoRA adapters (from 0.8.5 as catalogued).",
        ),
    )
    summary = "an adapter's adapter_config.json does not match the model or the engine"
    sources = (_VLLM_FEATURES, _VLLM_FEATURES_0330)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            for index in range(len(deployment.spec.model.adapters)):
                config, _ = adapter_config(deployment, index)
                if config is not None:
                    yield from self._base(deployment, index, config)
            if deployment.spec.model.adapters:
                yield from _engine_checks(self, deployment)

    def _base(self, deployment: DeploymentDoc, index: int, config: AdapterConfig) -> Iterator[Finding]:
        base = (config.base_model or "").rstrip("/")
        if not base or {base.lower(), base.rsplit("/", 1)[-1].lower()} & _base_names(deployment):
            return
        name = deployment.spec.model.adapters[index].name
        yield self.report(
            deployment.document,
            f"adapter {quoted(name)} was trained on {quoted(base)} (its adapter_config.json), not on "
            f"{quoted(deployment.spec.model.source)}",
            ("model", "adapters", index, "source"),
            hint="use the adapter trained for model.source",
        )
