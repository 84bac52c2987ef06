"""Derive the ``pipeline_stages`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_pipeline.py            # every catalogued release
    python scripts/catalog/vllm_pipeline.py 0.27.1     # only these

What each pipeline stage holds and how the engine combines them, read by ``ast`` and exact text from the release's
sdist (the wheel's .py members for 0.15.x, as scripts/catalog/vllm_sampler.py ``tree``):

- ``remainder_before_last`` / ``partition_env``: ``get_pp_indices`` (vllm/distributed/utils.py) splits
  ``num_hidden_layers // pp_size`` per stage and gives the remaining layers one each to the stages before the last
  (``partitions[-i] += 1``), unless ``VLLM_PP_LAYER_PARTITION`` names the split; ``remainder_to_last``: earlier
  releases end the last stage at ``num_hidden_layers`` (the remainder all on it).
- ``every_stage_embedding`` / ``every_stage_lm_head``: model files (vllm/model_executor/models/*.py) that build
  ``self.embed_tokens = VocabParallelEmbedding(...)`` or ``self.lm_head = ParallelLMHead(...)`` outside an ``if``
  that tests the pipeline rank (``is_first_rank`` / ``is_last_rank``); the registry (models/registry.py) names
  their architectures.
- The fact is written only where the release takes the fewest blocks any worker fits for every worker
  (V1 vllm/v1/core/kv_cache_utils.py or, from 0.33, kv_cache_planning.py ``min_num_blocks = min(``; V0 the
  executor's ``num_gpu_blocks = min(b[0] ...`` or, 0.7-0.8.1, executor_base.py ``a = min([r[0] ...``), each
  worker sizing its blocks by its own layers: the cited line.

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

import vllm_sampler
from catalog_io import put_fact, release_files, write_facts

from servespec.engines.catalog import PipelineStages

UTILS = "vllm/distributed/utils.py"
MODELS = "vllm/model_executor/models"
REGISTRY = "vllm/model_executor/models/registry.py"
MIN_BLOCKS = (
    ("vllm/v1/core/kv_cache_utils.py", "min_num_blocks = min("),
    ("vllm/v1/core/kv_cache_planning.py", "min_num_blocks = min("),
    ("vllm/executor/executor_base.py", "a = min([r[0] for r in results])"),
    ("vllm/executor/distributed_gpu_executor.py", "num_gpu_blocks = min(b[0] for b in num_blocks)"),
    ("vllm/executor/executor_base.py", "num_gpu_blocks = min(b[0] for b in results)"),
)
_TABLES = {"VocabParallelEmbedding": ("embed_tokens", "is_first_rank"), "ParallelLMHead": ("lm_head", "is_last_rank")}
_ENTRY = re.compile(r'"(\w+)":\s*\(\s*"(\w+)",\s*"\w+"')


def _url(version: str, path: str, line: int) -> str:
    return f"https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}"


def _line(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


def unguarded_tables(tree: ast.AST, kind: str) -> int | None:
    """Line of the first ``kind`` (``VocabParallelEmbedding`` or ``ParallelLMHead``) built outside an ``if`` on
    the pipeline rank; None: all guarded, or none built."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and re.search(r"is_(first|last)_rank", ast.unparse(node.test)):
            guarded.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or id(node) in guarded or not isinstance(node.value, ast.Call):
            continue
        func = node.value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        target = node.targets[0]
        if name == kind and isinstance(target, ast.Attribute) and target.attr == _TABLES[name][0]:
            return node.lineno
    return None


def pipeline(version: str, src: Path) -> dict[str, Any] | None:
    """The release's ``pipeline_stages`` fact; None where it does not take the fewest blocks over workers."""
    utils = (src / UTILS).read_text() if (src / UTILS).is_file() else ""
    split = _line(utils, "def get_pp_indices")
    blocks = next(
        (
            (path, line)
            for path, needle in MIN_BLOCKS
            if (src / path).is_file() and (line := _line((src / path).read_text(), needle))
        ),
        None,
    )
    if split is None or blocks is None:
        return None
    registry = (src / REGISTRY).read_text() if (src / REGISTRY).is_file() else ""
    modules: dict[str, list[str]] = {}
    for arch, module in _ENTRY.findall(registry):
        modules.setdefault(module, []).append(arch)
    every: dict[str, list[str]] = {"VocabParallelEmbedding": [], "ParallelLMHead": []}
    sources = [
        f"{_url(version, UTILS, split)} (get_pp_indices)",
        f"{_url(version, blocks[0], blocks[1])} (fewest blocks)",
    ]
    for path in sorted((src / MODELS).glob("*.py")):
        text = path.read_text()
        if "PPMissingLayer" not in text or path.stem not in modules:
            continue  # a file without pipeline support has no stages to place
        tree = ast.parse(text)
        for kind, found in every.items():
            line = unguarded_tables(tree, kind)
            if line is not None:
                found += modules[path.stem]
                sources.append(f"{_url(version, f'{MODELS}/{path.name}', line)} ({kind} on every stage)")
    return {
        "remainder_before_last": "partitions[-i] += 1" in utils,
        "remainder_to_last": re.search(r"if pp_rank == pp_size - 1:\s*end_layer = num_hidden_layers", utils)
        is not None,
        "partition_env": "VLLM_PP_LAYER_PARTITION" in utils,
        "every_stage_embedding": sorted(set(every["VocabParallelEmbedding"])),
        "every_stage_lm_head": sorted(set(every["ParallelLMHead"])),
        "source": "; ".join(sources),
    }


def main(argv: list[str]) -> int:
    for path, data in release_files("vllm", argv):
        facts = data.setdefault("facts", {})
        version = data["version"]
        found = pipeline(version, vllm_sampler.tree(version))
        put_fact(facts, "pipeline_stages", found, PipelineStages)
        shown = found and {k: v if isinstance(v, bool) else len(v) for k, v in found.items() if k != "source"}
        print(f"{version}: {shown}", file=sys.stderr)
        write_facts(path, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
