"""SGLang's memory facts, read from one release's own source (``facts.memory`` of its catalog).

What the estimator's SGLang arithmetic (``engines/sglang/memory.py``) reads, per release:

* ``fraction_default``: how ``ServerArgs`` sets ``mem_fraction_static`` when it is not given, as
  one of four variants, each with the constants the release's source holds:

  - ``parallel_table``: a table by tensor-parallel size (``tp_size >= 16: 0.79`` ... else 0.88),
    0.4.0 on; ``parallel`` says whether it reads ``tp_size`` or ``tp_size * pp_size``;
    ``large_gpu`` (when the release has one): above ``above_mib`` either ``(gpu_mem -
    reserved_mib) / gpu_mem`` or a constant ``fraction``, and (``boost_above_mib``) ``min(f +
    boost_mib * (1 - f) / gpu_mem, (gpu_mem - cap_reserved_mib) / gpu_mem)``;
  - ``reserved_by_gpu``: ``reserved_mem = (base_gib + parallel / divisor) * 1024`` by GPU memory
    row, ``fraction = round((gpu_mem - reserved) / gpu_mem, 3)``;
  - ``reserved_formula``: ``reserved_mem = constant_mib + max(chunked_prefill_size,
    activation_min_tokens) * mib_per_token + cuda_graph_max_bs * mib_per_graph_bs + tp * pp /
    parallel_divisor * parallel_mib``, raised to ``floor_mib`` above ``floor_above_mib``, with the
    release's ``chunked_prefill_size`` / ``cuda_graph_max_bs`` defaults by GPU memory
    (``defaults_by_gpu``: rows ``[upper_mib, chunked_prefill_size, max_bs below tp_split,
    max_bs from tp_split]``, upper ``None`` for the last row).

* ``multimodal``: the cut applied to a multimodal model's default fraction: ``factor`` (a constant
  ×0.90, 0.4.9 .. 0.4.9.post2) or ``vit_adjust`` (``adjust_mem_fraction_for_vlm``: ×``base`` times
  a factor that falls by ``sensitivity`` per doubling of the vision tower's layers × hidden², clamped
  to ``[low, high]``), or ``None`` where the release has no cut.
* ``pool_baseline``: how ``profile_max_num_token`` takes the KV pool: ``rest_memory =
  available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static)``, where
  ``total_gpu_memory`` is measured after the distributed set-up, before the weights load.

* ``all_reduce``: the custom all-reduce the tensor-parallel group builds inside the distributed set-up
  (before that baseline is measured): on ROCm ``hip`` is ``aiter`` where ``dispatch_custom_allreduce``
  returns aiter's ``CustomAllreduce`` by default (``SGLANG_USE_AITER_AR`` defaults to true;
  ``aiter_kwargs`` what SGLang passes it: no ``max_size``, so aiter's own default sizes the buffers,
  scripts/catalog/aiter_all_reduce.py), else ``sglang``; SGLang's own class's ``max_size`` on CUDA and
  on HIP (``_MAX_CAR_SIZE``; its buffers are meta_size + max_size, max_size and max_size); ``cuda``:
  ``v2`` where the JIT ``CustomAllReduceV2`` is the CUDA default (its buffers are allocated in C++);
  ``quick_reduce_default``: ``ROCM_QUICK_REDUCE_QUANTIZATION``'s default (``NONE``: the quick
  all-reduce allocates nothing), with where ``QuickAllReduce`` initialises (``quick_reduce_archs``,
  ``quick_reduce_world_sizes``), the variable that sets its largest input (``quick_reduce_max_size_env``, MB)
  and the default size the release states (``quick_reduce_default_max_gb``), and the values the variable
  takes (``quick_reduce_regimes``, ``QuickReduceRegime``); ``released``: the artefact's
  PyPI upload time. None of these sizes depends on the group's size.

* ``rope_cache``: how ``RotaryEmbedding.__init__`` keeps ``cos_sin_cache`` (``max_position x rotary_dim``, built on
  the GPU while the model is constructed, so inside SGLang's "Load weight" reading): ``float32`` on CUDA where the
  release guards ``cache.to(dtype)`` with ``if not _is_cuda...`` (0.4.2.post1 on; on ROCm too where the guard names
  ``_is_hip``, 0.5.22 on), the ``model``'s dtype where it converts unconditionally (0.4.1.post7-0.4.2); None where the
  models take vLLM's rotary embedding (0.4.0-0.4.1.post6). engines/sglang/load_memory.py replays the build with it.

* ``mamba_split``: how the memory left after ``mem_fraction_static`` is shared between a hybrid linear-attention
  model's recurrent states and its full-attention KV pool (:func:`mamba_split`): ``fixed_requests`` (0.5.2-0.5.3.post1)
  or ``ratio`` (0.5.3.post2 on) with ``mamba_full_memory_ratio``'s default, the order in which explicit sizes apply,
  the 0.5.17+ padding slot and the 0.5.18+ multimodal reserve, and the conv / temporal state dtypes; None before 0.5.2.

Every fact cites the release's file and line (``source``). A release whose source matches none of
the shapes raises: nothing is guessed.
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any

REPO_URL = "https://github.com/sgl-project/sglang/blob"

_FILES = (
    "sglang/srt/server_args.py",
    "sglang/srt/arg_groups/memory_hook.py",
    "sglang/srt/model_executor/model_runner.py",
    "sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
    "sglang/srt/model_executor/pool_configurator.py",
    "sglang/srt/mem_cache/kv_cache_configurator.py",
    "sglang/srt/configs/model_config.py",
    "sglang/srt/arg_groups/fields/schedule.py",
    "sglang/srt/distributed/device_communicators/custom_all_reduce.py",
    "sglang/srt/distributed/device_communicators/quick_all_reduce.py",
    "sglang/srt/utils.py",
    "sglang/srt/utils/common.py",
    "sglang/srt/offloader.py",
    "sglang/srt/utils/offloader.py",
    "sglang/srt/layers/rotary_embedding.py",
    "sglang/srt/layers/rotary_embedding/base.py",
    "sglang/srt/layers/rotary_embedding/factory.py",
    "sglang/srt/configs/mamba_utils.py",
    "sglang/srt/configs/qwen3_next.py",
    "sglang/srt/environ.py",
    "sglang/srt/arg_groups/fields/exec_.py",
)
_MODELS = "sglang/srt/models/"
"""Model files are read too where they define ``get_attention_sliding_window_size`` (what made a model use the
hybrid SWA pool from 0.4.9.post3 to 0.5.6)."""
_OFFLOAD_KEY = "offload:"
"""Every model file is also kept under this prefix, for which ones build their layers with ``make_layers``
(``_cpu_offload``)."""


def read_sources(artifact: Path) -> dict[str, str]:  # noqa: C901
    """The files above from an sdist or wheel, keyed by their path under ``sglang/``'s parent."""
    found: dict[str, str] = {}
    if artifact.name.endswith(".tar.gz"):
        with tarfile.open(artifact) as tar:
            for member in tar.getmembers():
                for want in _FILES:
                    if member.name.endswith("/" + want) and "/python/" not in member.name[: -len(want)][-8:]:
                        handle = tar.extractfile(member)
                        if handle is not None and want not in found:
                            found[want] = handle.read().decode()
                model = _model_file(member.name)
                if model is not None and model not in found:
                    handle = tar.extractfile(member)
                    text = handle.read().decode() if handle is not None else ""
                    if "def get_attention_sliding_window_size" in text:
                        found[model] = text
                    found[_OFFLOAD_KEY + model] = text
    else:
        with zipfile.ZipFile(artifact) as wheel:
            for want in _FILES:
                if want in wheel.namelist():
                    found[want] = wheel.read(want).decode()
            for name in wheel.namelist():
                if _model_file(name) == name:
                    text = wheel.read(name).decode()
                    if "def get_attention_sliding_window_size" in text:
                        found[name] = text
                    found[_OFFLOAD_KEY + name] = text
    return found


def _model_file(name: str) -> str | None:
    """``sglang/srt/models/<file>.py`` for a member of the artefact that is one (no sub-packages)."""
    at = name.find(_MODELS)
    if at < 0 or (at > 0 and name[at - 1] != "/") or "/python/" in name[:at][-8:]:
        return None
    rest = name[at + len(_MODELS) :]
    return name[at:] if rest.endswith(".py") and "/" not in rest else None


def _cite(version: str, path: str, line: int, note: str = "") -> str:
    tail = f" ({note})" if note else ""
    return f"{REPO_URL}/v{version}/python/{path}#L{line}{tail}"


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _block(text: str, start: int) -> str:
    """The indented block of the statement whose line begins at ``start``."""
    lines = text[start:].split("\n")
    indent = len(lines[0]) - len(lines[0].lstrip())
    out = [lines[0]]
    for line in lines[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        out.append(line)
    return "\n".join(out)


_NONE_CHECK = re.compile(r"^[ \t]*if (?:self|cfg)\.mem_fraction_static is None:", re.M)


def _fraction_block(sources: dict[str, str]) -> tuple[str, str, int, str]:
    """(path, text, line, block) of the release's ``if mem_fraction_static is None:`` that sets the default."""
    for path in ("sglang/srt/arg_groups/memory_hook.py", "sglang/srt/server_args.py"):
        text = sources.get(path)
        if text is None:
            continue
        for match in _NONE_CHECK.finditer(text):
            block = _block(text, match.start())
            if "mem_fraction_static =" in block or "reserved_mem = " in block:
                return path, text, _line_of(text, match.start()), block
    raise ValueError("no `if mem_fraction_static is None:` block that sets it")


def _num(text: str) -> float | int:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def _parallel_table(version: str, path: str, line: int, block: str) -> dict[str, Any]:
    rows = re.findall(r"if (self\.tp_size|parallel_size) >= (\d+):\s*\n\s*self\.mem_fraction_static = ([\d.]+)", block)
    last = re.search(
        r"elif (?:self\.tp_size|parallel_size) >= 2:\s*\n\s*self\.mem_fraction_static = [\d.]+\s*\n\s*else:\s*\n"
        r"\s*self\.mem_fraction_static = ([\d.]+)",
        block,
    )
    if not rows or last is None:
        raise ValueError(f"{version}: tensor-parallel table not read")
    fact: dict[str, Any] = {
        "variant": "parallel_table",
        "parallel": "tp_size * pp_size" if rows[0][0] == "parallel_size" else "tp_size",
        "by_parallel": [[int(n), float(f)] for _, n, f in rows] + [[1, float(last.group(1))]],
        "large_gpu": None,
    }
    large = re.search(r"gpu_mem <= (\d+):", block)
    if large:
        big: dict[str, Any] = {"above_mib": int(large.group(1))}
        reserved = re.search(r"self\.mem_fraction_static = \(gpu_mem - 1024 \* (\d+)\) / gpu_mem", block)
        constant = re.search(r"else:\s*\n\s*self\.mem_fraction_static = ([\d.]+)\s*\n", block[large.end() :])
        if reserved:
            big["reserved_mib"] = 1024 * int(reserved.group(1))
        elif constant:
            big["fraction"] = float(constant.group(1))
        else:
            raise ValueError(f"{version}: large-GPU branch not read")
        boost = re.search(
            r"gpu_mem > (\d+) \* 1024:.*?(?:reserve_mem = 1024 \* (\d+)\n.*?)?"
            r"mem_fraction \+ (\d+) \* 1024 \* \(1 - mem_fraction\) / gpu_mem,"
            r"\s*\(gpu_mem - (?:1024 \* (\d+)|reserve_mem)\)",
            block,
            re.S,
        )
        if boost:
            big["boost_above_mib"] = 1024 * int(boost.group(1))
            big["boost_mib"] = 1024 * int(boost.group(3))
            big["cap_reserved_mib"] = 1024 * int(boost.group(4) or boost.group(2))
        huge = re.search(r"gpu_mem > (\d+) \* 1000 and is_cuda\(\):\s*\n\s*self\.mem_fraction_static = ([\d.]+)", block)
        if huge:
            big["huge_above_mib"] = 1000 * int(huge.group(1))
            big["huge_fraction"] = float(huge.group(2))
        fact["large_gpu"] = big
    fact["source"] = _cite(version, path, line, "ServerArgs.__post_init__: mem_fraction_static by tp size")
    return fact


def _reserved_by_gpu(version: str, path: str, line: int, block: str) -> dict[str, Any]:
    rows: list[list[Any]] = []
    upper: int | None = None
    for text in block.split("\n"):
        head = re.match(r"\s*(?:if|elif) gpu_mem < (\d+) \* 1024:", text)
        if head:
            upper = 1024 * int(head.group(1))
            continue
        if re.match(r"\s*else:", text) and rows and rows[-1][0] is not None and len(rows) > 1:
            upper = None
            continue
        scaled = re.match(r"\s*reserved_mem = \(([\d.]+) \+ parallel_size / (\d+)\) \* 1024", text)
        flat = re.match(r"\s*reserved_mem = (\d+) \* 1024\s*$", text)
        if scaled:
            rows.append([upper, float(scaled.group(1)), int(scaled.group(2))])
        elif flat:
            rows.append([upper, float(flat.group(1)), None])
    if len(rows) < 2 or rows[-1][0] is not None:
        raise ValueError(f"{version}: reserved-memory rows not read")
    extra = {
        name: 1024 * int(m.group(1))
        for name, pattern in (
            (
                "speculative_mib",
                r"if self\.speculative_algorithm is not None:[^\n]*\n(?:\s*#[^\n]*\n)*"
                r"\s*reserved_mem \+= (\d+) \* 1024",
            ),
            ("dp_attention_mib", r"if self\.enable_dp_attention:\s*\n\s*reserved_mem \+= (\d+) \* 1024"),
        )
        if (m := re.search(pattern, block))
    }
    return {
        "variant": "reserved_by_gpu",
        "parallel": "tp_size * pp_size",
        "rows": rows,
        **extra,
        "source": _cite(version, path, line, "reserved_mem = (base + parallel_size / divisor) * 1024 by GPU memory"),
    }


def _defaults_by_gpu(version: str, path: str, text: str) -> tuple[list[list[Any]], int, int]:  # noqa: C901
    """Rows [upper_mib, chunked_prefill_size, max_bs below tp_split, max_bs from tp_split] (CUDA
    rows only: NPU rows are skipped), tp_split, and the line of the table."""
    start = re.search(r"^([ \t]*)if gpu_mem < 20 \* 1024:", text, re.M)
    if start is None:
        raise ValueError(f"{version}: chunked_prefill_size/cuda_graph_max_bs table not found in {path}")
    indent = len(start.group(1))
    rows: list[list[Any]] = []
    split = 0
    current: list[Any] | None = None
    skip = False
    for raw in text[start.start() :].split("\n"):
        if not raw.strip() or raw.strip().startswith("#"):
            continue
        depth = len(raw) - len(raw.lstrip())
        line = raw.strip()
        if depth < indent or (depth == indent and not re.match(r"(?:if|elif|else)\b", line)):
            break
        if depth == indent:
            if line.startswith("else:") and current is not None and current[0] is not None and rows:
                # the last CUDA row (the enclosing `if gpu_mem is not None:`'s else sits one level out)
                current = [None, None, None, None]
                rows.append(current)
                skip = False
                continue
            head = re.match(r"(?:if|elif) (is_npu\(\) and )?gpu_mem < (\d+) \* 1024:", line)
            if head is None:
                break
            skip = bool(head.group(1))
            if not skip:
                current = [1024 * int(head.group(2)), None, None, None]
                rows.append(current)
            continue
        if skip or current is None:
            continue
        chunk = re.search(r"chunked_prefill_size\s*=\s*(\d+)", line)
        if chunk:
            current[1] = int(chunk.group(1))
        tp = re.match(r"if (?:self|cfg)\.tp_size < (\d+):", line)
        if tp:
            split = int(tp.group(1))
            current.append("small")
        if line.startswith("else:") and current[-1] == "small":
            current[-1] = "large"
        bs = re.search(r"max_bs = (\d+)$", line)
        if bs:
            value = int(bs.group(1))
            mode = current[-1] if isinstance(current[-1], str) else None
            if mode == "small":
                current[2] = value
            elif mode == "large":
                current[3] = value
            else:
                current[2] = current[3] = value
    table = [[r[0], r[1], r[2], r[3]] for r in rows]
    if not table or table[-1][0] is not None or any(r[1] is None or r[2] is None or r[3] is None for r in table):
        raise ValueError(f"{version}: defaults by GPU memory not read: {table}")
    return table, split, _line_of(text, start.start())


def _reserved_formula(version: str, sources: dict[str, str], path: str, line: int, block: str) -> dict[str, Any]:
    text = sources[path]
    table, split, table_line = _defaults_by_gpu(version, path, text)
    activation = re.search(r"max\((?:self|cfg)\.chunked_prefill_size, (\d+)\)(?: \* ([\d.]+))?", block)
    per_token = re.search(r"(?:activation_tokens|max\((?:self|cfg)\.chunked_prefill_size, \d+\)) \* ([\d.]+)", block)
    # the constant that the activation term is added to (0.5.2x also has a post-capture branch's)
    constants = [
        m for m in re.finditer(r"reserved_mem = (\d+)\s*\n", block) if per_token and m.start() < per_token.start()
    ]
    constant = constants[-1] if constants else None
    graph_text = block if "reserve_for_graph_mb(" not in block else text
    graph = re.search(r"(?:cuda_graph_max_bs|max_bs) \* (\d+)\s*\n", graph_text)
    parallel = re.search(r"(?:self|cfg)\.tp_size \* (?:self|cfg)\.pp_size / (\d+) \* (\d+)", block)
    floor = re.search(r"gpu_mem > (\d+) \* 1024:\s*\n\s*reserved_mem = max\(reserved_mem, (\d+) \* 1024\)", block)
    if not (constant and activation and per_token and graph and parallel and floor):
        raise ValueError(f"{version}: reserved-memory formula not read")
    return {
        "variant": "reserved_formula",
        "constant_mib": int(constant.group(1)),
        "activation_min_tokens": int(activation.group(1)),
        "mib_per_token": float(per_token.group(1)),
        "mib_per_graph_bs": int(graph.group(1)),
        "parallel_divisor": int(parallel.group(1)),
        "parallel_mib": int(parallel.group(2)),
        "floor_above_mib": 1024 * int(floor.group(1)),
        "floor_mib": 1024 * int(floor.group(2)),
        "defaults_by_gpu": table,
        "tp_split": split,
        "source": _cite(version, path, line, "reserved_mem from chunked_prefill_size, cuda_graph_max_bs, tp * pp")
        + "; "
        + _cite(version, path, table_line, "chunked_prefill_size / cuda_graph_max_bs by GPU memory"),
    }


def _multimodal(version: str, sources: dict[str, str], path: str, line: int, block: str) -> dict[str, Any] | None:
    text = sources[path]
    if re.search(r"mem_fraction_static \*= 0\.90?\n", block):
        offset = text.index("mem_fraction_static *= 0.9", text.index(block))
        return {"kind": "factor", "factor": 0.9, "source": _cite(version, path, _line_of(text, offset))}
    if "adjust_mem_fraction_for_vlm(" not in block:
        return None
    for where in (path, "sglang/srt/server_args.py"):
        body = sources.get(where, "")
        base = re.search(r"base_mem_fraction_reduction_ratio = ([\d.]+)", body)
        if base is None:
            continue
        layers = re.search(r"baseline_vit_layers = (\d+)", body)
        hidden = re.search(r"baseline_vit_hidden_size = (\d+)", body)
        scale = re.search(r"sensitivity_scale = ([\d.]+)", body)
        clamp = re.search(r"max\(([\d.]+), min\(([\d.]+), dynamic_adjustment_factor\)\)", body)
        if not (layers and hidden and scale and clamp):
            raise ValueError(f"{version}: adjust_mem_fraction_for_vlm not read")
        return {
            "kind": "vit_adjust",
            "base": float(base.group(1)),
            "baseline_vit_layers": int(layers.group(1)),
            "baseline_vit_hidden": int(hidden.group(1)),
            "sensitivity": float(scale.group(1)),
            "low": float(clamp.group(1)),
            "high": float(clamp.group(2)),
            "source": _cite(version, where, _line_of(body, base.start()), "adjust_mem_fraction_for_vlm"),
        }
    raise ValueError(f"{version}: adjust_mem_fraction_for_vlm called but not found")


def _baseline(version: str, sources: dict[str, str]) -> dict[str, Any]:
    for path in (
        "sglang/srt/mem_cache/kv_cache_configurator.py",
        "sglang/srt/model_executor/pool_configurator.py",
        "sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
        "sglang/srt/model_executor/model_runner.py",
    ):
        text = sources.get(path, "")
        match = re.search(
            r"(?:rest_memory = (?:available_gpu_memory|post_model_load_memory) - |slack_gb = )"
            r"(?:self\.)?(?:total_gpu_memory|pre_model_load_memory) \* \(\s*1 - [\w.()]*mem_fraction_static",
            text,
        )
        if match:
            return {
                "value": "total_minus_reserved",
                "source": _cite(
                    version,
                    path,
                    _line_of(text, match.start()),
                    "rest_memory = available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static); "
                    "total_gpu_memory measured after the distributed set-up",
                ),
            }
    raise ValueError(f"{version}: profile_max_num_token's rest_memory not found")


_CAR = "sglang/srt/distributed/device_communicators/custom_all_reduce.py"
_QR = "sglang/srt/distributed/device_communicators/quick_all_reduce.py"


def _bytes(expression: str) -> int:
    value = 1
    for factor in re.findall(r"\d+", expression):
        value *= int(factor)
    return value


def _quick_reduce(version: str, text: str | None) -> dict[str, Any]:
    """``QuickAllReduce``'s facts (quick_all_reduce.py): the quantization variable's default, where it
    initialises (``qr_rocm_arch_available``'s arch prefixes, ``_SUPPORTED_WORLD_SIZES``), the variable that sets
    its largest input in MB and the default the release's comment states (``init_quick_all_reduce``)."""
    if text is None:
        return {"quick_reduce_default": None}
    regime = re.search(r'os\.environ\.get\("ROCM_QUICK_REDUCE_QUANTIZATION", "(\w+)"\)', text)
    archs = re.search(r"supported_archs = \[([^\]]*)\]", text)
    sizes = re.search(r"_SUPPORTED_WORLD_SIZES = \[([\d, ]+)\]", text)
    limit = re.search(r'os\.environ\.get\("(ROCM_QUICK_REDUCE_\w*MAX_SIZE\w*_MB)", 0\)', text)
    stated = re.search(r"then (\d+)GB is used by default", text)
    regimes = re.search(r"class QuickReduceRegime\(Enum\):\s*\n((?:[ \t]+\w+ = \d+\n)+)", text)
    if regime is None or archs is None or sizes is None or limit is None or stated is None or regimes is None:
        raise ValueError(f"{version}: quick all-reduce's variable, archs, world sizes or default size not found")
    return {
        "quick_reduce_default": regime.group(1),
        "quick_reduce_regimes": re.findall(r"(\w+) = \d+", regimes.group(1)),
        "quick_reduce_archs": re.findall(r'"(\w+)"', archs.group(1)),
        "quick_reduce_world_sizes": [int(n) for n in re.findall(r"\d+", sizes.group(1))],
        "quick_reduce_max_size_env": limit.group(1),
        "quick_reduce_default_max_gb": int(stated.group(1)),
        "quick_reduce_source": _cite(
            version,
            _QR,
            _line_of(text, regime.start()),
            f"init_quick_all_reduce: {regime.group(1)} allocates nothing; otherwise init_custom_qr("
            f"rank, world_size, qr_max_size), qr_max_size from {limit.group(1)} or the kernel's "
            f"{stated.group(1)}GB",
        ),
    }


def _all_reduce(version: str, sources: dict[str, str], released: str | None) -> dict[str, Any]:
    text = sources.get(_CAR)
    if text is None:
        raise ValueError(f"{version}: {_CAR} not found")
    table = re.search(
        r"_MAX_CAR_SIZE = ([\d *]+)\n(?:.*\n){0,3}?\s*if _?is_hip_?:\s*\n(?:\s*#.*\n)*\s*_MAX_CAR_SIZE = ([\d *]+)",
        text,
    )
    if table is not None:
        cuda, hip, at = _bytes(table.group(1)), _bytes(table.group(2)), table.start()
    else:
        default = re.search(r"max_size=([\d *]+),", text)
        if default is None:
            raise ValueError(f"{version}: CustomAllreduce's max_size not found")
        cuda = hip = _bytes(default.group(1))
        at = default.start()
    dispatch = text.find("def dispatch_custom_allreduce")
    end = re.compile(r"^(?:def|class) ", re.M).search(text, dispatch + 1) if dispatch >= 0 else None
    body = text[dispatch : end.start() if end else len(text)] if dispatch >= 0 else ""
    aiter = re.search(r'get_bool_env_var\("SGLANG_USE_AITER_AR", default="true"\)', body)
    kwargs: list[str] = []
    if aiter is not None:
        call = re.search(r"partial\(\s*AiterCustomAllreduce,([^)]*)\)", body)
        kwargs = re.findall(r"(\w+)=", call.group(1)) if call else []
        if "max_size" in kwargs:
            raise ValueError(f"{version}: SGLang passes aiter a max_size; read it before cataloguing")
    where = dispatch + (aiter.start() if aiter else 0) if dispatch >= 0 else at
    return {
        "hip": "aiter" if aiter else "sglang",
        "aiter_kwargs": kwargs,
        "sglang_max_size_cuda": cuda,
        "sglang_max_size_hip": hip,
        "cuda": "v2" if "return CustomAllReduceV2" in body else "sglang",
        **_quick_reduce(version, sources.get(_QR)),
        "released": released,
        "source": _cite(
            version,
            _CAR,
            _line_of(text, where),
            "dispatch_custom_allreduce" if aiter else f"CustomAllreduce max_size {cuda} (CUDA), {hip} (HIP)",
        ),
    }


def memory_facts(version: str, sources: dict[str, str], released: str | None = None) -> dict[str, Any]:
    """``facts.memory`` of one release from its source files (see the module docstring)."""
    path, _text, line, block = _fraction_block(sources)
    if re.search(r"(?:self\.tp_size|parallel_size) >= 16:", block):
        fraction = _parallel_table(version, path, line, block)
    elif "parallel_size / " in block and "reserved_mem = (" in block:
        fraction = _reserved_by_gpu(version, path, line, block)
    elif re.search(r"reserved_mem = \d+\s*\n", block):
        fraction = _reserved_formula(version, sources, path, line, block)
    else:
        raise ValueError(f"{version}: mem_fraction_static default matches no known shape")
    return {
        "fraction_default": fraction,
        "multimodal": _multimodal(version, sources, path, line, block),
        "pool_baseline": _baseline(version, sources),
        "hybrid_swa": hybrid_swa_facts(version, sources),
        "all_reduce": _all_reduce(version, sources, released),
        "cpu_offload": _cpu_offload(version, sources),
        "rope_cache": rope_cache(version, sources),
        "mamba_split": mamba_split(version, sources),
    }


_ROPE_FILES = ("sglang/srt/layers/rotary_embedding/base.py", "sglang/srt/layers/rotary_embedding.py")
_ROPE_FACTORY = "sglang/srt/layers/rotary_embedding/factory.py"
_ROPE_KEEP = re.compile(r"^[ \t]+cache = self\._compute_cos_sin_cache\(\)[ \t]*\n((?:[ \t]*#[^\n]*\n)*)", re.M)
_ROPE_GUARDED = re.compile(r"[ \t]*if not \(?([^\n:]+?)\)?:[ \t]*\n[ \t]+cache = cache\.to\(dtype\)\n")
_ROPE_TO_DTYPE = re.compile(r"[ \t]*cache = cache\.to\(dtype\)\n")
_ROPE_FLAG = re.compile(r"^(?:_is_(?:cuda|cuda_available|hip|xpu)|envs\.SGLANG_ROPE_CACHE_FP32)$")
"""Platform flags of the guard (``_is_cuda = is_cuda()``...) and the variable that keeps float32 everywhere (its
default off; a set variable is not modelled)."""


def rope_cache(version: str, sources: dict[str, str]) -> dict[str, Any] | None:
    """How ``RotaryEmbedding.__init__`` keeps ``cos_sin_cache`` (``max_position x rotary_dim`` elements, built on the
    model's device as the model is constructed, between the two readings around ``load_model``): ``cuda``/``hip``
    the element type on each platform (``float32``: the cache as ``_compute_cos_sin_cache`` makes it, in float32;
    ``model``: ``cache.to(dtype)``, the model's dtype). ``get_rope`` keeps one per distinct argument set
    (``_ROPE_DICT``), so layers alike share one. None where the release's models take their rotary embedding from
    vLLM (0.4.0-0.4.1; not read here)."""
    for path in _ROPE_FILES:
        text = sources.get(path, "")
        keep = _ROPE_KEEP.search(text)
        if keep is not None:
            break
    else:
        return None
    if not any("_ROPE_DICT" in sources.get(p, "") for p in (*_ROPE_FILES, _ROPE_FACTORY)):
        raise ValueError(f"{version}: get_rope's per-key cache (_ROPE_DICT) not found")
    after = text[keep.end() :]
    guarded = _ROPE_GUARDED.match(after)
    if guarded is not None:
        names = re.findall(r"\b_is_\w+|\benvs\.\w+", guarded.group(1))
        if not names or " and " in guarded.group(1) or any(not _ROPE_FLAG.match(n) for n in names):
            raise ValueError(f"{version}: the guard of cos_sin_cache's dtype ({guarded.group(1)}) is not read")
        # is_cuda() / is_cuda_available(): torch.version.cuda is set (None on ROCm); is_hip(): torch.version.hip
        cuda = "float32" if any(n.startswith("_is_cuda") for n in names) else "model"
        hip = "float32" if "_is_hip" in names else "model"
        note = f"kept in float32 where {guarded.group(1).strip()}, else cache.to(dtype)"
    elif _ROPE_TO_DTYPE.match(after) is not None:
        cuda, hip, note = "model", "model", "cache.to(dtype): the model's dtype"
    else:
        raise ValueError(f"{version}: how RotaryEmbedding keeps cos_sin_cache matches no known shape")
    return {
        "cuda": cuda,
        "hip": hip,
        "shared": True,
        "source": _cite(version, path, _line_of(text, keep.start()), note + "; one per get_rope key (_ROPE_DICT)"),
    }


_OFFLOADERS = (
    "sglang/srt/utils/offloader.py",
    "sglang/srt/offloader.py",
    "sglang/srt/utils.py",
    "sglang/srt/utils/common.py",
)


def _entry_classes(text: str) -> list[str]:
    entry = re.search(r"^EntryClass = (?:\[([\w,\s]+)\]|(\w+))", text, re.M)
    if entry is None:
        return []
    return [n.strip() for n in (entry.group(1) or entry.group(2)).split(",") if n.strip()]


_BUDGET = re.compile(
    r"(?:set_cpu_offload_max_bytes\(|cpu_offload_max_bytes=)\s*int\(\s*(?:server_args|get_exec\(\)\.offload)"
    r"\.cpu_offload_gb \* 1024\s*\*\*\s*3\s*\)"
)
_GUARD = re.compile(
    r"for p in module\.parameters\(\):\s*\n(?:\s*if id\(p\) in resident_parameter_ids:\s*\n\s*continue\s*\n)?"
    r"\s*if (?:self\.)?_(?:CPU_OFFLOAD_BYTES|cpu_offload_bytes) >= "
)


def _layer_helpers(sources: dict[str, str]) -> set[str]:
    """The helpers that build layers through the offloader: ``make_layers`` and the top-level functions that call it
    (``make_layers_non_pp``; ``make_pp_layers``, 0.5.22 on)."""
    helpers = {"make_layers"}
    for p in _OFFLOADERS:
        util = sources.get(p, "")
        starts = list(re.finditer(r"^(?:def (\w+)\(|class |\S)", util, re.M))
        for at, found in enumerate(starts):
            if found.group(1) is None:
                continue
            end = next((m.start() for m in starts[at + 1 :] if not m.group(0).startswith(")")), len(util))
            body = util[found.end() : end]  # to the next top-level statement (a signature's closing line aside)
            if re.search(r"\b(?:make_layers|maybe_offload_to_cpu|wrap_modules)\(", body):
                helpers.add(found.group(1))
    return helpers - {"maybe_offload_to_cpu", "wrap_modules"}


def _layer_making_files(models: dict[str, str], helpers: set[str]) -> set[str]:
    """Model files that call one of ``helpers``, or import a ``...Model`` class from such a file (transitively)."""
    calls = re.compile(r"\b(?:" + "|".join(sorted(helpers)) + r")\(")
    making = {p for p, t in models.items() if calls.search(t)}
    while True:
        more = set()
        for p, t in models.items():
            imports = re.findall(r"^from sglang\.srt\.models\.(\w+) import (?:\(([^)]*)\)|(.*))$", t, re.M)
            for module, grouped, inline in imports if p not in making else ():
                names = [n.split(" as ")[0].strip() for n in (grouped or inline).split(",")]
                if f"{_MODELS}{module}.py" in making and any(n.endswith("Model") for n in names):
                    more.add(p)
        if not more:
            return making
        making |= more


def _cpu_offload(version: str, sources: dict[str, str]) -> dict[str, Any]:
    """``--cpu-offload-gb``: how the release moves weights to host memory (``maybe_offload_to_cpu``).

    The budget is ``int(cpu_offload_gb * 1024**3)`` bytes per rank (each rank's process sets it); the layers
    ``make_layers`` builds are offloaded as they are created, parameter by parameter in order, until the bytes
    moved reach the budget (the last parameter may pass it). Nothing outside ``make_layers`` (embeddings, LM head,
    final norm, towers built otherwise) moves. ``architectures``: the ``EntryClass`` names of the model files that
    call ``make_layers`` (or a helper around it), or import a ``...Model`` class from one that does (Qwen3's
    ``Qwen2Model``)."""
    path = next((p for p in _OFFLOADERS if "def maybe_offload_to_cpu" in sources.get(p, "")), None)
    if path is None:
        raise ValueError(f"{version}: maybe_offload_to_cpu not found")
    text = sources[path]
    guard = _GUARD.search(text)
    if guard is None:
        raise ValueError(f"{version}: maybe_offload_to_cpu's per-parameter budget check not found")
    budget = next(((p, m) for p in (_RUNNER, *_OFFLOADERS) if (m := _BUDGET.search(sources.get(p, "")))), None)
    if budget is None:
        raise ValueError(f"{version}: the cpu_offload_gb budget (cpu_offload_gb * 1024**3) not found")
    models = {k[len(_OFFLOAD_KEY) :]: v for k, v in sources.items() if k.startswith(_OFFLOAD_KEY)}
    making = _layer_making_files(models, _layer_helpers(sources))
    architectures = sorted({name for p in making for name in _entry_classes(models[p])})
    resident: list[str] = []
    kept = re.search(r"^def _get_resident_parameter_ids\(", text, re.M)
    if kept is not None:  # 0.5.21 on: parameters other tensors alias stay on the GPU
        body = _block(text, kept.start())
        resident += ["mla_kv_b_proj"] if '"kv_b_proj"' in body else []
        resident += ["kda_qkv_conv1d"] if '"qkv_conv1d"' in body else []
        if not resident:
            raise ValueError(f"{version}: _get_resident_parameter_ids keeps parameters not modelled")
    return {
        "granularity": "parameter",
        "architectures": architectures,
        "resident": resident,
        "source": "; ".join(
            (
                _cite(
                    version,
                    budget[0],
                    _line_of(sources[budget[0]], budget[1].start()),
                    "cpu_offload_gb * 1024**3 bytes per rank",
                ),
                _cite(
                    version,
                    path,
                    _line_of(text, guard.start()),
                    "per parameter of make_layers' layers, until the budget is reached",
                ),
            )
        ),
    }


_CONFIG = "sglang/srt/configs/model_config.py"
_RUNNER = "sglang/srt/model_executor/model_runner.py"
_RUNNERS = (
    "sglang/srt/model_executor/pool_configurator.py",
    "sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
    "sglang/srt/model_executor/model_runner.py",
)


def _names(body: str, text: str) -> list[str]:
    """The quoted names of a set or list literal's body, ``*CONSTANT`` entries expanded from ``text``."""
    names = re.findall(r'"(\w+)"', body)
    for constant in re.findall(r"\*([A-Z_0-9]+)", body):
        defined = re.search(rf"^{constant} = (?:frozenset\()?\s*[\[({{](.*?)[\])}}]", text, re.M | re.S)
        if defined is None:
            raise ValueError(f"{constant} not found in model_config.py")
        names += re.findall(r'"(\w+)"', defined.group(1))
    return names


def _ratio_default(version: str, sources: dict[str, str]) -> tuple[float, str] | None:
    """``swa_full_tokens_ratio``'s default and its citation (None where the release has no such option)."""
    try:
        value, cite = _option_default(version, sources, "swa_full_tokens_ratio")
    except ValueError as exc:
        if str(exc) == f"{version}: no swa_full_tokens_ratio option":
            return None
        raise
    if value is None:
        raise ValueError(f"{version}: swa_full_tokens_ratio's default not read")
    return float(value), cite


def _arithmetic(version: str, sources: dict[str, str]) -> tuple[str, str]:
    """How the full pool's tokens follow from the memory left: per-layer bytes or a count of equal layers."""
    for path in _RUNNERS:
        text = sources.get(path, "")
        bytes_form = re.search(r"\+ (?:self\._)?swa_full_tokens_ratio\s*\*\s*(?:self\._)?swa_per_token", text)
        if bytes_form is None:
            bytes_form = re.search(
                r"\+ self\._swa_full_tokens_ratio\s*\n?\s*\*\s*self\._swa_(?:per_token|cell_bytes\(\))", text
            )
        if bytes_form is not None:
            note = "full_tokens = memory / (F * n_full + ratio * S * n_swa), swa_tokens = full_tokens * ratio"
            return "layer_bytes", _cite(version, path, _line_of(text, bytes_form.start()), note)
        count = re.search(r"denominator = swa_full_tokens_ratio \* swa_layers_num \+ full_layers_num", text)
        if count is not None:
            note = "full_tokens = max_total_num_tokens * layers / (ratio * n_swa + n_full)"
            return "layer_count", _cite(version, path, _line_of(text, count.start()), note)
        chunked = re.search(r"4 \* self\.max_total_num_tokens \* temp_ratio // \(3 \* temp_ratio \+ 1\)", text)
        if chunked is not None:
            note = "Llama 4: swa = 4 * tokens * t / (3t + 1), t = (1 - r) + r * chunk / context_len"
            return "layer_count", _cite(version, path, _line_of(text, chunked.start()), note)
    raise ValueError(f"{version}: the hybrid SWA pool's token arithmetic not found")


def hybrid_swa_facts(version: str, sources: dict[str, str]) -> dict[str, Any]:  # noqa: C901
    """``facts.memory.hybrid_swa``: which models get SGLang's hybrid SWA pool (a full pool and a sliding-window
    pool whose tokens are ``ratio`` × the full pool's) and how its tokens are computed, per release.

    ``selection``: ``none`` (one pool for every model), ``sliding_model`` (0.4.9.post3-0.5.6: any model whose
    SGLang class defines ``get_attention_sliding_window_size`` and returns a window, Llama 4 excepted:
    ``ModelRunner.__init__``), ``allowlist`` (the architectures ``is_hybrid_swa_model`` / ``is_hybrid_model``
    names). ``chunked_ratio_option``: Llama 4's opt-in ``--hybrid-kvcache-ratio`` (0.4.9-0.5.7)."""
    config = sources.get(_CONFIG, "")
    runner = sources.get(_RUNNER, "")
    cites: list[str] = []
    architectures: list[str] = []
    selection = "none"
    allow = re.search(r"hybrid_swa_archs = \{(.*?)\}", config, re.S)
    always = re.search(
        r"def is_hybrid_model\(.*?\):\n(?:\s*\n)?\s*if model_architectures\[0\] in \[(.*?)\]:\s*\n\s*return 1",
        config,
        re.S,
    )
    sliding = re.search(
        r"not self\.server_args\.disable_hybrid_swa_memory\s*\n\s*and self\.sliding_window_size is not None", runner
    )
    if allow is not None:
        selection = "allowlist"
        architectures = _names(allow.group(1), config)
        cites.append(_cite(version, _CONFIG, _line_of(config, allow.start()), "is_hybrid_swa_model"))
    elif sliding is not None:
        selection = "sliding_model"
        excluded = re.search(r'not any\("(\w+)" in arch for arch in architectures\)', runner[sliding.end() :][:600])
        cites.append(_cite(version, _RUNNER, _line_of(runner, sliding.start()), "sliding window -> hybrid"))
        for path in sorted(p for p in sources if p.startswith(_MODELS)):
            text = sources[path]
            entry = re.search(r"^EntryClass = (?:\[([\w,\s]+)\]|(\w+))", text, re.M)
            if entry is None:
                continue
            names = [n.strip() for n in (entry.group(1) or entry.group(2)).split(",") if n.strip()]
            architectures += [n for n in names if excluded is None or excluded.group(1) not in n]
            offset = text.index("def get_attention_sliding_window_size")
            cites.append(_cite(version, path, _line_of(text, offset)))
    if always is not None and selection != "allowlist":
        selection = "allowlist" if selection == "none" else selection
        architectures += re.findall(r'"(\w+)"', always.group(1))
        cites.append(_cite(version, _CONFIG, _line_of(config, always.start()), "is_hybrid_model"))
    chunked = re.search(
        r"hybrid_kvcache_ratio > 0\s*\n\s*and model_architectures\[0\] == \"Llama4ForConditionalGeneration\"", config
    )
    if chunked is not None:
        selection = "allowlist" if selection == "none" else selection
        cites.append(_cite(version, _CONFIG, _line_of(config, chunked.start()), "--hybrid-kvcache-ratio"))
    fact: dict[str, Any] = {
        "selection": selection,
        "architectures": sorted(set(architectures)),
        "chunked_ratio_option": "hybrid_kvcache_ratio" if chunked is not None else None,
        "config_opt_in": bool(re.search(r'getattr\(hf_text_config, "is_hybrid_swa", False\)', config)),
        "ratio_option": None,
        "ratio_default": None,
        "disable_option": None,
        "arithmetic": None,
    }
    if selection == "none":
        pool = re.search(r"self\.token_to_kv_pool = MHATokenToKVPool\(", runner)
        if pool is None:
            raise ValueError(f"{version}: neither a hybrid SWA pool nor the single MHA pool found")
        fact["source"] = _cite(version, _RUNNER, _line_of(runner, pool.start()), "one pool")
        return fact
    ratio = _ratio_default(version, sources)
    if ratio is not None:
        fact["ratio_option"] = "swa_full_tokens_ratio"
        fact["ratio_default"] = ratio[0]
        cites.append(ratio[1])
    if any("disable_hybrid_swa_memory" in sources.get(p, "") for p in ("sglang/srt/server_args.py", _RUNNER, _CONFIG)):
        fact["disable_option"] = "disable_hybrid_swa_memory"
    fact["arithmetic"], cite = _arithmetic(version, sources)
    cites.append(cite)
    fact["source"] = "; ".join(cites)
    return fact


_MAMBA_RUNNERS = (
    "sglang/srt/mem_cache/kv_cache_configurator.py",
    "sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
    "sglang/srt/model_executor/model_runner.py",
)
_MAMBA_UTILS = "sglang/srt/configs/mamba_utils.py"
_QWEN3_NEXT = "sglang/srt/configs/qwen3_next.py"
_ENVIRON = "sglang/srt/environ.py"
_HANDLE = re.compile(r"^[ \t]+def _?handle_max_mamba_cache\(", re.M)
_ARGS = r"(?:server_args|get_schedule\(\)|get_memory\(\))"
_RATIO_SOLVE = re.compile(
    rf"total_rest_memory\s*\*\s*{_ARGS}\.mamba_full_memory_ratio\s*/\s*\(1 \+ {_ARGS}\.mamba_full_memory_ratio\)"
)
_PADDED_COUNT = re.compile(
    r"per_slot = per_req \+ (?:replayssm_ring_per_req|replayssm_ring_per_slot|extra_per_slot)\s*\n"
    r"(?:.|\n){0,300}?max_mamba_cache_size=int\(\s*\(mamba_budget_bytes (?:- replayssm_fixed_bytes )?- per_slot\)\s*"
    r"// per_slot\s*\)"
)
_PADDED_RETURN = re.compile(
    r"mamba_state_memory = \(\s*\(?\(get_schedule\(\)\.max_mamba_cache_size \+ 1\)\s*\*\s*"
    r"\(stage_per_req \+ (?:replayssm_ring_per_req|replayssm_ring_per_slot|extra_per_slot)\)(?:.|\n){0,120}?"
    r"return total_rest_memory - mamba_state_memory"
)
_MM_RESERVE = re.compile(r"rest_memory = available_gpu_memory - slack_gb - mm_reservation_gb\n")
_MM_RESERVE_READ = re.compile(r"reserved_mb = envs\.SGLANG_VLM_CACHE_SIZE_MB\.get\(\)")
_MM_RESERVE_DEFAULT = re.compile(r"SGLANG_VLM_CACHE_SIZE_MB = EnvInt\((\d+)\)")
_RATIO_COUNT = re.compile(
    r"max_mamba_cache_size = int\(\s*\(mamba_state_memory_raw \* \(1 << 30\)\)\s*"
    r"// config\.mamba2_cache_params\.mamba_cache_per_req\s*(?:// \(1 \+ speculativa_ratio\)\s*)?\)"
    r"|max_mamba_cache_size ?= ?int\(mamba_budget_bytes // per_req\)"
)
_RATIO_RETURN = re.compile(
    r"mamba_state_memory = \(\s*server_args\.max_mamba_cache_size\s*\*\s*config\.mamba2_cache_params\."
    r"mamba_cache_per_req\s*(?:\*\s*\(1 \+ speculativa_ratio\)\s*)?/\s*\(1 << 30\)\s*\)\s*"
    r"return total_rest_memory - mamba_state_memory"
)
_RADIX_OFF_FIRST = re.compile(
    r"if \(\s*server_args\.disable_radix_cache\s*or config\.mamba2_cache_params\.mamba_cache_per_req == 0\s*\):"
    r"(?:.|\n)*?server_args\.max_mamba_cache_size = server_args\.max_running_requests\s*else:\s*"
    r"server_args\.max_mamba_cache_size = 512\n"
)
_RADIX_OFF_OR_OPTION = re.compile(
    r"if \(\s*server_args\.disable_radix_cache\s*or server_args\.max_mamba_cache_size is not None\s*\):"
    r"(?:.|\n)*?server_args\.max_mamba_cache_size = server_args\.max_running_requests\s*else:\s*"
    r"server_args\.max_mamba_cache_size = 512\n"
)
_OPTION_FIRST = re.compile(
    rf"if {_ARGS}\.max_mamba_cache_size is not None:(?:.|\n)*?elif \(\s*{_ARGS}\.disable_radix_cache\s*"
    rf"and {_ARGS}\.max_running_requests is not None\s*\):"
)
_RATIO_CALL = re.compile(r"rest_memory = self\._?handle_max_mamba_cache\(rest_memory\)")
_POST_CAPTURE = re.compile(r"self\.mambaish_config is not None\s+and self\.post_capture_kv_active")
_POST_CAPTURE_ENV = re.compile(r"SGLANG_ENABLE_POST_CAPTURE_KV_SIZING = EnvBool\(False\)")
_FIXED_DEFAULT = re.compile(r"self\.server_args\.max_mamba_cache_size = 512\n")
_FIXED_TAKE = re.compile(
    r"rest_memory -= \(\s*self\.server_args\.max_mamba_cache_size\s*\*\s*"
    r"(?:self\.model_config\.hf_config|config\.mamba2_cache_params)\.mamba_cache_per_req\s*/\s*\(1 << 30\)\s*\)"
)


def _option_default(version: str, sources: dict[str, str], name: str) -> tuple[str | None, str]:
    """An option's ``ServerArgs`` default as written (``None`` for ``Optional[...] = None``) and its citation."""
    for path in (
        "sglang/srt/arg_groups/fields/schedule.py",
        "sglang/srt/arg_groups/fields/exec_.py",
        "sglang/srt/server_args.py",
    ):
        text = sources.get(path, "")
        head = re.search(rf"^[ \t]+{name}: ", text, re.M)
        if head is None:
            continue
        tail = text[head.start() : head.start() + 600]
        value = re.search(r"\A[^\n]*= ([^\n]+)\n|^\s*\] = ([^\n]+)\n", tail, re.M)
        if value is None:
            raise ValueError(f"{version}: {name}'s default not read")
        written = next(g for g in value.groups() if g is not None).strip()
        fallback = re.search(r"^\s*fallback=([\d.]+),", tail[: value.start()], re.M)
        if written == "None" and fallback is not None:  # resolvable: None until resolved to the fallback
            written = fallback.group(1)
        return (None if written == "None" else written.strip("\"'")), _cite(
            version, path, _line_of(text, head.start()), f"{name} default"
        )
    raise ValueError(f"{version}: no {name} option")


def _multimodal_reserve(version: str, sources: dict[str, str], path: str, text: str, caller: str) -> dict[str, Any]:
    """0.5.18 on: the memory a multimodal model's budget keeps back before the split (``mm_runtime_reservation_gb``:
    ``SGLANG_VLM_CACHE_SIZE_MB``, plus the feature pool with a GPU ``--mm-feature-transport``); {} where none."""
    if _MM_RESERVE.search(caller) is None:
        return {}
    read = _MM_RESERVE_READ.search(text)
    default = _MM_RESERVE_DEFAULT.search(sources.get(_ENVIRON, ""))
    if read is None or default is None:
        raise ValueError(f"{version}: the multimodal reserve's size not read")
    return {
        "multimodal_reserve_mb": int(default.group(1)),
        "reserve_source": _cite(
            version,
            path,
            _line_of(text, read.start()),
            "mm_runtime_reservation_gb: SGLANG_VLM_CACHE_SIZE_MB for a multimodal model, more with GPU transport",
        )
        + "; "
        + _cite(version, _ENVIRON, _line_of(sources[_ENVIRON], default.start()), "its default"),  # two citations
    }


def _state_dtypes(version: str, sources: dict[str, str]) -> dict[str, Any]:
    """The Gated DeltaNet states' dtypes: conv state and temporal (SSM) state, and what sets the temporal one."""
    utils = sources.get(_MAMBA_UTILS, "")
    qwen = sources.get(_QWEN3_NEXT, "")
    option, option_cite = _option_default(version, sources, "mamba_ssm_dtype")
    cites = [option_cite]
    conv = re.search(r"^CONV_DTYPE = torch\.(\w+)\n", utils, re.M)
    env_conv = re.search(r"conv_dtype = dtype_map\.get\(envs\.SGLANG_MAMBA_CONV_DTYPE\.get\(\), torch\.(\w+)\)", utils)
    own = re.search(r"conv_dtype = torch\.(\w+)\n", qwen)
    if env_conv is not None:
        default = re.search(r'SGLANG_MAMBA_CONV_DTYPE = EnvStr\("(\w+)"\)', sources.get(_ENVIRON, ""))
        if default is None:
            raise ValueError(f"{version}: SGLANG_MAMBA_CONV_DTYPE's default not read")
        conv_dtype = default.group(1)
        cites.append(_cite(version, _MAMBA_UTILS, _line_of(utils, env_conv.start()), "conv dtype"))
        cites.append(_cite(version, _ENVIRON, _line_of(sources[_ENVIRON], default.start()), "its default"))
    elif conv is not None:
        conv_dtype = conv.group(1)
        cites.append(_cite(version, _MAMBA_UTILS, _line_of(utils, conv.start()), "conv dtype"))
    elif own is not None:
        conv_dtype = own.group(1)
        cites.append(_cite(version, _QWEN3_NEXT, _line_of(qwen, own.start()), "conv dtype"))
    else:
        raise ValueError(f"{version}: the mamba conv state's dtype not read")
    from_config = re.search(r"ssm_dtype = torch\.(\w+)\s+# Step 1: Default value", utils)
    reads = re.search(r"dtype=mamba2_state_dtype\(self\)", qwen)
    if from_config is not None and reads is not None:
        ssm_default = from_config.group(1)  # mamba_ssm_dtype unset: the config's, else this
        cites.append(_cite(version, _MAMBA_UTILS, _line_of(utils, from_config.start()), "ssm dtype: option, config"))
        cites.append(_cite(version, _QWEN3_NEXT, _line_of(qwen, reads.start()), "Qwen3-Next passes its config"))
    elif option is not None and re.search(
        r'ssm_dtype = dtype_map\[os\.environ\["SGLANG_MAMBA_SSM_DTYPE"\]\]', utils + qwen
    ):
        ssm_default = option  # ServerArgs sets SGLANG_MAMBA_SSM_DTYPE from the option
    else:
        raise ValueError(f"{version}: the mamba temporal state's dtype not read")
    return {
        "conv_dtype": conv_dtype,
        "ssm_dtype_option": "mamba_ssm_dtype",
        "ssm_dtype_default": ssm_default,
        "ssm_dtype_from_config": from_config is not None and reads is not None,
        "dtype_source": "; ".join(cites),
    }


def mamba_split(version: str, sources: dict[str, str]) -> dict[str, Any] | None:
    """``facts.memory.mamba_split``: how the release shares the memory left after ``mem_fraction_static`` between a
    hybrid linear-attention model's recurrent states and its full-attention KV pool (None where the release has no
    such split: before Qwen3-Next support, 0.5.2).

    ``variant``: ``fixed_requests`` (0.5.2-0.5.3.post1: ``max_mamba_cache_size`` requests' states, the option, else
    ``--max-running-requests``, else ``fixed_requests``, taken off the rest), ``ratio`` (0.5.3.post2 on:
    ``handle_max_mamba_cache``: unless ``--max-mamba-cache-size``, or ``--max-running-requests`` with the radix cache
    off, sets it (``explicit_size``: ``option_then_requests``, 0.5.9 on; ``radix_off_or_option``, 0.5.7-0.5.8.post1:
    with the radix cache off or the option given, the option, else ``--max-running-requests``, else 512;
    ``radix_off``, 0.5.3.post2-0.5.6.post2: the same with the radix cache off only, the option ignored with it on;
    0.5.16 has the same arithmetic in its KV-cache configurator, whose pre-capture reserve is off by default),
    ``max_mamba_cache_size = int(rest * r / (1 + r) GiB // state bytes per request)``, ``r`` =
    ``--mamba-full-memory-ratio``, and ``rest - max_mamba_cache_size * state bytes`` is the KV pool's), or
    ``unread`` (the split is in the release, in a shape this builder does not read). ``padding_slot`` (0.5.17 on):
    ``max_mamba_cache_size = int((rest * r / (1 + r) GiB - per_req) // per_req)`` and ``(it + 1) * per_req`` off the
    rest (the pool's padding slot); ``multimodal_reserve_mb`` (0.5.18 on): kept back from a multimodal model's rest
    before the split."""
    for path in _MAMBA_RUNNERS:
        text = sources.get(path, "")
        head = _HANDLE.search(text)
        if head is None:
            continue
        body = _block(text, head.start())
        line = _line_of(text, head.start())
        end = line + body.count("\n")
        solve = _RATIO_SOLVE.search(body)
        padded = _PADDED_COUNT.search(body) is not None and _PADDED_RETURN.search(body) is not None
        count = _RATIO_COUNT.search(body) or _PADDED_COUNT.search(body)
        back = _RATIO_RETURN.search(body) or _PADDED_RETURN.search(body)
        call = _RATIO_CALL.search(text)
        orders = {
            name: found
            for name, pattern in (
                ("radix_off", _RADIX_OFF_FIRST),
                ("radix_off_or_option", _RADIX_OFF_OR_OPTION),
                ("option_then_requests", _OPTION_FIRST),
            )
            if (found := pattern.search(body)) is not None
        }
        if solve is None or count is None or back is None or call is None or len(orders) != 1:
            return {"variant": "unread", "source": _cite(version, path, line, "handle_max_mamba_cache: not read")}
        caller = text[max(0, call.start() - 2500) : call.start()]
        reserve = _multimodal_reserve(version, sources, path, text, caller)
        reserve_source = reserve.pop("reserve_source", None)
        post_capture = _POST_CAPTURE.search(caller)
        if post_capture is not None and _POST_CAPTURE_ENV.search(sources.get(_ENVIRON, "")) is None:
            raise ValueError(f"{version}: the post-capture mamba reserve is not off by default")
        ratio, ratio_cite = _option_default(version, sources, "mamba_full_memory_ratio")
        if ratio is None:
            raise ValueError(f"{version}: mamba_full_memory_ratio has no default")
        note = (
            f"L{line}-L{end}: max_mamba_cache_size = int((rest * r / (1 + r) GiB - per_req) // per_req), "
            "rest -= (it + 1) * per_req"
            if padded
            else f"L{line}-L{end}: max_mamba_cache_size = int(rest * r / (1 + r) GiB // per_req), rest -= it * per_req"
        )
        return {
            "variant": "ratio",
            "ratio_option": "mamba_full_memory_ratio",
            "ratio_default": float(ratio),
            "size_option": "max_mamba_cache_size",
            "explicit_size": next(iter(orders)),
            "padding_slot": padded,
            **reserve,
            **_state_dtypes(version, sources),
            "source": "; ".join(
                (
                    _cite(version, path, line, note),
                    _cite(
                        version,
                        path,
                        _line_of(text, call.start()),
                        "the KV budget calls it"
                        + (
                            ", the rest first raised to a pre-capture reserve only under "
                            "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING (default off)"
                            if post_capture is not None
                            else ""
                        ),
                    ),
                    ratio_cite,
                    *([reserve_source] if reserve_source else []),
                )
            ),
        }
    runner = sources.get(_RUNNER, "")
    fixed, take = _FIXED_DEFAULT.search(runner), _FIXED_TAKE.search(runner)
    if fixed is None and take is None:
        return None
    if fixed is None or take is None:
        raise ValueError(f"{version}: a fixed mamba state pool without its default or without its take")
    return {
        "variant": "fixed_requests",
        "fixed_requests": 512,
        "requests_option": "max_running_requests",
        "size_option": "max_mamba_cache_size",
        **_state_dtypes(version, sources),
        "source": "; ".join(
            (
                _cite(
                    version,
                    _RUNNER,
                    _line_of(runner, fixed.start()),
                    "max_mamba_cache_size: option, else max_running_requests, else 512",
                ),
                _cite(version, _RUNNER, _line_of(runner, take.start()), "profile_max_num_token takes their states"),
            )
        ),
    }
