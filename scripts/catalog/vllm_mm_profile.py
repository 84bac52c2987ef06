"""Derive the ``mm_encoder_profile`` fact of every catalogued vLLM V1 release from its own source.

    python scripts/catalog/vllm_mm_profile.py            # every catalogued release
    python scripts/catalog/vllm_mm_profile.py 0.24.0     # only these

V1's ``profile_run`` (vllm/v1/worker/gpu_model_runner.py; 0.34: vllm/v1/worker/gpu/model_runner.py, which hands
the encoder pass to gpu/mm/encoder_runner.py ``profile_encoder_cache``) runs a multimodal model's encoder on a
dummy batch of items of the modality with the most tokens per item before the language model's dummy run, and keeps
the outputs in ``encoder_cache`` until that run and the sampler warm-up are done. How many items: the encoder budget
(``compute_encoder_budget`` / ``compute_mm_encoder_budget``: ``max(max_num_encoder_input_tokens, tokens per item)``)
divided by the tokens per item, ``cdiv`` up to 0.9.2 and ``//`` from 0.10.0 (v1/worker/utils.py, later
multimodal/encoder_budget.py ``_get_max_items``), capped by ``max_num_seqs`` x the items one prompt may hold.
``--skip-mm-profiling`` (0.10.0 on) turns the pass off. Read by ``ast`` from the files cited; sources are the
releases' sdists (scripts/catalog/vllm_sampler.py's ``tree``). Releases whose default engine is V0 get no fact.

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import srcast
import vllm as builder  # scripts/catalog/vllm.py (url)
import vllm_sampler
from catalog_io import put_fact, release_files, write_facts

from servespec.engines.catalog import MmEncoderProfile

RUNNERS = ("vllm/v1/worker/gpu_model_runner.py", "vllm/v1/worker/gpu/model_runner.py")
ENCODER_RUNNER = "vllm/v1/worker/gpu/mm/encoder_runner.py"
BUDGET_FILES = (
    "vllm/v1/worker/gpu_model_runner.py", "vllm/v1/worker/utils.py", "vllm/multimodal/encoder_budget.py",
)  # fmt: skip
ENCODER_CALLS = ("get_multimodal_embeddings", "embed_multimodal", "profile_encoder_cache")
ITEM_NAMES = ("max_num_mm_items_encoder_budget", "max_encoder_items_per_batch")


def _calls(node: ast.AST, names: tuple[str, ...]) -> list[ast.Call]:
    return [
        n for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in names
    ]  # fmt: skip


def _stores_outputs(node: ast.AST) -> bool:
    """``self.encoder_cache[...] = output`` or ``...encoder_cache.encoder_outputs.update(...)``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Subscript) and "encoder_cache" in ast.unparse(t.value) for t in n.targets
        ):
            return True
        update = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "update"
        if update and "encoder_cache" in ast.unparse(n.func.value):  # type: ignore[attr-defined]
            return True
    return False


def _division(src: Path) -> tuple[str, str] | None:
    """("floor" or "ceil", the file:line) of the items-per-batch division the release's encoder budget uses."""
    for rel in BUDGET_FILES:
        tree = srcast.parse(src, rel)
        if tree is None:
            continue
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)):
                continue
            if n.targets[0].id not in ITEM_NAMES:
                continue
            if isinstance(n.value, ast.BinOp) and isinstance(n.value.op, ast.FloorDiv):
                return "floor", builder.url("", rel, n.lineno)
            if isinstance(n.value, ast.Call) and ast.unparse(n.value.func).endswith("cdiv"):
                return "ceil", builder.url("", rel, n.lineno)
    return None


CONFIG_FILES = ("vllm/config/multimodal.py", "vllm/config/__init__.py", "vllm/config.py")


def _int_default(node: ast.expr, function: ast.FunctionDef, tree: ast.Module) -> int | None:
    """An int the expression evaluates to on V1: a constant, ``N if envs.VLLM_USE_V1 else M``, a local name assigned
    one of those, or ``self.f()`` whose ``return`` is one (0.8.4: ``get_default_limit_per_prompt``)."""
    if isinstance(node, ast.IfExp) and "VLLM_USE_V1" in ast.unparse(node.test):
        node = node.body
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        for n in ast.walk(function):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets):
                return _int_default(n.value, function, tree)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
        callee = srcast.function(tree, node.func.attr)
        returns = [n for n in ast.walk(callee) if isinstance(n, ast.Return) and n.value] if callee else []
        if callee is not None and len(returns) == 1 and returns[0].value is not None:
            return _int_default(returns[0].value, callee, tree)
    return None


def _default_limit(src: Path) -> tuple[int, str] | None:
    """The V1 default of ``get_limit_per_prompt`` for a modality the limits do not name, with its file:line:
    ``limit_per_prompt.get(modality, <default>)`` (:func:`_int_default`), or ``return N`` (N > 0) where the limit is
    missing (0.12+)."""
    for rel in CONFIG_FILES:
        tree = srcast.parse(src, rel)
        function = srcast.function(tree, "get_limit_per_prompt")
        if tree is None or function is None:
            continue
        for n in ast.walk(function):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get":
                value = _int_default(n.args[1], function, tree) if len(n.args) == 2 else None
                if value is not None:
                    return value, builder.url("", rel, n.lineno)
        for n in ast.walk(function):
            value = n.value.value if isinstance(n, ast.Return) and isinstance(n.value, ast.Constant) else None
            if isinstance(value, int) and value > 0:
                return value, builder.url("", rel, n.lineno)
    return None


def mm_encoder_profile(version: str, src: Path, options: set[str]) -> dict[str, Any] | None:
    """``MmEncoderProfile`` as a dict, or None where the release has no V1 ``profile_run``."""
    for rel in RUNNERS:
        profile = srcast.function(srcast.parse(src, rel), "profile_run")
        if profile is not None:
            break
    else:
        return None
    scopes: list[tuple[str, ast.FunctionDef]] = [(rel, profile)]
    if _calls(profile, ("profile_encoder_cache",)):
        callee = srcast.function(srcast.parse(src, ENCODER_RUNNER), "profile_encoder_cache")
        if callee is not None:
            scopes.append((ENCODER_RUNNER, callee))
    calls = [(where, call) for where, scope in scopes for call in _calls(scope, ENCODER_CALLS)]
    calls.sort(key=lambda found: found[1].func.attr == "profile_encoder_cache")  # type: ignore[attr-defined]
    # cite the model's own embedding call where the profiling code makes it, else the encoder runner's entry
    division = _division(src)
    limit = _default_limit(src)
    if not calls:
        return {"runs_encoder": False, "items_division": "floor", "holds_outputs": False, "default_limit": 1,
                "source": builder.url(version, rel, profile.lineno)}  # fmt: skip
    if division is None or limit is None:
        return None  # not read: the estimator then leaves the encoder out, and the catalog test names the release
    skip = (
        any(isinstance(n, ast.Attribute) and n.attr == "skip_mm_profiling" for n in ast.walk(profile))
        and "skip_mm_profiling" in options
    )
    where, call = calls[0]
    kind, budget = division
    budget = budget.replace("/blob/v/", f"/blob/v{version}/")
    default, limit_at = limit
    limit_at = limit_at.replace("/blob/v/", f"/blob/v{version}/")
    fact: dict[str, Any] = {
        "runs_encoder": True,
        "items_division": kind,
        "holds_outputs": any(_stores_outputs(scope) for _w, scope in scopes),
        "default_limit": default,
        "source": f"{builder.url(version, where, call.lineno)} (profile_run's encoder pass); "
        f"{budget} (items per batch); {limit_at} (default items per prompt)",
    }
    if skip:
        fact["skip_option"] = "skip_mm_profiling"
    return fact


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        engine = (facts.get("default_engine") or {}).get("value")
        found = None
        if engine == "v1":
            found = mm_encoder_profile(data["version"], vllm_sampler.tree(data["version"]), set(data["options"]))
        put_fact(facts, "mm_encoder_profile", found, MmEncoderProfile)
        write_facts(path, data)
        print(f"{data['version']}: {found and (found['runs_encoder'], found['items_division'])}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
