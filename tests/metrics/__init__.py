"""Engine metrics: names per release, the live view, monitoring config."""

from __future__ import annotations


def served_engines() -> tuple[str, ...]:
    """The registered engines whose unit carries metric names (metrics.json) and whose releases serve metrics.

    Derived from the registry, so a new unit with its own metrics.json gets every metrics test.
    """
    from servespec import engines
    from servespec.metrics.facts import for_release, versions

    served = []
    for engine in engines.names():
        known = versions(engine)
        facts = for_release(engine, known[-1]) if known else None
        if facts is not None and facts.path is not None:
            served.append(engine)
    return tuple(served)
