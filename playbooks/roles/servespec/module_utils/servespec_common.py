# Shared by the servespec_* modules: where a deployment lives on a host, and its state file.
# Everything a host keeps for a deployment is under /var/lib/servespec/<deployment>/ and the
# active files under /etc/servespec/<deployment> (a link to the active revision).

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import os
import re
import shutil
import stat
import tempfile
import time
import urllib.error
import urllib.request

STATE_ROOT = "/var/lib/servespec"
CONFIG_ROOT = "/etc/servespec"
RESERVED = ("models", "images", "incoming")
"""Folders of STATE_ROOT shared by every deployment (model cache, image and model archives): never a deployment."""
DEPLOYMENT_NAME = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")

RESULT_KEY = "servespec_result"
"""What the controller reads comes back under this key as {"kind": KIND, ...}, never found by task name.

The kinds below are the controller's servespec.rollout.runner.Report (tests/rollout/test_result_keys.py).
"""
ALLOCATED = "revision_allocated"
GOOD = "revision_good"
FAILED = "revision_failed"
STATUS = "deployments_status"
OUTPUTS = "host_outputs"
WEIGHTS = "weights_staged"
CAPACITY = "host_capacity"
VERIFIED = "slo_verified"


def servespec_result(kind, **values):
    """The module result entry the controller reads: ``{RESULT_KEY: {"kind": kind, **values}}``."""
    return {RESULT_KEY: dict(values, kind=kind)}


def deployment_problem(name):
    """Why ``name`` cannot be a deployment on this host ('' when it can).

    The name becomes a path under STATE_ROOT and CONFIG_ROOT: a DNS label only (no '/', '..'),
    and not one of the shared folders, whose model weights and archives a deployment's
    state and secrets must never land in. Checked here too, not only by the controller.
    """
    if not isinstance(name, str) or not DEPLOYMENT_NAME.match(name):
        return f"deployment name {name!r} is not a DNS label"
    if name in RESERVED:
        return f"deployment name {name!r} is reserved: {STATE_ROOT}/{name} is shared by every deployment"
    return ""


def check_deployment(module, name):
    """Fail ``module`` when ``name`` cannot be a deployment (see deployment_problem)."""
    problem = deployment_problem(name)
    if problem:
        module.fail_json(msg=problem)


def model_path_problem(path, roots):
    """Why a local model path may not be mounted ('' when it may).

    The real path (symlinks resolved) must exist and lie inside one of ``roots``: a link
    under a root pointing at /var/run would otherwise mount docker.sock into the engine.
    """
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return "" if os.path.exists(real) else f"model path {path} does not exist on this host"
    return f"model path {path} resolves outside the model roots ({', '.join(roots)}) on this host"


def deployment_secrets(deployment, root=STATE_ROOT):
    """Every secret value of the deployment's revisions on this host (what log tails must not show)."""
    values = set()
    revisions = os.path.join(root, deployment, "revisions")
    for number in os.listdir(revisions) if os.path.isdir(revisions) else []:
        path = os.path.join(revisions, number, "secrets.env")
        if os.path.isfile(path):
            values.update(value for value in read_env_file(path).values() if len(value) >= 4)
    return values


def scrub_lines(lines, secrets):
    """``lines`` with each of ``secrets`` masked (longest first, so no part of one survives)."""
    ordered = sorted(secrets, key=len, reverse=True)
    out = []
    for line in lines:
        for secret in ordered:
            line = line.replace(secret, "***")
        out.append(line)
    return out


def deployment_dir(deployment, root=STATE_ROOT):
    return os.path.join(root, deployment)


def revision_dir(deployment, number, root=STATE_ROOT):
    return os.path.join(root, deployment, "revisions", str(number))


def active_link(deployment, config_root=CONFIG_ROOT):
    return os.path.join(config_root, deployment)


def state_path(deployment, root=STATE_ROOT):
    return os.path.join(root, deployment, "state.json")


def empty_state(deployment):
    return {"version": 1, "deployment": deployment, "current": None, "good": None, "revisions": []}


def read_state(deployment, root=STATE_ROOT):
    try:
        with open(state_path(deployment, root)) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None


def write_state(state, root=STATE_ROOT):
    """Write state.json atomically (a crash leaves the old or the new file, never half of one)."""
    path = state_path(state["deployment"], root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".state.")
    with os.fdopen(fd, "w") as handle:
        json.dump(state, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def revision_entry(state, number):
    for entry in state["revisions"]:
        if entry["number"] == number:
            return entry
    return None


def probe_host(address):
    """The address that reaches a listener on ``address`` from its own host, as a URL's host part.

    A wildcard (0.0.0.0, ::, or none) is reached on 127.0.0.1; an IPv6 literal is
    bracketed (http://::1:8000 is no URL).
    """
    try:
        if not address or ipaddress.ip_address(address).is_unspecified:
            return "127.0.0.1"
    except ValueError:  # a host name, or a literal already bracketed
        return address
    return f"[{address}]" if ":" in address else address


def base_url(spec):
    """http://HOST:PORT of a container spec's health port, as reached from its own host.

    HOST is where the engine is reachable: the address its port is published on (bridge
    network), else the description's ``healthcheck.host`` (host network: the engine
    listens on serving.bind itself), else 127.0.0.1.
    """
    host = spec["healthcheck"].get("host") or "127.0.0.1"
    for port in spec["ports"]:
        if port["host_ip"] not in ("0.0.0.0", "::", ""):
            host = port["host_ip"]
    return f"http://{probe_host(host)}:{spec['healthcheck']['port']}"


def lock_holder(lock_dir):
    """The holder.json of a deployment's lock folder, or None when there is none."""
    try:
        with open(os.path.join(lock_dir, "holder.json")) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load_container(deployment, number, root=STATE_ROOT, replica=None):
    """A revision's container.json; with ``replica``, that replica's (placement.replicas_per_host).

    A replica's own file (``container-r<i>.json``, written by servespec_proxy's prepare with its
    slot port) is read when it is there, else the replica is derived from container.json.
    """
    folder = os.path.join(revision_dir(deployment, number, root), ".servespec")
    if replica is not None:
        own = os.path.join(folder, f"container-r{int(replica)}.json")
        if os.path.exists(own):
            with open(own) as handle:
                return json.load(handle)
    with open(os.path.join(folder, "container.json")) as handle:
        spec = json.load(handle)
    return spec if replica is None else replica_spec(spec, replica)


def replica_spec(spec, index):
    """container.json as replica ``index`` runs it: its name, GPUs and first slot port (placement.replicas_per_host)."""
    entries = {entry["index"]: entry for entry in spec.get("replicas") or []}
    if int(index) not in entries:
        raise ValueError(f"container.json lists no replica {index}")
    entry = entries[int(index)]
    out = dict(spec, name=entry["name"], gpus=entry["gpus"], replica_index=int(index))
    for key in ("cpuset_mems", "cpuset_cpus"):  # the replica's own NUMA node, from its GPUs
        out.pop(key, None)
        if entry.get(key):
            out[key] = entry[key]
    out["labels"] = dict(spec["labels"], **{"servespec.replica": str(index)})
    out["ports"] = [
        dict(port, host_ip="127.0.0.1", host_port=entry["ports"][0])
        if port["host_port"] == spec["healthcheck"]["port"]
        else port
        for port in spec["ports"]
    ]
    out["healthcheck"] = {k: v for k, v in dict(spec["healthcheck"], port=entry["ports"][0]).items() if k != "host"}
    return out


def replica_names(spec):
    """The containers of a description's replicas, in order ([] for one replica per host)."""
    return [entry["name"] for entry in spec.get("replicas") or []]


def read_env_file(path):
    """KEY=value lines as Docker reads env files (no quotes, no expansion)."""
    values = {}
    with open(path) as handle:
        for line in handle:
            line = line.rstrip("\n")
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            values[key] = value
    return values


API_KEY_VARIABLES = ("VLLM_API_KEY", "API_KEY", "SERVESPEC_API_KEY", "LLAMA_API_KEY")


def api_key(spec):
    """The API key the engine was started with (the deployment's secrets.env), or None."""
    for path in spec["env_files"]:
        if path.endswith("secrets.env") and os.path.exists(path):
            values = read_env_file(path)
            for name in API_KEY_VARIABLES:
                if values.get(name):
                    return values[name]
    return None


def headers(key):
    """JSON request headers, with the bearer token where the engine takes one."""
    return {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}


def listed_models(spec, key):
    """The model ids GET /v1/models lists, in its order; [] where it does not answer (TGI before 2.3)."""
    request = urllib.request.Request(base_url(spec) + "/v1/models", headers=headers(key))
    try:
        with urllib.request.urlopen(request, timeout=spec["healthcheck"]["timeout_s"]) as response:
            answer = json.loads(response.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return []
    entries = answer.get("data") if isinstance(answer, dict) else None
    return [e["id"] for e in entries or [] if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]]


def served_model(spec, key):
    """The model the completion names: serving.model_name where the spec gives one (the name clients send),
    else the first name the engine lists in /v1/models (the name it chose itself), else none (the engine's
    only model: vLLM, TGI and llama.cpp take a request without one)."""
    if spec.get("model_name"):
        return spec["model_name"], None
    listed = listed_models(spec, key)
    return (listed[0] if listed else None), listed


def free_bytes(path):
    """Free bytes of the file system that will hold ``path`` (its nearest existing folder)."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return shutil.disk_usage(path).free


def human_size(count):
    """``count`` bytes as a person reads them (1.5 GiB, 3.0 MiB, 12 B)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


# --- The model cache, walked by directory descriptor (issue 20). Engine containers that fetch their own
# models mount it read-write, and their root is the host's root: any name below the cache's root may be
# a link a container planted (blobs/x.incomplete -> /root/.ssh/authorized_keys). The modules that write
# the cache run as root, so every name below the root is opened relative to its folder's descriptor with
# O_NOFOLLOW: a link is refused where it is met, never followed, and nothing is truncated, chmod-ed,
# renamed or removed through one. The root itself (MODEL_CACHE, the mounts' source) is the operator's.

MODEL_CACHE = os.path.join(STATE_ROOT, "models")
"""The host's model cache, mounted into engine containers (servespec.render.common.MODEL_CACHE)."""
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE = os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC  # O_NONBLOCK: a planted FIFO fails the open instead of hanging


class UnsafeCacheEntryError(Exception):
    """An entry below the model cache's root that root will not use: a link, or not the kind of entry expected."""


def shown(path):
    """A cache path as a message quotes it: escaped (no control character or newline reaches a log)."""
    return ascii(path)


class CacheDir:
    """A folder below the model cache's root, held by descriptor; names below it never resolve through a link.

    ``where`` is the folder's path, for messages only: nothing is ever opened by it.
    """

    def __init__(self, fd, where):
        self.fd = fd
        self.where = where

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @property
    def name(self):
        return os.path.basename(self.where)

    def path(self, name):
        return os.path.join(self.where, name)

    def refuse(self, name, what):
        return UnsafeCacheEntryError(
            f"{shown(self.path(name))} in the model cache is {what}: refused without following it "
            "(an engine container that mounts the cache may have planted it; remove it, and check those containers)"
        )

    def lstat(self, name):
        """The entry ``name`` itself (a link is not followed), or None when there is none."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def kind(self, name):
        """'file', 'folder', 'link', 'other', or '' when ``name`` does not exist."""
        info = self.lstat(name)
        if info is None:
            return ""
        for test, kind in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "folder"), (stat.S_ISLNK, "link")):
            if test(info.st_mode):
                return kind
        return "other"

    def folder(self, name, create=False):
        """The sub-folder ``name`` (one component), made when ``create``; None when it does not exist."""
        if name in ("", ".", "..") or "/" in name:
            raise self.refuse(name, "not a plain name")
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=self.fd)
        try:
            fd = os.open(name, _FOLDER, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR):
                raise self.refuse(name, "a link" if self.kind(name) == "link" else "not a folder") from None
            raise
        return CacheDir(fd, self.path(name))

    def walk(self, parts, create=False):
        """The folder at ``parts`` below this one (a new CacheDir to close), or None when one is missing."""
        current = CacheDir(os.dup(self.fd), self.where)
        for part in parts:
            with current:
                nested = current.folder(part, create)
            if nested is None:
                return None
            current = nested
        return current

    def open_file(self, name, flags, mode=0o644):
        """A descriptor of the regular file ``name`` (never a link, FIFO or device; written only when it has one name).

        Nothing is truncated at open: the caller truncates with os.ftruncate once the file is checked.
        """
        try:
            fd = os.open(name, flags | _FILE, mode, dir_fd=self.fd)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.ENOTDIR):
                raise self.refuse(name, "a link" if self.kind(name) == "link" else "not a regular file") from None
            raise
        info = os.fstat(fd)
        writes = flags & (os.O_WRONLY | os.O_RDWR)
        if not stat.S_ISREG(info.st_mode) or (writes and info.st_nlink != 1):
            os.close(fd)
            raise self.refuse(name, "not a regular file with one name")
        return fd

    def read_text(self, name, limit=1 << 20):
        """The text of the regular file ``name`` (at most ``limit`` bytes), or None when there is none."""
        try:
            fd = self.open_file(name, os.O_RDONLY)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")

    def write_atomic(self, name, data):
        """Write the file ``name`` through a temporary file renamed over it; a link or folder there is refused."""
        if self.kind(name) not in ("", "file"):
            raise self.refuse(name, "a link" if self.kind(name) == "link" else "not a regular file")
        temporary = name + ".servespec"
        self.remove(temporary)
        fd = self.open_file(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        self.rename(temporary, name)

    def rename(self, source, target, into=None):
        """Rename the entry ``source`` (itself, never what a link names) to ``target`` in ``into`` (default: here)."""
        os.rename(source, target, src_dir_fd=self.fd, dst_dir_fd=(into or self).fd)

    def remove(self, name, links=False):
        """Remove the entry ``name`` if there is one: a file, or a folder and what it holds.

        A link is refused (evidence of a planted entry) unless ``links``: then the link itself is removed.
        Nothing below is ever reached through a link.
        """
        kind = self.kind(name)
        if kind == "link" and not links:
            raise self.refuse(name, "a link")
        if kind == "folder":
            with self.folder(name) as sub:
                for entry in os.listdir(sub.fd):
                    sub.remove(entry, links)
            os.rmdir(name, dir_fd=self.fd)
        elif kind:
            os.unlink(name, dir_fd=self.fd)


def open_cache(root, cache, create=False):
    """The cache folder ``cache`` (a CacheDir to close), walked from ``root`` without following any link below it.

    ``root`` is trusted (the operator's model cache; it may itself be a link to a larger disk); ``cache`` must be
    it or a folder below it. None when a folder on the way does not exist and ``create`` is false.
    """
    base = os.path.normpath(os.path.abspath(root))
    target = os.path.normpath(os.path.abspath(cache))
    relative = os.path.relpath(target, base)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        raise UnsafeCacheEntryError(f"the cache {shown(cache)} is not inside the model cache {shown(root)}")
    if create:
        os.makedirs(base, mode=0o755, exist_ok=True)
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except FileNotFoundError:
        return None
    with CacheDir(fd, base) as top:
        parts = [] if relative == os.curdir else relative.split(os.sep)
        return top.walk(parts, create)
