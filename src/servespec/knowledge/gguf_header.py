"""Model facts from a GGUF file's header (the format of https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).

GGUF keeps the architecture as key/value pairs named ``<arch>.<key>``
(https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, "Standardized key-value pairs"):
``general.architecture``, ``<arch>.block_count``, ``<arch>.embedding_length``,
``<arch>.attention.head_count``, ``<arch>.attention.head_count_kv``, ``<arch>.context_length``,
``<arch>.feed_forward_length``, ``general.file_type`` (a ``LlamaFileType``). They are turned into
the config.json names :func:`servespec.knowledge.models.facts_from_config` reads. Only the
header and tensor table are read (:func:`read_gguf`), never tensor data; gguf-py supplies the
file-type names and the quantization block sizes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO


class GgufError(ValueError):
    """A GGUF file whose header is unusable; the message quotes nothing of the file."""


@dataclass(frozen=True)
class GgufHeader:
    """What a GGUF header says, as config.json fields plus the file's own facts."""

    config: dict[str, Any]
    weight_bytes: int
    file_type: str | None
    """The llama.cpp file type (``Q4_K_M``, ``F16``), as ``model.gguf_type`` spells it."""


_KEYS = {
    "num_hidden_layers": "block_count",
    "hidden_size": "embedding_length",
    "num_attention_heads": "attention.head_count",
    "num_key_value_heads": "attention.head_count_kv",
    "max_position_embeddings": "context_length",
    "intermediate_size": "feed_forward_length",
    "head_dim": "attention.key_length",
    "vocab_size": "vocab_size",
    "num_local_experts": "expert_count",
    "num_experts_per_tok": "expert_used_count",
    "moe_intermediate_size": "expert_feed_forward_length",
    "sliding_window": "attention.sliding_window",
    "kv_lora_rank": "attention.kv_lora_rank",
    "q_lora_rank": "attention.q_lora_rank",
    # MLA's rope key (convert_hf_to_gguf.py DeepseekV2Model: add_rope_dimension_count(qk_rope_head_dim));
    # read only where kv_lora_rank makes the model MLA
    "qk_rope_head_dim": "rope.dimension_count",
}
"""config.json name -> GGUF key below ``<arch>.`` (gguf-py constants.py, ``Keys.LLM`` and ``Keys.Attention``)."""

_B11434 = "https://github.com/ggml-org/llama.cpp/blob/b11434/src"
_SWA_PATTERNS: dict[str, tuple[int, bool, int | None, str]] = {
    # arch: (period, dense_first, window when the header has none, source). llama.cpp reads
    # <arch>.attention.sliding_window_pattern as one flag per layer, else as a period (default: the
    # arch's), and llama_hparams::set_swa_pattern marks layer il sliding when il % n < n - 1 (the last
    # of each period global), or with dense_first when il % n != 0 (the first global)
    # (llama-model.cpp load_swa_pattern L3451-L3458, llama-hparams.cpp L8-L18).
    "gemma2": (2, False, 4096, f"{_B11434}/models/gemma2.cpp#L4-L6"),
    "gemma3": (6, False, None, f"{_B11434}/models/gemma3.cpp#L4-L7"),
    "gemma3n": (5, False, None, f"{_B11434}/models/gemma3n.cpp#L4-L5"),
    "cohere2": (4, False, None, f"{_B11434}/models/cohere2.cpp#L4-L5"),
    "gpt-oss": (2, False, None, f"{_B11434}/models/openai-moe.cpp#L6-L9"),
    "olmo2": (4, False, None, f"{_B11434}/models/olmo2.cpp#L6-L9"),
    "smallthinker": (4, True, 4096, f"{_B11434}/models/smallthinker.cpp#L7-L9"),
}
"""GGUF architectures whose sliding-window layers llama.cpp lays out by a period (b11434's loaders)."""
_NO_SWA = {"phi3": f"{_B11434}/models/phi3.cpp#L13-L23"}
"""Architectures whose header may name a window that llama.cpp ignores (Phi-3: "SWA is currently disabled")."""
_LLAMA4_CHUNK = 8192
"""llama.cpp's Llama 4: chunked attention of 8192 tokens on 3 layers of 4 unless the header's window is 0
(https://github.com/ggml-org/llama.cpp/blob/b11434/src/models/llama4.cpp#L8-L19)."""


def swa_layout(arch: str, fields: dict[str, Any], layers: int) -> dict[str, Any]:
    """The config fields that give llama.cpp's sliding-window (or chunked) layers of a GGUF ``arch``.

    ``layer_types`` for a per-layer flag array or a known period; Llama 4's ``attention_chunk_size``;
    nothing (and no ``sliding_window``) where llama.cpp keeps every layer global.
    """
    window = fields.get(f"{arch}.attention.sliding_window")
    pattern = fields.get(f"{arch}.attention.sliding_window_pattern")
    if arch in _NO_SWA:
        return {"sliding_window": None}
    if arch == "llama4":
        return {"sliding_window": None} | ({} if window == 0 else {"attention_chunk_size": _LLAMA4_CHUNK})
    if isinstance(pattern, tuple) and len(pattern) == layers and window:
        types = ["sliding_attention" if flag else "full_attention" for flag in pattern]
        return {"sliding_window": window, "layer_types": types}
    rule = _SWA_PATTERNS.get(arch)
    if rule is None or not (window or rule[2]) or layers <= 0:
        return {}
    period, dense_first, default, _ = rule
    period = pattern if isinstance(pattern, int) and not isinstance(pattern, bool) else period
    kinds = [period == 0 or (il % period != 0 if dense_first else il % period < period - 1) for il in range(layers)]
    return {
        "sliding_window": window or default,
        "layer_types": ["sliding_attention" if flag else "full_attention" for flag in kinds],
    }


PER_LAYER_ARRAYS = (".attention.sliding_window_pattern", ".attention.head_count_kv")
"""Keys read as one value per layer (``get_key_or_arr``): Gemma 4's and gpt-oss's window flags, per-layer KV heads."""


def per_kind_config(arch: str, value: Any, has_tensor: Any) -> dict[str, Any]:
    """Gemma 4's per-layer-kind layout from its GGUF keys (``value(key)``: the key below ``<arch>.``, or None;
    ``has_tensor(name)``: whether the file holds that tensor), as transformers' config names it.

    llama.cpp's gemma4 loader (src/models/gemma4.cpp L3-L19 at b9093, L4-L21 at b11434) reads the window flags per
    layer, ``attention.shared_kv_layers`` (the last ones reuse the cache of an earlier layer of their kind and keep
    none: ``hparams.has_kv``, llama-model.cpp L2008-L2016 at b9093) and ``attention.key_length_swa`` beside
    ``attention.key_length`` (the full layers' head size: ``n_embd_head_k(il)``, llama-hparams.cpp L87-L111 at b9093);
    ``attention.head_count_kv`` is one count per layer. A full layer without ``attn_v`` uses its keys as values
    (``attention_k_eq_v``; "v_proj is optional" in gemma4.cpp's tensor loading)."""
    if arch != "gemma4":
        return {}
    flags, heads = value("attention.sliding_window_pattern"), value("attention.head_count_kv")
    swa_dim, full_dim = value("attention.key_length_swa"), value("attention.key_length")
    if not isinstance(flags, tuple) or not flags or not all(isinstance(n, int) for n in (swa_dim, full_dim)):
        return {}
    first_full = next((il for il, flag in enumerate(flags) if not flag), None)
    first_swa = next((il for il, flag in enumerate(flags) if flag), None)
    config: dict[str, Any] = {"head_dim": swa_dim, "global_head_dim": full_dim}
    if isinstance(heads, tuple) and len(heads) == len(flags):
        if first_swa is not None:
            config["num_key_value_heads"] = heads[first_swa]
        if first_full is not None:
            config["num_global_key_value_heads"] = heads[first_full]
    if first_full is not None:
        config["attention_k_eq_v"] = not has_tensor(f"blk.{first_full}.attn_v.weight")
    shared = value("attention.shared_kv_layers")
    config["num_kv_shared_layers"] = shared if isinstance(shared, int) else 0
    per_layer = value("embedding_length_per_layer_input")
    config["hidden_size_per_layer_input"] = per_layer if isinstance(per_layer, int) else 0
    config["enable_moe_block"] = isinstance(value("expert_count"), int) and value("expert_count") > 1
    return config


GATED_DELTANET_ARCHS = ("qwen3next", "qwen35", "qwen35moe")
"""GGUF architectures whose ``ssm.*`` keys describe Gated DeltaNet (linear-attention) layers beside every
``full_attention_interval``-th full-attention layer (llama.cpp's convert_hf_to_gguf.py Qwen3NextModel writes
Qwen3-Next's ``linear_*`` config fields there; gguf-py constants.py ``Keys.SSM``)."""

_DELTANET_KEYS = {
    "full_attention_interval": "full_attention_interval",
    "linear_conv_kernel_dim": "ssm.conv_kernel",
    "linear_key_head_dim": "ssm.state_size",
    "linear_num_key_heads": "ssm.group_count",
    "linear_num_value_heads": "ssm.time_step_rank",
}
"""config.json name -> GGUF key below ``<arch>.`` for :data:`GATED_DELTANET_ARCHS` (``ssm.inner_size`` is the value
heads × ``linear_value_head_dim``)."""


DELTANET_INTERVAL = 4
"""llama.cpp's full-attention interval when a Gated DeltaNet GGUF names none (src/llama-model.cpp)."""


def deltanet_config(arch: str, value: Any) -> dict[str, Any]:
    """Qwen3-Next's ``linear_*`` config fields from a Gated DeltaNet GGUF's keys (``value(name)``: the key below
    ``<arch>.``, or None); empty for other architectures or when the keys are missing."""
    if arch not in GATED_DELTANET_ARCHS:
        return {}
    config = {name: value(key) for name, key in _DELTANET_KEYS.items()}
    # llama.cpp reads the interval as optional, 4 when the file has none (src/llama-model.cpp, qwen3next/qwen35:
    # "uint32_t full_attn_interval = 4; ml.get_key(LLM_KV_FULL_ATTENTION_INTERVAL, full_attn_interval, false)")
    config["full_attention_interval"] = config["full_attention_interval"] or DELTANET_INTERVAL
    inner = value("ssm.inner_size")
    heads = config["linear_num_value_heads"]
    if not isinstance(inner, int) or not isinstance(heads, int) or heads <= 0:
        return {}
    config["linear_value_head_dim"] = inner // heads
    return {name: found for name, found in config.items() if isinstance(found, int) and found > 0}


def file_type_name(number: int) -> str | None:
    """``LlamaFileType`` 15 -> ``Q4_K_M`` (gguf-py constants.py); None for a number it does not know."""
    import gguf

    try:
        name = gguf.LlamaFileType(number).name
    except ValueError:
        return None
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
"""GGUF value types with a fixed size -> struct format (gguf.md "Structure": uint8 ... float64)."""
_STRING, _ARRAY = 8, 9
_MAX_ENTRIES = 1 << 20
"""More keys or tensors than this is no model header (the largest have a few thousand)."""


class _Header:
    """A bounded reader of the header: the file object, never more than it holds."""

    def __init__(self, file: BinaryIO, size: int) -> None:
        self.file, self.size = file, size

    def take(self, count: int) -> bytes:
        self._within(count)
        return self.file.read(count)

    def skip(self, count: int) -> None:
        """Move ``count`` bytes on; a length the file cannot hold (2**63 and more included) is refused first."""
        self._within(count)
        self.file.seek(count, 1)

    def _within(self, count: int) -> None:
        # Every length is a uint64 of the file: checked against the file before any seek or read,
        # which would raise OverflowError (not a GgufError) from 2**63 on.
        if count < 0 or self.file.tell() + count > self.size:
            raise GgufError("has a header that runs past the end of the file")

    def number(self, fmt: str) -> Any:
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self) -> int:
        found = int(self.number("Q"))
        if found > _MAX_ENTRIES:
            raise GgufError("declares more entries than a GGUF header holds")
        return found

    def string(self) -> str:
        return self.take(int(self.number("Q"))).decode("utf-8", errors="replace")

    def value(self, kind: int, wanted: bool, whole: bool = False) -> Any:
        """One value; a skipped array (``wanted`` false) answers its length only, a ``whole`` one all its values."""
        if kind in _SCALARS:
            return self.number(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind != _ARRAY:
            raise GgufError("has a value of an unknown type")
        inner, length = int(self.number("I")), int(self.number("Q"))
        if inner == _STRING:  # the vocabulary: its length is what is wanted
            for _ in range(length):
                self.skip(int(self.number("Q")))
            return length
        if inner not in _SCALARS:
            raise GgufError("has an array of an unknown type")
        width = struct.calcsize(_SCALARS[inner])
        if not wanted:
            self.skip(width * length)
            return length
        values = struct.unpack(f"<{length}{_SCALARS[inner]}", self.take(width * length))
        if whole:
            return tuple(values)
        return max(values) if values else None  # a per-layer array (head counts): its largest


def _tensor_bytes(kind: int, dims: list[int]) -> int:
    """Bytes of one tensor: elements / block size x block bytes (gguf-py constants.py GGML_QUANT_SIZES)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    except (ValueError, KeyError):
        raise GgufError("has a tensor of an unknown type") from None
    elements = 1
    for dim in dims:
        elements *= dim
    return elements // block * size


def _tensor_table(reader: _Header, tensors: int) -> tuple[set[str], int]:
    """The tensors' names and the bytes their data takes, read from the tensor table."""
    names: set[str] = set()
    weight_bytes = 0
    for _ in range(tensors):
        name = reader.string()
        rank = int(reader.number("I"))
        if rank > 8:
            raise GgufError("has a tensor of more dimensions than GGML has")
        dims = [int(reader.number("Q")) for _ in range(rank)]
        weight_bytes += _tensor_bytes(int(reader.number("I")), dims)
        reader.number("Q")  # the tensor's offset in the data section
        names.add(name)
        if weight_bytes > reader.size:
            # The tensors' data lies in the file: more bytes than it holds is a crafted header.
            raise GgufError("declares tensors larger than the file")
    return names, weight_bytes


def mla_kv_widths(value: Any) -> dict[str, int]:
    """An MLA GGUF's K and V widths per layer and cell as llama.cpp caches them, under the names
    ``models.GGUF_KV_WIDTH_KEYS`` reads; empty without ``<arch>.attention.kv_lora_rank``.

    llama.cpp sizes every layer's K and V from ``n_embd_k_gqa = n_embd_head_k * n_head_kv`` and ``n_embd_v_gqa``
    (src/llama-hparams.cpp; llama-kv-cache.cpp allocates both: https://github.com/ollama/ollama/blob/v0.9.0/llama/
    llama.cpp/src/llama-kv-cache.cpp#L82-L104, https://github.com/ollama/ollama/blob/v0.24.0/llama/llama.cpp/src/
    llama-kv-cache.cpp#L112-L134), with ``n_embd_head_k/v`` the header's ``attention.key_length/value_length``. A
    DeepSeek GGUF converted before llama.cpp's MLA layout (PR #12801) stores key_length 192, value_length 128 and
    head_count_kv 128 (per-head K and V); one converted after it key_length 576 (kv_lora_rank + rope), value_length
    512 and head_count_kv 1, with the per-head sizes moved to ``attention.key_length_mla`` (llama-model.cpp
    ``LLM_KV_ATTENTION_KEY_LENGTH_MLA``, https://github.com/ollama/ollama/blob/v0.9.0/llama/llama.cpp/src/
    llama-model.cpp#L1186-L1188)."""
    if value("attention.kv_lora_rank") is None:
        return {}
    heads = value("attention.head_count_kv")
    heads = max(heads) if isinstance(heads, tuple) and heads else heads
    k, v = value("attention.key_length"), value("attention.value_length")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (heads, k, v)):
        return {}
    return {"gguf_n_embd_k_gqa": heads * k, "gguf_n_embd_v_gqa": heads * v}


def read_gguf(path: Path) -> GgufHeader:
    """The header of the GGUF file ``path``; raises OSError, ImportError or :class:`GgufError`.

    Read field by field (gguf.md, versions 2 and 3), arrays the facts do not need skipped
    by their length: gguf-py's GGUFReader builds every vocabulary entry (262,144 for Gemma 3)
    as numpy views, which took 28 s on a 250 MB file; this reads the same header in well under 1 s.
    """
    with path.open("rb") as file:
        reader = _Header(file, path.stat().st_size)
        if reader.take(4) != b"GGUF":
            raise GgufError("is not a readable GGUF file")
        if reader.number("I") not in (2, 3):
            raise GgufError("is a GGUF version servespec cannot read")
        tensors, entries = reader.count(), reader.count()
        fields: dict[str, Any] = {}
        for _ in range(entries):
            key = reader.string()
            kind = int(reader.number("I"))
            whole = key.endswith(PER_LAYER_ARRAYS)  # one value per layer (Gemma 4, gpt-oss)
            fields[key] = reader.value(kind, wanted=not key.startswith("tokenizer."), whole=whole)
        names, weight_bytes = _tensor_table(reader, tensors)
    arch = fields.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise GgufError("has no general.architecture")
    config: dict[str, Any] = {"model_type": arch}
    for name, key in _KEYS.items():
        if f"{arch}.{key}" in fields:
            found = fields[f"{arch}.{key}"]
            # a per-layer array (KV heads): its largest, unless the architecture's own reading below says otherwise
            config[name] = max(found) if isinstance(found, tuple) and found else found
    config.update(mla_kv_widths(lambda key: fields.get(f"{arch}.{key}")))
    layers = config.get("num_hidden_layers")
    config.update(swa_layout(arch, fields, layers if isinstance(layers, int) else 0))
    config.update(deltanet_config(arch, lambda key: fields.get(f"{arch}.{key}")))
    config.update(per_kind_config(arch, lambda key: fields.get(f"{arch}.{key}"), names.__contains__))
    if "vocab_size" not in config and "tokenizer.ggml.tokens" in fields:
        config["vocab_size"] = fields["tokenizer.ggml.tokens"]
    if config.get("hidden_size_per_layer_input"):
        # llama.cpp's per-layer token embedding has n_vocab rows (gemma4.cpp load_arch_tensors: per_layer_tok_embd)
        config.setdefault("vocab_size_per_layer_input", config.get("vocab_size"))
    config["tie_word_embeddings"] = "output.weight" not in names
    number = fields.get("general.file_type")
    return GgufHeader(config, weight_bytes, file_type_name(number) if isinstance(number, int) else None)
