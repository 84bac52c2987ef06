"""NET rules: ports and exposure."""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule, placements
from servespec.spec.fleet import DeploymentDoc, Fleet

_OLLAMA_AUTH = "https://github.com/ollama/ollama/blob/v0.32.15/server/routes.go"
_TRTLLM_SERVE = "https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/tensorrt_llm/commands/serve.py"
_VLLM_AUTH = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/api_server.py"


class PortConflict(Rule):
    """Two deployments must not claim the same port on one host.

    The second container would fail to bind (Docker: "port is already allocated"), and a
    rollout would take the first one's traffic. Deployments are compared across every
    file of the run, so put all of a fleet's specs in one ``deploy validate`` call.

    Fix: give one of them another ``serving.port``, or place them on different hosts.

    Source: servespec contract v1, §1.1 (serving.port): docs/contract.md
    """

    id = "NET001"
    name = "network.port-conflict"
    severity = Severity.ERROR
    summary = "two deployments claim the same port on one host"
    sources = ("docs/contract.md",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        claims: dict[tuple[str, str, int], list[DeploymentDoc]] = defaultdict(list)
        for deployment, host in placements(fleet):
            claims[(host.inventory.file, host.name, deployment.spec.serving.port)].append(deployment)
        for (_, host_name, port), users in claims.items():
            if len(users) < 2:
                continue
            for deployment in users[1:]:
                others = ", ".join(d.name for d in users if d is not deployment)
                default = "" if "port" in deployment.spec.serving.model_fields_set else " (the default)"
                yield self.report(
                    deployment.document,
                    f"port {port}{default} on {host_name} is already claimed by {others}",
                    ("serving", "port"),
                    hint="choose another serving.port",
                )


def _loopback(bind: str) -> bool:
    if bind in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return False


class ExposedWithoutAuth(Rule):
    """A server bound to a non-loopback address needs an API key.

    vLLM (``--api-key``/``VLLM_API_KEY``), SGLang (``--api-key``), TGI (``--api-key``) and
    llama.cpp (``--api-key``) check a bearer token when one is set; without it anyone who
    reaches the port can use the GPUs. Ollama's server has no API-key check at all
    (server/routes.go) and ``trtllm-serve`` has no API-key option (commands/serve.py), so
    for them a non-loopback bind is an error: put an authenticating proxy in front and
    bind the engine to loopback.

    Fix: set ``serving.api_key: {from_env: VAR}`` (or ``from_file``), or bind to 127.0.0.1.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/entrypoints/openai/api_server.py ;
    https://github.com/ollama/ollama/blob/v0.32.15/server/routes.go ;
    https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/tensorrt_llm/commands/serve.py
    """

    id = "NET002"
    name = "network.exposed-without-auth"
    severity = Severity.WARNING
    summary = "bound to a non-loopback address without an API key (error for engines without any auth)"
    sources = (_VLLM_AUTH, _OLLAMA_AUTH, _TRTLLM_SERVE)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            serving = deployment.spec.serving
            prof = resolve.profile(deployment)
            if prof.auth is None and serving.api_key is not None:
                yield self._unenforceable(deployment, prof.title)
            if _loopback(serving.bind):
                continue
            if prof.auth is None:
                yield self.report(
                    deployment.document,
                    f"{prof.title} has no API authentication and would listen on {serving.bind}",
                    ("serving", "bind"),
                    severity=Severity.ERROR,
                    hint="bind to 127.0.0.1 and put an authenticating proxy in front",
                )
            elif serving.api_key is None:
                yield self.report(
                    deployment.document,
                    f"listens on {serving.bind} without an API key",
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
