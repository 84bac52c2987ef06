"""PAR rules: the parallel layout must fit the model, the hosts and the engine."""

from __future__ import annotations

from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule, bare, placements
from servespec.spec.fleet import Fleet

_VLLM_VERIFY = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/model.py"
_VLLM_KV_HEADS = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/model_executor/layers/linear.py"


class HeadsNotDivisible(Rule):
    """``tensor_parallel`` must divide the attention heads; KV heads and it must divide one another.

    Tensor parallelism gives each GPU ``heads / tp`` query heads. vLLM checks this when
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
    summary = "tensor_parallel does not divide the attention heads, or KV heads and tensor_parallel do not divide"
    sources = (_VLLM_VERIFY, _VLLM_KV_HEADS)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            facts = known.model.facts
            tp = deployment.spec.resources.tensor_parallel
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
    ``placement.hosts_per_replica`` hosts. Explicit ``gpu_ids`` must list exactly the GPUs
    each host contributes, all below the host's GPU count. Engines fail at start-up
    otherwise (vLLM: "The number of required GPUs exceeds the total number of available
    GPUs in the placement group"). An engine run on the CPUs (SGLang ``--device cpu``: a
    rank is a sub-NUMA cluster) needs no GPU.

    Fix: lower the parallel sizes, place the deployment on bigger hosts, or fix ``gpu_ids``.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/parallel.py
    """

    id = "PAR002"
    name = "parallel.gpu-count"
    severity = Severity.ERROR
    summary = "a replica needs more GPUs than its host has, or gpu_ids names missing devices"
    sources = ("https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/parallel.py",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            known = resolve.resolved(deployment)
            count = resolve.host_gpus(host).count
            if count is None or (known.profile.loads_gguf and count == 0) or known.engine.runs_on_cpu(known.options):
                continue
            need = known.gpus_per_host
            ids = known.gpu_ids
            explicit = deployment.spec.resources.gpu_ids != "auto"
            if explicit and len(ids) != need:
                yield self.report(
                    deployment.document,
                    f"gpu_ids lists {len(ids)} device(s) but each host of a replica needs {need}",
                    ("resources", "gpu_ids"),
                    hint=f"list exactly {need} device indices",
                )
            elif need > count:
                yield self.report(
                    deployment.document,
                    f"a replica needs {need} GPU(s) on {host.name}, which has {count}",
                    ("resources", "tensor_parallel"),
                    hint="lower tensor_parallel/pipeline_parallel, or place it on a host with more GPUs",
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

    Fix: switch to an engine that supports the layout, or use one host and one split.

    Source: each engine's profile (src/servespec/engines/<name>/profile.yaml), e.g.
    https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs
    and https://github.com/ollama/ollama/blob/v0.32.15/server/sched.go
    """

    id = "PAR003"
    name = "parallel.engine-layout"
    severity = Severity.ERROR
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
            problems = []
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
            for path, message in problems:
                yield self.report(
                    deployment.document,
                    message,
                    path,
                    hint="use vLLM, SGLang or TensorRT-LLM for this layout, or a single GPU split",
                )


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
            facts = resolve.resolved(deployment).model.facts
            tp = deployment.spec.resources.tensor_parallel
            if facts is None or facts.is_mla or facts.kv_heads >= tp or tp % facts.kv_heads:
                continue
            yield self.report(
                deployment.document,
                f"{bare(facts.name)} has {facts.kv_heads} KV head(s) for tensor_parallel {tp}: each GPU "
                f"stores a replicated head, {tp // facts.kv_heads}x the KV memory of an even split",
                ("resources", "tensor_parallel"),
                hint=f"use tensor_parallel ≤ {facts.kv_heads} and more replicas",
            )
