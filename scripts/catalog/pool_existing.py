"""Move the inline options of existing release files into their engine's pool (idempotent).

Hand-extracted catalogs (before the builders) keep their content; only the storage changes.
A file without ``provenance`` gets one that says how it was made.
"""

from __future__ import annotations

import json
import sys

from catalog_io import POOL, UNITS, read_pool, releases_dir, write_pool, write_release


def main(engines: list[str]) -> None:
    for engine in engines or list(UNITS):
        pool = read_pool(engine)
        for path in sorted(releases_dir(engine).glob("*.json")):
            if path.name == POOL:
                continue
            data = json.loads(path.read_text())
            data.pop("engine", None)
            data.setdefault(
                "provenance",
                {
                    "method": data.get("extracted_by", "read from the release's source by hand"),
                    "commit": data.get("commit"),
                    "tool": "hand extraction (before scripts/catalog)",
                },
            )
            write_release(engine, data, pool)
        write_pool(engine, pool)


if __name__ == "__main__":
    main(sys.argv[1:])
