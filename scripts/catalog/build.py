"""``python scripts/catalog/build.py ENGINE [VERSION...]``: run ``scripts/catalog/<engine>.py``.

ENGINE is an engine name (``tgi``, ``tensorrt-llm``, ``llama.cpp``) or its script's name.
An engine's builder rewrites its own facts only; ``context_default`` and ``server_slots`` come
from a second pass, so after rebuilding releases run ``build.py context_facts ENGINE`` too
(rebuilding tgi 3.0.0 and ollama 0.20.0 that way rewrites the same bytes).
``scripts/catalog/refresh`` does both for every release newer than the catalogs, for every engine
(``--dry-run`` lists them). Where GitHub cannot be reached, ``SERVESPEC_GIT_MIRRORS`` names a folder
of existing git snapshots the git-based builders read instead (``gitsrc.mirror``).
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    name = argv[0].replace("-", "_").replace(".", "_")
    script = HERE / f"{name}.py"
    if not script.is_file():
        raise SystemExit(f"no extractor {script.name} in scripts/catalog")
    sys.path.insert(0, str(HERE))
    sys.argv = [str(script), *argv[1:]]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
