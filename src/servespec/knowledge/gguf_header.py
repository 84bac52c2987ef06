"""Model facts from a GGUF file's header, read with the ``gguf`` package (llama.cpp's gguf-py).

GGUF keeps the architecture as key/value pairs named ``<arch>.<key>``
(https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, "Standardized key-value pairs"):
``general.architecture``, ``<arch>.block_count``, ``<arch>.embedding_length``,
``<arch>.attention.head_count``, ``<arch>.attention.head_count_kv``, ``<arch>.context_length``,
``<arch>.feed_forward_length``, ``general.file_type`` (a ``LlamaFileType``). They are turned into
the config.json names :func:`servespec.knowledge.models.facts_from_config` reads. The reader
memory-maps the file and parses the header and tensor table only; no tensor data is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


class GgufError(ValueError):
    """A GGUF file whose header is unusable; the message quotes nothing of the file."""


@dataclass(frozen=True)
class GgufHeader:
    """What a GGUF header says, as config.json fields plus the file's own facts."""

    config: dict[str, Any]
    weight_bytes: int
    file_type: str | None
    """The llama.cpp file type (``Q4_K_M``, ``F16``), as ``model.gguf_type`` spells it."""


def _value(field: Any) -> Any:
    """A scalar field's value, or the largest element of a per-layer array (head counts may be one)."""
    import gguf

    types = list(field.types)
    if not types:
        return None
    if types[0] == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8", errors="replace")
    if types[0] == gguf.GGUFValueType.ARRAY:
        if types[-1] == gguf.GGUFValueType.STRING:
            return len(field.data)  # a string array (the vocabulary): its length is what is wanted
        values = [field.parts[index].tolist()[0] for index in field.data]
        return max(values) if values else None
    return field.parts[field.data[0]].tolist()[0]


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
}
"""config.json name -> GGUF key below ``<arch>.`` (gguf-py constants.py, ``Keys.LLM`` and ``Keys.Attention``)."""


def file_type_name(number: int) -> str | None:
    """``LlamaFileType`` 15 -> ``Q4_K_M`` (gguf-py constants.py); None for a number it does not know."""
    import gguf

    try:
        name = gguf.LlamaFileType(number).name
    except ValueError:
        return None
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


def read_gguf(path: Path) -> GgufHeader:
    """The header of the GGUF file ``path``; raises OSError, ImportError or :class:`GgufError`."""
    import gguf

    try:
        reader = gguf.GGUFReader(path, "r")
    except OSError:
        raise
    except Exception:  # gguf-py raises ValueError, struct.error, IndexError... on a malformed header
        raise GgufError("is not a readable GGUF file") from None
    fields = reader.fields
    arch_field = fields.get("general.architecture")
    arch = _value(arch_field) if arch_field is not None else None
    if not isinstance(arch, str) or not arch:
        raise GgufError("has no general.architecture")
    config: dict[str, Any] = {"model_type": arch}
    for name, key in _KEYS.items():
        found = fields.get(f"{arch}.{key}")
        if found is not None:
            config[name] = _value(found)
    if "vocab_size" not in config and "tokenizer.ggml.tokens" in fields:
        config["vocab_size"] = _value(fields["tokenizer.ggml.tokens"])
    config["tie_word_embeddings"] = not any(t.name == "output.weight" for t in reader.tensors)
    kind = fields.get("general.file_type")
    number = _value(kind) if kind is not None else None
    weight_bytes = sum(int(tensor.n_bytes) for tensor in reader.tensors)
    return GgufHeader(config, weight_bytes, file_type_name(int(number)) if isinstance(number, int) else None)
