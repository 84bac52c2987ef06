"""``rollout.strategy: auto``'s front proxy as a spec implies it: its default image and the engine's internal ports.

The front proxy (HAProxy) owns ``serving.bind:serving.port``; the engine container publishes on
``127.0.0.1`` at one of two internal slot ports, the one the running revision does not use, so a
new revision can start beside the old one. Rules (NET001, SEC002) and the rollout
(:mod:`servespec.rollout.surge`) read these one definitions.
"""

from __future__ import annotations

DEFAULT_PROXY_IMAGE = "haproxy:2.6"
"""HAProxy's official image at the LTS branch Debian bookworm ships (haproxy 2.6.12): https://hub.docker.com/_/haproxy"""
SLOT_OFFSETS = (10000, 20000)
"""The engine's internal ports are ``serving.port`` plus these (minus them when that passes 65535)."""


def slot_ports(port: int) -> tuple[int, int]:
    """The two internal ports the engine alternates between behind the proxy."""
    low, high = SLOT_OFFSETS
    return (port + low, port + high) if port + high <= 65535 else (port - high, port - low)


def replica_name(deployment: str, index: int) -> str:
    """The container of replica ``index`` of ``placement.replicas_per_host`` (the role's modules name it the same)."""
    return f"servespec-{deployment}-r{index}"


def replica_ports(port: int, index: int) -> tuple[int, int]:
    """Replica ``index``'s two internal slot ports: :func:`slot_ports` shifted by the index.

    ``placement.replicas_per_host`` is at most 16 (spec/models.py), so the replicas' ports stay
    apart: the low ports run ``low .. low + 15``, 10000 below the high ones.
    """
    low, high = slot_ports(port)
    return (low + index, high + index)
