"""Reading a release's files from a git snapshot of its upstream repository (TGI, Ollama).

The snapshot is a bare clone kept OUTSIDE the repository, in
``~/.cache/servespec/catalog-src/<owner>+<name>.git`` (override with
``SERVESPEC_CATALOG_SRC``); :func:`repo_dir` clones it (``git clone --bare``) when absent.
Where GitHub cannot be reached, ``SERVESPEC_GIT_MIRRORS`` names a folder of existing snapshots
(``<owner>+<name>.git``, or ``<owner>+<name>/repo``, a git directory of the whole history with
tags): one found there is read in place and nothing is cloned.
Nothing here is imported by the CLI.
"""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

CACHE = Path(os.environ.get("SERVESPEC_CATALOG_SRC", Path.home() / ".cache" / "servespec" / "catalog-src"))


def mirror(owner: str, name: str) -> Path | None:
    """An existing snapshot of github.com/<owner>/<name> under ``SERVESPEC_GIT_MIRRORS``, if there is one."""
    root = os.environ.get("SERVESPEC_GIT_MIRRORS")
    if not root:
        return None
    for path in (Path(root) / f"{owner}+{name}.git", Path(root) / f"{owner}+{name}" / "repo"):
        if (path / "HEAD").is_file():
            return path
    return None


def repo_dir(owner: str, name: str) -> Path:
    """The bare git snapshot of github.com/<owner>/<name>: a mirror's, else the cache's, cloned when missing."""
    found = mirror(owner, name)
    if found is not None:
        return found
    path = CACHE / f"{owner}+{name}.git"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        url = f"https://github.com/{owner}/{name}.git"
        subprocess.run(["git", "clone", "--bare", "--quiet", url, str(path)], check=True)
    return path


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True).stdout


@cache
def show(path: Path, tag: str, file: str) -> str | None:
    """A file at a tag, or None when the tag has no such file."""
    done = subprocess.run(["git", "-C", str(path), "show", f"{tag}:{file}"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


@cache
def commit(path: Path, tag: str) -> str:
    """The commit a tag points at (peeled)."""
    return git(path, "rev-list", "-n", "1", tag).strip()


def tags(path: Path) -> list[str]:
    return git(path, "tag").split()
