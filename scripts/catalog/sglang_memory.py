"""SGLang's default ``mem_fraction_static`` per release, read from each release's own source.

    python scripts/catalog/sglang_memory.py            # every catalogued SGLang release
    python scripts/catalog/sglang_memory.py 0.4.7 0.5.23

When a spec sets no ``mem_fraction_static``, SGLang picks one in ``ServerArgs`` (``srt/server_args.py``;
``srt/arg_groups/memory_hook.py`` from 0.5.19), and the way it does so changed five times between
0.4.0 and 0.5.3. For each catalogued release this reads that code from the release's artefact (the
same sdist or wheel scripts/catalog/sglang.py reads, cached in ~/.cache/servespec/catalog-src/sglang/),
recognises which rule it is by its statements, reads the rule's constants from the code, and writes
``facts.mem_fraction_default`` into the release's catalog (other facts untouched):

- ``tp_table``: a fraction per tensor-parallel size (``tp_size >= 16`` ... else);
- ``tp_table_large_gpu``: the same below 80 GiB; above it ``(gpu_mem - 13 GiB) / gpu_mem``;
- ``parallel_table_large_gpu``: a table by ``tp_size * pp_size`` up to 80 GiB (else 0.88), raised above
  96 GiB to ``min(f + 48 GiB * (1 - f) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem)``; ``b200_fraction``
  where the release pins GPUs over 180 GB to a fixed value;
- ``reserved_by_gpu``: ``(gpu_mem - reserved) / gpu_mem`` with ``reserved`` from a table by GPU size;
- ``reserved_formula``: ``reserved = 512 + max(chunked_prefill, 2048) * 1.5 + cuda_graph_max_bs * 2 +
  tp * pp / 8 GiB`` (at least 10 GiB above 60 GiB), with the prefill chunk and ``cuda_graph_max_bs``
  for 20-35 GiB GPUs as the release sets them (they changed: 2048 and 16/24 tokens, then 4096 and 48).

A release whose code matches none of these stops the build: a new rule is read, not assumed.
A development tool: the CLI never imports it.
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_io import _dump, releases_dir
from sglang import REPO_URL, fetch, pypi_files

FILES = ("sglang/srt/arg_groups/memory_hook.py", "sglang/srt/server_args.py")
_START = re.compile(r"if (self|cfg|server_args|args)\.mem_fraction_static is None")
_NUMBER = r"(\d+(?:\.\d+)?)"


class UnknownRuleError(Exception):
    """The release picks its default in a way this reader does not know."""


def sources(artifact: Path) -> dict[str, str]:
    """The files of :data:`FILES` in ``artifact`` (sdist or wheel), by their path below ``sglang/``'s parent."""
    out: dict[str, str] = {}
    if artifact.name.endswith(".tar.gz"):
        with tarfile.open(artifact) as archive:
            for member in archive.getmembers():
                name = next((f for f in FILES if member.name.endswith("/" + f) or member.name == f), None)
                handle = archive.extractfile(member) if name and member.isfile() else None
                if name and handle is not None:
                    out[name] = handle.read().decode("utf-8")
    else:
        with zipfile.ZipFile(artifact) as archive:
            for name in archive.namelist():
                if name in FILES:
                    out[name] = archive.read(name).decode("utf-8")
    return out


def _block(text: str) -> tuple[int, str] | None:
    """(line, text) of the code that runs when ``mem_fraction_static`` is unset (the next 60 lines)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if _START.search(line):
            return index + 1, "\n".join(lines[index : index + 60])
    return None


def _table(block: str, variable: str) -> list[list[float]]:
    pairs = re.findall(rf"{variable} >= (\d+):\s*\n\s*self\.mem_fraction_static = {_NUMBER}", block)
    if not pairs:
        raise UnknownRuleError(f"no '{variable} >= N' table")
    return [[int(n), float(f)] for n, f in pairs]


def _else_fraction(block: str) -> float:
    found = re.search(rf"else:\s*\n\s*self\.mem_fraction_static = {_NUMBER}", block)
    if not found:
        raise UnknownRuleError("no else fraction")
    return float(found.group(1))


def _reserved_by_gpu(block: str) -> list[list[float | None]]:
    """[[below_gib or None, base_gib, parallel divisor or 0]] in order."""
    rows: list[list[float | None]] = []
    for below, base, divisor, fixed in re.findall(
        rf"(?:if|elif) gpu_mem < (\d+) \* 1024:.*?reserved_mem = (?:\({_NUMBER} \+ parallel_size / (\d+)\)|{_NUMBER})"
        r" \* 1024",
        block,
        re.S,
    ):
        rows.append([float(below), float(base or fixed), float(divisor or 0)])
    last = re.search(rf"else:\s*\n(?:\s*#.*\n)*\s*reserved_mem = {_NUMBER} \* 1024", block)
    if not rows or not last:
        raise UnknownRuleError("no reserved_mem table")
    rows.append([None, float(last.group(1)), 0.0])
    return rows


def _small_gpu(texts: dict[str, str]) -> dict[str, Any]:
    """What the release sets on 20-35 GiB GPUs: ``chunked_prefill_size`` and ``cuda_graph_max_bs`` [tp < 4, tp >= 4]."""
    for text in texts.values():
        branch = re.search(r"elif gpu_mem < 35 \* 1024:(.*?)\n\s*elif gpu_mem", text, re.S)
        if not branch:
            continue
        chunk = re.search(r"chunked_prefill_size\s*=\s*(\d+)", branch.group(1))
        graphs = re.search(
            r"tp_size < 4:\s*\n\s*\S*max_bs = (\d+)\s*\n\s*else:\s*\n\s*\S*max_bs = (\d+)", branch.group(1)
        )
        if chunk and graphs:
            return {
                "small_gpu_chunk": int(chunk.group(1)),
                "graph_bs_small_gpu": [int(graphs.group(1)), int(graphs.group(2))],
            }
    raise UnknownRuleError("no chunked_prefill_size and cuda_graph_max_bs for 20-35 GiB GPUs")


def fact(version: str, texts: dict[str, str]) -> dict[str, Any]:
    """``facts.mem_fraction_default`` of one release, from its source files."""
    for name in FILES:
        found = _block(texts[name]) if name in texts else None
        if found is None:
            continue
        line, block = found
        source = f"{REPO_URL}/v{version}/python/{name}#L{line}"
        if "reserved_mem = 512" in block or ("reserve_for_graph_mb" in block and "activation_tokens * 1.5" in block):
            return {"variant": "reserved_formula", **_small_gpu(texts), "source": source}
        if "2.8 + parallel_size / 10" in block:
            return {"variant": "reserved_by_gpu", "reserved": _reserved_by_gpu(block), "source": source}
        if "parallel_size >= 16" in block and "1024 * 18" in block:
            pinned = rf"gpu_mem > 180 \* 1000 and is_cuda\(\):\s*\n\s*self\.mem_fraction_static = {_NUMBER}"
            b200 = re.search(pinned, block)
            out: dict[str, Any] = {
                "variant": "parallel_table_large_gpu",
                "table": _table(block, "parallel_size"),
                "else_fraction": 0.88 if "self.mem_fraction_static = 0.88" in block else _else_fraction(block),
                "source": source,
            }
            if b200:
                out["b200_fraction"] = float(b200.group(1))
            return out
        if "tp_size >= 16" in block and "gpu_mem - 1024 * 13" in block:
            return {"variant": "tp_table_large_gpu", "table": _table(block, "self.tp_size"),
                    "else_fraction": _else_fraction(block), "source": source}  # fmt: skip
        if "tp_size >= 16" in block:
            return {"variant": "tp_table", "table": _table(block, "self.tp_size"),
                    "else_fraction": _else_fraction(block), "source": source}  # fmt: skip
        raise UnknownRuleError(f"{version}: {name}#L{line} sets mem_fraction_static in a way not read yet")
    raise UnknownRuleError(f"{version}: no default for mem_fraction_static found in {', '.join(FILES)}")


def main(argv: list[str]) -> int:
    import json

    files = pypi_files()
    folder = releases_dir("sglang")
    wanted = argv or sorted(p.stem for p in folder.glob("*.json") if p.stem[0].isdigit())
    for version in wanted:
        path = folder / f"{version}.json"
        release = json.loads(path.read_text())
        release.setdefault("facts", {})["mem_fraction_default"] = fact(version, sources(fetch(files[version])))
        path.write_text(_dump(release))
        print(f"{version}: {release['facts']['mem_fraction_default']['variant']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
