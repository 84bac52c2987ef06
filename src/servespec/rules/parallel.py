"""PAR rules: the parallel layout must fit the model, the hosts and the engine."""

from __future__ import annotations

from collections.abc import Iterator

from servespec.engines.layout import spec_expert_size
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule, arithmetic, bare, placements, refusal
from servespec.spec.fleet import Fleet

_VLLM_VERIFY = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/model.py"
_VLLM_KV_HEADS = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/linear.py"


class HeadsNotDivisible(Rule):
    """``tensor_parallel`` must divide the attention heads; KV heads and it must divide one another.

    Tensor parallelism gives each GPU ``heads / tp`` query heads (``tp``: the attention split the
    engine runs, one data-parallel rank's tensor parallelism: engines/layout.py). vLLM checks this when
    the model loads: "Total number of attention heads (H) must be divisible by tensor
    parallel size (T)" (ModelConfig.verify_with_parallel_config). KV heads are split the
    same way when there are at least ``tp`` of them, or replicated when there are fewer,
    which needs ``tp % kv_heads == 0`` (QKVParallelLinear). SGLang, TGI and TensorRT-LLM
    assert the same on GPUs; SGLang on the CPU (``--device cpu``) pads the heads instead
    (sglang/srt/configs/update_config.py ``adjust_config_with_unaligned_cpu_tp``), so it is not checked there.

    Fix: choose a ``tensor_parallel`` that divides the head counts the message lists.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/model.py ;
    https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/linear.py
    """

    id = "PAR001"
    name = "parallel.head-divisibility"
    severity = Severity.ERROR
    evidence = (
        refusal(_VLLM_VERIFY + "#L1048-L1052", note="vLLM's verify_with_parallel_config asserts the divisibility."),
    )
    summary = "tensor_parallel does not divide the attention heads, or KV heads and tensor_parallel do not divide"
    sources = (_VLLM_VERIFY, _VLLM_KV_HEADS)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            facts = known.model.facts
            tp = known.layout.tensor  # the attention split: one data-parallel rank's tensor parallelism
            if facts is None or tp == 1 or (facts.is_mla and facts.attention_heads % tp == 0):
                continue
            if known.engine.runs_on_cpu(known.options):
                continue
            heads, kv = facts.attention_heads, facts.kv_heads
            problem = ""
            if heads % tp:
                problem = f"{heads} attention heads are not divisible by tensor_parallel {tp}"
            elif not facts.is_mla and kv % tp and tp % kv:
                problem = f"{kv} KV heads and tensor_parallel {tp} do not divide one another"
            if problem:
                options = [n for n in range(1, heads + 1) if heads % n == 0 and (kv % n == 0 or n % kv == 0)]
                yield self.report(
                    deployment.document,
                    f"{bare(facts.name)}: {problem}",
                    ("resources", "tensor_parallel"),
                    hint="use tensor_parallel in " + ", ".join(str(n) for n in options if n <= 64),
                )


class NotEnoughGpus(Rule):
    """A replica must fit the GPUs of its hosts, and ``gpu_ids`` must name existing devices.

    A replica needs ``tensor_parallel × pipeline_parallel`` GPUs, split evenly over
    ``placement.hosts_per_replica`` hosts; ``placement.replicas_per_host`` replicas on one host
    each need their own (``replicas_per_host × GPUs per replica`` must fit the host). Explicit
    ``gpu_ids`` must list exactly the GPUs each host contributes (every replica's, split in
    order), all below the host's GPU count. Engines fail at start-up
    otherwise (vLLM: "The number of required GPUs exceeds the total number of available
    GPUs in the placement group"). An engine run on the CPUs (SGLang ``--device cpu``: a
    rank is a sub-NUMA cluster) needs no GPU.

    Fix: lower the parallel sizes, place the deployment on bigger hosts, or fix ``gpu_ids``.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/parallel.py
    """

    id = "PAR002"
    name = "parallel.gpu-count"
    severity = Severity.ERROR
    evidence = (
        arithmetic(
            "An exact count: GPUs asked for against GPUs the host has.",
            "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/parallel.py",
        ),
    )
    summary = "a replica needs more GPUs than its host has, or gpu_ids names missing devices"
    sources = ("https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/parallel.py",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            known = resolve.resolved(deployment)
            count = resolve.host_gpus(host).count
            if count is None or (known.profile.loads_gguf and count == 0) or known.engine.runs_on_cpu(known.options):
                continue
            need = known.gpus_per_host
            replicas = known.replicas_per_host
            ids = known.gpu_ids
            explicit = deployment.spec.resources.gpu_ids != "auto"
            each = f"{replicas} replicas × {need}" if replicas > 1 else f"{need}"
            if explicit and len(ids) != need * replicas:
                yield self.report(
                    deployment.document,
                    f"gpu_ids lists {len(ids)} device(s) but each host of a replica needs {need}"
                    + (
                        f", and each host runs {replicas} replicas (placement.replicas_per_host)"
                        if replicas > 1
                        else ""
                    ),
                    ("resources", "gpu_ids"),
                    hint=f"list exactly {need * replicas} device indices"
                    + (f" ({each}, split in order)" if replicas > 1 else ""),
                )
            elif need * replicas > count:
                yield self.report(
                    deployment.document,
                    f"a replica needs {need} GPU(s) on {host.name}, which has {count}"
                    if replicas == 1
                    else f"{replicas} replicas of {need} GPU(s) need {need * replicas} GPUs on {host.name} "
                    f"(placement.replicas_per_host), which has {count}",
                    ("resources", "tensor_parallel") if replicas == 1 else ("placement", "replicas_per_host"),
                    hint="lower tensor_parallel/pipeline_parallel, or place it on a host with more GPUs"
                    if replicas == 1
                    else f"run at most {count // need} replica(s) per host, or lower the parallel sizes",
                )
            else:
                missing = [i for i in ids if i >= count]
                if missing:
                    yield self.report(
                        deployment.document,
                        f"gpu_ids {missing} do not exist on {host.name} (GPUs 0..{count - 1})",
                        ("resources", "gpu_ids"),
                        hint=f"use indices below {count}",
                    )


class LayoutNotSupported(Rule):
    """The engine must support the requested parallel layout.

    TGI shards with tensor parallelism only, on one host (no pipeline parallel, no
    multi-node: launcher/src/main.rs); Ollama has neither tensor parallel nor multi-node
    replicas (it splits layers itself: server/sched.go); llama.cpp splits over the GPUs of
    one host (``--split-mode``) and cannot do both splits at once. vLLM, SGLang and
    TensorRT-LLM support tensor, pipeline and multi-node layouts.

    ``resources.data_parallel`` and ``resources.expert_parallel`` need the engine option that
    runs them (the profile's ``parallelism.data`` / ``parallelism.expert``) in the pinned
    release's catalog: vLLM ``--data-parallel-size`` from 0.8.3 and ``--enable-expert-parallel``
    from 0.8.0, SGLang ``--dp-size`` and ``--ep-size`` (``--expert-parallel-size`` from
    0.4.0.post1), TensorRT-LLM ``enable_attention_dp`` and ``moe_expert_parallel_size``; the other
    engines have neither. An expert-parallel size the engine cannot set is refused too: vLLM's
    group is always tensor × data parallel (``--enable-expert-parallel`` takes no size), and SGLang
    releases with ``--enable-ep-moe`` set ``ep_size = tp_size``.

    Fix: switch to an engine that supports the layout, or use one host and one split.

    Source: each engine's profile (src/servespec/engines/<name>/profile.yaml), e.g.
    https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs
    and https://github.com/ollama/ollama/blob/v0.32.15/server/sched.go
    """

    id = "PAR003"
    name = "parallel.engine-layout"
    severity = Severity.ERROR
    evidence = (
        refusal(
            "src/servespec/engines/<name>/profile.yaml (parallelism.source)",
            note="The engine has no such parallel mode; each profile cites the release source of its modes.",
        ),
    )
    summary = "the engine cannot run this parallel layout"
    sources = (
        "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs",
        "https://github.com/ollama/ollama/blob/v0.32.15/server/sched.go",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            prof = resolve.resolved(deployment).profile
            spec = deployment.spec
            tp, pp = spec.resources.tensor_parallel, spec.resources.pipeline_parallel
            problems: list[tuple[tuple[str | int, ...], str]] = []
            if tp > 1 and not prof.tensor_parallel:
                problems.append((("resources", "tensor_parallel"), f"{prof.title} has no tensor parallelism"))
            if pp > 1 and not prof.pipeline_parallel:
                problems.append((("resources", "pipeline_parallel"), f"{prof.title} has no pipeline parallelism"))
            if tp > 1 and pp > 1 and not prof.parallelism.combined:
                problems.append(
                    (("resources", "pipeline_parallel"), f"{prof.title} cannot combine tensor and pipeline parallelism")
                )
            if spec.placement.hosts_per_replica > 1 and not prof.multi_node:
                problems.append((("placement", "hosts_per_replica"), f"{prof.title} cannot span hosts"))
            known = resolve.resolved(deployment)
            problems += _data_and_expert(known)
            for path, message in problems:
                yield self.report(
                    deployment.document,
                    message,
                    path,
                    hint="use vLLM, SGLang or TensorRT-LLM for this layout, or a single GPU split",
                )
            for found in known.engine_checks:
                if found.rule == self.id:
                    yield self.report(deployment.document, found.message, found.path, hint=found.hint)


def _data_and_expert(known: resolve.Resolved) -> list[tuple[tuple[str | int, ...], str]]:
    """Data or expert parallelism the engine, or the pinned release (by its catalog), has no option for."""
    resources = known.deployment.spec.resources
    prof = known.profile
    release = known.release
    asked = (
        ("data_parallel", "data", resources.data_parallel > 1, prof.parallelism.data),
        ("expert_parallel", "expert", spec_expert_size(resources.expert_parallel, 2) > 1, prof.parallelism.expert),
    )
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for field, kind, wanted, option in asked:
        if not wanted:
            continue
        if option is None:
            problems.append((("resources", field), f"{prof.title} has no {kind} parallelism"))
        elif release is not None and release.option(option) is None:
            problems.append(
                (
                    ("resources", field),
                    f"{prof.title} {release.version} has no {kind} parallelism (its catalog has no {option} option)",
                )
            )
    return problems


class KvHeadsReplicated(Rule):
    """With fewer KV heads than ``tensor_parallel``, KV heads are replicated across GPUs.

    Each GPU then keeps a full KV head instead of ``kv_heads / tp`` of one, so the KV cache
    per GPU is ``tp / kv_heads`` times larger than an even split and fewer tokens fit
    (vLLM QKVParallelLinear: "num_kv_head_replicas"). The estimator already counts it;
    this warning says why tokens do not grow with more GPUs.

    Fix: prefer ``tensor_parallel ≤ kv_heads``, and add replicas instead.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/linear.py
    """

    id = "PAR004"
    name = "parallel.kv-head-replication"
    severity = Severity.WARNING
    summary = "fewer KV heads than tensor_parallel: KV heads are replicated"
    sources = (_VLLM_KV_HEADS,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            facts = known.model.facts
            tp = known.layout.tensor  # attention data parallelism (TensorRT-LLM, SGLang) keeps whole KV heads
            if facts is None or facts.is_mla or facts.kv_heads >= tp or tp % facts.kv_heads:
                continue
            yield self.report(
                deployment.document,
                f"{bare(facts.name)} has {facts.kv_heads} KV head(s) for tensor_parallel {tp}: each GPU "
                f"stores a replicated head, {tp // facts.kv_heads}x the KV memory of an even split",
                ("resources", "tensor_parallel"),
                hint=f"use tensor_parallel ≤ {facts.kv_heads} and more replicas",
            )


class EngineRefusesShard(Rule):
    """The engine must be able to shard the model's weights the way the layout splits them.

    vLLM refuses to load an FP8 block-quantized MoE checkpoint (``quantization_config.weight_block_size``,
    e.g. ``[128, 128]``) when the expert width each rank holds, ``moe_intermediate_size`` over the
    ranks that tensor-shard the experts (tensor × data parallel without expert parallelism; none with
    it), is not a multiple of ``block_n`` (and, with tensor parallelism, of ``block_k``):
    ``Fp8MoEMethod.create_weights`` raises "The output_size of gate's and up's weight = N is not
    divisible by weight quantization block_n = 128." Qwen3-30B-A3B-FP8 (768) at tensor_parallel 8
    gives 96 per rank; Qwen3-235B-A22B-FP8 (1536) at 8 gives 192. The message cites the line of
    the pinned release; the check holds for every catalogued release from 0.7.0 (0.6.x has no
    block-wise FP8 MoE). Releases that refine the block scales to the shard (fused_moe/oracle/fp8.py
    ``refine_fp8_moe_block_shape``) refuse only where ``gcd(block_n, block_k, width, hidden_size)``
    is below 32; those pass. SGLang raises the same error in its ``Fp8MoEMethod.create_weights``
    (srt/layers/quantization/fp8.py) in every catalogued release from 0.4.1 to 0.5.23, with no
    refinement (on NVIDIA GPUs: from 0.5.11 only ROCm's aiter padding skips it). The ranks that
    split each expert are SGLang's ``--tp-size`` over ``--ep-size``.

    Fix: turn on expert parallelism (each GPU then holds whole experts), or a tensor-parallel size
    whose share of the experts is a multiple of the block (the hint lists them).

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/quantization/fp8.py#L508 ;
    https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/layers/quantization/fp8.py#L1588
    """

    id = "PAR006"
    name = "parallel.engine-refuses-shard"
    severity = Severity.ERROR
    summary = "the engine release refuses to load the model split this way (block-quantized experts per rank)"
    sources = (
        "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/quantization/fp8.py#L508",
        "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/layers/quantization/fp8.py#L1588",
    )
    evidence = (
        refusal(
            *sources,
            note="each catalogued release's own check (the finding cites the line of the release in use)",
        ),
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            for found in resolve.resolved(deployment).engine_checks:
                if found.rule == self.id:
                    yield self.report(deployment.document, found.message, found.path, hint=found.hint)
