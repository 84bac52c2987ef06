"""What servespec prints and writes stays inert: no escape sequences, forged workflow commands or stray writes.

Each test feeds hostile strings straight to the printer, writer or parser it checks (the
loader refuses most of them earlier; these layers must be safe on their own).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from servespec.findings import Finding, Severity
from servespec.outdir import MANIFEST, OutputError
from servespec.plan import Action
from servespec.plan.report import plan_markdown, plan_text
from servespec.render import Rendered, stale_files, write
from servespec.report import render
from servespec.spec.schemas import write_schemas
from servespec.text import UNSAFE, printable
from tests.conftest import REPO, run_cli

EXAMPLES = REPO / "specs" / "examples"

HOSTILE = "x\x1b]8;;http://evil\x07\u202e\n::error file=a::forged\r\x9b"
"""ANSI/OSC escapes, a bidi override, a line break that starts a forged workflow command, a C1 CSI."""


SUMMARY = {"files": 1, "errors": 2, "warnings": 0, "infos": 0}


def _assert_inert(text: str) -> None:
    """No unsafe character and no line that GitHub would take for a workflow command."""
    lines = text.split("\n")
    assert not any(UNSAFE.search(line) for line in lines), text
    assert not any(line.lstrip().startswith("::") for line in lines), text


def test_internal_crash_is_reported_as_internal_not_usage(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import servespec.rules.runner

    def crash(*_: object, **__: object) -> None:
        raise ValueError(HOSTILE)

    monkeypatch.setattr(servespec.rules.runner, "check_fleet", crash)
    monkeypatch.delenv("SERVESPEC_DEBUG", raising=False)
    Path("spec.yaml").write_text("apiVersion: servespec/v1\nkind: Inventory\nhosts: {}\n")
    result = run_cli("validate", "spec.yaml")
    assert result.exit_code == 2, result.output  # "cannot complete", never 1: CI tells a crash from findings
    assert "internal error" in result.output and "report" in result.output
    assert "SERVESPEC_DEBUG=1" in result.output
    assert "Traceback" not in result.output
    _assert_inert(result.output.rstrip("\n"))


# --- render -o, schema -o, docs -o, discover's facts: only real files servespec owns ---------------


def _rendered(**files: str) -> Rendered:
    """``d__h__a_yaml="x"`` -> ``{"d/h/a.yaml": "x"}``."""
    return Rendered(files={name.replace("__", "/").replace("_", "."): text for name, text in files.items()})


def test_render_never_writes_through_a_symlinked_file(tmp_path: Path) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    write(_rendered(d__h__config_yaml="one\n"), out)
    victim.write_text("precious\n")
    (out / "d/h/config.yaml").unlink()
    (out / "d/h/config.yaml").symlink_to(victim)
    with pytest.raises(OutputError, match="symbolic link"):
        write(_rendered(d__h__config_yaml="two\n"), out)
    assert victim.read_text() == "precious\n" and (out / "d/h/config.yaml").is_symlink()


def test_render_never_writes_through_a_symlinked_folder(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "d").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OutputError, match="symbolic link"):
        write(_rendered(d__h__config_yaml="two\n"), out)
    assert list(elsewhere.iterdir()) == []


def test_render_into_a_working_tree_keeps_what_it_did_not_write(in_tmp: Path) -> None:
    """`deploy render specs -o .` used to delete .git/ and every other file it had not produced."""
    Path(".git").mkdir()
    Path(".git/HEAD").write_text("ref: refs/heads/main\n")
    Path("notes.txt").write_text("mine\n")
    shutil.copytree(EXAMPLES, "specs")
    result = run_cli("render", "specs", "-o", ".")
    assert result.exit_code == 0, result.output
    assert Path(".git/HEAD").read_text() == "ref: refs/heads/main\n"
    assert Path("notes.txt").read_text() == "mine\n"
    assert Path("specs/vllm.yaml").is_file() and Path("llama-chat/README.md").is_file()


def test_render_refuses_to_replace_a_file_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d/README.md").write_text("hand-written\n")
    with pytest.raises(OutputError, match="not written by servespec"):
        write(_rendered(d__README_md="generated\n", d__h__a="a\n"), tmp_path)
    assert (tmp_path / "d/README.md").read_text() == "hand-written\n"
    assert not (tmp_path / "d/h").exists()  # refused before anything was written


def test_render_removes_only_its_own_unchanged_leftovers(tmp_path: Path) -> None:
    write(_rendered(d__h__a="a\n", d__h__b="b\n", e__h__c="c\n"), tmp_path)
    write(_rendered(d__h__a="a2\n"), tmp_path)  # b and c are no longer rendered, and unchanged
    assert not (tmp_path / "d/h/b").exists() and not (tmp_path / "e").exists()
    assert (tmp_path / "d/h/a").read_text() == "a2\n"
    write(_rendered(d__h__a="a2\n", d__h__b="b\n"), tmp_path)
    (tmp_path / "d/h/b").write_text("edited by hand\n")
    with pytest.raises(OutputError, match="changed since servespec rendered it"):
        write(_rendered(d__h__a="a3\n"), tmp_path)
    assert (tmp_path / "d/h/b").read_text() == "edited by hand\n" and (tmp_path / "d/h/a").read_text() == "a2\n"


def test_a_forged_manifest_cannot_claim_files_outside_the_render(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git/HEAD").write_text("ref\n")
    digest = hashlib.sha256(b"ref\n").hexdigest()
    (tmp_path / MANIFEST).write_text(json.dumps({"version": 1, "files": {".git/HEAD": digest}}))
    with pytest.raises(OutputError):
        write(_rendered(d__h__a="a\n"), tmp_path)
    assert (tmp_path / ".git/HEAD").read_text() == "ref\n"


def test_check_does_not_read_through_symlinks(tmp_path: Path) -> None:
    rendered = _rendered(d__h__a="a\n")
    write(rendered, tmp_path)
    assert stale_files(rendered, tmp_path) == []
    (tmp_path / "copy").write_text("a\n")
    (tmp_path / "d/h/a").unlink()
    (tmp_path / "d/h/a").symlink_to(tmp_path / "copy")
    assert stale_files(rendered, tmp_path) == ["d/h/a"]
    (tmp_path / "stray").write_text("not servespec's\n")
    assert stale_files(rendered, tmp_path) == ["d/h/a"]  # --check lists owned files only


def test_schema_output_never_follows_symlinks_or_clobbers(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas/deployment.schema.json").symlink_to(victim)
    with pytest.raises(OutputError):
        write_schemas(tmp_path / "schemas")
    assert victim.read_text() == "precious\n"
    (tmp_path / "schemas/deployment.schema.json").unlink()
    (tmp_path / "schemas/deployment.schema.json").write_text('{"mine": true}\n')
    with pytest.raises(OutputError, match="not written by servespec"):
        write_schemas(tmp_path / "schemas")
    assert (tmp_path / "schemas/deployment.schema.json").read_text() == '{"mine": true}\n'
    (tmp_path / "schemas/deployment.schema.json").unlink()
    assert len(write_schemas(tmp_path / "schemas")) == 3
    assert len(write_schemas(tmp_path / "schemas")) == 3  # its own files are replaced


def test_docs_output_never_follows_symlinks_or_clobbers(tmp_path: Path) -> None:
    from servespec import docgen

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "docs/rules").mkdir(parents=True)
    (tmp_path / "docs/rules/index.md").symlink_to(victim)
    with pytest.raises(OutputError):
        docgen.write(tmp_path / "docs")
    assert victim.read_text() == "precious\n"
    (tmp_path / "docs/rules/index.md").unlink()
    (tmp_path / "docs/rules/index.md").write_text("# my own page\n")
    with pytest.raises(OutputError, match="not written by servespec"):
        docgen.write(tmp_path / "docs")
    (tmp_path / "docs/rules/index.md").unlink()
    (tmp_path / "docs/getting-started.md").write_text("hand-written\n")
    docgen.write(tmp_path / "docs")
    docgen.write(tmp_path / "docs")  # its own pages are replaced; hand-written ones are untouched
    assert (tmp_path / "docs/getting-started.md").read_text() == "hand-written\n"


def test_facts_output_never_follows_symlinks_or_clobbers(tmp_path: Path) -> None:
    from servespec.discover.facts import write_facts

    saved, facts, victim = tmp_path / "saved", tmp_path / "facts", tmp_path / "victim.txt"
    (saved / "gpu-01").mkdir(parents=True)
    (saved / "gpu-01/nproc.txt").write_text("8\n")
    victim.write_text("precious\n")
    facts.mkdir()
    (facts / "gpu-01.json").symlink_to(victim)
    with pytest.raises(OutputError):
        write_facts(saved, facts)
    assert victim.read_text() == "precious\n"
    (facts / "gpu-01.json").unlink()
    (facts / "gpu-01.json").write_text('{"not": "facts"}\n')
    with pytest.raises(OutputError, match="not written by servespec"):
        write_facts(saved, facts)
    (facts / "gpu-01.json").write_text('{"version": 1, "host": "gpu-01"}\n')
    (written,) = write_facts(saved, facts)  # a facts file of the same host is discover's to refresh
    assert json.loads(written.read_text())["hardware"]["cpus"] == 8


def test_facts_output_refuses_host_folder_names_that_are_not_plain(tmp_path: Path) -> None:
    from servespec.discover.facts import write_facts

    saved = tmp_path / "saved"
    (saved / ".hidden").mkdir(parents=True)
    with pytest.raises(OutputError):
        write_facts(saved, tmp_path / "facts")
    assert not (tmp_path / "facts").exists()


# --- printers: every field escaped, no forged workflow command ---------------------------------


def _finding(file: str = HOSTILE) -> Finding:
    return Finding(file, 3, 5, "SS002", Severity.ERROR, f"unknown field {HOSTILE!s}", f"remove {HOSTILE}", HOSTILE)


@pytest.mark.parametrize(
    "file", [HOSTILE, "::error file=a,line=1::forged.yaml", "  ::warning::x.yaml", "\u202eevil.yaml"]
)
def test_text_findings_are_inert(file: str) -> None:
    text = _finding(file).to_text()
    _assert_inert(text)
    assert "\n" not in text and text.endswith(f"(fix: remove {printable(HOSTILE)})")


def test_text_and_github_reports_are_inert() -> None:
    findings = [_finding(), _finding("::error::x.yaml")]
    _assert_inert(render("text", findings, SUMMARY).rstrip("\n"))
    github = render("github", findings, SUMMARY).rstrip("\n").split("\n")
    assert len(github) == 2 and all(line.startswith("::error file=") for line in github)
    assert not any(UNSAFE.search(line) for line in github)
    props = github[1].split("::")[1]
    assert props.startswith("error file=%3A%3Aerror%3A%3Ax.yaml,line=3,col=5,title=SS002")


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_reports_carry_no_raw_hidden_characters(fmt: str) -> None:
    finding = Finding("a\u202eb\x7f.yaml", 1, 1, "SS002", Severity.ERROR, "m\u2028\x9b\x7f", "h\u200b", "p\ufeff")
    text = render(fmt, [finding], SUMMARY)
    assert not UNSAFE.search(text.replace("\n", "")), text
    log = json.loads(text)
    if fmt == "json":
        assert log["findings"][0]["message"] == finding.message and log["findings"][0]["file"] == finding.file
    else:
        assert log["runs"][0]["results"][0]["message"]["text"] == "m\u2028\x9b\x7f (fix: h\u200b)"


def _action(**fields: Any) -> Action:
    base: dict[str, Any] = {
        "deployment": HOSTILE,
        "host": "[link=http://evil]h[/link]|x",
        "kind": "update",
        "current": 3,
        "digest": "0" * 64,
        # as plan builds them: the host reports its files' names and contents
        "diffs": {
            f"f{HOSTILE}": "".join(
                difflib.unified_diff(
                    f"  ::error::context\nold{HOSTILE}\n".splitlines(keepends=True),
                    ["  ::error::context\n", "new\n"],
                    f"a/{HOSTILE}",
                    f"b/{HOSTILE}",
                )
            )
        },
        "reason": f"revision 3 is {HOSTILE}: apply it again",
    }
    return Action(**(base | fields))


def test_plan_text_and_markdown_are_inert() -> None:
    _assert_inert(plan_text([_action()]).rstrip("\n"))
    markdown = plan_markdown([_action()], [])
    _assert_inert(markdown.rstrip("\n"))
    (row,) = [line for line in markdown.splitlines() if line.startswith("| ") and "update" in line]
    assert len(re.findall(r"(?<!\\)\|", row)) == 6, row  # a | in a name does not add a column


def test_tables_print_names_literally(capsys: pytest.CaptureFixture[str]) -> None:
    from servespec.rollout.progress import outcome_table

    row = SimpleNamespace(
        deployment=HOSTILE,
        host="[link=http://evil]h[/link]",
        old=1,
        new=2,
        result="failed",
        error=HOSTILE,
        logs=[HOSTILE],
    )
    outcome_table([row])
    err = capsys.readouterr().err
    assert not UNSAFE.search(err.replace("\n", "")), err
    assert "[link=http://evil]h[/link]" in err  # shown as text, not taken as rich markup


def test_status_table_prints_names_literally(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import servespec.rollout

    row = SimpleNamespace(
        deployment="d", host="[link=http://evil]h[/link]", revision=2, reachable=True, healthy=True,
        since=HOSTILE, endpoint=HOSTILE, error="", replicas=[],
    )  # fmt: skip
    monkeypatch.setattr(servespec.rollout, "status", lambda fleet: [row])
    shutil.copytree(EXAMPLES, "specs")
    result = run_cli("status", "specs/vllm.yaml")
    assert not UNSAFE.search(result.output.replace("\n", "")), result.output
    assert "[link=http://evil]h[/link]" in result.output


def test_estimate_table_prints_names_literally(capsys: pytest.CaptureFixture[str]) -> None:
    from servespec.estimate_report import print_estimate_table

    spec = SimpleNamespace(engine=SimpleNamespace(name="vllm", version=HOSTILE))
    row = SimpleNamespace(
        deployment=SimpleNamespace(spec=spec, name=HOSTILE), host=SimpleNamespace(name="[red]h[/red]"),
        gpu_name=HOSTILE, gpu_indices=[0], plan=None,
    )  # fmt: skip
    print_estimate_table([row])
    out = capsys.readouterr().out
    assert not UNSAFE.search(out.replace("\n", "")), out
    assert "[red]h[/red]" in out


def test_an_output_directory_that_is_a_symlink_is_refused_by_name(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "rendered").symlink_to(elsewhere, target_is_directory=True)
    rendered = _rendered(d__h__a="a\n")
    for attempt in (
        lambda: write(rendered, tmp_path / "rendered"),
        lambda: stale_files(rendered, tmp_path / "rendered"),
    ):
        with pytest.raises(OutputError, match=r"rendered: a symbolic link or not a directory.*give the real path"):
            attempt()
    assert list(elsewhere.iterdir()) == []


def test_a_symlinked_folder_above_the_checkout_is_the_users_choice(tmp_path: Path) -> None:
    """/tmp on macOS, /home -> /var/home, a symlinked CI workspace: outside the cwd, the path is resolved."""
    real = tmp_path / "realdir"
    real.mkdir()
    (tmp_path / "lnk").symlink_to(real, target_is_directory=True)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copytree(EXAMPLES, checkout / "specs")
    old = Path.cwd()
    os.chdir(checkout)
    try:
        result = run_cli("render", "specs", "-o", str(tmp_path / "lnk" / "out"))
        assert result.exit_code == 0, result.output
        assert (real / "out" / MANIFEST).is_file()
        assert write_schemas(tmp_path / "lnk" / "schemas")
        assert (real / "schemas" / "deployment.schema.json").is_file()
    finally:
        os.chdir(old)


def test_a_symlink_below_the_working_directory_is_refused(tmp_path: Path) -> None:
    """The components under the cwd are the checkout's: a symlinked folder there is refused, however named."""
    outside, elsewhere = tmp_path / "outside", tmp_path / "elsewhere"
    outside.mkdir()
    elsewhere.mkdir()
    (outside / "ws").symlink_to(tmp_path / "checkout", target_is_directory=True)
    checkout = tmp_path / "checkout"
    (checkout / "real").mkdir(parents=True)
    (checkout / "lnk").symlink_to(elsewhere, target_is_directory=True)
    (checkout / "real" / "out").symlink_to(elsewhere, target_is_directory=True)
    old = Path.cwd()
    os.chdir(checkout)
    try:
        for root in (
            Path("lnk"),  # the output folder itself
            Path("lnk/out"),  # a folder above it
            Path("real/out"),
            checkout / "lnk" / "out",  # absolute
            outside / "ws" / "lnk" / "out",  # the cwd reached through a link the user chose
            outside / "ws" / "real" / "out",
        ):
            with pytest.raises(OutputError, match="symbolic link"):
                write(_rendered(d__h__a="a\n"), root)
            with pytest.raises(OutputError, match="symbolic link"):
                write_schemas(root / "schemas")
        # Outside the cwd too, the last component (the output folder itself) must be real.
        (outside / "last").symlink_to(elsewhere, target_is_directory=True)
        with pytest.raises(OutputError, match="symbolic link"):
            write(_rendered(d__h__a="a\n"), outside / "last")
    finally:
        os.chdir(old)
    assert list(elsewhere.iterdir()) == []


def test_the_live_view_shows_names_literally() -> None:
    from rich.console import Console

    from servespec.rollout.progress import LiveView

    view = LiveView()
    view({"event": "runner_on_failed", "event_data": {"host": "[link=http://evil]h[/link]", "task": HOSTILE}})
    console = Console(width=200, record=True, force_terminal=False)
    console.print(view._table())
    out = console.export_text()
    assert not UNSAFE.search(out.replace("\n", "")), out
    assert "[link=http://evil]h[/link]" in out


def test_discover_prints_what_a_host_reported_escaped(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import servespec.rollout

    monkeypatch.setattr(servespec.rollout, "discover", lambda inventory, destination, on_event: {"gpu-01": HOSTILE})
    Path("inv.yaml").write_text("apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  gpu-01: {}\n  gpu-02: {}\n")
    result = run_cli("discover", "-i", "inv.yaml")
    assert "gpu-01: not collected" in result.output and "wrote facts/gpu-02.json" in result.output
    _assert_inert(result.output.rstrip("\n"))


def test_render_command_lists_each_refusal_on_its_own_line(in_tmp: Path) -> None:
    shutil.copytree(EXAMPLES, "specs")
    assert run_cli("render", "specs", "-o", "out").exit_code == 0
    Path("victim").write_text("precious\n")
    for name in ("out/llama-chat/README.md", "out/qwen-tgi/README.md"):
        Path(name).unlink()
        Path(name).symlink_to(in_tmp / "victim")
    result = run_cli("render", "specs", "-o", "out")
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.output.rstrip("\n").split("\n")
    assert lines[0] == "error: nothing was written:" and len(lines) == 3, lines
    assert all(line.startswith("  - out/") and "symbolic link" in line for line in lines[1:]), lines
    assert Path("victim").read_text() == "precious\n"
