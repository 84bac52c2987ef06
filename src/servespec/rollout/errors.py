"""The rollout's one error type (its own module so that every rollout module can raise it)."""

from __future__ import annotations


class RolloutError(Exception):
    """A problem found on the controller before any host is touched (missing secret, ...)."""
