"""MEM rules: weights and KV cache must fit the GPUs, as each engine budgets memory."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.knowledge.error_band import ErrorBand, error_band, model_class
from servespec.knowledge.memory import GpuEstimate, quant_bits_of_name
from servespec.rules.base import Rule, arithmetic, bare, placements, refusal
from servespec.spec.fleet import DeploymentDoc, Fleet, HostView

_VLLM_MEMORY = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/worker/gpu_worker.py"
_VLLM_KV_CHECK = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/core/kv_cache_utils.py"
_SGLANG_MEMORY = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/arg_groups/memory_hook.py"
_TGI_MEMORY = (
    "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/"
    "server/text_generation_server/models/flash_causal_lm.py"
)


def _offload_path(known: resolve.Resolved) -> tuple[str | int, ...]:
    """Where a finding about layers in host memory points: the layer-count option as set, else the model."""
    effective = known.effective
    for key in ("n_gpu_layers", "modelfile.num_gpu", "num_gpu"):
        if key in effective:
            return effective[key].path
    return ("model", "source")


def _gpu_label(host: HostView) -> str:
    hardware = resolve.host_gpus(host)
    return hardware.model.display_name if hardware.model else "CPU memory"


def _verdict(known: resolve.Resolved, shortfall: float) -> tuple[Severity, str]:
    """Error when ``shortfall`` GiB exceeds the estimator's measured error for the model's class, else a
    warning, with the words that say which (knowledge/error_band.py; bench/estimator_accuracy.py measures it)."""
    facts = known.model.facts
    method = known.deployment.spec.model.quantization
    if method not in (None, "auto", "gguf") and quant_bits_of_name(method) is None and not (facts and facts.quant_bits):
        # e.g. compressed-tensors: only the checkpoint's quantization_config fixes the width; none was read
        return Severity.WARNING, (
            f"may not fit: {method} weights are sized as 16-bit because the checkpoint's quantization_config "
            "was not read (a local path, the HF cache, `deploy lock` or `--hub` reads it); "
        )
    band: ErrorBand = error_band(facts)
    kind = model_class(facts) if facts is not None else "unknown"
    if shortfall > band.gib:
        return Severity.ERROR, ""
    measured = f"{band.logs} recorded log(s)" if band.logs else "no recorded log of the class"
    return Severity.WARNING, (
        f"may not fit: the {shortfall:.2f} GiB shortfall is within the estimator's measured error of "
        f"{band.gib:.2f} GiB for {kind} models ({measured}); "
    )


def _estimates(fleet: Fleet) -> Iterator[tuple[resolve.Resolved, HostView, GpuEstimate]]:
    for deployment, host in placements(fleet):
        known = resolve.resolved(deployment)
        plan = known.estimate_on(host)
        if plan is not None:
            yield known, host, plan


class WeightsDoNotFit(Rule):
    """The model's weights, after quantization and the parallel split, must fit one GPU.

    Each GPU of a replica holds ``weights / (tensor_parallel × pipeline_parallel)``
    (embeddings and the LM head are split too). The weights are computed from the model's
    architecture (parameter count from its config.json) and the bytes per weight of the
    dtype or quantization: 2 for bfloat16/float16, 1 for FP8/INT8, about 4.16 bits for
    4-bit AWQ/GPTQ (a 16-bit scale and 4-bit zero per group of 128), and for GGUF the
    file-type sizes llama-quantize documents. The budget is the engine's: vLLM loads
    weights inside ``gpu_memory_utilization × total``.

    An error only when the shortfall exceeds the estimator's measured error for the model's
    class (dense, MoE, sliding-window, linear-attention, MLA: the largest error in GiB over the
    recorded start-up logs, ``bench/estimator_accuracy.py``, stored in
    knowledge/data/estimator_band.yaml); a smaller shortfall is a "may not fit" warning.

    Fix: raise ``tensor_parallel`` (the message names the smallest that fits), or use a
    quantized checkpoint, or a bigger GPU.

    llama.cpp and Ollama can keep layers in host memory: a layer count the spec gives
    (``n_gpu_layers``, ``num_gpu``) or the engine's own fitting (llama.cpp ``--fit``, Ollama's
    scheduler) is a plan, not an error; their weights and KV cache then count against the
    host's RAM (``hardware.memory_gib``), and not fitting there is this rule's finding too.

    Source: vLLM memory profiling, vllm/v1/worker/gpu_worker.py (determine_available_memory):
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/worker/gpu_worker.py ;
    llama.cpp tools/quantize/quantize.cpp for GGUF sizes.
    """

    id = "MEM001"
    name = "memory.weights-fit"
    severity = Severity.ERROR
    evidence = (arithmetic("The weights alone exceed the GPU (the memory band of the estimator decides inside it)."),)
    summary = "model weights (after quantization and parallel split) do not fit a GPU"
    sources = (_VLLM_MEMORY, "https://github.com/ggml-org/llama.cpp/blob/b11312/tools/quantize/quantize.cpp")

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for known, host, plan in _estimates(fleet):
            deployment = known.deployment
            offload = plan.offload
            if offload is not None and offload.host_total_gib is not None and offload.host_gib > offload.host_total_gib:
                severity, hedge = _verdict(known, offload.host_gib - offload.host_total_gib)
                yield self.report(
                    deployment.document,
                    f"{hedge}{offload.layers - offload.gpu_layers} of {offload.layers} {offload.unit} stay in "
                    f"{host.name}'s "
                    f"host memory ({offload.reason}) and need {offload.host_gib:.1f} GiB of {offload.contents}, but "
                    f"the host has {offload.host_total_gib:g} GiB of RAM",
                    _offload_path(known),
                    hint="put more layers on the GPUs, lower max_model_len, use a smaller quantization, or a host "
                    "with more RAM or GPU memory"
                    if offload.unit == "layers"
                    else f"keep more {offload.unit} on the GPUs, use a smaller format, or a host with more RAM",
                    severity=severity,
                )
                continue
            budget = plan.total_gib - plan.overhead_gib + plan.beside_gib  # adapters' or a draft's share: MEM007
            if plan.weights_gib <= budget:
                continue
            spec = deployment.spec
            gpus = spec.gpus_per_replica
            full = plan.weights_gib * gpus
            # Suggest a split that leaves 10% of the budget free (a margin servespec assumes).
            need = next((tp for tp in (2, 4, 8, 16, 32, 64) if full / tp <= budget * 0.9), None)
            on_host = resolve.host_gpus(host).count
            advice = f"use tensor_parallel ≥ {need}" if need else "use more GPUs per replica"
            if need and on_host is not None and need > on_host:
                advice = f"use a bigger GPU or a host with ≥ {need} GPUs ({host.name} has {on_host})"
            if known.profile.loads_gguf:
                advice += ", or keep some layers in host memory (the engine's GPU-layer count)"
            quant = "" if spec.model.quantization not in (None, "auto") else " or a 4-bit quantization"
            severity, hedge = _verdict(known, plan.weights_gib - budget)
            yield self.report(
                deployment.document,
                f"{hedge}needs {plan.weights_gib:.1f} GiB of weights per GPU on {host.name}'s "
                f"{plan.total_gib:.1f} GiB {_gpu_label(host)} ({full:.1f} GiB over {gpus} GPU(s))",
                ("resources", "tensor_parallel") if "resources" in deployment.document.data else ("model", "source"),
                hint=f"{advice}{quant}",
                severity=severity,
            )


class NoRoomForKvCache(Rule):
    """After weights and overheads, the KV cache must hold at least one full-length sequence.

    Engines refuse to start otherwise: vLLM raises "To serve at least one request with the
    models's max seq len (L), (X GiB KV cache is needed, which is larger than the
    available KV cache memory (Y GiB)" (vllm/v1/core/kv_cache_utils.py,
    check_enough_kv_cache_memory). KV bytes per token per GPU are
    ``2 × layers × kv_heads_per_gpu × head_dim × dtype`` (or the MLA latent for DeepSeek).
    llama.cpp and Ollama allocate the whole context (``max_model_len × slots``) up front.

    A hybrid model (sliding-window, chunked or linear-attention layers) is sized with the same
    layout as the capacity: the release's hybrid KV-cache manager fact, where a sliding-window
    layer needs its window's blocks only. On a vLLM release that has the manager but whose
    catalog lacks the fact, the layout is not known: every layer is sized at full length and
    the least any layout needs (full-attention layers at the whole context, windowed ones at
    their window) decides: within it, a "may not fit" warning. As for MEM001, only a shortfall
    beyond the estimator's measured error for the model's class is an error.

    SGLang (and KTransformers' sglang-kt) do not refuse: they start and cap the longest request
    at what the pool holds (profile ``short_kv_cache``, tp_worker.py ``max_req_len``), so there a
    pool that is not empty gets a warning that says so. An empty pool, which they refuse ("Not enough
    memory"), is MEM001's: the weights and overheads exceed the memory fraction's budget.

    Fix: lower ``model.max_model_len``, raise the engine's memory fraction
    (``gpu_memory_utilization``, ``mem_fraction_static``), use an FP8 KV cache, or add GPUs.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/core/kv_cache_utils.py ;
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/kv_cache_interface.py (SlidingWindowSpec)
    """

    id = "MEM002"
    name = "memory.kv-cache-room"
    severity = Severity.ERROR
    evidence = (arithmetic("No KV cache room for one sequence after weights and overheads."),)
    summary = "no room left for the KV cache of one max_model_len sequence"
    sources = (_VLLM_KV_CHECK, _SGLANG_MEMORY, _TGI_MEMORY)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for known, host, plan in _estimates(fleet):
            deployment = known.deployment
            if plan.weights_gib > plan.total_gib - plan.overhead_gib:
                continue  # MEM001 already says the weights do not fit
            gguf = known.profile.loads_gguf
            free = plan.total_gib - plan.weights_gib - plan.overhead_gib if gguf else plan.kv_cache_gib
            need = plan.kv_cache_gib if gguf else plan.one_sequence_gib
            if free >= need - 0.005:  # the plan's GiB are rounded to 0.01: a context the KV cache was sized to fits
                continue
            if not gguf and plan.beside_gib and free + plan.beside_gib >= need - 0.005:
                continue  # it fits without the adapters' or the draft's share: MEM007 reports that
            fit = int(max(free, 0) * 1024**3 // plan.kv_bytes_per_token) if plan.kv_bytes_per_token else 0
            hint = f"set max_model_len ≤ {fit}, use a smaller KV-cache dtype, or add GPUs"
            if fit == 0:
                hint = "give the engine more memory (its memory fraction option), or use bigger GPUs"
            # A hybrid model on a release whose hybrid KV-cache layout is not catalogued, or not modelled for
            # this model (engines/vllm/memory.py hybrid_layout_unknown): ``need`` sizes every layer at full
            # length, ``floor`` is the least any layout of its manager needs.
            floor = None if gguf else plan.one_sequence_floor_gib
            layout = ""
            if floor is not None:
                layout = (
                    " with every layer at full length (the release's hybrid KV-cache layout for this model is not "
                    f"modelled; any layout needs at least {floor:.2f} GiB)"
                )
            caps = known.profile.short_kv_cache
            if floor is not None and floor <= free:
                severity, hedge = Severity.WARNING, "may not fit: "
            elif caps is not None and not gguf and free > 0:
                severity, hedge = Severity.WARNING, f"{caps.effect} ({caps.source}): "
            else:
                severity, hedge = _verdict(known, (need if floor is None else floor) - free)
            yield self.report(
                deployment.document,
                f"{hedge}a {plan.context_tokens}-token sequence ({plan.context_basis}) needs {need:.2f} GiB of KV "
                f"cache per GPU{layout} but only {max(free, 0):.2f} GiB is left on {host.name}'s {_gpu_label(host)} "
                f"after {plan.weights_gib:.1f} GiB of weights",
                ("model", "max_model_len"),
                hint=hint,
                severity=severity,
            )


class FewerSequencesThanBatch(Rule):
    """How many full-length sequences the KV cache holds, when the batch limit is set above it.

    The batch limit (vLLM ``max_num_seqs``, SGLang ``max_running_requests``, TGI
    ``max_batch_size``, TensorRT-LLM ``max_batch_size``) bounds concurrent sequences; the KV
    cache bounds their tokens. A limit above the number of ``max_model_len`` sequences that
    fit is a valid throughput setting (upstream recipes use 512-1024 for short requests):
    short requests all run, and when long ones coincide each engine's scheduler preempts,
    retracts or queues (profile ``kv_exhausted``, quoted in the message with its source).
    vLLM logs the same number as "Maximum concurrency for N tokens per request: X".

    Reported as information: nothing fails. The hint is the engine's own advice.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/core/kv_cache_utils.py
    (get_max_concurrency_for_kv_cache_config); each engine's ``kv_exhausted`` source.
    """

    id = "MEM003"
    name = "memory.concurrency"
    severity = Severity.WARNING
    summary = "KV cache fits fewer concurrent full-length sequences than the configured batch"
    sources = (_VLLM_KV_CHECK,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for known, host, plan in _estimates(fleet):
            deployment = known.deployment
            option = known.profile.batch_option
            setting = known.effective.get(option) if option else None
            value = setting.value if setting else None
            if setting is None or not isinstance(value, int) or isinstance(value, bool) or plan.kv_tokens <= 0:
                continue
            if known.profile.loads_gguf or plan.max_sequences >= value:
                continue
            beyond = known.profile.kv_exhausted
            behaviour = f"; beyond that the engine {beyond.behaviour} ({beyond.source})" if beyond else ""
            yield self.report(
                deployment.document,
                f"{option} {value}: the KV cache on {host.name} holds {plan.kv_tokens:,} tokens, "
                f"{math.floor(plan.max_sequences)} sequences of the full {plan.context_tokens} tokens "
                f"({plan.context_basis}); up to {value} shorter ones run at once{behaviour}",
                setting.path,
                hint=beyond.advice if beyond else "nothing to change for short requests",
                severity=Severity.INFO,
            )


def _claimed_share(known: resolve.Resolved, host: HostView) -> float | None:
    """The share of each GPU a deployment claims; engines with a fraction option need no model facts."""
    profile = known.profile
    option = profile.memory_fraction_option if profile.memory_fraction_of == "total" else None
    value = known.options.get(option) if option else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    plan = known.estimate_on(host)
    if plan is not None:
        return plan.claimed_fraction
    # Without model facts: the release's default fraction (vLLM 0.9, TGI 1.0); None when it is computed.
    default = known.release.default(option) if known.release and option else None
    return float(default) if isinstance(default, int | float) and not isinstance(default, bool) else None


class SharedGpuOversubscribed(Rule):
    """Deployments sharing a GPU must not ask for more memory than it has.

    Each engine claims its share up front: vLLM ``gpu_memory_utilization`` (default 0.9),
    SGLang ``mem_fraction_static``, TGI ``cuda_memory_fraction`` (default 1.0); llama.cpp
    and Ollama claim weights + context + buffers. Two deployments on the same device
    indices of one host whose shares add up to more than 1 cannot both start: the second
    fails with vLLM's "Free memory on device ... is less than desired GPU memory
    utilization".

    Fix: give them different ``gpu_ids``, or lower their fractions so they sum to ≤ 1.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/worker/gpu_worker.py
    (init_device, requested_memory check)
    """

    id = "MEM004"
    name = "memory.shared-gpu"
    severity = Severity.ERROR
    evidence = (arithmetic("Fractions of one GPU summed above its memory."),)
    summary = "deployments sharing a GPU ask for more memory than it has"
    sources = (_VLLM_MEMORY,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        claims: dict[tuple[str, str, int], list[tuple[DeploymentDoc, float]]] = defaultdict(list)
        for deployment, host in placements(fleet):
            known = resolve.resolved(deployment)
            share = _claimed_share(known, host)
            if not resolve.host_gpus(host).count or share is None:
                continue
            for index in known.gpu_ids:
                claims[(host.inventory.file, host.name, index)].append((deployment, share))
        reported: set[tuple[str, str]] = set()
        for (_, host_name, index), users in sorted(claims.items(), key=lambda item: item[0]):
            total = sum(share for _, share in users)
            if len(users) < 2 or total <= 1.0:
                continue
            names = ", ".join(f"{d.name} ({share:.2f})" for d, share in users)
            for deployment, _ in users:
                if (deployment.name, host_name) in reported:
                    continue
                reported.add((deployment.name, host_name))
                yield self.report(
                    deployment.document,
                    f"GPU {index} of {host_name} is shared by {names}: {total:.2f} of its memory requested",
                    ("resources", "gpu_ids") if deployment.spec.resources.gpu_ids != "auto" else ("placement", "hosts"),
                    hint="use different gpu_ids, or lower the memory fractions so they sum to ≤ 1",
                )


class ContextBeyondModel(Rule):
    """``max_model_len`` must not exceed the longest context the model supports.

    That is ``max_position_embeddings``, extended only by rope scaling the engine applies:
    vLLM derives the limit in ``_get_and_verify_max_len`` — ``yarn`` scales
    ``original_max_position_embeddings`` by its factor, other scaling types scale
    ``max_position_embeddings``, and ``su``/``longrope``/``llama3`` (Llama 3.1's own
    scaling) already count in ``max_position_embeddings``. Beyond it vLLM refuses:
    "User-specified max_model_len (X) is greater than the derived max_model_len (Y)"
    unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set, and positions past training produce garbage.

    Fix: lower ``model.max_model_len`` to the limit in the message, or use a checkpoint
    whose config declares rope scaling for the length you need.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/model.py (_get_and_verify_max_len)
    """

    id = "MEM005"
    name = "memory.context-length"
    severity = Severity.ERROR
    evidence = (
        refusal(
            "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/model.py#L1908-L1911",
            note="vLLM refuses a max_model_len above the derived maximum.",
        ),
    )
    summary = "max_model_len above the model's max_position_embeddings without rope scaling"
    sources = ("https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/model.py",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            facts = resolve.resolved(deployment).model.facts
            wanted = deployment.spec.model.max_model_len
            limit = facts.derived_max_len if facts else None
            if facts is None or wanted is None or limit is None or wanted <= limit:
                continue
            scaling = f" with {facts.rope_type} rope scaling" if facts.rope_scaling else " and no rope scaling"
            yield self.report(
                deployment.document,
                f"max_model_len {wanted} is above the {limit} tokens {bare(facts.name)} supports "
                f"(max_position_embeddings {facts.max_position_embeddings}{scaling})",
                ("model", "max_model_len"),
                hint=f"set max_model_len ≤ {limit}",
            )


class BesideTheModel(Rule):
    """Adapters or a draft model must leave the KV cache room for one full-length sequence.

    vLLM reserves its LoRA slots when the model loads, before it sizes the KV cache:
    ``max_loras`` slots of ``max_lora_rank`` for every wrapped linear layer (qkv, o, gate_up,
    down: ``lora_a_stacked`` and ``lora_b_stacked`` per slice, vllm/lora/layers/base_linear.py
    ``create_lora_weights``), whatever rank the adapters have. A speculative draft's weights load
    beside the model too (an MTP draft: one more layer of the target), and its layers' KV shares the
    pool, so each token costs more (vllm/v1/worker/gpu_model_runner.py ``get_kv_cache_spec``).
    Reported where the model alone leaves room for one ``max_model_len`` sequence but not with
    these beside it (the draft's KV per token counted in the need); vLLM then
    refuses to start as MEM002 describes. An error only when the shortfall exceeds the
    estimator's measured error for the model's class, as MEM002.

    Fix: lower ``max_loras`` or ``max_lora_rank`` (to the adapters' largest rank), lower
    ``model.max_model_len``, or add GPUs.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/layers/base_linear.py#L36-L80 ;
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/core/kv_cache_utils.py
    """

    id = "MEM007"
    name = "memory.beside-the-model"
    severity = Severity.ERROR
    evidence = (
        arithmetic("The KV cache left after the LoRA slots holds less than one sequence, beyond the measured error."),
        refusal(_VLLM_KV_CHECK, note="vLLM refuses to start without KV room for one max_model_len sequence."),
    )
    summary = "adapters or a draft model leave no room for the KV cache of one sequence"
    sources = (
        "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/layers/base_linear.py#L36-L80",
        _VLLM_KV_CHECK,
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for known, host, plan in _estimates(fleet):
            if not plan.beside_gib or known.profile.loads_gguf:
                continue
            if plan.weights_gib > plan.total_gib - plan.overhead_gib + plan.beside_gib:
                continue  # MEM001: the weights alone do not fit
            free, need = plan.kv_cache_gib, plan.one_sequence_gib
            if free >= need - 0.005 or free + plan.beside_gib < need - 0.005:
                continue  # fits, or does not fit even without them (MEM002)
            severity, hedge = _verdict(known, need - free)
            deployment = known.deployment
            path: tuple[str | int, ...] = ("model", "adapters" if deployment.spec.model.adapters else "speculative")
            for key in ("max_loras", "max_lora_rank"):
                if key in known.effective:
                    path = known.effective[key].path
                    break
            adapters, draft = bool(deployment.spec.model.adapters), deployment.spec.model.speculative is not None
            what = "the LoRA slots and the draft model take" if adapters and draft else "the draft model takes"
            what = "the LoRA slots take" if adapters and not draft else what
            hints = ["lower max_loras or max_lora_rank (to the adapters' largest rank)"] if adapters else []
            hints += ["a smaller draft (or ngram, which loads none)"] if draft else []
            yield self.report(
                deployment.document,
                f"{hedge}{what} {plan.beside_gib:.2f} GiB per GPU on {host.name}'s {_gpu_label(host)}, "
                f"leaving {max(free, 0):.2f} GiB of KV cache where a {plan.context_tokens}-token sequence needs "
                f"{need:.2f} GiB",
                path,
                hint=f"{', '.join(hints)}, or a shorter model.max_model_len",
                severity=severity,
            )


_VLLM_WARMUP = "https://github.com/vllm-project/vllm/blob/v0.19.0/vllm/v1/worker/gpu_worker.py#L550-L686"


class AfterTheKvCache(Rule):
    """What vLLM allocates after it has sized the KV cache must fit in what ``gpu_memory_utilization`` left.

    vLLM sizes the KV cache as ``gpu_memory_utilization × total`` less what its profiling run measured (weights,
    the activation peak, non-torch memory), allocates it, and only then warms up (the worker's
    ``compile_or_warm_up_model``, each release's ``post_kv_warmup`` fact): it captures the CUDA graphs and, in V1,
    re-runs the sampler on ``min(max_num_seqs, max_num_batched_tokens)`` dummy requests over the whole vocabulary
    (float32 logits and the top-k/top-p work, the figure the profile measured). These fit in the memory the budget
    leaves out, ``(1 − gpu_memory_utilization) × total``, less the CUDA context the budget does not count, plus
    the activation peak inside the budget, freed again. Where even that sum falls short (the arithmetic,
    without the graphs, whose size is assumed), the start fails: an error beyond the estimator's measured error
    for the model's class, else a warning.

    Where it adds up only because the sampler warm-up reuses the activation peak's memory (the context, about
    0.5 GiB of graphs and the warm-up exceed what the budget leaves out), the start depends on how much of that
    memory the allocator still holds: vLLM 0.19.0 logs show up to 2.35 GiB held after profiling, and
    gpt-oss-20b at 0.95 on an H100 runs out of memory warming the sampler up ("CUDA out of memory occurred when
    warming up sampler with 1024 dummy requests"), while Gemma 2 at the same setting starts. A "may not fit"
    warning, never an error. Not checked where the release sizes its KV blocks after the warm-up (0.34's
    extensible KV cache) or ``kv_cache_memory_bytes`` replaces the budget.

    Fix: lower ``max_num_seqs`` (the warm-up's requests) or ``gpu_memory_utilization`` (vLLM's own advice).

    Source: https://github.com/vllm-project/vllm/blob/v0.19.0/vllm/v1/worker/gpu_worker.py#L550-L686
    (compile_or_warm_up_model: capture_model, then _dummy_sampler_run);
    https://github.com/vllm-project/vllm/blob/v0.19.0/vllm/v1/worker/gpu_model_runner.py#L5556-L5606
    """

    id = "MEM008"
    name = "memory.after-kv-cache"
    severity = Severity.ERROR
    evidence = (
        arithmetic(
            "The CUDA context and the sampler warm-up exceed what the budget leaves out plus the freed activation "
            "peak, beyond the measured error; reuse of the peak alone is a warning."
        ),
    )
    summary = "what the engine allocates after sizing the KV cache (CUDA graphs, sampler warm-up) does not fit"
    sources = (_VLLM_WARMUP, "https://github.com/vllm-project/vllm/blob/v0.19.0/vllm/v1/worker/gpu_model_runner.py")

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for known, host, plan in _estimates(fleet):
            warmup = plan.after_kv
            if warmup is None or plan.weights_gib > plan.total_gib - plan.overhead_gib:
                continue  # not modelled, or MEM001 already says the weights do not fit
            if plan.kv_cache_gib < plan.one_sequence_gib - 0.005:
                continue  # MEM002: the start fails before the warm-up
            shortfall = warmup.shortfall_gib
            if shortfall <= 0 and not warmup.tight:
                continue
            deployment = known.deployment
            fraction = round(1 - warmup.outside_gib / plan.total_gib, 3) if plan.total_gib else 0.0
            sampler = (
                f"warms the sampler up on {warmup.sampler_rows} requests over the vocabulary "
                f"({warmup.sampler_gib:.2f} GiB)"
                if warmup.sampler_gib
                else "runs no sampler warm-up"
            )
            graphs = (
                f"captures CUDA graphs (about {warmup.graphs_gib:.1f} GiB assumed) and " if warmup.graphs_gib else ""
            )
            said = (
                f"after sizing the KV cache vLLM {known.release.version if known.release else ''} {graphs}{sampler}; "
                f"gpu_memory_utilization {fraction:g} leaves {warmup.outside_gib:.2f} GiB of {host.name}'s "
                f"{_gpu_label(host)} outside its budget, less the CUDA context's {warmup.context_gib:.1f} GiB, "
                f"and the activation peak freed inside it is {warmup.reserved_gib:.2f} GiB"
            )
            if shortfall > 0:
                severity, hedge = _verdict(known, shortfall)
                message = f"{hedge}{said}: {shortfall:.2f} GiB short"
            else:
                severity = Severity.WARNING
                message = (
                    f"may not fit: {said}, so the warm-up fits only by reusing the activation peak's memory, which "
                    "vLLM may still hold after profiling (up to 2.35 GiB measured on 0.19.0; gpt-oss-20b at 0.95 on "
                    "an H100 fails this way)"
                )
            path: tuple[str | int, ...] = ("engine", "name")
            for key in ("max_num_seqs", "gpu_memory_utilization"):
                if key in known.effective:
                    path = known.effective[key].path
                    break
            yield self.report(
                deployment.document,
                message,
                path,
                hint="lower max_num_seqs (the sampler warm-up's requests) or gpu_memory_utilization",
                severity=severity,
            )


class UnifiedMemory(Rule):
    """A GPU that shares the host's RAM (DGX Spark's GB10, Jetson Thor: gpus.yaml ``unified_memory``).

    Such a GPU has no memory of its own: the weights and the KV cache come out of the host's RAM, which the OS,
    the page cache and every other process use too, and the total the engine budgets its fraction against
    (cudaMemGetInfo's, the catalogued figure) is the whole host's. Two things follow that the spec cannot show:

    * the engine's start-up check compares the claimed fraction of that total with the memory free at start (vLLM's
      ``init_device``: "Free memory on device ... on startup is less than desired GPU memory utilization"), and on
      such a GPU free memory is the host's, so the OS and other processes must fit in the rest;
    * the KV budget subtracts the non-torch memory growth the engine measures while it starts, which on a shared
      pool includes host allocations (the engine's release says how: ``GpuEstimate.unified_memory``, from the
      engine unit), so the KV figure is an upper bound that a busy host lowers.

    Reported as a warning: whether the start succeeds and how large the KV cache is depend on the host's memory use
    at start-up, which no spec records.

    Fix: keep other processes off the host while the engine starts, and claim a fraction that leaves the OS room
    (``1 − fraction`` of the total is all the host has left for everything else); where the KV cache must have a
    fixed size, vLLM's ``kv_cache_memory_bytes`` replaces the profiled budget (NVIDIA's DGX Spark launchers do so:
    https://github.com/NVIDIA/xr-ai/pull/462).

    Source: https://github.com/vllm-project/vllm/blob/v0.13.0/vllm/utils/mem_utils.py (MemorySnapshot.measure: the
    UMA devices' free memory read from the host's MemAvailable); the DGX Spark known issue "Memory reporting
    differences with unified memory architecture" (https://docs.nvidia.com/dgx/dgx-spark/known-issues.html).
    """

    id = "MEM009"
    name = "memory.unified-memory"
    severity = Severity.WARNING
    summary = "the GPU shares the host's RAM: the start-up check and the KV budget depend on the host's memory use"
    sources = (
        "https://github.com/vllm-project/vllm/blob/v0.13.0/vllm/utils/mem_utils.py",
        "https://docs.nvidia.com/dgx/dgx-spark/known-issues.html",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for known, host, plan in _estimates(fleet):
            model = resolve.host_gpus(host).model
            if model is None or not model.unified_memory:
                continue
            option = known.profile.memory_fraction_option
            setting = known.effective.get(option) if option else None
            claimed = plan.claimed_fraction * plan.total_gib
            left = plan.total_gib - claimed
            share = f"{option} {plan.claimed_fraction:g}" if option else "the engine"
            how = f"; {plan.unified_memory}" if plan.unified_memory else ""
            yield self.report(
                known.deployment.document,
                f"{host.name}'s {model.display_name} shares the host's RAM ({plan.total_gib:.2f} GiB as CUDA reports "
                f"it): the weights ({plan.weights_gib:.2f} GiB) and KV cache ({plan.kv_cache_gib:.2f} GiB) come out "
                f"of it; {share} claims {claimed:.2f} GiB, which must be free when the engine starts, leaving "
                f"{left:.2f} GiB for the OS, the page cache and every other process{how}",
                setting.path if setting else ("engine", "name"),
                hint="keep other processes off the host while the engine starts; leave the OS room below the fraction",
            )
