"""ENG rules: engine options checked against the real option catalog of that engine release."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from servespec.engines.base import Engine, Profile
from servespec.engines.catalog import EngineOption, EngineRelease, capability, normalize_option, version_key
from servespec.engines.kit import CHAT_TEMPLATE_FIELD
from servespec.engines.options import Setting
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.knowledge.chat_template import TRANSFORMERS_COMPILE
from servespec.redact import scrub
from servespec.rules.base import Rule, bare, contract, quoted, refusal
from servespec.rules.engine_inputs import chat_template_syntax, secret_env_collisions
from servespec.spec.fleet import DeploymentDoc, Fleet

_VLLM_ARGS = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/engine/arg_utils.py"
_VLLM_FLASH_ATTN = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/attention/backends/flash_attn.py"
_TGI_LIMITS = "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs"


def _in_spec_order(settings: tuple[Setting, ...]) -> list[Setting]:
    """``engine.options`` first, then ``extra_args``, each in the order written."""
    return sorted(settings, key=lambda setting: setting.from_extra_args)


def _option(release: EngineRelease, setting: Setting) -> EngineOption | None:
    """The option a setting sets: for ``extra_args`` as the release's parser reads the spelling (resolve)."""
    return setting.option if setting.from_extra_args else release.option(setting.name)


def _added_in(engine: Engine, key: str, current: EngineRelease) -> str | None:
    later = [r for r in engine.releases if version_key(r.version) > version_key(current.version)]
    for release in later:
        if release.option(key) is not None:  # any spelling: SGLang's --ep-size was an alias before it was the key
            return release.version
    return None


def _unknown_message(engine: Engine, release: EngineRelease, name: str) -> tuple[str, str]:
    key = normalize_option(name)
    title = engine.profile.title
    message = f"{title} {release.version} has no option {quoted(name)}"
    removed = release.removed(key)
    if removed and removed.removed_in:
        message += f" (removed in {removed.removed_in})"
    added = _added_in(engine, key, release)
    if added:
        message += f" (added in {added})"
    close = difflib.get_close_matches(key, list(release.options), n=1, cutoff=0.7)
    hint = f"did you mean '{close[0]}'?" if close else f"see `{engine.name}` options of {release.version}"
    # A flag or key can itself be a pasted token (``--hf_...``): SEC001 reports it, nobody echoes it.
    return scrub(message), scrub(hint)


def _unread_severity(profile: Profile) -> Severity | None:
    """An unknown setting of an engine configured by environment variables is ignored, not refused: a warning."""
    return Severity.WARNING if profile.arguments.parser == "env" else None


def _unchecked_message(engine: Engine, release: EngineRelease, name: str) -> tuple[str, str]:
    """An option a partial catalog does not list: not known to be missing, only not checked."""
    key = normalize_option(name)
    message = (
        f"{quoted(name)} is not in servespec's partial catalog of {engine.profile.title} {release.version}: "
        "it is passed on unchecked"
    )
    close = difflib.get_close_matches(key, list(release.options), n=1, cutoff=0.85)
    hint = f"if you meant '{close[0]}', use that spelling" if close else "check the spelling against the release's docs"
    return scrub(message), scrub(hint)


class UnknownEngineOption(Rule):
    """Every engine option must exist in that engine release.

    Options under ``engine.options`` are named like the engine's own flag without dashes
    (``block_size``, ``max_num_seqs``, ``max_batch_prefill_tokens``) and checked against
    the option catalog extracted from that release's source; flags in ``extra_args`` are
    checked the same way. The finding suggests the closest option, and says in which
    release an option was removed (vLLM ``num_scheduler_steps``: 0.10.1) or added.

    A version that is not a catalogued release (a typo, or a release newer than the
    catalogs) gets one warning naming the nearest catalogued releases; its options are
    checked against the nearest earlier one, or not at all when it is older than every
    catalogued release. A catalog built from incomplete sources is marked ``partial``
    (TensorRT-LLM's, read from its versioned docs): an option it does not list is not known to
    be missing, so it is only noted (info) as passed on unchecked, never said to be unknown.

    Fix: use the suggested name, drop the removed option, or pin a release that has it;
    for a release newer than the catalogs, catalog it (``scripts/catalog/refresh ENGINE`` builds
    every release newer than the catalogs; ``scripts/catalog/build.py ENGINE VERSION`` one release).

    Source: the engines' own argument definitions, e.g.
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/engine/arg_utils.py ; catalogs
    and their provenance in src/servespec/engines/<name>/releases/
    """

    id = "ENG001"
    name = "engine.unknown-option"
    severity = Severity.ERROR
    evidence = (
        refusal(
            "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/utils/__init__.py#L1848",
            "https://github.com/python/cpython/blob/v3.11.7/Lib/argparse.py#L1871",
            note="The release's parser refuses an unrecognized argument. Unknown to a partial catalog is only "
            "info, and an engine that reads environment variables (Ollama) ignores unknown ones: a warning there.",
        ),
    )
    summary = "engine option unknown for that engine version"
    sources = (_VLLM_ARGS,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            yield from self._version_notice(deployment)
            known = resolve.resolved(deployment)
            release = known.release
            if release is None:
                continue
            for setting in _in_spec_order(known.settings):
                if _option(release, setting) is None:
                    message, hint = (
                        _unchecked_message(known.engine, release, setting.name)
                        if release.partial
                        else _unknown_message(known.engine, release, setting.name)
                    )
                    yield self.report(
                        deployment.document,
                        message,
                        setting.path,
                        hint=hint,
                        at_key=setting.at_key,
                        severity=Severity.INFO if release.partial else _unread_severity(known.profile),
                    )
            yield from self._spec_fields(deployment, release)

    def _spec_fields(self, deployment: DeploymentDoc, release: EngineRelease) -> Iterator[Finding]:
        """Spec fields the release has no option for (TGI before 2.3.0 has no ``--api-key``)."""
        if release.partial:
            return
        engine = resolve.resolved(deployment).engine
        for field, option in engine.profile.spec_options.items():
            if field == "model.source":
                continue  # every engine takes its model (vLLM and trtllm-serve as a positional MODEL)
            section, _, name = field.partition(".")
            part = getattr(deployment.spec, section)
            value = getattr(part, name, None)
            unset = type(part).model_fields[name].default if name in type(part).model_fields else None
            if value in (None, "auto", unset) or release.option(option) is not None:
                continue  # at its default the field renders nothing the release must take (one pipeline stage)
            if not any(other.option(option) for other in engine.releases):
                continue  # no release lists it (a positional argument such as trtllm-serve's MODEL)
            added = _added_in(engine, option, release)
            later = f"; added in {added}" if added else ""
            yield self.report(
                deployment.document,
                f"{engine.profile.title} {release.version} has no option {option}, which {field} renders to{later}",
                tuple(field.split(".")),
                hint=f"pin a release that has it{f' ({added} or later)' if added else ''}, or unset {field}",
            )

    def _version_notice(self, deployment: DeploymentDoc) -> Iterator[Finding]:
        known = resolve.resolved(deployment)
        chosen = known.selection
        if chosen.relation == "exact":
            return
        engine = deployment.spec.engine.name
        nearest = ", ".join(known.engine.catalog.nearest(chosen.requested)) or "none"
        checked = f"checked against {chosen.release.version}" if chosen.release else "not checked"
        if chosen.relation == "newer":  # released after the catalogs were made: refresh finds and builds it
            hint = f"pin a catalogued release, or catalog the newer releases: scripts/catalog/refresh {engine}"
        else:
            requested = bare(chosen.requested)
            hint = f"pin a catalogued release, or catalog it: scripts/catalog/build.py {engine} {requested}"
        yield self.report(
            deployment.document,
            f"{engine} {bare(chosen.requested)} is not a catalogued release (nearest: {nearest}); "
            f"options are {checked}",
            ("engine", "version"),
            severity=Severity.WARNING,
            hint=hint,
        )


def _type_problem(option: EngineOption, value: Any) -> str:
    kind = option.type
    if kind == "bool":
        return "" if isinstance(value, bool) else "expects true or false"
    if kind == "int":
        if isinstance(value, bool) and option.bool_form == "value":
            return ""  # Ollama's OLLAMA_DEBUG: true/false, or a level (envconfig LogLevel)
        return "" if isinstance(value, int) and not isinstance(value, bool) else "expects an integer"
    if kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return "" if ok else "expects a number"
    if kind == "list":
        return "" if isinstance(value, list | str) else "expects a list"
    if kind == "dict":
        return "" if isinstance(value, dict | list | str) else "expects a mapping"
    return "" if isinstance(value, str | int | float) and not isinstance(value, bool) else "expects a string"


def _exclusive_problem(release: EngineRelease, option: EngineOption, value: Any) -> str:
    """Strict bounds (pydantic gt/lt) the catalog records beside the inclusive ones."""
    bounds = release.facts.option_bounds_exclusive.get(option.key)
    if bounds is None or not isinstance(value, int | float) or isinstance(value, bool):
        return ""
    low, high = bounds.min_exclusive, bounds.max_exclusive
    if low is not None and value <= low:
        return f"must be > {low}"
    if high is not None and value >= high:
        return f"must be < {high}"
    return ""


def _setting_problem(release: EngineRelease, option: EngineOption, setting: Setting) -> str:
    """What is wrong with one setting's value, in whichever spelling it was written ("" when nothing).

    ``engine.options`` values are typed YAML and judged as written; ``extra_args`` values are
    words, judged after parsing them as the option's type.
    """
    if not setting.from_extra_args:
        value = setting.raw
    elif setting.raw is True and option.type != "bool":
        return "expects a value"
    elif not setting.valid:
        return _type_problem(option, None)
    else:
        value = setting.value
    return _value_problem(option, value) or _exclusive_problem(release, option, value)


def _value_problem(option: EngineOption, value: Any) -> str:
    problem = _type_problem(option, value)
    if problem:
        return problem
    if option.choices and not isinstance(value, list | dict) and value not in option.choices:
        text = {str(c) for c in option.choices}
        if str(value) not in text:
            return "must be one of " + ", ".join(str(c) for c in option.choices)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if option.min is not None and value < option.min:
            return f"must be ≥ {option.min}"
        if option.max is not None and value > option.max:
            return f"must be ≤ {option.max}"
    return ""


class InvalidEngineOptionValue(Rule):
    """Every engine option value must have the option's type and lie in its choices or range.

    Types, choices and bounds come from the release's own parser (argparse ``choices``,
    clap ``value_enum``, pydantic bounds): ``gpu_memory_utilization`` ≤ 1.0, vLLM
    ``kv_cache_dtype`` in its list, TGI ``dtype`` in float16/bfloat16. Some limits are
    checked later than the parser: vLLM accepts ``--block-size 8`` but its CUDA attention
    backends (FlashAttention, Triton) require a multiple of 16 ("Block size must be a
    multiple of 16."), so 1 and 8 are reported for vLLM on CUDA. A quantization kernel chosen
    in the options (``model.quantization: auto``) needs the compute capability the release
    catalogues for it (``get_min_capability()``: vLLM ``gptq_marlin`` 8.0). SGLang from
    0.5.5.post1 asserts at start-up that the served name (``serving.model_name``, else the
    model path) has no ``:``, which it reserves for ``model:adapter`` LoRA requests. A
    ``serving.chat_template`` the engine compiles (vLLM, SGLang, KTransformers, TensorRT-LLM,
    llama.cpp) must parse as Jinja: it is parsed, never rendered, in transformers' own environment
    (``trim_blocks``, ``lstrip_blocks``, ``loopcontrols`` and the ``generation`` tag), and a syntax
    error is reported with the template's line; the engine's compiler would refuse it on every
    chat request (transformers ``_compile_jinja_template``).

    Fix: use a value the message allows.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/engine/arg_utils.py ;
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/attention/backends/flash_attn.py ;
    https://github.com/sgl-project/sglang/blob/v0.5.5.post1/python/sglang/srt/server_args.py ;
    https://github.com/huggingface/transformers/blob/v4.57.1/src/transformers/utils/chat_template_utils.py
    """

    id = "ENG002"
    name = "engine.option-value"
    severity = Severity.ERROR
    evidence = (
        refusal(
            _VLLM_ARGS,
            _VLLM_FLASH_ATTN + "#L85-L86",
            "https://github.com/python/cpython/blob/v3.11.7/Lib/argparse.py#L2548-L2554",
            note="argparse choices, clap value_enum, pydantic bounds and the attention backends refuse the value.",
        ),
    )
    summary = "engine option value invalid (choices, range, block size allowed on CUDA)"
    sources = (_VLLM_ARGS, _VLLM_FLASH_ATTN, TRANSFORMERS_COMPILE)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            release = known.release
            if release is None:
                continue
            for setting in known.settings:
                option = _option(release, setting)
                problem = _setting_problem(release, option, setting) if option else ""
                if option and problem:
                    yield self.report(
                        deployment.document,
                        f"{bare(setting.name)}: {problem}, got {quoted(setting.raw, setting.name)}",
                        setting.path,
                        hint=option.help[:120] if option.help else "",
                    )
            yield from self._kernel_capability(known, release)
            for message, path, hint in chat_template_syntax(deployment):
                # The engines start with it and fail each chat request instead: a warning, not a refusal.
                yield self.report(deployment.document, message, path, hint=hint, severity=Severity.WARNING)
            for found in known.engine_checks:
                if found.rule == self.id:
                    yield self.report(deployment.document, found.message, found.path, hint=found.hint)

    def _kernel_capability(self, known: resolve.Resolved, release: EngineRelease) -> Iterator[Finding]:
        """A quantization method chosen in the options needs the compute capability the release catalogues for it.

        The same minimum HW002 applies to ``model.quantization`` (``get_min_capability()``);
        here the method is the option's (vLLM ``gptq_marlin`` 8.0 where ``gptq`` is 6.0).
        """
        field = "model.quantization"
        deployment = known.deployment
        option = known.profile.spec_options.get(field)
        setting = known.effective.get(normalize_option(option)) if option else None
        if setting is None or deployment.spec.model.quantization not in (None, "auto"):
            return  # an explicit model.quantization is HW002's (and ENG003 says when the option disagrees)
        method = release.facts.quantization_methods.get(str(setting.value))
        minimum = capability(method.min_capability) if method and method.min_capability else None
        if minimum is None or minimum <= (0, 0):
            return
        for host in known.hosts:
            gpu = resolve.host_gpus(host)
            cc = gpu.model.cuda_capability if gpu.count and gpu.model else None  # None: not NVIDIA
            if cc is not None and cc < minimum:
                yield self.report(
                    deployment.document,
                    f"{bare(setting.name)}: {bare(setting.value)} on {deployment.spec.engine.name} {release.version} "
                    f"needs compute capability {minimum[0]}.{minimum[1]}; {host.name}'s GPU has {cc[0]}.{cc[1]}",
                    setting.path,
                    hint="choose a kernel the GPU runs (or leave it to the engine: remove the option)",
                )
                return


def _spec_field_for(known: resolve.Resolved, option: str) -> str | None:
    for field, engine_option in known.profile.spec_options.items():
        if engine_option == normalize_option(option):
            return field
    return None


def _leaves(value: Any, prefix: str, path: tuple[str | int, ...]) -> Iterator[tuple[str, Any, tuple[str | int, ...]]]:
    """Every non-mapping value of a nested mapping, with its dotted key and where it is written."""
    if isinstance(value, dict) and value:
        for child, item in value.items():
            yield from _leaves(item, f"{prefix}.{child}", (*path, str(child)))
    else:
        yield prefix, value, path


def _written_keys(settings: tuple[Setting, ...]) -> Iterator[tuple[str, Any, tuple[str | int, ...], bool, str]]:
    """(dotted key, value, path, at_key, spelling shown) for every key the settings write, in spec order.

    A mapping value is its leaves (``kv_cache_config: {dtype: fp8}`` writes ``kv_cache_config.dtype``);
    a flag whose catalog entry names a nested config key writes that key.
    """
    for setting in _in_spec_order(settings):
        if not setting.valid:
            continue
        if isinstance(setting.raw, dict) and not setting.from_extra_args:
            for key, value, path in _leaves(setting.raw, setting.key, setting.path):
                yield key, value, path, True, f"{setting.name} (nested)"
            continue
        option = setting.option
        key = setting.key
        if option is not None and option.flag and option.config_key and "." in option.config_key:
            key = option.config_key
        yield key, setting.value, setting.path, setting.at_key, _shown(setting)


def _shown(setting: Setting) -> str:
    """How a finding names a setting: its option name, or the extra argument as written."""
    if setting.from_extra_args:
        return f"extra argument {setting.name}"
    if len(setting.path) > 3:
        return f"{setting.path[2]} (nested)"
    return setting.name


class InconsistentEngineOptions(Rule):
    """Engine options must agree with each other and must not duplicate spec fields.

    Spec fields own their engine options (``resources.tensor_parallel`` renders vLLM
    ``tensor_parallel_size``, TGI ``num_shard``; ``model.max_model_len`` renders vLLM
    ``max_model_len``, TGI ``max_total_tokens``, SGLang ``context_length``, llama.cpp
    ``ctx_size``); setting them again under ``engine.options`` is an error, so one place
    decides. ``model.quantization: auto`` leaves the method to the engine, and an engine
    kernel may then be chosen in the options (vLLM ``gptq_marlin``, SGLang ``moe_wna16``,
    checked against the release's choices by ENG002); with an explicit
    ``model.quantization`` an option naming another method is an error. Relations the
    engines enforce are checked before start-up: TGI requires
    ``max_input_tokens < max_total_tokens ≤ max_batch_total_tokens`` and
    ``max_batch_prefill_tokens ≤ max_batch_total_tokens`` (launcher/src/main.rs); vLLM
    requires ``max_num_batched_tokens ≥ max_model_len`` when chunked prefill is disabled.
    A nested key (TensorRT-LLM ``kv_cache_config.dtype``) written both dotted and inside its
    mapping, or also set by the flag that writes it (``--free_gpu_memory_fraction``), with
    different values is an error: trtllm-serve merges the YAML file over the flags. An
    ``engine.secret_env`` name that is the variable servespec gives ``serving.api_key`` to
    (vLLM ``VLLM_API_KEY``, llama.cpp ``LLAMA_API_KEY``, TGI ``API_KEY``) or the variable one
    of the release's options is read from (its catalog's ``env``: Ollama ``OLLAMA_*``, TGI's
    launcher variables) is an error: two values would meet under one name in the container.
    ``engine.options.chat_template`` duplicates ``serving.chat_template`` only when both are
    set: alone it keeps its own meaning (an SGLang built-in template name, a vLLM template).

    Fix: set the spec field instead of the option, or make the values consistent.

    Source: https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs ;
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/scheduler.py
    """

    id = "ENG003"
    name = "engine.option-consistency"
    severity = Severity.ERROR
    evidence = (
        refusal(
            _TGI_LIMITS + "#L2160",
            _TGI_LIMITS + "#L2203",
            "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/scheduler.py",
            note="The relations the engines enforce at start-up.",
        ),
        contract(
            "11-deployment", note="An option that duplicates a spec field, or a key set twice: one place decides."
        ),
    )
    summary = "engine options inconsistent with each other or with the spec"
    sources = (_TGI_LIMITS, "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/scheduler.py")

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            for setting in _in_spec_order(known.settings):
                field = _spec_field_for(known, setting.key)
                if field == CHAT_TEMPLATE_FIELD and deployment.spec.serving.chat_template is None:
                    continue  # unset, the option keeps its own meaning (SGLang's built-in template names)
                if field == "model.quantization":
                    yield from self._quantization(known, setting)
                    continue
                if field:
                    what = (
                        f"extra argument {bare(setting.name)}"
                        if setting.from_extra_args
                        else f"option {quoted(setting.name)}"
                    )
                    yield self.report(
                        deployment.document,
                        f"{what} duplicates the spec field {field}",
                        setting.path,
                        hint=f"remove it and set {field}",
                        at_key=setting.at_key,
                    )
            yield from self._set_twice(deployment, known)
            for message, path, hint in secret_env_collisions(deployment):
                yield self.report(deployment.document, message, path, hint=hint, at_key=True)
            for found in known.engine_checks:
                if found.rule == self.id:
                    yield self.report(deployment.document, found.message, found.path, hint=found.hint)

    def _set_twice(self, deployment: DeploymentDoc, known: resolve.Resolved) -> Iterator[Finding]:
        """One nested key set differently by its dotted and nested spellings, or by a flag that sets it.

        ``kv_cache_config.dtype: fp8`` beside ``kv_cache_config: {dtype: auto}`` writes one YAML
        key twice, and trtllm-serve's ``--free_gpu_memory_fraction`` sets the LLM-API key
        ``kv_cache_config.free_gpu_memory_fraction``, which the YAML file overrides
        (``update_llm_args_with_extra_dict``: "YAML wins").
        """
        seen: dict[str, tuple[Any, str, tuple[str | int, ...]]] = {}
        for key, value, path, at_key, shown in _written_keys(known.settings):
            first = seen.setdefault(key, (value, shown, path))
            if first[2] == path or first[0] == value or str(first[0]) == str(value):
                continue
            yield self.report(
                deployment.document,
                f"{bare(shown)} sets {bare(key)} to {quoted(value, key)}, but {bare(first[1])} sets it to "
                f"{quoted(first[0], key)}",
                path,
                hint="set it once (the nested and dotted spellings are the same key)",
                at_key=at_key,
            )

    def _quantization(self, known: resolve.Resolved, setting: Setting) -> Iterator[Finding]:
        """An engine kernel (``awq_marlin``, ``moe_wna16``) may be chosen while ``model.quantization`` is auto.

        With an explicit ``model.quantization`` the option must name the same method the
        field renders; otherwise two places decide and the option silently wins.
        """
        deployment = known.deployment
        chosen = deployment.spec.model.quantization
        if chosen in (None, "auto"):
            return  # the engine's own choice, checked against the release's choices (ENG002)
        profile = known.profile
        method = profile.quantization.get(chosen)
        if isinstance(method, str) and str(setting.value) == method:
            return
        if chosen in profile.quantization_kernels.get(str(setting.value), ()):
            return  # a kernel for that checkpoint format (moe_wna16 runs awq and gptq checkpoints)
        renders = f"renders {method}" if isinstance(method, str) else "renders no method"
        where = f"extra argument {bare(setting.name)}" if setting.from_extra_args else f"option {quoted(setting.name)}"
        yield self.report(
            deployment.document,
            f"{where} {quoted(setting.raw, setting.name)} disagrees with model.quantization {bare(chosen)}, "
            f"which {renders}",
            setting.path,
            hint="set model.quantization: auto to choose the engine's kernel with the option, or remove the option",
            at_key=setting.at_key,
        )
