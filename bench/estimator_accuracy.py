"""Print the estimator's error against every recorded vLLM start-up log, and the error band per model class.

.venv/bin/python bench/estimator_accuracy.py                # the tables
.venv/bin/python bench/estimator_accuracy.py --write-band   # also rewrite knowledge/data/estimator_band.yaml

The band per class is what MEM001/MEM002 use (knowledge/error_band.py): a shortfall within it is
a "may not fit" warning, only a larger one an error. tests/test_estimator_logs.py fails when the
data file no longer matches the logs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.vllm_logs import BAND_FILE, band_text, bands, by_range, compare_all, median_abs_error


def main() -> None:
    rows = compare_all()
    print(f"{'log':48} {'class':>8} {'logged':>12} {'estimated':>12} {'error':>8} {'GiB':>7}")
    for row in rows:
        if row.skipped:
            print(f"{row.name:48} {'':>8} {row.observed or '-':>12} {'skipped':>12}  {row.skipped}")
        else:
            print(
                f"{row.name:48} {row.model_class:>8} {row.observed:>12,} {row.predicted:>12,} "
                f"{row.error:>+8.1%} {row.error_gib:>+7.2f}"
            )
    used = [row for row in rows if not row.skipped]
    print(f"\n{len(used)} of {len(rows)} logs compared; median absolute error {median_abs_error(rows):.1%}")
    print(f"\n{'vLLM version range':52} {'logs':>5} {'median |error|':>15}")
    for label, members in by_range(rows):
        error = f"{median_abs_error(members):.1%}" if members else "no logs"
        print(f"{label:52} {len(members):>5} {error:>15}")
    band = bands(rows)
    print(f"\nError band per model class (MEM001/MEM002 errors need a larger shortfall): {band['measured']}")
    print(f"{'class':10} {'logs':>5} {'band GiB':>9}  worst log")
    for name, entry in band["classes"].items():
        gib = f"{entry['gib']:.2f}" if entry["logs"] else "-"
        print(f"{name:10} {entry['logs']:>5} {gib:>9}  {entry['worst'] or '(none: the widest band is used)'}")
    print(f"classes with fewer than {band['min_logs']} logs use the widest band of any class")
    if "--write-band" in sys.argv[1:]:
        BAND_FILE.write_text(band_text(band))
        print(f"\nwrote {BAND_FILE}")


if __name__ == "__main__":
    main()
