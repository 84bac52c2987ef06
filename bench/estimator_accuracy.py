"""Print the estimator's error against every recorded vLLM start-up log.

.venv/bin/python bench/estimator_accuracy.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.vllm_logs import by_range, compare_all, median_abs_error


def main() -> None:
    rows = compare_all()
    print(f"{'log':48} {'logged':>12} {'estimated':>12} {'error':>8}")
    for row in rows:
        if row.skipped:
            print(f"{row.name:48} {row.observed or '-':>12} {'skipped':>12}  {row.skipped}")
        else:
            print(f"{row.name:48} {row.observed:>12,} {row.predicted:>12,} {row.error:>+8.1%}")
    used = [row for row in rows if not row.skipped]
    print(f"\n{len(used)} of {len(rows)} logs compared; median absolute error {median_abs_error(rows):.1%}")
    print(f"\n{'vLLM version range':52} {'logs':>5} {'median |error|':>15}")
    for label, members in by_range(rows):
        error = f"{median_abs_error(members):.1%}" if members else "no logs"
        print(f"{label:52} {len(members):>5} {error:>15}")


if __name__ == "__main__":
    main()
