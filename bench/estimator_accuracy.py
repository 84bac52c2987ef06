"""Print the estimator's error against every recorded vLLM start-up log, and the error band per model class.

.venv/bin/python bench/estimator_accuracy.py                # the tables
.venv/bin/python bench/estimator_accuracy.py --write-band   # also rewrite knowledge/data/estimator_band.yaml

The band per class is what MEM001/MEM002 use (knowledge/error_band.py): a shortfall within it is
a "may not fit" warning, only a larger one an error. tests/test_estimator_logs.py fails when the
data file no longer matches the logs.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.vllm_logs import (
    BAND_FILE,
    KV_MIB,
    MIXED_VERDICT,
    OLLAMA_ENGINE_KV,
    SCORED_FIGURE,
    VERDICT_OVER,
    Comparison,
    band_text,
    bands,
    by_range,
    class_table,
    compare_all,
    compare_corpus,
    kv_memory_pairs,
    median_abs_error,
    ollama_figure_pairs,
    p90_abs_error,
)


def _band_of(band: dict[str, object], name: str) -> float:
    """The band the MEM rules use for one model class (knowledge/error_band.py: a class with fewer than
    ``min_logs`` logs takes the widest band of any class)."""
    classes = band["classes"]
    assert isinstance(classes, dict)
    widest = max((float(c["gib"]) for c in classes.values() if c["logs"]), default=0.0)
    entry = classes.get(name) or {"gib": 0.0, "logs": 0}
    own = float(entry["gib"]) if entry["logs"] else 0.0
    return own if int(entry["logs"]) >= int(str(band["min_logs"])) else max(own, widest)


def print_class_table(band: dict[str, object]) -> None:
    """Issue 23's table over the whole corpus (every engine), then the unanswered logs by reason."""
    rows = compare_corpus()
    print(f"\nWhole corpus: {len(rows)} start-up logs ({sum(1 for r in rows if not r.started)} failed starts)")
    head = f"{'engine':10} {'version range':50} {'attention':9} {'n':>4} {'failed':>6} {'caught':>6} {'answered':>8}"
    print(f"{head} {'median':>7} {'p90':>7}  band GiB (model class)")
    for entry in class_table(rows):
        median = f"{entry['median']:.1%}" if entry["median"] is not None else "-"
        p90 = f"{entry['p90']:.1%}" if entry["p90"] is not None else "-"
        used = ", ".join(f"{name} {_band_of(band, name):.2f}" for name in entry["classes"]) or "-"
        print(
            f"{entry['engine']:10} {entry['versions']:50} {entry['attention']:9} {entry['n']:>4} "
            f"{entry['failed_starts']:>6} {entry['failed_predicted']:>6} {entry['answered']:>8} "
            f"{median:>7} {p90:>7}  {used}"
        )
    answered = [row for row in rows if not row.skipped]
    started = [row for row in rows if row.started]
    answered_started = [row for row in answered if row.started]
    print(
        f"overall: {len(answered)} of {len(rows)} answered ({len(answered_started)} of {len(started)} started logs); "
        f"median {median_abs_error(answered):.1%}, p90 {_p90(answered):.1%}"
    )
    print_failed_starts(rows)
    print("error = (estimated - logged) / logged, of the figure each engine's logs are scored on:")
    for engine in sorted({row.engine for row in rows}):
        print(f"  {engine:10} {SCORED_FIGURE.get(engine, 'not scored')}")
    substitutes = [row.name for row in rows if row.figure == KV_MIB and not row.skipped]
    if substitutes:
        print(f"  {'vllm':10} {SCORED_FIGURE[KV_MIB]}: {', '.join(substitutes)}")
        gaps = sorted((gap, name) for name, gap in kv_memory_pairs())
        if gaps:
            print(
                f"  {'':10} on the {len(gaps)} such vLLM logs that give both, the memory error and the token error "
                f"differ by a median {statistics.median(g for g, _ in gaps):.2%} (largest {gaps[-1][0]:.2%}, "
                f"{gaps[-1][1]})"
            )
    engine_kv = [row.name for row in rows if row.figure == OLLAMA_ENGINE_KV and not row.skipped]
    if engine_kv:
        print(f"  {'ollama':10} {SCORED_FIGURE[OLLAMA_ENGINE_KV]}: {', '.join(engine_kv)}")
        pairs = ollama_figure_pairs()
        if pairs:
            worst = max(pairs, key=lambda pair: abs(pair[1] / pair[2] - 1))
            outside = [name for name, engine, runner, precision in pairs if abs(engine - runner) > precision]
            print(
                f"  {'':10} on the {len(pairs)} Ollama logs that print both, the 'kv cache' lines differ from the "
                f"llama.cpp runner's KV size by at most {abs(worst[1] / worst[2] - 1):.2%} ({worst[0]}); "
                + (
                    f"beyond their one printed decimal: {', '.join(outside)}"
                    if outside
                    else "every one within its one printed decimal"
                )
            )
    print("* in a version range: a release the log does not state, assumed from its date (engine_version_assumed)")
    print_assumed(rows)
    reasons: dict[str, list[str]] = {}
    for row in rows:
        if row.skipped:
            reasons.setdefault(row.skipped, []).append(row.name)
    print("\nUnanswered logs by reason:")
    for why, names in sorted(reasons.items(), key=lambda item: -len(item[1])):
        print(f"  {len(names):>3}  {why}: {', '.join(names)}")


def print_failed_starts(rows: list[Comparison]) -> None:
    """The failed starts: how many the estimate judges, catches and misses, over every candidate the log leaves
    open; those whose cause is not memory (a software error after the KV cache was sized), scored on their KV figure
    but not judged on fitting; and MEM008's warnings on them and on the logs that started."""
    failed = [row for row in rows if not row.started]
    judged = [row for row in failed if row.fits is not None and not row.failure_cause]
    caught = [row.name for row in judged if row.fits is False]
    missed = [row.name for row in judged if row.fits is True]
    print(
        f"failed starts: {len(failed)}; estimated {len(judged)}; predicted not to fit (MEM001/MEM002, 'caught'): "
        f"{len(caught)}; predicted to start: {len(missed)} ({', '.join(missed) or '-'})"
    )
    other = [f"{row.name} ({row.failure_cause})" for row in failed if row.failure_cause]
    if other:
        print(f"  not memory failures (scored on their KV figure, not judged on fitting): {', '.join(other)}")
    over = [row for row in judged if row.skipped == VERDICT_OVER]
    print(
        f"  of those estimated, judged on the verdict over every candidate card/release/setting the log leaves open "
        f"(all agree): {len(over)} ({', '.join(f'{row.name} {VERDICTS[bool(row.fits)]}' for row in over) or '-'})"
    )
    mixed = [row for row in failed if row.skipped.startswith(MIXED_VERDICT)]
    print(f"  not estimated because the candidates' verdicts disagree: {len(mixed)}")
    for row in mixed:
        print(f"    {row.name}: {row.skipped[len(MIXED_VERDICT) + 2 :]}")
    warned = [row.name for row in judged if row.fits and row.warned_after_kv]
    started_warned = [row.name for row in rows if row.started and row.warned_after_kv]
    print(
        f"  of those predicted to start, warned 'may not fit' after the KV cache (MEM008): {len(warned)} "
        f"({', '.join(warned) or '-'}); started logs with that warning: {len(started_warned)} "
        f"({', '.join(started_warned) or '-'})"
    )


VERDICTS = {True: "predicted to start", False: "caught"}


def print_assumed(rows: list[Comparison]) -> None:
    """The logs whose figure rests on a labelled stand-in (an unnamed or uncatalogued GPU) or an assumed release."""
    marked = [row for row in rows if row.assumed]
    print(f"\nStand-ins and assumptions ({len(marked)} logs; answered ones are counted above):")
    for row in marked:
        figure = row.skipped if row.skipped else f"{row.error:+.1%}"
        print(f"  {row.name}: {figure}")
        for label in row.assumed:
            print(f"      {label}")


def _p90(rows: list[Comparison]) -> float:
    return p90_abs_error(rows)


def main() -> None:
    rows = compare_all()
    print(f"{'log':48} {'class':>8} {'logged':>12} {'estimated':>12} {'error':>8} {'GiB':>7}")
    for row in rows:
        verdict = (
            ""
            if row.started or row.fits is None
            else f"  [failed start: {row.failure_cause}, not memory]"
            if row.failure_cause
            else f"  [failed start; {'fits' if row.fits else 'does not fit'}]"
        )
        verdict += f"  [{'; '.join(row.assumed)}]" if row.assumed else ""
        if row.skipped:
            print(f"{row.name:48} {'':>8} {row.observed or '-':>12} {'skipped':>12}  {row.skipped}{verdict}")
        else:
            unit = " MiB" if row.figure == KV_MIB else ""  # scored on the KV memory: no token count logged
            print(
                f"{row.name:48} {row.model_class:>8} {row.observed:>12,} {row.predicted:>12,} "
                f"{row.error:>+8.1%} {row.error_gib:>+7.2f}{verdict}{unit}"
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
    print_class_table(band)
    if "--write-band" in sys.argv[1:]:
        BAND_FILE.write_text(band_text(band))
        print(f"\nwrote {BAND_FILE}")


if __name__ == "__main__":
    main()
