"""Controller files a spec makes apply read: from_file secrets and the engine image archive.

A spec comes from a pull request; these are read on a controller holding the fleet's keys
and copied to every host. So each is confined: secrets to a folder the operator names
(the inventory's ``defaults.secrets_dir`` or ``apply --secrets-dir``), the image archive to
the spec's root, resolved as every path a checkout names (:mod:`servespec.spec.paths`).
Real paths are compared (a symlink out counts as outside), only regular files are read,
reads are bounded, and messages never quote a file's content.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from servespec.rollout.errors import RolloutError
from servespec.spec.paths import PathRefusedError, default_root, read_bounded, resolve_inside

MAX_SECRET_BYTES = 64 * 1024
"""Largest secret file read (an API key or token is well under a kilobyte)."""
_ALLOW_SECRETS = "set defaults.secrets_dir in the inventory or pass deploy apply --secrets-dir DIR"


def _read_secret_file(name: str, written: str, allowed: Path | None) -> str:
    """The stripped text of a from_file secret, read only inside ``allowed`` (symlinks resolved first)."""
    if allowed is None:
        raise RolloutError(f"secret {name}: from_file is read only inside a secrets folder; {_ALLOW_SECRETS}")
    root = Path(os.path.realpath(allowed))
    target = Path(os.path.realpath(Path(written).expanduser()))
    if not target.is_relative_to(root):
        raise RolloutError(
            f"secret {name}: {written!r} is outside the secrets folder {allowed} (symlinks out count as outside); "
            f"move it there, or {_ALLOW_SECRETS}"
        )
    try:
        data = read_bounded(target, MAX_SECRET_BYTES, follow=False)  # no link swapped in after realpath
    except PathRefusedError:
        raise RolloutError(f"secret {name}: {written!r} is not a regular file") from None
    except OSError as err:
        raise RolloutError(f"secret {name}: cannot read {written!r}: {err.strerror}") from err
    if len(data) > MAX_SECRET_BYTES:
        raise RolloutError(f"secret {name}: {written!r} is larger than {MAX_SECRET_BYTES} bytes")
    return data.decode("utf-8", errors="replace").strip()


def resolve_secrets(references: dict[str, dict[str, str]], secrets_dir: Path | None = None) -> str:
    """The secrets env file's text, from references resolved on this controller.

    ``from_env`` reads the controller's environment. ``from_file`` reads only files whose
    real path (symlinks resolved) lies inside ``secrets_dir`` — the inventory's
    ``defaults.secrets_dir`` or ``apply --secrets-dir`` — and only regular files of at most
    :data:`MAX_SECRET_BYTES`; without a secrets folder every ``from_file`` is refused, so a
    spec cannot copy an arbitrary controller file (``/etc/shadow``) to its hosts. A relative
    ``from_file`` is taken from the working directory, as before. Errors never quote a
    file's content.
    """
    lines = []
    for name, reference in sorted(references.items()):
        if "from_env" in reference:
            value = os.environ.get(reference["from_env"])
            if value is None:
                raise RolloutError(
                    f"secret {name}: environment variable {reference['from_env']} is not set on this controller"
                )
        else:
            value = _read_secret_file(name, reference["from_file"], secrets_dir)
        if "\n" in value or "\r" in value:
            raise RolloutError(f"secret {name} spans several lines")
        lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


def write_secrets(workdir: Path, deployment: str, host: str, text: str) -> Path:
    """The secrets env file for one host, mode 0600 in a mode-0700 folder of the run's workdir."""
    path = workdir / "secrets" / f"{deployment}-{host}.env"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def secret_values(env_text: str) -> list[str]:
    """The values of a secrets env file's lines (what log tails must never show)."""
    return [line.partition("=")[2] for line in env_text.splitlines() if "=" in line]


def archive_path(written: str, spec_file: Path, root: Path | None = None, field: str = "engine.image_archive") -> Path:
    """The real path of an archive the spec names (``field``): a regular file inside the spec's root.

    Resolved as every path a checkout file names (:func:`servespec.spec.paths.resolve_inside`):
    relative to the spec file's folder, inside ``root`` (the document's root, else
    :func:`servespec.spec.paths.default_root` of the spec file). Absolute and ``~`` paths,
    ``..`` or symlinks leading out, and anything but a regular file are refused.
    """
    try:
        return resolve_inside(written, spec_file.parent, root or default_root(spec_file))
    except PathRefusedError as refused:
        raise RolloutError(
            f"{field} {written!r} {refused.reason}; put the archive inside the checkout"
            " (or pass --root DIR) and name it relative to the spec"
        ) from None


def link_into(workdir: Path, real: Path) -> Path:
    """A link to the checked archive ``real`` in the run's work folder, under the archive's own name.

    The role reads controller files only inside the work folder (it checks every path before it
    reads); an archive stays in the checkout and the run reads it through this link, made by the
    controller after :func:`archive_path` confined it. One folder per archive, so two archives of
    the same name never meet.
    """
    folder = workdir / "archives" / hashlib.sha256(str(real).encode()).hexdigest()[:16]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    link = folder / real.name
    if not link.is_symlink() or link.readlink() != real:
        link.unlink(missing_ok=True)
        link.symlink_to(real)
    return link
