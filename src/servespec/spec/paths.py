"""Files a checkout refers to stay inside its root, and are read with a bound.

Anyone who can open a pull request controls the specs, inventories, facts files and
symlinks of a checkout, and CI validates that checkout on a machine holding the fleet's
keys. So a path written in a file (``inventory:``, ``facts:``, ``model.config``,
``engine.image_archive``) is resolved against the root the run was given (``--root DIR``)
or, by default, the checkout containing the path named on the command line, as it was
named (not through the symlinks it may be): the nearest ancestor holding ``.git``; else
the current working directory when the path lies inside it; else the named file's own
directory (or the directory itself). A named path, and every file found under it, must
itself resolve inside that root. Absolute paths, ``..`` that climbs out of the root and
symlinks that resolve outside it are refused before anything is opened, and reads are
limited to regular files of a bounded size (no FIFOs that block, no ``/dev/zero``).

Messages built from :class:`PathRefusedError` name the reference as the user wrote it, never
the target a symlink points at, nor the operating system's error text.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from servespec.text import unsafe_character

MAX_REFERENCED_BYTES = 4 * 1024 * 1024
"""Largest referenced file read (a Hugging Face config.json is tens of kilobytes)."""


OUTSIDE_HINT = "keep referenced files inside the checkout, or pass --root DIR"
NOT_REGULAR_HINT = "name a regular file, not a folder, FIFO or device"
UNREADABLE_HINT = "make the file readable by the user running deploy"


class PathRefusedError(ValueError):
    """A referenced path that is not read; ``reason`` and ``hint`` are safe to show (no foreign path, no errno)."""

    def __init__(self, reason: str, *, missing: bool = False, hint: str = OUTSIDE_HINT) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing
        self.hint = hint


def named_location(path: Path) -> Path:
    """``path`` made absolute and normalised (``.``/``..`` folded), with no symlink followed."""
    return Path(os.path.abspath(path))  # noqa: PTH100 - resolve() would follow the symlinks


def default_root(path: Path) -> Path:
    """The root for files reached from ``path`` (a command-line file or directory, or a loaded file).

    Computed from the path as named (:func:`named_location`), never from where its
    symlinks lead, so that a named ``specs -> /`` cannot make ``/`` the root: the nearest
    ancestor holding ``.git`` (a folder, or a file in worktrees and submodules) whose
    own location is not reached through a symlink inside an outer checkout; without one,
    the current working directory when ``path`` lies inside it; else the directory named
    (its parent when the directory is a symlink), or the directory of the file named.
    """
    start = named_location(path)
    here = start if start.is_dir() and not start.is_symlink() else start.parent
    checkout = _checkout_of(here)
    if checkout is not None:
        return checkout
    cwd = Path.cwd()
    if is_inside(start, cwd):
        return cwd
    return here


def _nearest_git(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _checkout_of(folder: Path) -> Path | None:
    """The nearest checkout holding ``folder``, skipping any reached through a symlink inside an outer one.

    A symlink inside a checkout is the checkout's content (a pull request controls it): a
    ``.git`` found behind it names some other tree, so the outer checkout is the root.
    """
    found = _nearest_git(folder)
    while found is not None:
        link = next((p for p in (found, *found.parents) if p.is_symlink()), None)
        outer = _nearest_git(link.parent) if link is not None else None
        if outer is None:
            return found
        found = outer
    return None


def refuse_outside(path: Path, root: Path) -> None:
    """Raise :class:`PathRefusedError` unless ``path`` (symlinks followed) lies inside ``root``."""
    try:
        real = Path(os.path.realpath(path))
    except (ValueError, OSError):
        raise PathRefusedError("is not a usable path") from None
    if not is_inside(real, Path(os.path.realpath(root))):
        raise PathRefusedError("resolves outside the root directory (through a symlink or '..'); not read")


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (fully resolved) lies in ``root`` (fully resolved) or is it."""
    return path == root or path.is_relative_to(root)


def resolve_inside(reference: str, base: Path, root: Path) -> Path:
    """Resolve ``reference`` (relative to the folder ``base``) to a regular file inside ``root``.

    Every symlink on the way is followed and the result must still lie inside ``root``.
    Raises :class:`PathRefusedError` (``missing=True`` when nothing is there) instead of
    returning a path outside the root, a folder, a FIFO or a device. This is the one
    function for any path a checkout file names (the rollout uses it for
    ``engine.image_archive``: ``resolve_inside(archive, document.path.parent,
    document.root or default_root(document.path))``). It only stats the target; reading
    is up to the caller (see :func:`read_bounded`).
    """
    if Path(reference).is_absolute() or reference.startswith("~"):
        raise PathRefusedError("is an absolute path; name it relative to the file that refers to it")
    real_root = root.resolve()
    try:
        target = Path(os.path.realpath(base.resolve() / reference))
    except (ValueError, OSError):  # an embedded NUL, a symlink loop
        raise PathRefusedError("is not a usable path") from None
    if not is_inside(target, real_root):
        raise PathRefusedError("resolves outside the root directory (through '..' or a symlink)")
    if unsafe_character(str(target)) is not None:
        raise PathRefusedError("leads to a file name holding a character no output can carry safely")
    try:
        mode = target.stat().st_mode
    except OSError:
        raise PathRefusedError("not found", missing=True) from None
    if not stat.S_ISREG(mode):
        raise PathRefusedError("is not a regular file", hint=NOT_REGULAR_HINT)
    return target


def open_for_reading(path: Path) -> None:
    """Raise :class:`PathRefusedError` unless ``path`` (from :func:`resolve_inside`) opens for reading; reads nothing.

    The operating system's error text is not kept: it names the absolute path.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        raise PathRefusedError("cannot be opened for reading", hint=UNREADABLE_HINT) from None
    os.close(descriptor)


def read_bounded(path: Path, limit: int = MAX_REFERENCED_BYTES, *, follow: bool = True) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (callers compare with ``limit``).

    Opened non-blocking so that a FIFO cannot hang the run, then checked to be a regular
    file before reading. ``follow=False`` (for paths :func:`resolve_inside` returned, which
    hold no symlink) refuses a symlink put in their place since. ``OSError`` escapes for
    unreadable paths; :class:`PathRefusedError` for anything that is not a regular file.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise PathRefusedError("is not a regular file", hint=NOT_REGULAR_HINT)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


__all__ = [
    "MAX_REFERENCED_BYTES",
    "PathRefusedError",
    "default_root",
    "is_inside",
    "named_location",
    "open_for_reading",
    "read_bounded",
    "refuse_outside",
    "resolve_inside",
]
