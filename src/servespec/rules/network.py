"""NET rules: ports and exposure."""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule, bare, placements, policy, refusal
from servespec.spec.fleet import DeploymentDoc, Fleet
from servespec.spec.front_proxy import slot_ports

_OLLAMA_AUTH = "https://github.com/ollama/ollama/blob/v0.32.15/server/routes.go"
_TRTLLM_SERVE = "https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/tensorrt_llm/commands/serve.py"
_VLLM_AUTH = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/api_server.py"


def _claims(deployment: DeploymentDoc) -> Iterator[tuple[int, str]]:
    """The ports a deployment takes on each of its hosts, with what takes them."""
    port = deployment.spec.serving.port
    yield port, "serving.port"
    if deployment.spec.rollout.strategy == "auto" and deployment.spec.placement.hosts_per_replica == 1:
        for slot in slot_ports(port):  # a multi-node replica runs no proxy: its engine owns serving.port
            yield slot, f"strategy auto's slot port for serving.port {port}"


class PortConflict(Rule):
    """Two deployments must not claim the same port on one host.

    The second container would fail to bind (Docker: "port is already allocated"), and a
    rollout would take the first one's traffic. Deployments are compared across every
    file of the run, so put all of a fleet's specs in one ``deploy validate`` call.

    A deployment claims ``serving.port``; with ``rollout.strategy: auto`` (one host per
    replica) its front proxy owns that port and the engine publishes on ``127.0.0.1`` at one
    of two internal slot ports, ``serving.port`` + 10000 and + 20000 (both minus when that
    passes 65535: ``servespec.spec.front_proxy.slot_ports``), which it alternates between, so
    both are claimed too.

    Fix: give one of them another ``serving.port``, or place them on different hosts.

    Source: servespec contract v1, §1.1 (serving.port): docs/contract.md ; docs/rollout.md
    (strategy auto's front proxy and slot ports)
    """

    id = "NET001"
    name = "network.port-conflict"
    severity = Severity.ERROR
    evidence = (
        refusal(
            "https://man7.org/linux/man-pages/man2/bind.2.html",
            note="A second bind of one address and port fails with EADDRINUSE.",
        ),
    )
    summary = "two deployments claim the same port on one host (strategy auto's slot ports too)"
    sources = ("docs/contract.md", "docs/rollout.md")

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        claims: dict[tuple[str, str, int], list[tuple[DeploymentDoc, str]]] = defaultdict(list)
        for deployment, host in placements(fleet):
            for port, why in _claims(deployment):
                users = claims[(host.inventory.file, host.name, port)]
                if all(other is not deployment for other, _ in users):
                    users.append((deployment, why))
        for (_, host_name, port), users in claims.items():
            for deployment, why in users[1:]:
                others = ", ".join(
                    d.name + ("" if other_why == "serving.port" else f" ({other_why})")
                    for d, other_why in users
                    if d is not deployment
                )
                own = deployment.spec.serving
                default = "" if "port" in own.model_fields_set else " (the default)"
                mine = f"port {port}{default}" if why == "serving.port" else f"port {port}, {why},"
                yield self.report(
                    deployment.document,
                    f"{mine} on {host_name} is already claimed by {others}",
                    ("serving", "port"),
                    hint="choose another serving.port",
                )


def _loopback(bind: str) -> bool:
    """Whether ``bind`` reaches loopback only: 127.0.0.0/8, ``::1`` (``::`` is every interface)."""
    if bind in ("localhost", "ip6-localhost", "ip6-loopback"):
        return True
    try:
        address = ipaddress.ip_address(bind.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False  # a host name may resolve to anything: treat it as exposed
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is IPv4 loopback
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def _cluster_ports(deployment: DeploymentDoc, leader: str) -> str:
    """What a multi-node replica opens between its members, stated as the engines' sources show it."""
    known = resolve.resolved(deployment)
    cluster = known.engine.cluster(known.release, known.options)
    if cluster is None:
        return (
            f"{known.profile.title}'s members connect on ports servespec neither chooses "
            "nor restricts; servespec cannot say whether they authenticate"
        )
    if cluster.kind == "ray":
        return (
            f"Ray's head port {leader}:{cluster.port} and the ports Ray opens on every member let anyone who "
            "reaches them run code on the replica (Ray expects a trusted network); servespec passes "
            "--node-ip-address (the inventory address), but cannot limit the interfaces Ray listens on"
        )
    return (
        f"torch.distributed's TCPStore on {leader}:{cluster.port} ({cluster.flag}) and NCCL's connections have no "
        "authentication, and PyTorch's store listens on every interface (it has no bind-address option)"
    )


class ExposedWithoutAuth(Rule):
    """A server bound to a non-loopback address needs an API key.

    vLLM (``--api-key``/``VLLM_API_KEY``), SGLang (``--api-key``), TGI (``--api-key``) and
    llama.cpp (``--api-key``) check a bearer token when one is set; without it anyone who
    reaches the port can use the GPUs. Ollama's server has no API-key check at all
    (server/routes.go) and ``trtllm-serve`` has no API-key option (commands/serve.py), so
    for them a non-loopback bind is an error: put an authenticating proxy in front and
    bind the engine to loopback. Loopback is ``127.0.0.0/8``, ``::1``, ``::ffff:127.x`` and
    ``localhost``; ``0.0.0.0`` and ``::`` are every interface, and a host name counts as
    exposed.

    How the key reaches each engine (docs/engines/<engine>.md): vLLM ``VLLM_API_KEY`` and
    llama.cpp ``LLAMA_API_KEY`` from the environment; TGI's router alone gets ``API_KEY``
    (its launcher would put the key on the router's command line and in its log); SGLang
    0.5.23 reads a key only from ``--api-key``, so servespec adds it to ``sys.argv`` inside
    the process (on no command line), but SGLang still logs it at start-up
    (``server_args=...``, srt/entrypoints/engine.py) and returns it from ``/server_info`` to
    callers holding the key: whoever reads that container's log on the host learns the key.

    Multi-node replicas run on the host's network, so the engine itself listens on
    ``serving.bind`` on every member (the same check applies), and the members reach each
    other on cluster ports that have no authentication at all. A warning says which:

    - vLLM 0.11 (Ray): the Ray head port 6379 and the ports Ray opens on each member.
      servespec passes ``--node-ip-address`` (the inventory address) so members use the
      replica's network, but cannot limit the interfaces Ray listens on. Ray's security
      page: "Ray expects to run in a safe network environment", and anybody who can
      reach its services' ports "can execute arbitrary code on your Ray Cluster".
    - vLLM with ``--nnodes`` and SGLang: torch.distributed's TCPStore on the leader
      (``--master-port`` 29500, ``--dist-init-addr`` port 20000) and NCCL's connections.
      PyTorch's TCPStore server listens on every interface (socket.cpp binds the wildcard
      address; there is no bind-address option), so neither engine can restrict it.

    Fix: set ``serving.api_key: {from_env: VAR}`` (or ``from_file``), or bind to 127.0.0.1;
    for multi-node replicas, allow the cluster ports only between the replica's hosts
    (a host firewall or a private network).

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/api_server.py ;
    https://github.com/ollama/ollama/blob/v0.32.15/server/routes.go ;
    https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/tensorrt_llm/commands/serve.py ;
    https://docs.ray.io/en/latest/ray-security/index.html ;
    https://github.com/pytorch/pytorch/blob/v2.8.0/torch/csrc/distributed/c10d/socket.cpp ;
    https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/server_args.py
    """

    id = "NET002"
    name = "network.exposed-without-auth"
    severity = Severity.WARNING
    evidence = (policy("exposure-on-the-hosts", note="An engine without authentication on a non-loopback address."),)
    summary = "bound to a non-loopback address without an API key (error for engines without any auth)"
    sources = (
        _VLLM_AUTH,
        _OLLAMA_AUTH,
        _TRTLLM_SERVE,
        "https://docs.ray.io/en/latest/ray-security/index.html",
        "https://github.com/pytorch/pytorch/blob/v2.8.0/torch/csrc/distributed/c10d/socket.cpp",
        "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/entrypoints/engine.py",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            yield from self._serving(known)
            yield from self._cluster(known)

    def _cluster(self, known: resolve.Resolved) -> Iterator[Finding]:
        """Multi-node replicas: the ports members use to reach each other."""
        deployment = known.deployment
        if deployment.spec.placement.hosts_per_replica < 2:
            return
        hosts = known.hosts
        exposed = [bare(host.address) for host in hosts if not _loopback(host.address)]
        if not hosts or not exposed:
            return
        yield self.report(
            deployment.document,
            f"multi-node replica on {', '.join(exposed)}: {_cluster_ports(deployment, bare(hosts[0].address))}",
            ("placement", "hosts_per_replica"),
            hint="allow these ports only between the replica's hosts (host firewall or a private network)",
        )

    def _serving(self, known: resolve.Resolved) -> Iterator[Finding]:
        """The serving port: bound where serving.bind says, on one host or on every member of a replica."""
        deployment = known.deployment
        serving = deployment.spec.serving
        prof = known.profile
        if prof.auth is None and serving.api_key is not None:
            yield self._unenforceable(deployment, prof.title)
        if _loopback(serving.bind):
            return
        if prof.auth is None:
            yield self.report(
                deployment.document,
                f"{prof.title} has no API authentication and would listen on {bare(serving.bind)}",
                ("serving", "bind"),
                severity=Severity.ERROR,
                hint="bind to 127.0.0.1 and put an authenticating proxy in front",
            )
        elif serving.api_key is None:
            yield self.report(
                deployment.document,
                f"listens on {bare(serving.bind)} without an API key",
                ("serving", "bind"),
                hint="set serving.api_key: {from_env: VAR}, or bind to 127.0.0.1",
            )

    def _unenforceable(self, deployment: DeploymentDoc, title: str) -> Finding:
        return self.report(
            deployment.document,
            f"{title} has no API authentication: serving.api_key cannot be enforced",
            ("serving", "api_key"),
            severity=Severity.ERROR,
            hint="remove it and put an authenticating proxy in front",
        )
