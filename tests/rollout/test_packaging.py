"""The built wheel is all servespec needs: installed outside any checkout it validates, renders,
plans and applies.

Everything read at run time ships inside the package: the engine data and templates under
src/servespec, the shared templates of renderers/ (as servespec/render/templates) and the
playbooks with the role (as servespec/rollout/playbooks). The wheel is built without build
isolation (hatchling from the dev extras), so the tests need no network.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import standin_spec

SKIPPED = {"__pycache__"}
SHIPPED = {
    REPO / "src" / "servespec": "servespec",
    REPO / "renderers": "servespec/render/templates",
    REPO / "playbooks": "servespec/rollout/playbooks",
}
"""Each folder of the checkout that servespec reads at run time, and where the wheel holds it."""


def build_wheel(destination: Path) -> Path:
    """The wheel of this checkout, built into ``destination`` without network (skip without hatchling)."""
    pytest.importorskip("hatchling", reason="the dev extras hold hatchling, the build backend")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*build, "-w", str(destination), str(REPO)],
        check=True,
        capture_output=True,
        cwd=destination,
    )
    (wheel,) = destination.glob("servespec-*.whl")
    return wheel


@pytest.fixture
def archive() -> Path:
    images.standin_image()
    return images.archive("servespec-standin:latest")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def _runtime_files() -> dict[str, Path]:
    """Every file of the shipped folders by its name in the wheel (caches left out)."""
    out = {}
    for folder, target in SHIPPED.items():
        for path in folder.rglob("*"):
            relative = path.relative_to(folder)
            if path.is_file() and not SKIPPED & set(relative.parts) and path.suffix != ".pyc":
                out[f"{target}/{relative.as_posix()}"] = path
    return out


def test_the_wheel_holds_every_file_read_at_run_time(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(set(_runtime_files()) - names)
    assert not missing, f"not in the wheel: {missing[:10]}"
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    # What the code looks for when installed (runner.playbook_root, render.environment._template_root).
    assert "servespec/rollout/playbooks/roles/servespec/library/servespec_state.py" in names
    assert "servespec/render/templates/_common/README.md.j2" in names


def _venv(folder: Path, wheel: Path) -> dict[str, str]:
    """A fresh venv in ``folder`` with the wheel installed; the environment to run its ``deploy`` in.

    The wheel goes in without its dependencies, which come from this interpreter's
    site-packages through a .pth file (offline and quick). A .pth line is not a site
    directory: the checkout's editable install there is not seen, so servespec is the wheel's.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    (Path(purelib) / "servespec-test-deps.pth").write_text("".join(f"{path}\n" for path in sorted(ours)))
    # ansible-playbook comes from this environment's bin (after the venv's own).
    path = f"{folder / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONPATH": "", "PYTHONNOUSERSITE": "1"}


@pytest.mark.slow
def test_an_installed_wheel_applies_from_outside_the_checkout(
    wheel: Path, tmp_path: Path, inventory: Path, archive: Path, clean_hosts: list[RemoteHost]
) -> None:
    env = _venv(tmp_path / "venv", wheel)
    env["E2E_KEY"] = "wheel-secret"
    host = clean_hosts[0]
    host.sh("mkdir -p /srv/models && echo stand-in > /srv/models/demo.gguf")
    spec = standin_spec(tmp_path / "wheel.yaml", "wheel", [host.name], archive)
    deploy = str(tmp_path / "venv" / "bin" / "deploy")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([deploy, *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)

    where = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "python"), "-c", WHERE], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert all(Path(path).is_relative_to(tmp_path / "venv") for path in where), where
    assert not tmp_path.is_relative_to(REPO)

    assert run("validate", str(spec)).returncode == 0
    rendered = run("render", str(spec), "-o", str(tmp_path / "out"))
    assert rendered.returncode == 0, rendered.stderr
    assert (tmp_path / "out" / "wheel" / "README.md").is_file()
    planned = run("plan", str(spec), "--format", "json")
    assert planned.returncode == 0, planned.stderr
    assert [action["kind"] for action in json.loads(planned.stdout)["actions"]] == ["create"]
    applied = run("apply", str(spec), "--yes", "--format", "json")
    assert applied.returncode == 0, applied.stderr
    report = json.loads(applied.stdout.splitlines()[-1])  # after the progress events, one per line
    assert [(row["host"], row["new"], row["result"]) for row in report["hosts"]] == [(host.name, 1, "ok")]
    rows = json.loads(run("status", str(spec), "--format", "json").stdout)["hosts"]
    assert [(row["host"], row["revision"], row["healthy"]) for row in rows] == [(host.name, 1, True)]


WHERE = """
import servespec, servespec.rollout.runner as runner, servespec.render.environment as environment
print(servespec.__file__, runner.playbook_root(), environment._template_root())
"""
