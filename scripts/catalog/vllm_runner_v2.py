"""Derive the ``v2_model_runner`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_runner_v2.py            # every catalogued release
    python scripts/catalog/vllm_runner_v2.py 0.27.1     # only these

From 0.21 vLLM ships a second GPU model runner (vllm/v1/worker/gpu/model_runner.py, "Model Runner V2") beside the
first (vllm/v1/worker/gpu_model_runner.py), and ``VllmConfig.use_v2_model_runner`` (config/vllm.py) picks one when
``VLLM_USE_V2_MODEL_RUNNER`` is unset:

* 0.21: never (the variable opts in);
* 0.22-0.23: the architectures of ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` unless the model is a mixture of experts
  or quantized; 0.24: those architectures (``_is_default_v2_model_runner_model``);
* 0.25-0.28: those and every other generate model that is not a mixture of experts
  (``... or not model_config.is_moe``; a Mamba / linear-attention hybrid only when listed);
* 0.29-0.33: every model (the property returns True once no unsupported feature is found); 0.34: the only runner.

The two runners' profiling runs differ where the KV budget is measured: Model Runner V2's ``_dummy_sampler_run``
samples a dummy batch (``InputBatch.make_dummy``) with the sampler's initial per-request states (temperature 0,
top-k the whole vocabulary, top-p 1), so ``Sampler._requires_logits_processing`` is False and the logits are neither
copied to float32 nor sorted or masked, where the first runner's warm-up applies ``top_k = vocab - 1`` and a top-p
to a float32 copy; 0.34 adds a pass with ``SamplingParams.for_sampler_warmup()`` (``sampler_warmup:
sampling_params``, not modelled). Its ``profile_cudagraph_memory`` returns 0 up to 0.28, so the worker
(``determine_available_memory``) subtracts no CUDA-graph estimate then.

Its sampler's ``PenaltiesState`` (v1/worker/gpu/sample/penalties.py, every release 0.22-0.34) holds two int32 GPU
tensors per request slot over the vocabulary, ``output_bin_counts`` (max_num_reqs x vocab_size) and
``prompt_bin_mask`` (max_num_reqs x cdiv(vocab_size, 32)), made when the runner builds its ``Sampler``, under
``if self.is_last_pp_rank`` (the last pipeline stage only), after the worker's start-up memory snapshot
(``penalty_state``). The other per-request sampler state (logit bias, bad words, top-k/top-p/min-p, RequestState)
is UVA (host) memory or max_num_reqs x a constant of at most 1024 entries (about 20 MiB at 1024 slots): not recorded.

Read by ``ast`` from the releases' sdists (scripts/catalog/vllm_sampler.py ``tree``). A development tool: the CLI
never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import srcast
import vllm as builder  # scripts/catalog/vllm.py (url)
from catalog_io import put_fact, release_files, write_facts
from vllm_sampler import tree

from servespec.engines.catalog import V2ModelRunner

CONFIG = "vllm/config/vllm.py"
PENALTIES = "vllm/v1/worker/gpu/sample/penalties.py"
RUNNER = "vllm/v1/worker/gpu/model_runner.py"
FIRST_RUNNER = "vllm/v1/worker/gpu_model_runner.py"


def _architectures(module: ast.Module) -> tuple[list[str], int]:
    """``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = frozenset({...})``: its strings and line (0: absent)."""
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES" for t in node.targets
        ):
            names = [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            return sorted(names), node.lineno
    return [], 0


def _negated(node: ast.AST) -> set[str]:
    """The attributes ``not <...>.x`` negates in ``node``."""
    return {
        n.operand.attr
        for n in ast.walk(node)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and isinstance(n.operand, ast.Attribute)
    }


def _rule(function: ast.FunctionDef) -> str:
    """The default rule its final ``return`` states: ``any(arch in ...)`` alone, the listed architectures
    (0.24); ``not is_moe and not is_quantized`` after an early ``return False`` for unlisted ones (0.22-0.23); a
    listed architecture ``or not is_moe`` (0.25-0.28)."""
    last = function.body[-1]
    value = last.value if isinstance(last, ast.Return) else None
    negated = _negated(value) if value is not None else set()
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and "is_moe" in negated:
        return "dense"
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.And) and {"is_moe", "is_quantized"} <= negated:
        return "listed_unquantized"
    return "listed"


def _ends_true(function: ast.FunctionDef) -> bool:
    """The property's last statement is ``return True``: every model gets the runner unless an earlier test says
    otherwise (0.29-0.33)."""
    last = function.body[-1] if function.body else None
    return isinstance(last, ast.Return) and isinstance(last.value, ast.Constant) and last.value.value is True


def _returns_zero(function: ast.FunctionDef) -> bool:
    body = [n for n in function.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Return)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value == 0
    )


def _mentions(function: ast.AST, attr: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == attr for n in ast.walk(function))


def _int32_zeros(node: ast.AST) -> list[ast.expr] | None:
    """``torch.zeros(<shape...>, dtype=torch.int32, ...)``: its shape arguments; None otherwise."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "zeros"):
        return None
    dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
    if not (isinstance(dtype, ast.Attribute) and dtype.attr == "int32"):
        return None
    return list(node.args)


def _cdiv_by(node: ast.expr) -> int:
    """``cdiv(<x>, N)``: N; 0 otherwise."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "cdiv"
        and len(node.args) == 2
    ):
        arg = node.args[1]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
            return arg.value
    return 0


def _sampler_on_last_rank(runner: ast.Module) -> int:
    """The line of ``self.sampler = Sampler(...)`` where an enclosing ``if`` tests ``is_last_pp_rank``; 0 if not."""
    for node in ast.walk(runner):
        if not (isinstance(node, ast.If) and _mentions(node.test, "is_last_pp_rank")):
            continue
        for inner in ast.walk(node):
            if (
                isinstance(inner, ast.Assign)
                and any(isinstance(t, ast.Attribute) and t.attr == "sampler" for t in inner.targets)
                and isinstance(inner.value, ast.Call)
                and isinstance(inner.value.func, ast.Name)
                and inner.value.func.id == "Sampler"
            ):
                return inner.lineno
    return 0


def penalty_state(version: str, src: Path, runner: ast.Module) -> dict[str, Any] | None:
    """``PenaltiesState`` (v1/worker/gpu/sample/penalties.py): the GPU tensors it makes per request slot and
    vocabulary entry, ``output_bin_counts = torch.zeros(max_num_reqs, vocab_size, dtype=torch.int32)`` and
    ``prompt_bin_mask = torch.zeros(max_num_reqs, cdiv(vocab_size, 32), dtype=torch.int32)``, with where the runner
    builds its ``Sampler`` (under ``if self.is_last_pp_rank``: the last pipeline stage only). None where either is
    not found as such."""
    module = srcast.parse(src, PENALTIES)
    if module is None:
        return None
    counts = mask = 0
    bits = 0
    for node in ast.walk(module):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Attribute):
            continue
        shape = _int32_zeros(node.value)
        if shape is None or len(shape) != 2:
            continue
        if target.attr == "output_bin_counts" and not _cdiv_by(shape[1]):
            counts = node.lineno
        elif target.attr == "prompt_bin_mask" and _cdiv_by(shape[1]):
            mask, bits = node.lineno, _cdiv_by(shape[1])
    if not counts or not mask:
        return None
    last = _sampler_on_last_rank(runner)
    sources = [
        builder.url(version, PENALTIES, counts) + " (output_bin_counts)",
        builder.url(version, PENALTIES, mask) + " (prompt_bin_mask)",
    ]
    if last:
        sources.append(builder.url(version, RUNNER, last) + " (Sampler, is_last_pp_rank)")
    return {
        "count_bytes": 4,
        "mask_bits": bits,
        "mask_bytes": 4,
        "last_stage_only": bool(last),
        "source": "; ".join(sources),
    }


def v2_model_runner(version: str, src: Path) -> dict[str, Any] | None:
    """``{value, architectures, sampler_warmup, cudagraph_estimate, source}`` (:class:`V2ModelRunner`); None where
    the release has no second runner or never picks it by default."""
    runner = srcast.parse(src, RUNNER)
    if runner is None:
        return None
    sampler = srcast.function(runner, "_dummy_sampler_run")
    graphs = srcast.function(runner, "profile_cudagraph_memory")
    if sampler is None or graphs is None or not _mentions(sampler, "make_dummy"):
        return None
    config = srcast.parse(src, CONFIG)
    prop = srcast.function(config, "use_v2_model_runner") if config is not None else None
    default = srcast.function(config, "_is_default_v2_model_runner_model") if config is not None else None
    architectures, arch_line = _architectures(config) if config is not None else ([], 0)
    sources: list[str] = []
    if not (src / FIRST_RUNNER).is_file():
        value = "all"  # the only GPU runner (0.34)
    elif default is not None:
        value = _rule(default)
        sources.append(builder.url(version, CONFIG, default.lineno))
        if arch_line:
            sources.append(builder.url(version, CONFIG, arch_line))
    elif prop is not None and _ends_true(prop):
        value = "all"
        sources.append(builder.url(version, CONFIG, prop.lineno))
    else:
        return None  # opt-in only (0.21)
    warmup = "sampling_params" if _mentions(sampler, "for_sampler_warmup") else "greedy"
    sources.append(builder.url(version, RUNNER, sampler.lineno) + " (_dummy_sampler_run)")
    sources.append(builder.url(version, RUNNER, graphs.lineno) + " (profile_cudagraph_memory)")
    return {
        "value": value,
        "architectures": architectures if value != "all" else [],
        "sampler_warmup": warmup,
        "cudagraph_estimate": not _returns_zero(graphs),
        "penalty_state": penalty_state(version, src, runner),
        "source": "; ".join(sources),
    }


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        version = data["version"]
        if "profile_sampler_sorts_vocab" not in facts:  # no V1 sampler warm-up read (V0-only releases)
            continue
        found = v2_model_runner(version, tree(version))
        put_fact(facts, "v2_model_runner", found, V2ModelRunner)
        print(f"{version}: Model Runner V2 {found}", file=sys.stderr)
        write_facts(path, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
