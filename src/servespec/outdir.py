"""Write generated files into a directory without following symlinks or touching files servespec does not own.

`render -o`, `schema -o`, `docs -o` and discover's facts output all write here. A checkout
is attacker-controlled (docs/security.md), so every path below the working directory is
walked one component at a time with ``O_NOFOLLOW`` from a directory descriptor (the part
the user chose, at or above it, is resolved: see `real_root`), files are written under a fresh
``O_EXCL`` temporary name and renamed into place (a rename replaces a symlink, it never
writes through it), and the caller decides which existing files it owns. Every problem is
found before anything is written, so a refusal leaves the directory as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from servespec.text import printable, unsafe_character

MANIFEST = ".servespec-rendered.json"
"""The one hidden name servespec writes: `render -o`'s record of the files it owns (name -> sha256)."""

MAX_READ = 64 * 1024 * 1024
"""Existing files larger than this are never read (nor owned): far above anything servespec writes."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO must not hang
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class OutputError(Exception):
    """servespec refused to write into or remove from an output directory (nothing was changed)."""


@dataclass(frozen=True)
class Existing:
    """What is at a name now: nothing, a regular file (with its bytes), or something servespec never touches."""

    kind: str
    """``absent``, ``file`` or ``other`` (a symlink anywhere on the way, a directory, a device, a huge file)."""
    data: bytes = b""


ABSENT, OTHER = Existing("absent"), Existing("other")


def check_name(name: str) -> PurePosixPath:
    """``name`` as a relative path of plain, visible components; OutputError for anything else."""
    path = PurePosixPath(name)
    bad = unsafe_character(name)
    if bad or not name or path.is_absolute() or "\\" in name:
        raise OutputError(f"refusing to write {printable(name)!r}: not a plain relative file name")
    if name != MANIFEST and any(part in ("", ".", "..") or part.startswith(".") for part in name.split("/")):
        raise OutputError(f"refusing to write {printable(name)!r}: hidden or parent-directory component")
    return path


def shown(root: Path, name: str) -> str:
    """``root/name`` as printed in messages (escaped)."""
    return printable(str(root / name))


def _step(fd: int, part: str, *, create: bool, where: str) -> int | None:
    """Open directory ``part`` under ``fd`` without following a symlink (closing ``fd``); None when missing."""
    try:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                return None
            os.mkdir(part, 0o777, dir_fd=fd)
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OutputError(
                    f"{printable(where)}: a symbolic link or not a directory; servespec writes only into real "
                    f"directories (give the real path: {printable(os.path.realpath(where))})"
                ) from None
            raise
    finally:
        os.close(fd)


def _inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it (both real, absolute paths)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def real_root(root: Path) -> Path:
    """``root`` with the part the user chose resolved, the part a checkout controls left to walk.

    The components of the output path at or above the working directory, or for a path
    outside it every component but the last, are the user's own choice (a symlinked /tmp
    or /home, a CI workspace) and are resolved. The components below the working directory
    are kept as given: `_open_dir` walks them without following symlinks, so a symlinked
    folder in a checkout, or an output folder in it that is a symlink, is still refused.
    """
    cwd = str(Path.cwd())  # the kernel's name for it: already real
    parts = Path(cwd, root).parts
    for length in range(1, len(parts) + 1):
        real = os.path.realpath(Path(*parts[:length]))
        if _inside(real, cwd):  # at the working directory (or entered through a link outside it)
            return Path(real, *parts[length:])
    if len(parts) == 1:  # "/" itself
        return Path("/")
    return Path(os.path.realpath(Path(*parts[:-1])), parts[-1])


def _open_dir(root: Path, parts: Iterable[str], *, create: bool) -> int | None:
    """A descriptor of ``root/parts``: the user's part of ``root`` resolved, every other component walked
    without following symlinks (see `real_root`)."""
    root = real_root(root)
    fd: int | None = os.open("/", _DIR_FLAGS)
    walked = Path("/")
    for part in [*root.parts[1:], *parts]:
        walked /= part
        assert fd is not None
        fd = _step(fd, part, create=create, where=str(walked))
        if fd is None:
            return None
    return fd


def check_root(root: Path) -> None:
    """OutputError when ``root`` (or a folder above it, as given) is a symlink or not a directory; fine when missing."""
    fd = _open_dir(root, (), create=False)
    if fd is not None:
        os.close(fd)


def _read_at(fd: int, name: str) -> Existing:
    try:
        file = os.open(name, _READ_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return ABSENT
    except OSError:  # ELOOP: a symlink; EISDIR and the like
        return OTHER
    try:
        info = os.fstat(file)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ:
            return OTHER
        chunks = []
        while chunk := os.read(file, 1 << 20):
            chunks.append(chunk)
        return Existing("file", b"".join(chunks))
    finally:
        os.close(file)


def survey(root: Path, names: Iterable[str]) -> dict[str, Existing]:
    """What is at each ``root/name`` now; reads only, creates nothing, follows no symlink."""
    found = {}
    for name in names:
        path = check_name(name)
        try:
            fd = _open_dir(root, path.parts[:-1], create=False)
        except OutputError:
            found[name] = OTHER
            continue
        if fd is None:
            found[name] = ABSENT
            continue
        try:
            found[name] = _read_at(fd, path.name)
        finally:
            os.close(fd)
    return found


def _write_at(fd: int, name: str, data: bytes) -> None:
    """Write ``data`` under a fresh temporary name, then rename it over ``name`` (atomic, never through a link)."""
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    file = os.open(temporary, _CREATE_FLAGS, 0o666, dir_fd=fd)
    try:
        with os.fdopen(file, "wb") as stream:  # closes the descriptor
            stream.write(data)
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=fd)
        raise


def _apply(root: Path, writes: Mapping[str, bytes], removes: Iterable[str]) -> None:
    # The manifest goes last: until every file it names is in place, the previous one stays true.
    for name, data in sorted(writes.items()):
        if name != MANIFEST:
            _write(root, check_name(name), data)
    for name in sorted(removes):
        path = check_name(name)
        fd = _open_dir(root, path.parts[:-1], create=False)
        if fd is None:
            continue
        try:
            os.unlink(path.name, dir_fd=fd)
        finally:
            os.close(fd)
        _prune(root, path)
    if MANIFEST in writes:
        _write(root, PurePosixPath(MANIFEST), writes[MANIFEST])


def _write(root: Path, path: PurePosixPath, data: bytes) -> None:
    fd = _open_dir(root, path.parts[:-1], create=True)
    assert fd is not None
    try:
        _write_at(fd, path.name, data)
    finally:
        os.close(fd)


def _prune(root: Path, path: PurePosixPath) -> None:
    """Remove the folders a removed file leaves empty (rmdir refuses any that still hold something)."""
    parts = list(path.parts[:-1])
    while parts:
        fd = _open_dir(root, parts[:-1], create=False)
        if fd is None:
            return
        try:
            os.rmdir(parts[-1], dir_fd=fd)
        except OSError:
            return
        finally:
            os.close(fd)
        parts.pop()


Owns = Callable[[str, bytes], bool]
"""Whether an existing regular file ``name`` with these bytes is servespec's to replace."""


def problems(root: Path, files: Mapping[str, bytes], found: Mapping[str, Existing], owns: Owns) -> list[str]:
    """Why each file cannot be written (a symlink or a foreign file in its place); empty when all can."""
    out = []
    for name, data in sorted(files.items()):
        existing = found[name]
        if existing.kind == "other":
            out.append(f"{shown(root, name)}: a symbolic link, directory or special file is in the way")
        elif existing.kind == "file" and existing.data != data and not owns(name, existing.data):
            out.append(f"{shown(root, name)}: not written by servespec; move it away or choose another directory")
    return out


def write_files(
    root: Path, files: Mapping[str, bytes], owns: Owns, *, removes: Iterable[str] = (), refused: Iterable[str] = ()
) -> list[Path]:
    """Write ``files`` under ``root`` and remove ``removes``; OutputError (nothing changed) when any is refused.

    ``refused`` are the caller's own reasons to stop (a changed file it would remove).
    Files whose bytes are already right are left untouched. Returns every path of ``files``.
    """
    check_root(root)
    for name in files:
        check_name(name)
    found = survey(root, files)
    reasons = [*refused, *problems(root, files, found, owns)]
    if reasons:
        more = f"\n  (and {len(reasons) - 20} more)" if len(reasons) > 20 else ""
        raise OutputError("nothing was written:" + "".join(f"\n  - {reason}" for reason in reasons[:20]) + more)
    fd = _open_dir(root, (), create=True)  # the root itself, even when every file is already right
    if fd is not None:
        os.close(fd)
    changed = {name: data for name, data in files.items() if found[name] != Existing("file", data)}
    _apply(root, changed, removes)
    return [root / name for name in files]
