"""aiter's custom all-reduce buffers per aiter release, read from each tag of ROCm/aiter.

SGLang on ROCm builds ``aiter.dist.device_communicators.custom_all_reduce.CustomAllreduce`` for its
tensor-parallel group during its distributed set-up (``dispatch_custom_allreduce``), so the buffers this
class allocates in ``__init__`` are taken before SGLang measures the memory it takes fractions of. The
sizes are aiter's, not SGLang's: SGLang passes no ``max_size`` (its releases 0.5.5.post3 on), so
aiter's default applies. Per tag this script reads:

* ``default_max_size``: the ``max_size=`` default of ``CustomAllreduce.__init__`` (bytes);
* ``meta_multiple``: the uncached meta/signal buffer is ``meta_size() + meta_multiple * max_size``;
* ``full_buffers``: how many more ``max_size`` buffers it allocates (input, output);
* ``rank_data``: the rank-data buffer, ``8 MiB`` or ``max_size`` bytes;
* ``parameters``: ``__init__``'s parameters (what a caller may pass), ``world_sizes``: the group sizes it serves.

None of these depend on the group's size (world size 2-8). Writes
``src/servespec/engines/sglang/aiter_all_reduce.json``. Usage:
``python scripts/catalog/aiter_all_reduce.py GIT_DIR`` where GIT_DIR is a clone of
https://github.com/ROCm/aiter with its tags (the ``fetch`` tool's mirror works).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

PATH = "aiter/dist/device_communicators/custom_all_reduce.py"
URL = "https://github.com/ROCm/aiter/blob"
OUT = Path(__file__).resolve().parents[2] / "src/servespec/engines/sglang/aiter_all_reduce.json"
TAG = re.compile(r"v\d+\.\d+\.\d+(?:\.post\d+)?")


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True).stdout


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _product(expression: str) -> int:
    value = 1
    for factor in re.findall(r"\d+", expression):
        value *= int(factor)
    return value


def layout(tag: str, text: str) -> dict[str, Any] | None:
    """The buffers one tag's ``CustomAllreduce.__init__`` allocates (None when it has no such class)."""
    init = re.search(r"class CustomAllreduce\b.*?def __init__\(", text, re.S)
    if init is None:
        return None
    default = re.compile(r"max_size\s*=\s*((?:\d+|\s|\*)+),").search(text, init.end())
    if default is None:
        raise ValueError(f"{tag}: CustomAllreduce.__init__ has no max_size default")
    if re.search(r"meta_size\(\) \+ max_size \* 2", text):
        meta_multiple = 2
    elif re.search(r"allocate_meta_buffer\(ops\.meta_size\(\) \+ max_size\)", text):
        meta_multiple = 1
    else:
        raise ValueError(f"{tag}: the meta buffer's size matches no known shape")
    full = len(re.findall(r"self\.(?:input_buffer|output_buffer|buffer) = torch\.empty\(\s*max_size,", text))
    full += len(re.findall(r'_pool\.create\(\s*"(?:input|output)",\s*max_size\b', text))
    signature = text[init.end() : text.find(") -> None", init.end())]
    sizes = re.search(r"_SUPPORTED_WORLD_SIZES(?::[^=]+)? = \[([\d, ]+)\]", text)
    if sizes is None:
        raise ValueError(f"{tag}: _SUPPORTED_WORLD_SIZES not found")
    rank = re.search(r"self\.rank_data = torch\.empty\(\s*(8 \* 1024 \* 1024|max_size),", text)
    if rank is None or full == 0:
        raise ValueError(f"{tag}: rank_data or the registered buffers not found")
    return {
        "default_max_size": _product(default.group(1)),
        "meta_multiple": meta_multiple,
        "full_buffers": full,
        "rank_data": 8 * 1024 * 1024 if rank.group(1).startswith("8") else None,
        "parameters": re.findall(r"^\s*(\w+)\s*[:=]", signature, re.M),
        "world_sizes": [int(n) for n in sizes.group(1).split(",")],
        "source": f"{URL}/{tag}/{PATH}#L{_line(text, default.start())}",
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    git_dir = argv[0]
    tags = [t for t in _git(git_dir, "tag").split() if TAG.fullmatch(t)]
    rows = []
    for tag in tags:
        try:
            text = _git(git_dir, "show", f"{tag}:{PATH}")
        except subprocess.CalledProcessError:
            continue  # no custom all-reduce in this tag
        found = layout(tag, text)
        if found is None:
            continue
        date = _git(git_dir, "log", "-1", "--format=%cI", tag).strip()
        rows.append({"tag": tag, "date": date, **found})
    rows.sort(key=lambda row: row["date"])
    OUT.write_text(json.dumps({"releases": rows}, indent=1) + "\n")
    print(OUT, len(rows), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
