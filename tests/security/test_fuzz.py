"""Fuzz the real CLI with mutated example specs and hostile option values: findings, never a crash.

Every mutation starts from one of ``specs/examples/*.yaml`` in a copy of the examples'
checkout, and is one of:

- a value of the spec replaced by a hostile one (type confusion, bounds, non-finite numbers,
  paths, option-shaped and control-character strings, nesting);
- an engine option of that spec's own release catalog set to a hostile value (the catalogued
  name, so the option checks and the renderers see it), or nested where engines forward blocks;
- a scalar of the YAML text replaced by a hostile YAML fragment (tags that do not fit the
  value, directives, aliases, octal and hex spellings);
- a value of the inventory the spec names, or of a host's discovered facts file, replaced by
  a hostile one (the hardware the rules and the estimator read).

Each case runs ``deploy validate`` in-process; every third also ``render`` and ``estimate``.
The exit code is 0 or 1 and no output names an internal error or a traceback: exit 2 is
servespec's "cannot complete", kept for its own bugs. The seed is fixed, so a failure names
its case and reproduces; the cases stop at a time budget so the quick tier stays quick.
"""

from __future__ import annotations

import copy
import io
import json
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec import engines
from tests.conftest import REPO, run_cli

SEED = 20261204
CASES = 800
BUDGET_S = 60.0
EXAMPLES = sorted(p for p in (REPO / "specs" / "examples").glob("*.yaml") if "kind: Deployment" in p.read_text())

HOSTILE_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    2**31,
    2**63,
    -(2**64),
    10**400,
    0.0,
    -0.5,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    " ",
    "inf",
    "-inf",
    "nan",
    "1e309",
    "0x10",
    "010000",
    "true",
    "abc",
    "../../../../etc/passwd",
    "/etc/shadow",
    "~root/.ssh/id_rsa",
    "--trust-remote-code",
    "-v",
    "$(id)",
    "{{ lookup('file', '/etc/passwd') }}",
    "a\nb",
    "\x1b]8;;http://x\x07",
    "\u202egnp.exe",
    "x" * 5000,
    [],
    [None],
    [1, "a", {"b": 2}],
    {},
    {"trust_remote_code": True},
    {"nested": {"deeper": [1, 2, {"trust-remote-code": True}]}},
)

HOSTILE_FRAGMENTS: tuple[str, ...] = (
    "!!bool abc",
    "!!int x",
    "!!float y",
    "!!timestamp z",
    "!!binary '%%%'",
    "!!str",
    "!!map {}",
    "!!seq []",
    "!!null x",
    "!!python/object:os.system x",
    "!custom value",
    "!<tag:yaml.org,2002:int> 12abc",
    ".inf",
    "-.nan",
    "0o17",
    "0x1F",
    "010000",
    "1_000",
    "0b101",
    "1e1000",
    "*nowhere",
    "&anchor",
    "[unclosed",
    "{a: }",
    "'\\x00'",
    '"\\u0000"',
    '"\\u202e"',
    "? complex\n  : key",
    "| \n  block",
    "2001-12-14t21:59:43.10-05:00",
)


def _engine_options(spec: dict[str, Any]) -> list[str]:
    """The option keys of the spec's own engine release catalog (empty when it cannot be read)."""
    engine = spec.get("engine") or {}
    try:
        release = engines.get(engine["name"]).select(str(engine.get("version", ""))).release
    except Exception:
        return []
    return sorted(release.options) if release is not None else []


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*prefix, index))


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value


def _dump(data: Any) -> str:
    buffer = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(data, buffer)
    return buffer.getvalue()


def _mutate_text(text: str, rng: random.Random) -> str:
    """Replace the value of one ``key: value`` line with a hostile YAML fragment."""
    lines = text.splitlines(keepends=True)
    candidates = [i for i, line in enumerate(lines) if ": " in line and not line.lstrip().startswith("#")]
    index = rng.choice(candidates)
    key, _, _ = lines[index].partition(": ")
    lines[index] = f"{key}: {rng.choice(HOSTILE_FRAGMENTS)}\n"
    if rng.random() < 0.15:
        lines.insert(0, rng.choice(("%YAML 1.1\n---\n", "%TAG !e! tag:example.com,2000:\n---\n")))
    if rng.random() < 0.2 and lines:
        lines[-1] = lines[-1].rstrip("\n")  # no final newline: another parser path
    return "".join(lines)


def _replace_one(data: Any, rng: random.Random) -> str:
    """Replace one value anywhere in ``data`` by a hostile one; what was done."""
    value = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    path = rng.choice(list(_paths(data)))
    _set(data, path, value)
    return f"{'.'.join(map(str, path))}={value!r:.60}"


def _mutate_inventory(spec: dict[str, Any], number: int, folder: Path, rng: random.Random) -> tuple[str, str]:
    """Point a copy of ``spec`` at a mutated copy of its inventory, or of one host's facts file."""
    inventory = YAML(typ="safe", pure=True).load((folder / "inventory" / "fleet.yaml").read_text())
    hosts = inventory["hosts"]
    with_facts = [name for name, host in hosts.items() if isinstance(host.get("facts"), str)]
    if with_facts and rng.random() < 0.4:
        host = rng.choice(with_facts)
        facts = json.loads((folder / "inventory" / hosts[host]["facts"]).read_text())
        what = f"facts of {host}: {_replace_one(facts, rng)}"
        (folder / "inventory" / "facts" / f"fuzz-{number}.json").write_text(json.dumps(facts, default=str))
        hosts[host]["facts"] = f"facts/fuzz-{number}.json"
    else:
        what = f"inventory: {_replace_one(inventory, rng)}"
    (folder / "inventory" / f"fuzz-{number}.yaml").write_text(_dump(inventory))
    data = copy.deepcopy(spec)
    data["inventory"] = f"inventory/fuzz-{number}.yaml"
    return _dump(data), what


def _mutate(spec: dict[str, Any], text: str, number: int, folder: Path, rng: random.Random) -> tuple[str, str]:
    """One mutation of ``spec`` (its file's ``text``): the new text and what was done."""
    kind = rng.choice(("value", "value", "option", "option", "text", "inventory"))
    if kind == "text":
        return _mutate_text(text, rng), "text"
    if kind == "inventory":
        return _mutate_inventory(spec, number, folder, rng)
    data = copy.deepcopy(spec)
    options = _engine_options(data)
    if kind == "option" and options:
        value = copy.deepcopy(rng.choice(HOSTILE_VALUES))
        name = rng.choice(options)
        target = data.setdefault("engine", {}).setdefault("options", {})
        if not isinstance(target, dict):
            target = data["engine"]["options"] = {}
        if rng.random() < 0.2:
            value = {name: value}  # the shape of an engine block forwarded whole (XInference, KTransformers)
            name = rng.choice(options)
        target[name] = value
        return _dump(data), f"option {name}={value!r:.60}"
    return _dump(data), f"value {_replace_one(data, rng)}"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the examples' checkout: the specs with their inventory, as a repository root."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / ".git").mkdir()
    shutil.copytree(REPO / "specs" / "examples", root / "specs")
    return root


def _problem(result: Any, case: str, command: str) -> str | None:
    """What went wrong in one run (``None`` when it gave findings or nothing): exit 2, a traceback, an escape."""
    output = result.output  # stdout and stderr together
    exception = result.exception
    if exception is not None and not isinstance(exception, SystemExit):
        return f"{case}: {command} raised {exception!r}"
    if result.exit_code not in (0, 1) or "Traceback" in output or "internal error" in output:
        return f"{case}: {command} exited {result.exit_code}: {output.strip()[-500:]}"
    return None


def test_mutated_specs_and_option_values_give_findings_not_crashes(checkout: Path) -> None:
    rng = random.Random(SEED)
    sources = [(path.name, path.read_text()) for path in EXAMPLES]
    specs = [YAML(typ="safe", pure=True).load(text) for _, text in sources]
    deadline = time.monotonic() + BUDGET_S
    ran = 0
    problems: list[str] = []
    for number in range(CASES):
        if time.monotonic() > deadline:
            break
        index = rng.randrange(len(sources))
        text, what = _mutate(specs[index], sources[index][1], number, checkout / "specs", rng)
        case = f"case {number} ({sources[index][0]}: {what})"
        path = checkout / "specs" / f"fuzz-{number}.yaml"
        path.write_text(text)
        runs = [("validate", "--format", "json", str(path))]
        if number % 3 == 0:
            runs += [("render", str(path), "-o", str(checkout / "out" / str(number))), ("estimate", str(path))]
        for args in runs:
            problem = _problem(run_cli(*args), case, args[0])
            if problem:
                problems.append(problem)
        path.unlink()
        ran += 1
    assert not problems, f"{len(problems)} crashes:\n" + "\n".join(problems[:15])
    assert ran >= 20, f"only {ran} cases ran within {BUDGET_S} s"
