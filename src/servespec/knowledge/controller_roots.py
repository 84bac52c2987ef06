"""Which local model folders the controller itself may read: a checkout never widens them (issue 20, item 12).

The inventory's ``defaults.model_roots`` say which host folders a local ``model.source`` may
be mounted from (SEC004). ``deploy validate`` and the other commands also read that folder *on
the controller* when it is there (knowledge.sources: config.json, safetensors and GGUF
headers), and in CI the inventory is the pull request's own file. So on the controller:

- folders the operator names with ``--model-roots`` (on the command line) are the roots;
- else the built-in default roots, when the inventory does not set ``model_roots`` (or is the
  built-in local one, or a file outside the spec's checkout, which the operator chose with
  ``-i``);
- else only the entries of the checkout's inventory that lie inside the checkout (resolved);
  an entry outside it is not read from, and the model's facts say so (REF003 at
  ``model.source``), naming the flag that allows it;

and the source itself is resolved (every symlink followed) and must still lie under a resolved
root, outside the system folders: a link under a root that leads to ``/etc`` or ``/root`` is
not read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from servespec.spec.fleet import DeploymentDoc

_OPERATOR: ContextVar[tuple[str, ...] | None] = ContextVar("servespec_model_roots", default=None)


@contextlib.contextmanager
def operator_roots(roots: tuple[str, ...] | None) -> Iterator[None]:
    """Within this block, the controller reads local models under ``roots`` only (``--model-roots``); None: unset."""
    token = _OPERATOR.set(tuple(roots) if roots else None)
    try:
        yield
    finally:
        _OPERATOR.reset(token)


def _checkout(deployment: DeploymentDoc) -> Path:
    from servespec.spec.paths import default_root

    document = deployment.document
    return Path(os.path.realpath(document.root or default_root(document.path)))


def _inside(path: str, folder: Path) -> bool:
    resolved = Path(os.path.realpath(path))
    return resolved == folder or resolved.is_relative_to(folder)


def readable_roots(deployment: DeploymentDoc) -> tuple[list[str], list[str]]:
    """(roots the controller reads local models under, the checkout inventory's entries left out)."""
    from servespec.hostpaths import model_roots

    operator = _OPERATOR.get()
    if operator is not None:
        return list(operator), []
    roots = model_roots(deployment)
    inventory = deployment.inventory
    if inventory is None or inventory.document is None:
        return roots, []
    if "model_roots" not in inventory.spec.defaults.model_fields_set:
        return roots, []  # the built-in defaults: nothing the checkout added
    checkout = _checkout(deployment)
    if not _inside(str(inventory.document.path), checkout):
        return roots, []  # an inventory the operator named from outside the checkout (-i)
    kept = [root for root in roots if root.startswith("/") and _inside(root, checkout)]
    return kept, [root for root in roots if root not in kept]


def read_problem(source: str, deployment: DeploymentDoc) -> str | None:
    """Why the controller does not read the local ``source`` ("" when it may; None when no root names it).

    Checked twice: as written, against the roots (as SEC004 does), then resolved, against the
    resolved roots, so that a symlink cannot lead the read out of them or into a system folder.
    """
    from servespec.hostpaths import local_source_problem, mounted_folder
    from servespec.spec.source import quote_value

    roots, left_out = readable_roots(deployment)
    if local_source_problem(source, roots):
        if left_out and not local_source_problem(source, left_out):
            return (
                f"{quote_value(source)} lies under a model root that the checkout's inventory names outside the "
                "checkout: not read on this machine (the operator may pass --model-roots FOLDER to read it)"
            )
        return None  # SEC004 reports a path outside the model roots; it is never read
    resolved = os.path.realpath(source)
    if local_source_problem(resolved, [os.path.realpath(root) for root in roots if root.startswith("/")]):
        shown = mounted_folder(source)
        return f"{quote_value(shown)} leads (through a symlink) out of the model roots: not read on this machine"
    return ""
