"""Hostile input: every file of tests/data/bad gives located findings, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from servespec.text import UNSAFE
from tests.conftest import REPO, run_cli
from tests.data.make_bad_corpus import hostile_checkout

BAD = REPO / "tests" / "data" / "bad"
CORPUS = sorted(BAD.glob("*.yaml"))


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_bad_file_gives_located_finding(path: Path) -> None:
    result = run_cli("validate", "--format", "json", str(path))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (1, 2), result.output
    report = json.loads(result.stdout)
    assert report["findings"], "no finding for a bad file"
    for finding in report["findings"]:
        assert finding["file"].endswith(path.name)
        assert finding["line"] >= 1 and finding["column"] >= 1
        assert finding["rule"]


def test_whole_corpus_at_once_through_the_real_binary() -> None:
    deploy = Path(sys.executable).parent / "deploy"
    proc = subprocess.run(
        [str(deploy), "validate", "--format", "json", str(BAD)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    files_with_findings = {f["file"] for f in json.loads(proc.stdout)["findings"]}
    assert len(files_with_findings) == len(CORPUS)


@pytest.mark.parametrize("size_mb", [2, 10])
def test_huge_file_is_refused_before_parsing(tmp_path: Path, size_mb: int) -> None:
    path = tmp_path / "huge.yaml"
    line = "key_" + "x" * 60 + ": value\n"
    path.write_text(line * (size_mb * 1024 * 1024 // len(line)))
    result = run_cli("validate", "--format", "json", str(path))
    assert result.exit_code == 1
    finding = json.loads(result.stdout)["findings"][0]
    assert (finding["rule"], finding["line"]) == ("SS001", 1)


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("validate", str(tmp_path / "absent.yaml"))
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_parallel_parsing_gives_the_same_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    from servespec.rules.runner import check_fleet
    from servespec.spec import fleet as fleet_module

    monkeypatch.setattr(fleet_module, "PARALLEL_MIN_FILES", 1)
    if not fleet_module._parse_in_parallel(fleet_module.collect_files([BAD])):
        pytest.skip("no worker processes here (one CPU, or none can start)")
    parallel = check_fleet(fleet_module.load_fleet([BAD]))
    monkeypatch.setattr(fleet_module, "PARALLEL_MIN_FILES", 10**9)
    sequential = check_fleet(fleet_module.load_fleet([BAD]))
    assert parallel == sequential
    assert len(parallel) >= len(CORPUS)


# --- the hostile checkout: built at test time (symlinks, odd file names, FIFOs) --------------

CANARY = "CANARYc0ffee"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    return hostile_checkout(tmp_path_factory.mktemp("hostile"), CANARY)


HOSTILE_NAMES = [
    "symlink-facts-out",
    "symlink-inventory-out",
    "symlink-config-out",
    "absolute-inventory",
    "absolute-config",
    "dotdot-facts",
    "dotdot-config",
    "symlinks-in-named-dir",
    "named-dir-symlink-out",
    "named-file-symlink-out",
    "named-root-symlink",
    "dev-zero-config",
    "fifo-config",
    "inventory-payload-address",
    "inventory-payload-ssh-user",
    "inventory-payload-defaults-ssh-user",
    "inventory-payload-ssh-key",
    "inventory-payload-address-option",
    *(
        f"{name}{suffix}"
        for name in ("file-name-newline", "file-name-ansi", "file-name-bidi", "file-name-line-separator")
        for suffix in ("", "-named")
    ),
]


def test_every_hostile_case_is_listed(hostile: dict[str, list[str]]) -> None:
    assert sorted(hostile) == sorted(HOSTILE_NAMES)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_checkout_case(hostile: dict[str, list[str]], name: str) -> None:
    """Exit 1 with located findings (or 2 with a usage error), no traceback, nothing foreign or unsafe shown."""
    for fmt in ("text", "json", "github", "sarif"):
        result = run_cli("validate", "--format", fmt, *hostile[name])
        assert result.exception is None or isinstance(result.exception, SystemExit), (fmt, result.exception)
        assert result.exit_code in (1, 2), (fmt, result.output)
        assert "Traceback" not in result.output
        assert CANARY not in result.output, fmt
        assert "root:$6$" not in result.output, fmt
        assert not UNSAFE.search(result.output.replace("\n", "")), (fmt, result.output)
        assert not any(line.startswith("TRUST_REMOTE_CODE") for line in result.output.splitlines()), fmt
        if fmt == "json" and result.exit_code == 1:
            findings = json.loads(result.stdout)["findings"]
            assert findings and all(f["line"] >= 1 and f["column"] >= 1 and f["rule"] for f in findings)
        elif result.exit_code == 2:
            assert "Error" in result.output
        if name.startswith("named-") and "symlink" in name:  # review H1: refused as a usage error
            assert result.exit_code == 2 and "outside the root" in result.output, (fmt, result.output)
