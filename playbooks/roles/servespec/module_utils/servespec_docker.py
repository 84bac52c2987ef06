# servespec: read-only calls to the host's Docker engine API, without the Docker SDK.
#
# The role's read-only modules (status, preflight, probe) only inspect: a container, an image,
# the engine's info, a container's processes, the container names. Importing the Docker SDK for
# that (docker -> requests, urllib3, ...) costs about 0.3 CPU-seconds on a test host, more than
# the rest of such a module run; on a fleet each host pays it in every phase. These calls speak
# the Engine API (https://docs.docker.com/reference/api/engine/) over its unix socket with the
# standard library, as the SDK does: GET /_ping, /info, /containers/json?all=1,
# /containers/{id}/json, /containers/{id}/top, /images/{name}/json. When DOCKER_HOST names
# anything but a unix socket (tcp://, ssh://), they go through the SDK as before.

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse

DEFAULT_SOCKET = "/var/run/docker.sock"  # the SDK's and the CLI's default (DEFAULT_UNIX_SOCKET)


class EngineError(Exception):
    """The engine answered with an error, or could not be reached."""


class NotFoundError(EngineError):
    """The engine has no such container or image (HTTP 404)."""


def _socket_path():
    """The engine's unix socket, or None when DOCKER_HOST names another transport."""
    host = os.environ.get("DOCKER_HOST", "")
    if not host:
        return DEFAULT_SOCKET
    if host.startswith("unix://"):
        return host[len("unix://") :]
    return None


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._socket_file = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._socket_file)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _get(path, timeout=60):
    """The JSON body of GET ``path`` (EngineError, NotFoundError on 404)."""
    connection = _UnixConnection(_socket_path(), timeout)
    try:
        connection.request("GET", path, headers={"Host": "docker"})
        response = connection.getresponse()
        body = response.read()
    except OSError as err:
        raise EngineError(f"Docker engine not reachable at {connection._socket_file}: {err}") from err
    finally:
        connection.close()
    if response.status == 404:
        raise NotFoundError(path)
    if response.status >= 400:
        try:
            message = json.loads(body).get("message", "")
        except (ValueError, AttributeError):
            message = body[:200].decode("utf-8", "replace")
        raise EngineError(f"Docker engine: HTTP {response.status} for {path}: {message}")
    return json.loads(body) if body.strip() and body.strip() != b"OK" else None


def _quote(name):
    return urllib.parse.quote(name, safe="/:")  # as the SDK quotes path arguments (APIClient._url)


def _sdk():
    import docker

    return docker.from_env()


def ping():
    """Raise EngineError unless the engine answers."""
    if _socket_path() is None:
        _sdk().ping()
        return
    _get("/_ping", timeout=10)


def info():
    """GET /info: the engine's information (Runtimes, ...)."""
    return _sdk().info() if _socket_path() is None else _get("/info")


def container(name):
    """The container's inspect document (State.Status, State.StartedAt, RestartCount, ...), or None."""
    if _socket_path() is None:
        from docker.errors import NotFound as SdkNotFound

        try:
            return _sdk().containers.get(name).attrs
        except SdkNotFound:
            return None
    try:
        return _get(f"/containers/{_quote(name)}/json")
    except NotFoundError:
        return None


def container_names():
    """The names of every container, stopped ones included."""
    if _socket_path() is None:
        return {c.name for c in _sdk().containers.list(all=True)}
    listed = _get("/containers/json?all=1") or []
    return {name.lstrip("/") for entry in listed for name in entry.get("Names") or []}


def top(name):
    """GET /containers/{name}/top: {"Titles": [...], "Processes": [[...], ...]} (EngineError when stopped)."""
    if _socket_path() is None:
        return _sdk().containers.get(name).top()
    return _get(f"/containers/{_quote(name)}/top")


def image_present(reference):
    """Whether the engine has the image ``reference`` (name:tag or id)."""
    if _socket_path() is None:
        from docker.errors import ImageNotFound

        try:
            _sdk().images.get(reference)
            return True
        except ImageNotFound:
            return False
    try:
        _get(f"/images/{_quote(reference)}/json")
        return True
    except NotFoundError:
        return False
