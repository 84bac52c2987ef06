"""The C parser (ruamel.yaml.clib) composes what the pure parser composes, or leaves the file to it.

spec.source composes a file with libyaml first, for speed, and falls back to the pure-Python
parser on any error of libyaml's, on YAML 1.1-only line breaks, and on nesting too deep for the
C composer. Every YAML file of the repository (examples, recipes, goldens, rule cases, the bad
corpus) and the YAML texts inside the rule cases must give the same documents, source maps and
findings both ways.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.spec import source
from tests.conftest import REPO

FILES = sorted(
    {
        *REPO.glob("specs/**/*.yaml"),
        *REPO.glob("tests/data/**/*.yaml"),
        *REPO.glob("tests/golden/**/*.yaml"),
        *REPO.glob("tests/rules/cases/**/*.yaml"),
    }
)


def _texts() -> list[tuple[str, str]]:
    out = [(str(path.relative_to(REPO)), path.read_text(encoding="utf-8", errors="replace")) for path in FILES]
    for path in sorted(REPO.glob("tests/rules/cases/*.yaml")):
        for case in YAML(typ="safe").load(path.read_text()).get("cases", []):
            for name, text in (case.get("files") or {}).items():
                out.append((f"{path.name}:{case['name']}:{name}", text))
    return out


TEXTS = _texts()


def _composed(text: str, *, pure: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What load_text makes of ``text``: as it runs (libyaml where _c_parsable allows), or forced pure."""
    with monkeypatch.context() as patch:
        if pure:
            patch.setattr(source, "_c_parsable", lambda _text: False)
        documents, findings = source.load_text(text, "f.yaml", Path("f.yaml"))
    return (
        [(d.data, d.source_map.start, d.source_map.keys, d.source_map.values, d.end_line) for d in documents],
        [(f.rule, f.line, f.column, f.message) for f in findings],
    )


def test_the_c_parser_is_installed() -> None:
    assert source._HAVE_C, "ruamel.yaml.clib is a dependency: without it every file takes the pure parser"
    assert len(TEXTS) > 300
    fast = [name for name, text in TEXTS if source._c_parsable(text)]
    assert len(fast) > 0.8 * len(TEXTS)  # the fast path is the common one


@pytest.mark.parametrize(("name", "text"), TEXTS, ids=[name for name, _ in TEXTS])
def test_both_parsers_read_every_file_alike(name: str, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _composed(text, pure=False, monkeypatch=monkeypatch)
    pure = _composed(text, pure=True, monkeypatch=monkeypatch)
    if fast != pure:
        # Only where the pure composer ran out of Python stack (no position) may they differ: libyaml
        # composed it, and the walk refused the 33rd level where it starts.
        assert pure[1] == [("SS001", 1, 1, "nesting deeper than 32 levels")], (fast, pure)
        assert [(rule, message) for rule, _, _, message in fast[1]] == [("SS001", "nesting deeper than 32 levels")]


@pytest.mark.parametrize(
    "text",
    [
        "model: {source: qwen2.5:7b}\n",  # YAML 1.2 only: ':' inside a flow plain scalar (libyaml refuses it)
        "engine: {name: openllm, image: registry.local/openllm:0.6.30}\n" + "# a comment\n" * 200,
        "a: 1\x85b: 2\n",  # NEL is a line break in YAML 1.1 only
        "a: 1\nb: [1, 2\n",  # an error both ways: the pure parser's message and position
        "%YAML 1.2\n---\na: 1\n",
        "a: 1\r\nb: [1,\r\n  2]\r\n",
        "a: 1\rb: 2\r",
        "\ufeffa: 1\nb: x\n",
        "a:\n  - 1\n  - 2",  # no line break at the end: libyaml would end the document a line later
    ],
)
def test_what_libyaml_reads_otherwise_is_decided_by_the_pure_parser(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _composed(text, pure=False, monkeypatch=monkeypatch) == _composed(text, pure=True, monkeypatch=monkeypatch)


@pytest.mark.parametrize("depth", [999, 200_000])
def test_deep_nesting_never_reaches_the_c_composer(depth: int) -> None:
    """libyaml's composer recurses unchecked: 100,000 levels crash the process (SIGSEGV), not raise."""
    text = "a: " + "[" * depth + "]" * depth + "\n"
    assert source._c_parsable(text) is (depth < 10)
    code = (
        "import sys; from pathlib import Path; from servespec.spec.source import load_text;"
        "d, f = load_text(sys.stdin.read(), 'f.yaml', Path('f.yaml')); print(f[0].rule if f else 'ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == "SS001"


def test_block_nesting_counts_against_the_bound() -> None:
    deep = "".join(" " * i + f"k{i}:\n" for i in range(600)) + " " * 600 + "v: 1\n"
    assert not source._c_parsable(deep)
    assert source._c_parsable("a:\n  b:\n    c: 1\n" * 200)


DIRECTIVES = [
    "%YAML 1.1\n---\nport: 010000\n",  # 1.1: octal 4096; 1.2 (libyaml ignores the directive): 10000
    "%YAML 1.1\n---\non: yes\n",  # 1.1 booleans
    "%TAG !! tag:example.com,2000:\n---\nport: !!int 1\n",
    "%TAG !x! tag:yaml.org,2002:\n---\nport: !x!bool abc\n",
    "a: 1\n...\n%YAML 1.1\n---\nport: 010000\n",  # a directive before a later document
    "%FOO bar\n---\na: 1\n",  # a reserved directive
]


@pytest.mark.parametrize("text", DIRECTIVES)
def test_a_directive_gives_one_meaning_whichever_parser_reads_it(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20, item 10: the pure parser honoured %YAML 1.1, libyaml ignored it: the last newline chose."""
    read = [
        _composed(variant, pure=pure, monkeypatch=monkeypatch)
        for variant in (text, text.rstrip("\n"))
        for pure in (False, True)
    ]
    assert all(one == read[0] for one in read), read
    documents, findings = read[0]
    line = text[: text.index("%")].count("\n") + 1
    assert documents == [] and [(rule, at) for rule, at, _, _ in findings] == [("SS001", line)]
    assert "directive" in findings[0][3]


@pytest.mark.parametrize(
    "text",
    [
        "a: |\n  %YAML 1.1 is text here\n",  # a '%' inside a block scalar is no directive
        "--- |\n%YAML in a top-level literal\n",
        "a: '%YAML'\n",
    ],
)
def test_a_percent_that_is_no_directive_is_read_alike(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, pure = (_composed(text, pure=p, monkeypatch=monkeypatch) for p in (False, True))
    assert fast == pure and fast[0] and not fast[1]


def test_a_directive_in_a_spec_is_a_located_finding(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    spec = tmp_path / "app.yaml"
    spec.write_text("%YAML 1.1\n---\napiVersion: servespec/v1\nkind: Inventory\nhosts: {a: {ssh_port: 010000}}")
    result = run_cli("validate", "--root", str(tmp_path), str(spec))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{spec}:1:1: SS001" in result.output or "app.yaml:1:1: SS001" in result.output, result.output


@pytest.mark.parametrize(
    "text",
    ["a: !!bool abc\n", "a: !!int x\n", "a: !!float y\n", "a: !!null x\n", "a: !!int [1]\n", "a: " + "9" * 5000 + "\n"],
)
def test_a_tag_mismatch_is_the_same_located_finding_both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20, item 8: the C path let KeyError escape (!!bool abc: exit 2); the pure one said 1:1."""
    fast = _composed(text, pure=False, monkeypatch=monkeypatch)
    pure = _composed(text, pure=True, monkeypatch=monkeypatch)
    assert fast == pure
    assert [(rule, line, column) for rule, line, column, _ in fast[1]] == [("SS001", 1, 4)]
