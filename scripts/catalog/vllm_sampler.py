"""Derive the ``profile_sampler_triton_rows`` and ``profile_sampler_v0_sorts_vocab`` facts of every catalogued vLLM
release from its own source.

    python scripts/catalog/vllm_sampler.py            # every catalogued release
    python scripts/catalog/vllm_sampler.py 0.17.0     # only these

The profiling run's sampler warm-up (``_dummy_sampler_run``: ``top_k = vocab - 1`` with a ``top_p``, for
``min(max_num_seqs, max_num_batched_tokens)`` dummy requests) applies top-k/top-p through
``apply_top_k_top_p`` in vllm/v1/sample/ops/topk_topp_sampler.py. Up to 0.16 that op sorts the float32 logits
over the whole vocabulary (values and int64 indices, then a scatter back); from 0.17.0 it calls a Triton kernel
(``apply_top_k_top_p_triton``) when the batch has at least N rows (``logits.shape[0] >= N``) and sorts only
below. The fact is N, read by ``ast`` from the release's file (0: the op always sorts). Sources are the
releases' sdists, unpacked by scripts/catalog/vllm_mxfp4.py's ``sdist`` (its wheel fallback for 0.15.x).

The V0 engine (vllm/worker/model_runner.py, 0.6.0-0.10.2) warms its sampler up inside ``profile_run`` (from 0.8:
its ``_dummy_run``): ``SamplingParams(top_p=0.99, top_k=self.vocab_size - 1)`` for ``max_num_seqs`` dummy sequence
groups (``for group_id in range(max_num_seqs)``, each a prompt of ``max_num_batched_tokens // max_num_seqs``
tokens that samples one token), and the V0 ``Sampler`` (vllm/model_executor/layers/sampler.py) applies top-k/top-p
by ``_apply_top_k_top_p``, which sorts the float32 logits over the whole vocabulary (``logits.sort(dim=-1)``).
``profile_sampler_v0_sorts_vocab`` is True where all three are found, False where the V0 model runner profiles
otherwise, and absent where the release has no V0 model runner.

``profile_sampler_flashinfer`` (:func:`flashinfer_sampler`): when ``TopKTopPSampler.__init__`` sends top-k/top-p to
FlashInfer's kernels instead (read by ``ast``: the ``envs.VLLM_USE_FLASHINFER_SAMPLER is not False`` test of
0.8.0-0.11.0, else the variable's default in vllm/envs.py), how many vocabulary-wide float32 tensors that path holds
(``flashinfer_sample`` calling ``top_k_top_p_sampling_from_logits`` or only ``*_from_probs``), and the FlashInfer the
release's own image installs (docker/Dockerfile ``ARG FLASHINFER_GIT_REF``, else requirements/cuda.txt's
``flashinfer-python`` pin).

``v0_non_torch_whole_device`` (:func:`v0_non_torch`): whether the V0 worker's ``determine_num_available_blocks``
subtracts all device memory torch has not allocated (0.6.4, 0.6.4.post1) rather than its growth since start-up.

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import srcast
import vllm as builder  # scripts/catalog/vllm.py (url, fetch)
import vllm_mxfp4
from catalog_io import put_fact, release_files, write_facts

from servespec.engines.catalog import FlashinferSampler, SourcedBool, SourcedInt, V1BatchDefaults

OPS = "vllm/v1/sample/ops/topk_topp_sampler.py"


def _returns_triton(node: ast.If) -> bool:
    """``if <test>: return <...triton...>(...)`` whose test calls nothing (``HAS_TRITON``, ``logits.shape[0] >= N``):
    a branch taken by CUDA GPUs, not one under ``current_platform.is_cpu()``."""
    first = node.body[0] if node.body else None
    return (
        isinstance(first, ast.Return)
        and isinstance(first.value, ast.Call)
        and "triton" in ast.unparse(first.value.func)
        and not any(isinstance(n, ast.Call) for n in ast.walk(node.test))
    )


def triton_rows(version: str, src: Path) -> dict[str, Any] | None:
    """``{value, source}``: the rows from which ``apply_top_k_top_p`` runs Triton on a GPU (0: it always sorts);
    None when the release has no such op (no V1 sampler)."""
    path = src / OPS
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply_top_k_top_p"), None)
    if function is None:
        return None
    for node in function.body:
        if not isinstance(node, ast.If) or not _returns_triton(node):
            continue
        rows = 1  # ``if HAS_TRITON:`` alone (0.23+): Triton for every batch
        for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            bound = compare.comparators[0] if len(compare.comparators) == 1 else None
            if isinstance(compare.ops[0], ast.GtE) and isinstance(bound, ast.Constant) and isinstance(bound.value, int):
                rows = bound.value
        return {"value": rows, "source": builder.url(version, OPS, node.lineno)}
    return {"value": 0, "source": builder.url(version, OPS, function.lineno)}


V0_RUNNER = "vllm/worker/model_runner.py"
V0_SAMPLER = "vllm/model_executor/layers/sampler.py"


def _vocab_minus_one(node: ast.expr) -> bool:
    """``self.vocab_size - 1`` (or any ``<...vocab...> - 1``)."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Sub)
        and isinstance(node.right, ast.Constant)
        and node.right.value == 1
        and "vocab" in ast.unparse(node.left)
    )


def v0_sorts(version: str, src: Path) -> dict[str, Any] | None:
    """``{value, source}``: whether V0's profiling run warms a vocabulary-wide top-k/top-p sort up, for one sampled
    row per ``max_num_seqs`` dummy sequence group; None when the release has no V0 model runner."""
    runner = src / V0_RUNNER
    if not runner.is_file():
        return None
    functions = srcast.functions(ast.parse(runner.read_text(encoding="utf-8")))
    profile = functions.get("profile_run")
    if profile is None:
        return None
    scopes = [profile] + ([functions["_dummy_run"]] if "_dummy_run" in functions else [])
    params = next(
        (
            node
            for scope in scopes
            for node in ast.walk(scope)
            if isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith("SamplingParams")
            and any(kw.arg == "top_p" for kw in node.keywords)
            and any(kw.arg == "top_k" and _vocab_minus_one(kw.value) for kw in node.keywords)
        ),
        None,
    )
    groups = next(
        (
            node
            for scope in scopes
            for node in ast.walk(scope)
            if isinstance(node, ast.For)
            and isinstance(node.iter, ast.Call)
            and ast.unparse(node.iter) == "range(max_num_seqs)"
            and any(isinstance(n, ast.Name) and n.id == "SequenceGroupMetadata" for n in ast.walk(node))
        ),
        None,
    )
    sampler = src / V0_SAMPLER
    ops = srcast.functions(ast.parse(sampler.read_text(encoding="utf-8"))) if sampler.is_file() else {}
    top_k_top_p = ops.get("_apply_top_k_top_p")
    sort = next(
        (
            node
            for node in ast.walk(top_k_top_p)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sort"
        ),
        None,
    ) if top_k_top_p is not None else None  # fmt: skip
    forward = ops.get("forward")
    applied = forward is not None and any(
        isinstance(n, ast.Call) and ast.unparse(n.func) == "_apply_top_k_top_p" for n in ast.walk(forward)
    )
    value = params is not None and groups is not None and sort is not None and applied
    sources = [
        builder.url(version, V0_RUNNER, (params or profile).lineno) + " (SamplingParams top_k = vocab - 1, top_p)"
    ]
    if groups is not None:
        sources.append(builder.url(version, V0_RUNNER, groups.lineno) + " (max_num_seqs dummy sequence groups)")
    if sort is not None:
        sources.append(builder.url(version, V0_SAMPLER, sort.lineno) + " (_apply_top_k_top_p sorts the logits)")
    return {"value": value, "source": "; ".join(sources)}


FLAG = "envs.VLLM_USE_FLASHINFER_SAMPLER"
ENVS = "vllm/envs.py"


def _env_default(src: Path) -> tuple[object, int]:
    """The value vllm/envs.py gives ``VLLM_USE_FLASHINFER_SAMPLER`` when it is unset, and its line: the ``else``
    constant of its ``lambda: ... if "VLLM_USE_FLASHINFER_SAMPLER" in os.environ else <default>`` entry
    (``...`` when not found)."""
    path = src / ENVS
    if not path.is_file():
        return ..., 0
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "VLLM_USE_FLASHINFER_SAMPLER":
                body = value.body if isinstance(value, ast.Lambda) else None
                if isinstance(body, ast.IfExp) and isinstance(body.orelse, ast.Constant):
                    return body.orelse.value, key.lineno
    return ..., 0


def _image_flashinfer(version: str) -> str | None:
    """The FlashInfer the release's image installs: docker/Dockerfile's ``ARG FLASHINFER_GIT_REF="vX"``, else
    requirements/cuda.txt's ``flashinfer-python==X`` (a requirement of every install); None: neither in the sdist."""
    folder = vllm_mxfp4.sdist(version)
    if folder is None:
        return None
    for line in (
        (folder / "build" / "requirements" / "cuda.txt").read_text().splitlines()
        if (folder / "build" / "requirements" / "cuda.txt").is_file()
        else []
    ):
        if line.strip().startswith("flashinfer-python=="):
            return line.split("==", 1)[1].split()[0]
    dockerfile = folder / "build" / "docker" / "Dockerfile"
    if dockerfile.is_file():
        for line in dockerfile.read_text().splitlines():
            if line.startswith("ARG FLASHINFER_GIT_REF="):
                return line.split("=", 1)[1].strip().strip('"')
    return None


def flashinfer_sampler(version: str, src: Path) -> dict[str, Any] | None:
    """``{value, float32_buffers, image_flashinfer, source}`` (:class:`FlashinferSampler`); None: no V1 top-k/top-p
    op, or no FlashInfer branch in it."""
    path = src / OPS
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tests = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.If, ast.Compare, ast.UnaryOp)) and FLAG in ast.unparse(node)
    ]
    if not tests:
        return None
    unless_disabled = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Compare)
            and ast.unparse(node.left) == FLAG
            and isinstance(node.ops[0], ast.IsNot)
            and isinstance(node.comparators[0], ast.Constant)
            and node.comparators[0].value is False
        ),
        None,
    )
    first = min(tests, key=lambda n: n.lineno)
    sources = [builder.url(version, OPS, (unless_disabled or first).lineno)]
    if unless_disabled is not None:
        value = "when_installed"
    else:
        default, line = _env_default(src)
        if default not in (None, True):
            return None
        value = "default" if default is True else "opt_in"
        sources.append(builder.url(version, ENVS, line) + f" (VLLM_USE_FLASHINFER_SAMPLER unset: {default})")
    sample = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "flashinfer_sample"), None)
    calls = [
        ast.unparse(n.func).rsplit(".", 1)[-1]
        for n in (ast.walk(sample) if sample is not None else ())
        if isinstance(n, ast.Call)
    ]
    # the sampler's float32 copy and the softmax probabilities; FlashInfer's top-k-masked logits where it takes the
    # logits; each ``*_renorm_prob`` fallback (0.8.x, when rejection sampling fails) a new tensor beside the last
    buffers = 2 + calls.count("top_k_top_p_sampling_from_logits") + sum(c.endswith("_renorm_prob") for c in calls)
    if sample is not None:
        sources.append(builder.url(version, OPS, sample.lineno) + " (flashinfer_sample)")
    return {
        "value": value,
        "float32_buffers": buffers,
        "image_flashinfer": _image_flashinfer(version),
        "source": "; ".join(sources),
    }


V0_WORKER = "vllm/worker/worker.py"


V1_WORKER = "vllm/v1/worker/gpu_worker.py"


def v0_non_torch(
    version: str, src: Path, worker: str = V0_WORKER, name: str = "determine_num_available_blocks"
) -> dict[str, Any] | None:
    """``{value, source}``: whether V0's ``determine_num_available_blocks`` (V1's ``determine_available_memory`` with
    ``worker=V1_WORKER``) subtracts every byte of device memory torch has not allocated (``non_torch_allocations =
    total_allocated_bytes - torch_allocated_bytes`` with the total from ``torch.cuda.mem_get_info()``), not the
    growth since the worker's start; None: no such worker."""
    path = src / worker
    if not path.is_file():
        return None
    method = srcast.functions(ast.parse(path.read_text(encoding="utf-8"))).get(name)
    if method is None:
        return None
    assigned = {
        target.id: node
        for node in ast.walk(method)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    total = assigned.get("total_allocated_bytes")
    non_torch = assigned.get("non_torch_allocations")
    whole = (
        total is not None
        and "mem_get_info" in ast.unparse(total.value)
        and non_torch is not None
        and ast.unparse(non_torch.value) == "total_allocated_bytes - torch_allocated_bytes"
    )
    return {"value": whole, "source": builder.url(version, worker, (non_torch or method).lineno)}


ARG_UTILS = "vllm/engine/arg_utils.py"


def _api_server_value(node: ast.expr) -> int | None:
    """An int default: the constant, or the ``UsageContext.OPENAI_API_SERVER`` entry of a by-context dict."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Dict):
        for key, item in zip(node.keys, node.values, strict=True):
            if key is not None and "OPENAI_API_SERVER" in ast.unparse(key) and isinstance(item, ast.Constant):
                return int(item.value)
    return None


def _assigned(body: list[ast.stmt], name: str) -> int | None:
    """The value a branch's own statements assign to ``name`` (not nested branches'), for the API server."""
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return _api_server_value(node.value)
    return None


def _tier_test(test: ast.expr) -> dict[str, Any] | None:
    """``min_memory_gib`` / ``name_any`` / ``name_none`` of an ``if`` test over ``device_memory`` and
    ``device_name``; None: a test of something else."""
    tier: dict[str, Any] = {"name_any": [], "name_none": []}
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if ast.unparse(left) == "device_memory" and isinstance(op, ast.GtE):
            text = ast.unparse(right)
            if not text.endswith("* GiB_bytes") or not text.split("*")[0].strip().isdigit():
                return None
            tier["min_memory_gib"] = float(text.split("*")[0])
        elif ast.unparse(right) == "device_name" and isinstance(left, ast.Constant):
            tier["name_any" if isinstance(op, ast.In) else "name_none"].append(str(left.value))
    return tier if ("min_memory_gib" in tier or tier["name_any"]) else None


def batch_defaults(version: str, src: Path) -> dict[str, Any] | None:
    """``{tiers, otherwise, source}`` (:class:`V1BatchDefaults`): the ``if``/``elif`` chain over ``device_memory`` and
    ``device_name`` in the engine arguments' V1 defaults and the API server's ``default_max_num_batched_tokens`` and
    ``default_max_num_seqs`` each branch assigns (one ``default_max_num_seqs`` set before or after the chain applies
    to every branch); None: no such chain."""
    path = src / ARG_UTILS
    if not path.is_file():
        return None
    for function in srcast.functions(ast.parse(path.read_text(encoding="utf-8"))).values():
        text = ast.unparse(function)
        if "default_max_num_batched_tokens" not in text or "default_max_num_seqs" not in text:
            continue
        chain = next((n for n in ast.walk(function) if isinstance(n, ast.If) and _tier_test(n.test) is not None), None)
        if chain is None:
            return None
        shared = _assigned(function.body, "default_max_num_seqs")
        tiers: list[dict[str, Any]] = []
        branch: ast.If | None = chain
        otherwise: list[ast.stmt] = []
        while branch is not None:
            test = _tier_test(branch.test)
            if test is None:
                return None
            tokens = _assigned(branch.body, "default_max_num_batched_tokens")
            seqs = _assigned(branch.body, "default_max_num_seqs") or shared
            if tokens is None or seqs is None:
                return None
            tiers.append({**test, "max_num_batched_tokens": tokens, "max_num_seqs": seqs})
            nested = branch.orelse[0] if len(branch.orelse) == 1 and isinstance(branch.orelse[0], ast.If) else None
            if nested is None:
                otherwise = branch.orelse
            branch = nested
        tokens = _assigned(otherwise, "default_max_num_batched_tokens")
        seqs = _assigned(otherwise, "default_max_num_seqs") or shared
        if tokens is None or seqs is None:
            return None
        return {
            "tiers": tiers,
            "otherwise": {"max_num_batched_tokens": tokens, "max_num_seqs": seqs},
            "source": builder.url(version, ARG_UTILS, chain.lineno),
        }
    return None


def tree(version: str) -> Path:
    folder = vllm_mxfp4.sdist(version)
    if folder is not None:
        return folder / "src"
    return builder.fetch(version) / "src"  # the wheel's .py members (0.15.x: no sdist on PyPI)


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        version, src = data["version"], tree(data["version"])
        v0 = v0_sorts(version, src)
        put_fact(facts, "profile_sampler_v0_sorts_vocab", v0, SourcedBool)
        print(f"{version}: V0 sampler warm-up {'absent' if v0 is None else v0['value']}", file=sys.stderr)
        whole = v0_non_torch(version, src)
        put_fact(facts, "v0_non_torch_whole_device", whole, SourcedBool)
        print(f"{version}: V0 non-torch over the whole device {whole}", file=sys.stderr)
        whole = v0_non_torch(version, src, V1_WORKER, "determine_available_memory")
        put_fact(facts, "v1_non_torch_whole_device", whole, SourcedBool)
        if "profile_sampler_sorts_vocab" in facts:  # a V1 sampler warm-up read for the release: refine it
            found = triton_rows(version, src)
            if found is None:
                print(f"{version}: {OPS} not found", file=sys.stderr)
            else:
                put_fact(facts, "profile_sampler_triton_rows", found, SourcedInt)
                print(f"{version}: triton from {found['value']} rows", file=sys.stderr)
            batch = batch_defaults(version, src)
            put_fact(facts, "v1_batch_defaults", batch, V1BatchDefaults)
            print(f"{version}: V1 batch defaults {batch}", file=sys.stderr)
            flashinfer = flashinfer_sampler(version, src)
            put_fact(facts, "profile_sampler_flashinfer", flashinfer, FlashinferSampler)
            print(f"{version}: FlashInfer sampler {flashinfer}", file=sys.stderr)
        write_facts(path, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
