"""What servespec prints and writes stays inert: no escape sequences, forged workflow commands or stray writes.

Each test feeds hostile strings straight to the printer, writer or parser it checks (the
loader refuses most of them earlier; these layers must be safe on their own).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from servespec.outdir import MANIFEST, OutputError
from servespec.render import Rendered, stale_files, write
from servespec.spec.schemas import write_schemas
from tests.conftest import REPO, run_cli

EXAMPLES = REPO / "specs" / "examples"

HOSTILE = "x\x1b]8;;http://evil\x07\u202e\n::error file=a::forged\r\x9b"
"""ANSI/OSC escapes, a bidi override, a line break that starts a forged workflow command, a C1 CSI."""


def _assert_inert(text: str) -> None:
    """No unsafe character and no line that GitHub would take for a workflow command."""
    from servespec.text import UNSAFE

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
    assert result.exit_code == 1, result.output
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
