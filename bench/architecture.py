"""The architecture figures issue 21's closing note asks for, measured on this checkout.

    python bench/architecture.py [SPEC...]     # default: every spec under specs/examples

Prints:
- the largest import cycle in ``src/servespec`` (lazy and typing-only imports counted, the
  graph of tests/test_structure.py);
- the five largest modules by lines;
- the walk from ``plan_fleet`` over the given specs: the package files entered, the calls that
  cross from one file into another, the returns, the climbs (a call from a module of a lower
  pipeline stage into a higher one: spec < knowledge < engines < rules < render < plan <
  rollout/metrics/discover < cli) and the calls into ``knowledge/resolve.py``.

Reading live host state needs hosts; the walk replaces ``state.gather`` by "no host answered"
(a stand-in for the SSH read only: every servespec function after it runs as ``deploy plan``
runs it), so the figures count servespec's own code, not Ansible's.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "servespec"
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

STAGES = {
    "spec": 0,
    "knowledge": 1,
    "engines": 2,
    "rules": 3,
    "render": 4,
    "plan": 5,
    "rollout": 6,
    "metrics": 6,
    "discover": 6,
    "cli.py": 7,
}


def stage(path: Path) -> int:
    """The pipeline stage of a package file; top-level leaf modules (text, redact, ...) are the floor."""
    part = path.relative_to(SRC).parts[0]
    return STAGES.get(part, 0)


def largest_cycle() -> list[str]:
    from tests.test_structure import cycles

    found = cycles()
    return sorted(max(found, key=len)) if found else []


def largest_modules(n: int = 5) -> list[tuple[int, str]]:
    sizes = [(len(p.read_text().splitlines()), str(p.relative_to(SRC.parent))) for p in SRC.rglob("*.py")]
    return sorted(sizes, reverse=True)[:n]


def walk(specs: list[Path]) -> dict[str, Any]:
    import servespec.rollout.state as state
    from servespec import rollout
    from servespec.spec.fleet import load_fleet

    fleet = load_fleet(specs)
    state.gather = lambda deployment, **_: ([], {})  # stand-in for the SSH read (see the docstring)

    files: set[Path] = set()
    calls = returns = climbs = 0
    into: Counter[str] = Counter()
    stack: list[Path | None] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        nonlocal calls, returns, climbs
        if event not in ("call", "return"):
            return
        path = Path(frame.f_code.co_filename)
        mine = path if path.is_relative_to(SRC) else None
        if event == "call":
            caller = stack[-1] if stack else None
            stack.append(mine)
            if mine is not None:
                files.add(mine)
                if caller is not None and caller != mine:
                    calls += 1
                    into[str(mine.relative_to(SRC))] += 1
                    climbs += stage(mine) > stage(caller)
        elif stack:
            here = stack.pop()
            caller = stack[-1] if stack else None
            returns += here is not None and caller is not None and caller != here

    sys.setprofile(profile)
    try:
        rollout.plan_fleet(fleet)
    finally:
        sys.setprofile(None)
    return {
        "files entered": len(files),
        "calls across files": calls,
        "returns across files": returns,
        "climbs": climbs,
        "calls into knowledge/resolve.py": into["knowledge/resolve.py"],
    }


def main(argv: list[str]) -> None:
    specs = [Path(a) for a in argv] or sorted((ROOT / "specs" / "examples").glob("*.yaml"))
    cycle = largest_cycle()
    print(f"largest import cycle: {len(cycle)} modules" + (f" ({', '.join(cycle)})" if cycle else ""))
    print("five largest modules:")
    for lines, name in largest_modules():
        print(f"  {lines:5d}  {name}")
    print(f"walk from plan_fleet over {len(specs)} spec(s):")
    for key, value in walk(specs).items():
        print(f"  {key}: {value}")


if __name__ == "__main__":
    main(sys.argv[1:])
