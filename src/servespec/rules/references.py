"""REF rules: names and files a spec refers to must exist."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.rules.base import Rule, contract
from servespec.spec.fleet import MODEL_CONFIG, DeploymentDoc, Fleet
from servespec.spec.loader_rules import MISSING_FILE
from servespec.spec.source import quote_value

_CONTRACT = "docs/contract.md"


class UnknownHost(Rule):
    """Every host in ``placement.hosts`` must be defined in the deployment's inventory.

    A deployment placed on a host the inventory does not define could never be rolled
    out there; the finding suggests the closest inventory host name.

    Source: servespec contract v1, §1.1 (placement) and §1.2 (inventory): docs/contract.md
    """

    id = "REF001"
    name = "ref.unknown-host"
    severity = Severity.ERROR
    evidence = (contract("12-inventory", note="placement.hosts names inventory hosts."),)
    summary = "host named in placement.hosts not in the inventory"
    hint = "add the host to the inventory or fix the name"
    sources = (_CONTRACT,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            inventory = deployment.inventory
            if inventory is None or deployment.spec.placement.hosts is None:
                continue
            for index, host in enumerate(deployment.spec.placement.hosts):
                if host in inventory.hosts:
                    continue
                close = difflib.get_close_matches(host, list(inventory.hosts), n=1, cutoff=0.6)
                named = deployment.inventory_named or inventory.file  # as the user wrote it, never absolute
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else f"hosts in {named}: " + ", ".join(sorted(inventory.hosts))
                )
                yield self.report(
                    deployment.document,
                    f"host {host!r} is not in the inventory {named}",
                    ("placement", "hosts", index),
                    hint=hint,
                )


class MissingFile(Rule):
    """Files a spec refers to must exist and be readable.

    Reported while loading for: the ``inventory`` file of a deployment, an inventory
    host's ``facts`` file, a model's ``config`` file and ``engine.image_archive`` (only
    looked at, never read: it must be a regular file, of any size). Paths are relative to
    the file that names them and must stay inside the root (``--root DIR``; by default the
    checkout holding the path named on the command line, as named rather than where its
    symlinks lead: the nearest folder with ``.git``; without one, the current directory
    when the path lies inside it, else the named file's folder or the named folder).
    Absolute paths, ``..`` that climbs out of the root and symlinks that lead out of it
    are refused without reading the file, and so is anything but a regular file of
    bounded size (a FIFO, ``/dev/zero``) or a file whose real name holds a character no
    output can carry; the finding never quotes what the file holds. Files found while
    expanding a directory named on the command line that lead out are refused the same
    way; a named file or directory that itself leads out of the root is a usage error
    (exit 2). A facts file is written by ``deploy discover``; run it again, or declare
    the host's ``hardware`` by hand. Messages name the file as the referring file wrote
    it, never an absolute path, a symlink's target or the operating system's error text.

    Source: servespec contract v1, §1.1 and §1.2: docs/contract.md
    """

    id = MISSING_FILE.id
    name = MISSING_FILE.name
    severity = MISSING_FILE.severity
    evidence = (contract("1-files-a-user-writes", note="A file the spec references cannot be read."),)
    summary = MISSING_FILE.summary
    hint = MISSING_FILE.hint
    sources = (_CONTRACT,)


class FactsMissing(Rule):
    """GPU models and model architectures must be known, or the memory rules cannot run.

    A GPU model resolves against the built-in catalog (``deploy explain`` lists sources;
    nvidia-smi spellings such as "NVIDIA A100-SXM4-80GB" and "Tesla T4" are accepted). A
    model resolves, first match winning, from ``model.config`` (a config.json), a local
    model directory or GGUF file, the local Hugging Face cache, ``models.lock.yaml`` beside
    the specs (``deploy lock``), the built-in catalog, or (opt-in, ``--hub``) the Hub,
    overlaid with inline ``model.architecture`` facts. When either is unknown,
    MEM, PAR001/PAR004, HW and ROL002 checks that need it are skipped and this warning
    says so once, instead of guessing. Unknown GPUs are reported for the hosts deployments
    use (or for every host when an inventory is validated on its own). When REF002 reports
    a deployment's ``model.config`` file (missing, refused, unreadable or too large), this
    warning stays silent about that deployment's model: the error already says why. A model
    whose weights are sized but whose KV cache the deployment's engine is not modelled for gets
    this warning too, and no memory plan is made (``Engine.kv_unmodelled``): DeepSeek V4's
    compressed attention on every engine (knowledge/deepseek_v4.py), and on SGLang a model with
    linear-attention layers whose state pool, which shares the KV budget, is not modelled for its
    kind of layer (only Gated DeltaNet is) or release (engines/sglang/mamba.py).

    Fix: write the GPU as nvidia-smi prints it; for the model, run ``deploy lock`` (it
    resolves it once and commits its facts), or give ``model.config`` /
    ``model.architecture`` (layers, hidden_size, attention_heads, kv_heads, ...).

    Source: NVIDIA CUDA GPUs (https://developer.nvidia.com/cuda-gpus); Hugging Face
    config.json fields (transformers configuration classes).
    """

    id = "REF003"
    name = "ref.unknown-facts"
    severity = Severity.WARNING
    summary = "unknown GPU model or model architecture: memory rules cannot run"
    sources = (
        "https://developer.nvidia.com/cuda-gpus",
        "https://huggingface.co/docs/transformers/main_classes/configuration",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        from servespec.knowledge import resolve

        for deployment in fleet.deployments:
            if MODEL_CONFIG in deployment.broken_references:
                continue  # REF002 reported the model.config file; saying "no facts" again adds nothing
            known = resolve.resolved(deployment)
            answer = known.model
            model = deployment.spec.model
            where = "config" if model.config else "architecture" if model.architecture else "source"
            if answer.facts is None:
                yield self.report(
                    deployment.document,
                    answer.problem,
                    ("model", where),
                    hint="run `deploy lock` (it writes models.lock.yaml), or add model.config or model.architecture",
                )
            elif why := known.engine.kv_unmodelled(answer.facts, known.release):
                yield self.report(
                    deployment.document,
                    f"{quote_value(answer.facts.name)}: {why}",
                    ("model", where),
                    hint="size the KV cache from the engine's own start-up log; servespec gives no memory plan for it",
                )
        placed = {(id(h.inventory), h.name) for d in fleet.deployments for h in resolve.resolved(d).hosts}
        for inventory in fleet.inventories:
            for host in inventory.hosts.values():
                if fleet.deployments and (id(inventory), host.name) not in placed:
                    continue  # an inventory checked with deployments: only the hosts they use
                gpus = resolve.host_gpus(host)
                if gpus.count and gpus.name and not gpus.known:
                    document, path = host.hardware_path("gpus", "model")
                    if document is None:
                        continue
                    yield self.report(
                        document,
                        f"GPU model{_gpu_shown(document is host.facts_document, gpus.name)} of {host.name} "
                        "is not in the catalog",
                        path,
                        hint="write the name as nvidia-smi prints it (e.g. 'NVIDIA A100-SXM4-80GB')",
                    )


def _gpu_shown(from_facts: bool, name: str) -> str:
    # A facts file is written from what a host reported, and named by a reference: never quoted.
    return " named in the facts file" if from_facts else f" {quote_value(name)}"


class StaleFacts(Rule):
    """Facts files should be recent: hardware, drivers and BIOS settings change.

    A facts file records when ``deploy discover`` collected it (``collected_at``). One older
    than the inventory's ``defaults.facts_max_age_days`` (30 by default) may no longer
    describe the host — a driver upgrade, a GPU swap, ACS re-enabled by a BIOS update — so
    rules would judge a machine that no longer exists.

    Fix: run ``deploy discover -i INVENTORY -o DIR`` again and commit the facts, or raise
    ``defaults.facts_max_age_days``.

    Source: servespec contract v1, §2.3 (facts files): docs/contract.md
    """

    id = "REF004"
    name = "ref.stale-facts"
    severity = Severity.WARNING
    summary = "facts file older than the inventory's facts_max_age_days"
    hint = "run deploy discover again"
    sources = ("docs/contract.md",)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        import datetime

        now = datetime.datetime.now(datetime.UTC)
        for inventory in fleet.inventories:
            limit = inventory.spec.defaults.facts_max_age_days
            for host in inventory.hosts.values():
                stamp = host.facts_collected_at
                if stamp is None or host.facts_document is None:
                    continue
                try:
                    collected = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
                except ValueError:
                    continue
                if collected.tzinfo is None:
                    collected = collected.replace(tzinfo=datetime.UTC)
                age = (now - collected).days
                if age > limit:
                    yield self.report(
                        host.facts_document,
                        f"facts of {host.name} were collected {age} days ago (limit {limit})",
                        ("collected_at",),
                    )


def _lock_file_findings(deployment: DeploymentDoc) -> tuple[Finding, ...]:
    """The problems inside the lock file beside ``deployment``'s spec, located in it (each said once: findings are
    deduplicated, however many specs share the file)."""
    from servespec.knowledge.lock import file_findings
    from servespec.spec.paths import default_root

    document = deployment.document
    return file_findings(document.path.parent, document.root or default_root(document.path))


class ModelLockMismatch(Rule):
    """``models.lock.yaml`` beside a spec must agree with it, and be readable.

    ``deploy lock`` records, for each ``model.source``, the commit its facts were read at;
    ``deploy validate`` then reads the model's facts from the lock, offline. When the spec
    pins ``model.revision`` to a commit (a sha or an unambiguous prefix of one) and the lock
    recorded another, the lock describes a different checkpoint: its facts are not used and
    this error says so at ``model.revision``. A branch or tag name is never a disagreement (the
    lock records the commit it resolved to). A lock file that cannot be read, is refused (a
    symlink out of the root) or does not follow the format is reported at ``model.source`` of
    each spec beside it; nothing in it is used then. What is wrong inside it is said once more,
    located in the lock file: SS001 for its YAML (it is read with the specs' budgets), SS002-SS004
    for a value that does not follow the lock format.

    Fix: run ``deploy lock`` on the specs again and commit ``models.lock.yaml``, or pin
    ``model.revision`` to the commit the lock names.

    Source: servespec contract v1, §5 (``deploy lock``, ``models.lock.yaml``): docs/contract.md
    """

    id = "REF005"
    name = "ref.model-lock"
    severity = Severity.ERROR
    evidence = (contract("2-command-line", note="models.lock.yaml is the spec's pinned record (deploy lock)."),)
    summary = "models.lock.yaml disagrees with the spec's pinned model.revision, or cannot be used"
    hint = "run deploy lock again and commit models.lock.yaml"
    sources = (_CONTRACT,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        from servespec.knowledge import sources

        for deployment in fleet.deployments:
            model = deployment.spec.model
            entry, problem = sources.lock_entry(deployment)
            if problem:
                yield self.report(deployment.document, problem, ("model", "source"))
                yield from _lock_file_findings(deployment)
            elif entry is not None and sources.revision_conflict(model.revision, entry.revision):
                yield self.report(
                    deployment.document,
                    f"models.lock.yaml locks {quote_value(model.source)} at {entry.revision}, but model.revision "
                    f"pins {quote_value(model.revision)}",
                    ("model", "revision"),
                )
