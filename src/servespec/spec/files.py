"""The files a run reads: what the command line names, how directories expand, what is refused unread.

Split from :mod:`servespec.spec.fleet` (which validates what these files hold): file
names no output can carry, symlinks out of the root found in a named directory, and the
YAML budget that all files of one run share.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from servespec.findings import Finding
from servespec.spec.loader_rules import MISSING_FILE, YAML_SYNTAX
from servespec.spec.paths import PathRefusedError, default_root, is_inside, refuse_outside
from servespec.spec.source import Usage
from servespec.text import printable, unsafe_character

YAML_SUFFIXES = (".yaml", ".yml")
LOCK_FILE = "models.lock.yaml"
"""``deploy lock``'s file beside the specs (contract §5): not a servespec document, so never collected from a folder."""

RUN_BUDGET = Usage(documents=100_000, aliased_nodes=100_000, aliased_chars=1024 * 1024)
"""What all files of one run may spend together (each file also has its own, smaller budget)."""


class UsageError(Exception):
    """A problem with the command line itself (exit code 2), not with a file's content."""


def display_path(path: Path) -> str:
    """A path as findings show it: relative to the working directory when inside it."""
    try:
        return os.path.relpath(path) if path.is_absolute() and path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)


def collect_files(paths: list[Path], root: Path | None = None) -> list[Path]:
    """Expand directories into their YAML files (recursively, sorted); missing paths are usage errors.

    Symlinked folders are followed only when they resolve inside ``root`` (never without
    one), each real folder once. A symlinked file is kept here and refused when read if it
    leads out of the root (see :func:`escaping_symlink`), so that the refusal is reported.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(_yaml_files(path, root.resolve() if root else None, set())))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{printable(str(path))}: no such file or directory")
    unique: dict[Path, Path] = {}
    for file in files:
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


def _yaml_files(folder: Path, root: Path | None, seen: set[Path]) -> list[Path]:
    found: list[Path] = []
    seen.add(folder.resolve())
    for current, dirs, names in os.walk(folder, followlinks=False):
        seen.add(Path(current).resolve())
        for name in dirs:
            linked = Path(current) / name
            real = linked.resolve()
            # os.walk does not descend into symlinked folders; follow those that stay inside.
            if linked.is_symlink() and root is not None and is_inside(real, root) and real not in seen:
                found.extend(_yaml_files(linked, root, seen))
        for name in names:
            candidate = Path(current) / name
            if name == LOCK_FILE:
                continue
            if candidate.suffix in YAML_SUFFIXES and (candidate.is_file() or _leads_out(candidate, root)):
                found.append(candidate)
    return found


def _leads_out(candidate: Path, root: Path | None) -> bool:
    # Kept so that reading it reports the escape; a dangling link or a FIFO inside is skipped, as before.
    return candidate.is_symlink() and root is not None and not is_inside(Path(os.path.realpath(candidate)), root)


@dataclass(frozen=True)
class Named:
    """A file to load from the command line, with the root its references must stay inside."""

    path: Path
    root: Path
    expanded: bool
    """Found by expanding a directory (a symlink then must not lead out of the root)."""


def named_files(paths: list[Path], root: Path | None) -> list[Named]:
    """The files to load for ``paths``, each with its root (``root``, else :func:`default_root` of the path).

    A named file or directory that resolves outside its root (a symlink such as
    ``specs -> /``) is a usage error, raised before anything under it is listed or read.
    """
    out: dict[Path, Named] = {}
    for path in paths:
        base = root_for(path, root)
        refuse_named_outside(path, base)
        for file in collect_files([path], base):
            out.setdefault(file.resolve(), Named(file, base, path.is_dir()))
    return list(out.values())


def root_for(path: Path, root: Path | None) -> Path:
    """The (resolved) root of a path named on the command line.

    ``--root`` when the path lies inside it as written; a path the operator names outside
    ``--root`` (a CI job's own inventory, say) was chosen on purpose and gets its own
    checkout as root (:func:`default_root`). Only a path that lies inside its root as
    written but resolves outside it (a symlink in the checkout) is refused.
    """
    # abspath, not resolve(): as written, symlinks not followed (a symlink in the checkout must not choose the root).
    if root is not None and is_inside(Path(os.path.abspath(path)), Path(os.path.abspath(root))):  # noqa: PTH100
        return Path(os.path.realpath(root))
    return Path(os.path.realpath(default_root(path)))


def refuse_named_outside(path: Path, root: Path) -> None:
    """Raise :class:`UsageError` when ``path``, named on the command line, leads out of ``root``."""
    if not path.exists() and not path.is_symlink():
        return  # collect_files reports it missing
    try:
        refuse_outside(path, root)
    except PathRefusedError as refused:
        raise UsageError(f"{printable(str(path))}: {refused.reason}; pass the real path or --root DIR") from None


def name_problem(shown: str) -> Finding | None:
    """A file whose name carries a line break, escape or bidi character is not read at all."""
    bad = unsafe_character(shown)
    if bad is None:
        return None
    message = f"file name contains {bad}, which no output can carry safely; not read"
    return YAML_SYNTAX.in_file(printable(shown), message, hint="rename it")


def escaping_symlink(named: Named) -> Finding | None:
    """A file found in a named directory that resolves out of the root (through a symlink) is not read."""
    if not named.expanded or is_inside(Path(os.path.realpath(named.path)), named.root):
        return None
    message = "symlink resolves outside the root directory; not read"
    hint = "replace the link with the file, or pass --root DIR"
    return MISSING_FILE.in_file(printable(display_path(named.path)), message, hint=hint)


def over_budget(spent: Usage, budget: Usage) -> bool:
    return (
        spent.documents > budget.documents
        or spent.aliased_nodes > budget.aliased_nodes
        or spent.aliased_chars > budget.aliased_chars
    )


def run_budget_finding(shown: str) -> Finding:
    message = (
        f"the files of this run hold more than {RUN_BUDGET.documents} documents or repeat more than "
        f"{RUN_BUDGET.aliased_nodes} nodes ({RUN_BUDGET.aliased_chars // 1024} KiB) through aliases in all; "
        "this file and the ones after it were not read"
    )
    return YAML_SYNTAX.in_file(printable(shown), message, hint="validate fewer files at once, or remove the aliases")
