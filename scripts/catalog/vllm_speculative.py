"""Derive the ``speculative_memory`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_speculative.py            # every catalogued release
    python scripts/catalog/vllm_speculative.py 0.20.1     # only these

Two things speculative decoding adds to the memory a release lays out, each read by ``ast``:

- ``mtp_layer_keys``: the config fields an MTP draft's layer count is read from.
  ``SpeculativeConfig.hf_config_override`` (vllm/config/speculative.py from 0.11.0; vllm/config.py or
  vllm/config/__init__.py before) rewrites the target's config as the draft's,
  ``n_predict = getattr(hf_config, "<field>", ...)`` per model family: the draft model
  (DeepSeekMTPModel, Qwen3_5MTP ...) builds that many decoder layers of the target's shape, each an attention
  layer the worker's ``get_kv_cache_spec`` lists beside the target's (one pool). Empty where the release reads none.
- ``profile_rejection_rows``: the profiling run's sampler warm-up (``_dummy_sampler_run`` in
  vllm/v1/worker/gpu_model_runner.py) also runs the rejection sampler when speculative decoding is on, on a new
  ``torch.randn`` logits tensor of one draft token per dummy request (``num_tokens``, 0.8.1-0.11.0) or that plus one
  bonus row each (``num_tokens + num_reqs``, 0.11.1 on): the rows per request that tensor holds (0: no such warm-up).
- ``linear_state_speculative_blocks``: whether ``MambaSpec.max_memory_usage_bytes`` (vllm/v1/kv_cache_interface.py)
  counts ``num_speculative_blocks`` (set to ``num_speculative_tokens`` by the layer's ``get_kv_cache_spec``) in the
  blocks a request's linear-attention state takes outside the ``all`` cache mode: the last ``return`` of the method.

Sources are the releases' sdists, unpacked by scripts/catalog/vllm_mxfp4.py's ``sdist`` (the wheel for 0.15.x), as
scripts/catalog/vllm_sampler.py takes them. A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm as builder  # scripts/catalog/vllm.py (url)
import vllm_sampler
from catalog_io import put_fact, release_files, write_facts

from servespec.engines.catalog import SpeculativeMemory

CONFIGS = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")
"""Where ``SpeculativeConfig`` lives, newest layout first."""
SPECS = "vllm/v1/kv_cache_interface.py"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
_ROWS = {"num_tokens": 1, "num_tokens + num_reqs": 2}
"""The dummy rejection logits' first dimension as the releases write it, as rows per dummy request."""


def _method(tree: ast.Module, owner: str, name: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    return None


def _n_predict_fields(function: ast.FunctionDef) -> list[tuple[str, int]]:
    """(field, line) of every ``n_predict = getattr(hf_config, "<field>", ...)`` in the function."""
    found = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        call = node.value
        if targets != ["n_predict"] or not (isinstance(call.func, ast.Name) and call.func.id == "getattr"):
            continue
        if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
            found.append((call.args[1].value, node.lineno))
    return found


def mtp_keys(src: Path) -> tuple[list[str], str] | None:
    """(the MTP layer-count fields in first-read order, their cited lines); None without ``hf_config_override``."""
    for relative in CONFIGS:
        path = src / relative
        if not path.is_file():
            continue
        function = _method(ast.parse(path.read_text()), "SpeculativeConfig", "hf_config_override")
        if function is None:
            continue
        keys: list[str] = []
        lines: list[int] = []
        for key, line in _n_predict_fields(function):
            if key not in keys:
                keys.append(key)
                lines.append(line)
        return keys, f"{relative}#L{function.lineno}" + "".join(f" L{line}" for line in lines)
    return None


def state_blocks(src: Path) -> tuple[bool, str] | None:
    """(whether the request's state blocks count the speculative ones, the cited line); None without MambaSpec's
    ``max_memory_usage_bytes``."""
    path = src / SPECS
    if not path.is_file():
        return None
    function = _method(ast.parse(path.read_text()), "MambaSpec", "max_memory_usage_bytes")
    if function is None:
        return None
    returns = [node for node in ast.walk(function) if isinstance(node, ast.Return) and node.value is not None]
    last = max(returns, key=lambda node: node.lineno)
    assert last.value is not None
    counted = "num_speculative_blocks" in ast.unparse(last.value)
    return counted, f"{SPECS}#L{last.lineno}"


def rejection_rows(src: Path) -> tuple[int, str] | None:
    """(rows per dummy request of the rejection sampler's warm-up logits, the cited line); (0, line) where the
    sampler warm-up runs no rejection sampler; None without a V1 ``_dummy_sampler_run``."""
    path = src / RUNNER
    if not path.is_file():
        return None
    function = _method(ast.parse(path.read_text()), "GPUModelRunner", "_dummy_sampler_run")
    if function is None:
        return None
    calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
    if not any(ast.unparse(node.func) == "self.rejection_sampler" for node in calls):
        return 0, f"{RUNNER}#L{function.lineno}"
    for node in calls:
        if ast.unparse(node.func) == "torch.randn" and node.args and ast.unparse(node.args[0]) in _ROWS:
            return _ROWS[ast.unparse(node.args[0])], f"{RUNNER}#L{node.lineno}"
    raise ValueError(f"{path}: the rejection sampler's warm-up logits are not built as known")


def fact(version: str, src: Path) -> dict[str, Any] | None:
    """``{mtp_layer_keys, linear_state_speculative_blocks, source}``, or None where the release has neither a
    ``SpeculativeConfig.hf_config_override`` nor a V1 ``MambaSpec``."""
    keys = mtp_keys(src)
    blocks = state_blocks(src)
    if keys is None and blocks is None:
        return None
    sources = []
    if keys is not None:
        path, _, lines = keys[1].partition("#")
        cited = builder.url(version, path, int(lines.split(" ")[0].removeprefix("L")))
        sources.append(f"{cited} (MTP layer fields: {', '.join(keys[0]) or 'none'})")
    rows = rejection_rows(src)
    if rows is not None:
        path, _, line = rows[1].partition("#L")
        said = f"{rows[0]} logits row(s) per dummy request" if rows[0] else "no rejection sampler"
        sources.append(f"{builder.url(version, path, int(line))} (the sampler warm-up's rejection pass: {said})")
    if blocks is not None:
        path, _, line = blocks[1].partition("#L")
        counted = "num_speculative_tokens more state blocks" if blocks[0] else "its state page only"
        sources.append(f"{builder.url(version, path, int(line))} (a linear layer's blocks per request: {counted})")
    return {
        "mtp_layer_keys": keys[0] if keys is not None else [],
        "linear_state_speculative_blocks": blocks[0] if blocks is not None else False,
        "profile_rejection_rows": rows[0] if rows is not None else 0,
        "source": "; ".join(sources),
    }


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        found = fact(data["version"], vllm_sampler.tree(data["version"]))
        put_fact(data.setdefault("facts", {}), "speculative_memory", found, SpeculativeMemory)
        print(f"{data['version']}: {found}", file=sys.stderr)
        write_facts(path, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
