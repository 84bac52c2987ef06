"""TGI's memory facts, read from one release's own source (``facts.tgi_memory`` of its catalog).

What the estimator's TGI arithmetic (``engines/tgi/memory.py``) reads, per release:

* ``wiggle_room`` and ``wiggle_of``: how ``FlashCausalLM.warmup`` turns the free memory after the
  warm-up prefill into KV blocks (server/text_generation_server/models/flash_causal_lm.py):

  - ``free`` (2.0.0-2.4.1): ``num_blocks = (free_memory * W) // block_bytes + warm-up blocks`` with
    ``free_memory = mem_get_info free - (1 - MEMORY_FRACTION) * total``; W the literal ``0.95``
    (2.0-2.2) or ``TGI_WIGGLE_ROOM``'s default (models/globals.py, 2.3 on);
  - ``total`` (3.0.0 on): ``free_memory = get_free_memory(device, MEMORY_FRACTION * TGI_WIGGLE_ROOM)``,
    i.e. ``mem_get_info free - (1 - MEMORY_FRACTION * W) * total``, all of it for the KV cache.

* ``block_sizes`` / ``default_attention`` / the launcher's attention rule: ``BLOCK_SIZE`` per
  ``ATTENTION`` value (models/globals.py; a constant 16 before 2.1.1) and how ``resolve_attention``
  (launcher/src/main.rs) picks the attention when ``ATTENTION`` is unset: the default, the model types
  and head dimensions that force the fallback, and the fallback (``flashdecoding``, or from 3.x
  ``paged`` below compute capability 8).
* ``warmup_logits_copies``: the ``[prefill tokens × vocab]`` logits tensors the warm-up prefill holds (the
  router's warm-up asks for prefill logprobs): 2 (2.0-2.3), 1 (2.4: ``log_softmax`` in place), 0 (3.0 on:
  dropped unless ``REQUEST_LOGPROBS``).
* ``warmup_logits_copies_sharded``, ``mlp_intermediates``, ``free_read_cached``: the rest of the warm-up
  prefill's peak and how the free memory is read after it (:func:`warmup_peak`).
* ``rocm_free_memory``, ``rocm_image_attention``: how a ROCm (HIP) build sizes the same cache: the warm-up's
  free memory is ``torch.cuda.mem_get_info`` there too (``IS_ROCM_SYSTEM`` beside ``IS_CUDA_SYSTEM`` in the
  warm-up, 2.0.1-2.0.2; ``get_free_memory = get_cuda_free_memory`` under ``SYSTEM == "rocm"`` in
  utils/import_utils.py from the MI300 merge on; 2.0.0 calls it unconditionally), and the ``ATTENTION`` the ROCm
  image sets (``ENV ATTENTION=paged`` in Dockerfile_amd from 2.3.1), which the launcher takes over its own rule.
  ``prefill_default.card_query``: the launcher reads the card and its memory with ``nvidia-smi`` (3.x
  ``compute_type``/``ComputeType::vram``), absent from a ROCm image: no ``optimal`` and no ``vram_maximum`` there.
* ``context_default`` (a fact of its own, :func:`context_default`): the context served when unset.
* ``prefill_default``: the launcher's ``max_batch_prefill_tokens`` when it is not given:

  - ``input_plus`` (2.0.0-2.4.0): ``max_input_tokens + margin`` (``max_batch_size * max_input_tokens``
    with ``--max-batch-size``), ``max_input_tokens`` defaulting to ``min(max_position_embeddings,
    tokens) - 1``;
  - ``min_position`` (2.4.1): ``min(tokens, max_position_embeddings)``;
  - ``compute_optimal`` (3.0.0 on): ``min(optimal or by_model_type or tokens, max_position_embeddings,
    vram_maximum)``: ``optimal = card f16 flops × shards / model flops`` when above ``min_optimal``, the
    card looked up by ``nvidia-smi``'s name (``card_names``), ``vram_maximum = (memory.total × shards ×
    cuda_memory_fraction × vram_wiggle - model bytes) / bytes per token``.

Every fact cites the release's file and line. A release whose source matches none of the shapes
raises: nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

BLOB = "https://github.com/huggingface/text-generation-inference/blob"
WARMUP = "server/text_generation_server/models/flash_causal_lm.py"
GLOBALS = "server/text_generation_server/models/globals.py"
CACHE_MANAGER = "server/text_generation_server/models/cache_manager.py"
LAUNCHER = "launcher/src/main.rs"
HEADS = ("server/text_generation_server/layers/tensor_parallel.py", "server/text_generation_server/utils/layers.py")
LLAMA = "server/text_generation_server/models/custom_modeling/flash_llama_modeling.py"
IMPORT_UTILS = "server/text_generation_server/utils/import_utils.py"
ROCM_IMAGE = "Dockerfile_amd"
FILES = (
    WARMUP,
    GLOBALS,
    CACHE_MANAGER,
    LAUNCHER,
    LLAMA,
    IMPORT_UTILS,
    ROCM_IMAGE,
    *HEADS,
)  # and the router's warm-up client (WARMUP_CLIENTS)

Show = Callable[[str], "str | None"]


def _cite(tag: str, path: str, text: str, offset: int, note: str = "") -> str:
    line = text.count("\n", 0, offset) + 1
    return f"{BLOB}/{tag}/{path}#L{line}" + (f" ({note})" if note else "")


def _need(match: re.Match[str] | None, tag: str, what: str) -> re.Match[str]:
    if match is None:
        raise ValueError(f"{tag}: {what} not found")
    return match


def wiggle(tag: str, show: Show) -> dict[str, Any]:
    """``wiggle_room``, ``wiggle_of`` and their source."""
    warmup = show(WARMUP) or ""
    literal = re.search(r"int\(\(free_memory \* ([\d.]+|TGI_WIGGLE_ROOM)\) // total_cache_size\)", warmup)
    of_total = re.search(
        r"free_memory = get_free_memory\(\s*self\.device, MEMORY_FRACTION \* TGI_WIGGLE_ROOM\s*\)\s*\n"
        r"\s*kv_memory = free_memory\s*\n\s*num_blocks = \(",
        warmup,
    )
    if (literal is None) == (of_total is None):
        raise ValueError(f"{tag}: the warm-up's KV sizing matches no known shape")
    if literal is not None and literal.group(1) != "TGI_WIGGLE_ROOM":
        value = float(literal.group(1))
        source = _cite(tag, WARMUP, warmup, literal.start(), "num_blocks = free_memory * W // block bytes")
        return {"wiggle_room": value, "wiggle_of": "free", "wiggle_source": source}
    where = literal or of_total
    assert where is not None
    text = show(GLOBALS) or ""
    default = _need(
        re.search(r'TGI_WIGGLE_ROOM = float\(os\.getenv\("TGI_WIGGLE_ROOM", "([\d.]+)"\)\)', text),
        tag,
        "TGI_WIGGLE_ROOM's default",
    )
    shape = "free" if literal is not None else "total"
    formula = (
        "num_blocks = free_memory * TGI_WIGGLE_ROOM // block bytes"
        if shape == "free"
        else "free_memory = get_free_memory(device, MEMORY_FRACTION * TGI_WIGGLE_ROOM)"
    )
    source = (
        _cite(tag, WARMUP, warmup, where.start(), formula)
        + "; "
        + _cite(tag, GLOBALS, text, default.start(), "TGI_WIGGLE_ROOM default")
    )
    return {"wiggle_room": float(default.group(1)), "wiggle_of": shape, "wiggle_source": source}


def _block_sizes(tag: str, show: Show) -> tuple[dict[str, int], str]:
    text = show(GLOBALS) or ""
    table = re.search(r"BLOCK_SIZE: int\n((?:(?:if|elif) ATTENTION == \"[\w-]+\":\n\s+BLOCK_SIZE = \d+\n)+)", text)
    if table is not None:
        sizes = {a: int(b) for a, b in re.findall(r'ATTENTION == "([\w-]+)":\n\s+BLOCK_SIZE = (\d+)', table.group(1))}
        rest = _need(re.search(r"else:\n\s+BLOCK_SIZE = (\d+)", text[table.end() :]), tag, "BLOCK_SIZE's else")
        sizes["paged"] = int(rest.group(1))
        return sizes, _cite(tag, GLOBALS, text, table.start(), "BLOCK_SIZE by ATTENTION")
    flash = re.search(r"BLOCK_SIZE: int = (\d+) if FLASH_DECODING else (\d+)", text)
    if flash is not None:
        sizes = {"flashdecoding": int(flash.group(1)), "paged": int(flash.group(2))}
        return sizes, _cite(tag, GLOBALS, text, flash.start(), "BLOCK_SIZE by FLASH_DECODING")
    for path in (WARMUP, CACHE_MANAGER):
        body = show(path) or ""
        fixed = re.search(r"^BLOCK_SIZE: int = (\d+)$", body, re.M)
        if fixed is not None:
            return {"paged": int(fixed.group(1))}, _cite(tag, path, body, fixed.start(), "BLOCK_SIZE")
    raise ValueError(f"{tag}: BLOCK_SIZE not found")


def attention(tag: str, show: Show) -> dict[str, Any]:
    """The block size per attention and the launcher's choice of attention."""
    sizes, size_source = _block_sizes(tag, show)
    launcher = show(LAUNCHER) or ""
    resolve = re.search(r"fn resolve_attention\(.*?\n}\n", launcher, re.S)
    fact: dict[str, Any] = {"block_sizes": sizes}
    if resolve is None:
        # 2.0-2.2: no ATTENTION; FLASH_DECODING set by the launcher for some model types (2.2.0: gemma2)
        forced = re.findall(
            r'config\.model_type == Some\("(\w+)"\.to_string\(\)\) \{[^}]*set_var\("FLASH_DECODING", "1"\)', launcher
        )
        fact.update(
            default_attention="paged",
            fallback_model_types=forced,
            flashinfer_head_dims=[],
            fallback_attention="flashdecoding",
            attention_source=size_source,
        )
        return fact
    body = resolve.group(0)
    default = _need(re.search(r'attention\.unwrap_or\("([\w-]+)"\.to_string\(\)\)', body), tag, "default attention")
    dims = _need(re.search(r"Some\(h\) if ((?:h == \d+(?: \|\| )?)+) =>", body), tag, "flashinfer head dims")
    arm = _need(
        re.search(r"((?:Some\(\"\w+\"\)(?: \| )?)+) => \{\s*\n(?:\s*//[^\n]*\n)*\s*if attention\.is_none", body),
        tag,
        "forced model types",
    )
    by_capability = re.search(r'major < 8\)\s*\{\s*"paged"\s*\}\s*else\s*\{\s*"flashdecoding"\s*\}', body)
    fact.update(
        default_attention=default.group(1),
        fallback_model_types=re.findall(r'Some\("(\w+)"\)', arm.group(1)),
        flashinfer_head_dims=[int(d) for d in re.findall(r"\d+", dims.group(1))],
        fallback_attention="by_capability" if by_capability else "flashdecoding",
        attention_source=_cite(tag, LAUNCHER, launcher, resolve.start() + default.start(), "resolve_attention")
        + "; "
        + size_source,
    )
    return fact


def _prefill_block(launcher: str, tag: str) -> re.Match[str]:
    return _need(
        re.search(
            r"let max_batch_prefill_tokens = \{\s*match args\.max_batch_prefill_tokens \{.*?\n    \};", launcher, re.S
        ),
        tag,
        "max_batch_prefill_tokens default",
    )


def _cards(launcher: str, tag: str) -> tuple[dict[str, str], dict[str, int]]:
    names = dict(re.findall(r'"(nvidia-[\w-]+)" => Gpu::(\w+),', launcher))
    flops = {g: int(t) for g, t in re.findall(r"Gpu::(\w+) => Some\((\d+) \* 10u64\.pow\(12\)\)", launcher)}
    if not names or not flops:
        raise ValueError(f"{tag}: the launcher's card table not read")
    return names, flops


def prefill(tag: str, show: Show) -> dict[str, Any]:
    """``prefill_default``: the launcher's ``max_batch_prefill_tokens`` when unset."""
    launcher = show(LAUNCHER) or ""
    block = _prefill_block(launcher, tag)
    body = block.group(0)
    source = _cite(tag, LAUNCHER, launcher, block.start(), "max_batch_prefill_tokens default")
    max_default = re.search(r"let max_default = (\d+);", launcher)
    if re.search(r"max_batch_size \* max_input_tokens", body) and (
        plus := re.search(r"max_input_tokens \+ (\d+)", body)
    ):
        cap = _need(max_default, tag, "max_default")
        return {
            "variant": "input_plus",
            "margin": int(plus.group(1)),
            "tokens": int(cap.group(1)),
            "source": source + "; " + _cite(tag, LAUNCHER, launcher, cap.start(), "max_input_tokens default cap"),
        }
    fixed = re.search(r"let value = (\d+)\.min\(max_position_embeddings as u32\);", body)
    if fixed is not None:
        return {"variant": "min_position", "tokens": int(fixed.group(1)), "source": source}
    if "compute_optimal(" in body:
        fallback = _need(
            re.search(
                r"compute_optimal\.unwrap_or\((\d+)\)|None => (\d+),\s*\n\s*\};\s*\n\s*let default = compute_optimal",
                body,
            ),
            tag,
            "compute_optimal's fallback",
        )
        by_type: dict[str, int] = {}
        for arm, value in re.findall(r"((?:Some\(\"\w+\"\)(?: \| )?)+) => ([\d_]+),", body):
            for name in re.findall(r'Some\("(\w+)"\)', arm):
                by_type[name] = int(value.replace("_", ""))
        names, flops = _cards(launcher, tag)
        minimum = _need(re.search(r"if optimal_size > (\d+) \{", launcher), tag, "compute_optimal's minimum")
        wig = _need(
            re.search(r'env::var\("TGI_WIGGLE_ROOM"\).*?\.unwrap_or\(([\d.]+)\);', launcher, re.S), tag, "vram wiggle"
        )
        query = _need(
            re.search(
                r"fn compute_type\(count: usize\) -> Option<ComputeType> \{\s*"
                r'let output = Command::new\("(nvidia-smi)"\)',
                launcher,
            ),
            tag,
            "compute_type's card query",
        )
        return {
            "variant": "compute_optimal",
            "card_query": query.group(1),
            "tokens": int(fallback.group(1) or fallback.group(2)),
            "by_model_type": by_type,
            "card_names": names,
            "card_tflops": {g: flops[g] for g in sorted(set(names.values())) if g in flops},
            "min_optimal": int(minimum.group(1)),
            "vram_wiggle": float(wig.group(1)),
            "source": source
            + "; "
            + _cite(tag, LAUNCHER, launcher, minimum.start(), "compute_optimal")
            + "; "
            + _cite(tag, LAUNCHER, launcher, wig.start(), "ComputeType::vram")
            + "; "
            + _cite(tag, LAUNCHER, launcher, query.start(), "compute_type: the card from nvidia-smi"),
        }
    raise ValueError(f"{tag}: max_batch_prefill_tokens default matches no known shape")


def context_default(tag: str, show: Show) -> dict[str, Any]:
    """``facts.context_default``: the context (``max_total_tokens``) served when it is not given.

    2.4.1 on: the warm-up sets it from the KV cache (``num_blocks * BLOCK_SIZE``), from 3.0.1 at most the
    config's ``max_position_embeddings``; before: the launcher's ``min(max_position_embeddings, max_default)``.
    """
    warmup = show(WARMUP) or ""
    unset = re.search(r"if max_total_tokens is None:\n(.*?)\n\s*else:", warmup, re.S)
    if unset is not None and "num_blocks * BLOCK_SIZE" in unset.group(1):
        note = "warmup: max_total_tokens from num_blocks * BLOCK_SIZE"
        within = "max_position_embeddings" in unset.group(1)
        note += ", at most max_position_embeddings" if within else ""
        source = _cite(tag, WARMUP, warmup, unset.start(), note)
        return {"kv_capacity": True, "within_model": within, "source": source}
    launcher = show(LAUNCHER) or ""
    total = re.search(
        r"let max_total_tokens = \{\s*match args\.max_total_tokens \{.*?"
        r"None => \{\s*let value = max_position_embeddings;",
        launcher,
        re.S,
    )
    cap = re.search(r"let max_default = (\d+);", launcher)
    if total is None or cap is None:
        raise ValueError(f"{tag}: max_total_tokens default matches no known shape")
    return {
        "cap": int(cap.group(1)),
        "source": _cite(tag, LAUNCHER, launcher, total.start(), "max_total_tokens default: max_position_embeddings")
        + "; "
        + _cite(tag, LAUNCHER, launcher, cap.start(), "capped at max_default"),
    }


WARMUP_CLIENTS = (
    "backends/v3/src/client/grpc_client.rs",
    "backends/client/src/v3/client.rs",
    "router/client/src/v3/client.rs",
    "router/client/src/client.rs",
)


def warmup_logits(tag: str, show: Show) -> dict[str, Any]:
    """How many ``[prefill tokens × vocab]`` logits tensors the warm-up prefill holds at its peak.

    The router's warm-up requests ask for prefill logprobs (``prefill_logprobs: true``): the LM head then
    runs on every prefill token and ``log_softmax`` takes a second tensor (2.0-2.3) or works in place
    (2.4); from 3.0 the server drops the request's prefill logprobs unless ``REQUEST_LOGPROBS`` is set
    (default ``"0"``), so only each request's last token gets logits (0 here).
    """
    client = next((p for p in WARMUP_CLIENTS if show(p) is not None), None)
    text = show(client) if client else None
    asks = re.search(r"prefill_logprobs: true", text or "")
    if client is None or text is None or asks is None:
        raise ValueError(f"{tag}: the router's warm-up request not found")
    asked = _cite(tag, client, text, asks.start(), "warm-up requests ask for prefill logprobs")
    warmup = show(WARMUP) or ""
    gate = re.search(r"if not REQUEST_LOGPROBS:\n\s*r\.prefill_logprobs = False", warmup)
    default = re.search(r'REQUEST_LOGPROBS = os\.getenv\("REQUEST_LOGPROBS", "0"\)', show(GLOBALS) or "")
    if gate is not None and default is not None:
        return {
            "copies": 0,
            "source": _cite(tag, WARMUP, warmup, gate.start(), "prefill logprobs dropped") + "; " + asked,
        }
    shapes = ((1, r"torch\.log_softmax\(out, -1, out=out\)"), (2, r"= torch\.log_softmax\(out, -1\)\n"))
    for copies, pattern in shapes:
        found = re.search(pattern, warmup)
        if found is not None:
            note = "logits and log_softmax" if copies == 2 else "log_softmax in place"
            return {"copies": copies, "source": _cite(tag, WARMUP, warmup, found.start(), note) + "; " + asked}
    raise ValueError(f"{tag}: the prefill logprobs' log_softmax not found")


def warmup_peak(tag: str, show: Show, copies: int) -> dict[str, Any]:
    """What else the warm-up prefill holds at its peak, and how the free memory is read after it.

    * ``warmup_logits_copies_sharded``: the ``[prefill tokens × vocab]`` tensors with the LM head split over
      several shards. ``TensorParallelHead`` (unquantized, ``FastLinear``) gathers the shards into
      ``world_out`` ``[vocab × tokens]`` and returns ``world_out.T``, a transposed view: ``log_softmax`` on it
      copies its input to a contiguous tensor (ATen ``host_softmax``: ``input_.contiguous()``) and writes a new
      output (2.0-2.3), or, in place into the non-contiguous view (2.4), a temporary (ATen ``log_softmax_out``:
      ``output_temp`` when the output is not contiguous): 3 either way where logits are kept (``copies`` > 0),
      else 0. The head's local shard ``[vocab/shards × tokens]`` is freed before, into torch's cache.
    * ``mlp_intermediates``: ``[tokens × intermediate/shard]`` tensors live at the MLP's peak
      (``self.act(gate_up_states[:, 0]) * gate_up_states[:, 1]``: gate_up (2), the activation (1), the product (1)).
    * ``free_read_cached``: the free memory is read (``mem_get_info``) after the warm-up prefill with no
      ``empty_cache()`` between, so torch's cached blocks of the prefill (the layers' activations, the head's
      local shard) count as used, unless an allocation failed and the caching allocator released them.
    """
    head_path = next((p for p in HEADS if "return world_out.T" in (show(p) or "")), None)
    if head_path is None:
        raise ValueError(f"{tag}: the gathered LM head (world_out.T) not found")
    head = show(head_path) or ""
    gathered = _need(re.search(r"return world_out\.T", head), tag, "world_out.T")
    llama = show(LLAMA) or ""
    mlp = _need(
        re.search(r"self\.act\(gate_up_states\[:, 0\]\) \* gate_up_states\[:, 1\]", llama), tag, "the MLP's product"
    )
    warmup = show(WARMUP) or ""
    body = _need(re.search(r"def warmup\(.*?num_blocks = \(", warmup, re.S), tag, "the warm-up's KV sizing")
    prefill = body.group(0).rfind("generate_token(")
    read = max(body.group(0).rfind("get_free_memory("), body.group(0).rfind("mem_get_info("))
    if prefill < 0 or read < prefill:
        raise ValueError(f"{tag}: the free memory is not read after the warm-up prefill")
    cached = "empty_cache()" not in body.group(0)[prefill:read]
    return {
        "warmup_logits_copies_sharded": 3 if copies else 0,
        "mlp_intermediates": 4,
        "free_read_cached": cached,
        "warmup_peak_source": _cite(tag, head_path, head, gathered.start(), "gathered LM head returns world_out.T")
        + "; "
        + _cite(tag, LLAMA, llama, mlp.start(), "MLP: act(gate) * up")
        + "; "
        + _cite(
            tag,
            WARMUP,
            warmup,
            body.start() + read,
            "free memory read after the warm-up prefill" + (" without empty_cache" if cached else ""),
        ),
    }


def warmup_requests(tag: str, show: Show) -> dict[str, Any]:
    """How the router's warm-up splits the prefill budget into requests, and the KV blocks each one takes.

    * ``input_steps`` (2.0-2.4.0): ``truncate = min(max_input_length, budget - n_tokens)``, ``n_tokens +=
      max_input_length``, ``max_new_tokens = max_total_tokens - truncate``;
    * ``input_optional`` (2.4.1 on): ``truncate = min(max_input_tokens if set, budget - n_tokens)``, ``n_tokens +=
      truncate``, ``max_new_tokens = max_total_tokens - truncate`` if set, else 1.

    The server maps ``prompt + max_new_tokens - 1`` tokens of each to blocks (``FlashCausalLMBatch.from_tokenized``),
    all allocated for the warm-up and added back to the KV cache after it.
    """
    client = next((p for p in WARMUP_CLIENTS if show(p) is not None), None)
    text = (show(client) if client else None) or ""
    steps = re.search(r"n_tokens \+= max_input_length;", text)
    new_tokens = re.search(r"max_new_tokens: max_total_tokens - truncate,", text)
    optional = re.search(
        r"let max_new_tokens = if let Some\(max_total_tokens\) = max_total_tokens \{\s*max_total_tokens - truncate"
        r"\s*\} else \{\s*1\s*\};",
        text,
    )
    by_truncate = re.search(r"n_tokens \+= truncate;", text)
    if client is not None and steps is not None and new_tokens is not None:
        return {
            "warmup_requests": "input_steps",
            "warmup_requests_source": _cite(tag, client, text, steps.start(), "warm-up requests of max_input_length")
            + "; "
            + _cite(tag, client, text, new_tokens.start(), "max_new_tokens = max_total_tokens - truncate"),
        }
    if client is not None and optional is not None and by_truncate is not None:
        return {
            "warmup_requests": "input_optional",
            "warmup_requests_source": _cite(tag, client, text, by_truncate.start(), "warm-up requests of truncate")
            + "; "
            + _cite(tag, client, text, optional.start(), "max_new_tokens: max_total_tokens - truncate, else 1"),
        }
    raise ValueError(f"{tag}: the router's warm-up requests match no known shape")


def rocm(tag: str, show: Show) -> dict[str, Any]:
    """How a ROCm build reads the warm-up's free memory, and the ``ATTENTION`` the ROCm image sets.

    ``rocm_free_memory``: the free memory of a HIP build is ``torch.cuda.mem_get_info`` (torch maps it to
    ``hipMemGetInfo``), so the CUDA arithmetic holds unchanged; False where the release's source does not show it.
    ``rocm_image_attention``: ``ENV ATTENTION=<x>`` in Dockerfile_amd (None: the image sets none, the launcher's
    rule decides).
    """
    warmup = show(WARMUP) or ""
    utils = show(IMPORT_UTILS) or ""
    mapped = re.search(
        r'if torch\.version\.hip is not None:\n\s*SYSTEM = "rocm"\n(?:\s*\w+ = [\w.]+\n)*?'
        r"\s*get_free_memory = get_cuda_free_memory\n",
        utils,
    )
    reads = re.search(r"def get_cuda_free_memory\(.*?\):\n\s*total_free_memory, _ = torch\.cuda\.mem_get_info", utils)
    branch = re.search(
        r"if IS_CUDA_SYSTEM or IS_ROCM_SYSTEM:\n\s*total_free_memory, _ = torch\.cuda\.mem_get_info", warmup
    )
    body = re.search(r"def warmup\(.*?num_blocks = \(", warmup, re.S)
    direct = re.search(r"\n        total_free_memory, _ = torch\.cuda\.mem_get_info", body.group(0)) if body else None
    if mapped is not None and reads is not None:
        source = _cite(
            tag, IMPORT_UTILS, utils, mapped.start(), 'SYSTEM "rocm": get_free_memory = get_cuda_free_memory'
        )
        source += "; " + _cite(tag, IMPORT_UTILS, utils, reads.start(), "torch.cuda.mem_get_info")
    elif branch is not None:
        source = _cite(tag, WARMUP, warmup, branch.start(), "IS_CUDA_SYSTEM or IS_ROCM_SYSTEM: torch.cuda.mem_get_info")
    elif body is not None and direct is not None:
        offset = body.start() + direct.start() + 1
        source = _cite(tag, WARMUP, warmup, offset, "torch.cuda.mem_get_info on every build")
    else:
        return {"rocm_free_memory": False, "rocm_image_attention": None, "rocm_source": ""}
    image = show(ROCM_IMAGE) or ""
    env = re.search(r"^ENV ATTENTION=([\w-]+)$", image, re.M)
    if env is not None:
        source += "; " + _cite(tag, ROCM_IMAGE, image, env.start(), "the ROCm image's ATTENTION")
    return {"rocm_free_memory": True, "rocm_image_attention": env.group(1) if env else None, "rocm_source": source}


def memory_facts(tag: str, show: Show) -> dict[str, Any]:
    """``facts.tgi_memory`` of one release (``show(path)``: the file at ``tag``, or None)."""
    logits = warmup_logits(tag, show)
    return {
        **wiggle(tag, show),
        **attention(tag, show),
        "prefill_default": prefill(tag, show),
        "warmup_logits_copies": logits["copies"],
        "warmup_logits_source": logits["source"],
        **warmup_peak(tag, show, logits["copies"]),
        **warmup_requests(tag, show),
        **rocm(tag, show),
    }
