"""Load every document of a run into one fleet: deployments, their inventories and host facts.

All files named on the command line are validated together, because later rules compare
deployments across files (ports, shared GPUs). Inventories and facts files referenced
from specs are loaded once each, and their own problems are reported in their own files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from servespec.findings import Finding
from servespec.spec.files import (
    RUN_BUDGET,
    Named,
    UsageError,
    collect_files,
    display_path,
    escaping_symlink,
    name_problem,
    named_files,
    over_budget,
    refuse_named_outside,
    root_for,
    run_budget_finding,
)
from servespec.spec.loader_rules import MISSING_FIELD, MISSING_FILE
from servespec.spec.models import API_VERSION, KINDS, Deployment, FactsFile, Hardware, Host, HostRuntime, Inventory
from servespec.spec.paths import (
    MAX_REFERENCED_BYTES,
    UNREADABLE_HINT,
    PathRefusedError,
    default_root,
    named_location,
    open_for_reading,
    read_bounded,
    resolve_inside,
)
from servespec.spec.slo import MAX_SLO_DATASET_BYTES, SloPrompt, parse_slo_dataset
from servespec.spec.source import Document, KeyPath, Usage, load_file, quote_value
from servespec.spec.validation_findings import findings_from_error
from servespec.text import printable

LOCAL_INVENTORY = "<built-in local inventory>"

INVENTORY: KeyPath = ("inventory",)
MODEL_CONFIG: KeyPath = ("model", "config")
IMAGE_ARCHIVE: KeyPath = ("engine", "image_archive")
MODEL_ARCHIVE: KeyPath = ("model", "archive")
CHAT_TEMPLATE: KeyPath = ("serving", "chat_template")
"""The keys of a Deployment that name a file (REF002 reports the ones that fail)."""
MAX_CHAT_TEMPLATE_BYTES = 1024 * 1024
"""Largest chat template read (the biggest Hub chat templates are tens of kilobytes)."""
SLO_DATASET: KeyPath = ("slo", "workload", "dataset")


@dataclass
class HostView:
    """One inventory host with its hardware merged from its facts file and its declaration."""

    name: str
    spec: Host
    inventory: InventoryDoc
    hardware: Hardware | None
    links: list[tuple[int, int, str]] = field(default_factory=list)
    facts_document: Document | None = None
    facts_collected_at: str | None = None
    runtime: HostRuntime | None = None
    """The facts file's ``runtime`` part (container runtime, model-cache space, busy GPUs)."""

    @property
    def address(self) -> str:
        """Where Ansible and health checks reach the host."""
        return self.spec.address or self.name

    def hardware_path(self, *keys: str) -> tuple[Document | None, KeyPath]:
        """The document and key path that declared a hardware field, for locating findings."""
        document = self.inventory.document
        declared = self.spec.hardware
        if declared is not None and keys and keys[0] in declared.model_fields_set:
            return document, ("hosts", self.name, "hardware", *keys)
        if self.facts_document is not None:
            return self.facts_document, ("hardware", *keys)
        return document, ("hosts", self.name)


@dataclass
class InventoryDoc:
    """A loaded inventory; ``document`` is None for the built-in local inventory."""

    spec: Inventory
    document: Document | None
    hosts: dict[str, HostView] = field(default_factory=dict)

    @property
    def file(self) -> str:
        """The inventory's file as shown to users."""
        return self.document.file if self.document else LOCAL_INVENTORY


@dataclass(eq=False)
class DeploymentDoc:
    """A valid Deployment with the document it came from and its resolved inventory.

    Compared by identity (``eq=False``); ``resolved`` holds knowledge.resolve's one
    ``Resolved`` of it, built on first use.
    """

    spec: Deployment
    document: Document
    inventory: InventoryDoc | None
    broken_references: frozenset[KeyPath] = frozenset()
    """The file references of this deployment REF002 reported (:data:`MODEL_CONFIG`, say): rules
    that would only say again that the file gave them nothing stay silent about them."""
    inventory_named: str = ""
    """The inventory as the user named it, for messages: the spec's ``inventory`` (relative to the
    spec), the ``-i`` path as given, or the built-in local inventory's label."""
    resolved: Any = field(default=None, init=False, repr=False)
    chat_template: str | None = None
    """The text of ``serving.chat_template``, read at load (None: unset, or REF002 reported the file)."""
    slo_prompts: tuple[SloPrompt, ...] | None = None
    """The prompts of ``slo.workload.dataset``, read at load (None: unset, or REF002 reported the file)."""

    @property
    def name(self) -> str:
        """The deployment's metadata.name."""
        return self.spec.metadata.name


@dataclass
class Fleet:
    """Everything one run loaded, and the problems met while loading it."""

    files: list[str] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    deployments: list[DeploymentDoc] = field(default_factory=list)
    inventories: list[InventoryDoc] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class _Loader:
    """Loads files once each and validates their documents against the models."""

    def __init__(self, fleet: Fleet, inventory_override: Path | None, root: Path | None) -> None:
        self.fleet = fleet
        self.override = named_location(inventory_override) if inventory_override else None
        self.override_named = printable(str(inventory_override)) if inventory_override else ""
        """The ``-i`` file as named (absolute, normalised), never through its symlinks."""
        self.root = root
        self.inventories: dict[Path, InventoryDoc | None] = {}
        self.local: InventoryDoc | None = None
        self.parsed: dict[Path, tuple[list[Document], list[Finding], Usage]] = {}
        """Files parsed ahead of time by worker processes (see :func:`_parse_in_parallel`)."""
        self.spent = Usage()
        self.exhausted = False
        self.broken: dict[int, set[KeyPath]] = {}
        """REF002's key paths, by the id of the document that holds the reference."""

    def read(self, named: Named) -> list[Document]:
        """Load a file named on the command line (or found in a directory named there)."""
        path, shown = named.path, display_path(named.path)
        parsed = self.parsed.pop(path, None)
        refusal = name_problem(shown) or escaping_symlink(named)
        if refusal is not None:
            self.fleet.files.append(printable(shown))
            self.fleet.findings.append(refusal)
            return []
        try:
            return self._take(path, shown, named.root, parsed, referenced=False)
        except PathRefusedError as refused:
            raise UsageError(f"{printable(str(path))}: {refused.reason}") from None
        except OSError as err:
            raise UsageError(f"{printable(str(path))}: cannot read: {err.strerror}") from err

    def read_referenced(self, path: Path, root: Path) -> list[Document]:
        """Load a file another file refers to (already resolved inside ``root``). OSError escapes."""
        return self._take(path, display_path(path), root, None, referenced=True)

    def _take(
        self,
        path: Path,
        shown: str,
        root: Path,
        parsed: tuple[list[Document], list[Finding], Usage] | None,
        *,
        referenced: bool,
    ) -> list[Document]:
        self.fleet.files.append(printable(shown))
        if self.exhausted:
            return []  # the run's budget is spent: one finding said so, later files are not read
        if parsed is None:
            usage = Usage()
            documents, findings = load_file(path, shown, usage, referenced=referenced)
        else:
            documents, findings, usage = parsed
        self.spent.add(usage)
        if over_budget(self.spent, RUN_BUDGET):
            self.exhausted = True
            self.fleet.findings.append(run_budget_finding(shown))
            return []
        for document in documents:
            document.root = root
        self.fleet.findings.extend(findings)
        self.fleet.documents.extend(documents)
        return documents

    def missing_file(self, referrer: Document, key: KeyPath, message: str, hint: str | None = None) -> None:
        """Report REF002 at ``key`` of ``referrer`` and remember that this reference failed."""
        self.fleet.findings.append(MISSING_FILE.at(referrer, message, key, hint=hint))
        self.broken.setdefault(id(referrer), set()).add(key)

    def referenced(self, referrer: Document, reference: str, key: KeyPath, what: str, hint: str) -> Path | None:
        """Resolve a path ``referrer`` names inside its root, or report REF002 at ``key``.

        Messages name the file as ``referrer`` wrote it (relative to itself), never the
        absolute path it resolves to, a symlink's target or the operating system's error text.
        """
        root = referrer.root or default_root(referrer.path)
        try:
            return resolve_inside(reference, referrer.path.parent, root)
        except PathRefusedError as refused:
            if refused.missing:
                self.missing_file(referrer, key, f"{what} {_named(reference)} not found", hint)
            else:
                # Not quoted: a refused reference may be an absolute path or climb out of the checkout.
                self.missing_file(referrer, key, f"{what} refused: the path {refused.reason}", refused.hint)
            return None

    def check_archive(self, spec: Deployment, document: Document) -> None:
        """``engine.image_archive`` and ``model.archive`` must be readable regular files inside the root (REF002).

        They are only looked at and opened, never read: an archive is a multi-gigabyte
        tarball that apply copies, so no size bound applies.
        """
        for key, archive, what in (
            (IMAGE_ARCHIVE, spec.engine.image_archive, "image archive"),
            (MODEL_ARCHIVE, spec.model.archive, "model archive"),
        ):
            if archive is None:
                continue
            path = self.referenced(document, archive, key, what, "fix the path, relative to this file")
            if path is not None:
                self.check_opens(document, key, f"{what} {_named(archive)}", path)

    def check_opens(self, document: Document, key: KeyPath, what: str, path: Path) -> None:
        """REF002 at ``key`` unless ``path`` (resolved inside the root) opens for reading."""
        try:
            open_for_reading(path)
        except PathRefusedError as refused:
            self.missing_file(document, key, f"{what} {refused.reason}", refused.hint)

    def check_model_config(self, spec: Deployment, document: Document) -> None:
        """``model.config`` must be a readable regular file inside the root, of bounded size (REF002 otherwise).

        Checked here, at load, like every other file reference (nothing is read); the facts it
        holds are read by :mod:`servespec.knowledge`, and REF003 stays silent when this fired.
        """
        config = spec.model.config
        if config is None:
            return
        hint = "fix the path, relative to this file"
        path = self.referenced(document, config, MODEL_CONFIG, "model config file", hint)
        if path is None:
            return
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # gone since it was resolved: open_for_reading reports it
        if size > MAX_REFERENCED_BYTES:
            limit = MAX_REFERENCED_BYTES // (1024 * 1024)
            message = f"model config file {_named(config)} is larger than {limit} MiB"
            self.missing_file(document, MODEL_CONFIG, message, "name the model's config.json")
            return
        self.check_opens(document, MODEL_CONFIG, f"model config file {_named(config)}", path)

    def read_text(self, document: Document, written: str, key: KeyPath, what: str, limit: int, hint: str) -> str | None:
        """The text of a file a spec names at ``key``: UTF-8, a regular file inside the root, at most
        ``limit`` bytes (REF002 where not; ``hint`` says what the file should be)."""
        shown = f"{what} {_named(written)}"
        path = self.referenced(document, written, key, what, "fix the path, relative to this file")
        if path is None:
            return None
        try:
            data = read_bounded(path, limit, follow=False)
        except PathRefusedError as refused:
            self.missing_file(document, key, f"{shown} {refused.reason}", refused.hint)
            return None
        except OSError:
            self.missing_file(document, key, f"{shown} cannot be read", UNREADABLE_HINT)
            return None
        if len(data) > limit:
            self.missing_file(document, key, f"{shown} is larger than {limit // 1024} KiB", hint)
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.missing_file(document, key, f"{shown} is not UTF-8 text", "save it as UTF-8")
            return None

    def read_chat_template(self, spec: Deployment, document: Document) -> str | None:
        """The text of ``serving.chat_template`` (REF002 where it cannot be read)."""
        written = spec.serving.chat_template
        if written is None:
            return None
        return self.read_text(
            document,
            written,
            CHAT_TEMPLATE,
            "chat template file",
            MAX_CHAT_TEMPLATE_BYTES,
            "name the Jinja chat template itself",
        )

    def read_slo_dataset(self, spec: Deployment, document: Document) -> tuple[SloPrompt, ...] | None:
        """The prompts of ``slo.workload.dataset``: JSON Lines of ``{"prompt": str, "output_tokens": int}``
        (REF002 at the key, naming the line, where the file or a line is not that)."""
        written = spec.slo.workload.dataset if spec.slo else None
        if written is None:
            return None
        hint = 'one {"prompt": "...", "output_tokens": N} per line'
        text = self.read_text(document, written, SLO_DATASET, "slo dataset file", MAX_SLO_DATASET_BYTES, hint)
        if text is None:
            return None
        prompts, problem = parse_slo_dataset(text)
        if problem:
            self.missing_file(document, SLO_DATASET, f"slo dataset file {_named(written)}: {problem}", hint)
            return None
        return prompts

    def validate(self, document: Document) -> BaseModel | None:
        data = document.data
        if not isinstance(data, dict):
            self.fleet.findings.append(
                MISSING_FIELD.at(document, "document is not a mapping", hint="start it with 'apiVersion: servespec/v1'")
            )
            return None
        problem = _header_problem(document, data)
        if problem:
            self.fleet.findings.append(problem)
            return None
        model = KINDS[data["kind"]]
        try:
            return model.model_validate(data)
        except ValidationError as err:
            self.fleet.findings.extend(findings_from_error(document, model, err))
            return None

    def override_inventory(self) -> InventoryDoc | None:
        """The inventory named by ``-i`` (a missing one is a usage error)."""
        assert self.override is not None
        real = self.override.resolve()
        if real in self.inventories:
            return self.inventories[real]
        if not self.override.is_file():
            raise UsageError(f"{printable(str(self.override))}: inventory not found")
        root = root_for(self.override, self.root)
        refuse_named_outside(self.override, root)
        self.inventories[real] = None
        documents = self.read(Named(self.override, root, expanded=False))
        inventory = self._first_inventory(documents, None, (), str(self.override))
        self.inventories[real] = inventory
        return inventory

    def referenced_inventory(self, referrer: Document, reference: str) -> InventoryDoc | None:
        """The inventory a deployment names, resolved inside the deployment's root."""
        key = INVENTORY
        resolved = self.referenced(referrer, reference, key, "inventory file", "fix the path")
        if resolved is None:
            return None
        if resolved in self.inventories:
            return self.inventories[resolved]
        self.inventories[resolved] = None  # guards against an inventory that refers to itself
        try:
            documents = self.read_referenced(resolved, referrer.root or resolved.parent)
        except (OSError, PathRefusedError):
            self.missing_file(referrer, key, f"inventory file {_named(reference)} cannot be read", UNREADABLE_HINT)
            return None
        inventory = self._first_inventory(documents, referrer, key, reference)
        self.inventories[resolved] = inventory
        return inventory

    def _first_inventory(
        self, documents: list[Document], referrer: Document | None, key: KeyPath, reference: str
    ) -> InventoryDoc | None:
        for document in documents:
            if isinstance(document.data, dict) and document.data.get("kind") == "Inventory":
                spec = self.validate(document)
                return self.register(document, spec) if isinstance(spec, Inventory) else None
        if referrer is not None and documents:
            self.missing_file(referrer, key, f"inventory file {_named(reference)} holds no Inventory document")
        return None

    def register(self, document: Document, spec: Inventory) -> InventoryDoc:
        """Add a valid Inventory document to the fleet, with its hosts and their facts."""
        inventory = InventoryDoc(spec=spec, document=document)
        self._attach_hosts(inventory)
        self.fleet.inventories.append(inventory)
        return inventory

    def _attach_hosts(self, inventory: InventoryDoc) -> None:
        assert inventory.document is not None
        for name, host in inventory.spec.hosts.items():
            view = HostView(name=name, spec=host, inventory=inventory, hardware=host.hardware)
            if host.facts:
                self._merge_facts(view, inventory.document, host.facts)
            inventory.hosts[name] = view

    def _merge_facts(self, view: HostView, document: Document, reference: str) -> None:
        key: KeyPath = ("hosts", view.name, "facts")
        hint = f"run 'deploy discover -i {document.file}' or fix the path"
        path = self.referenced(document, reference, key, "facts file", hint)
        if path is None:
            return
        try:
            documents = self.read_referenced(path, document.root or path.parent)
        except (OSError, PathRefusedError):
            self.missing_file(document, key, f"facts file {_named(reference)} cannot be read", UNREADABLE_HINT)
            return
        if not documents:
            return
        facts_doc = documents[0]
        try:
            facts = FactsFile.model_validate(facts_doc.data)
        except ValidationError as err:
            self.fleet.findings.extend(findings_from_error(facts_doc, FactsFile, err))
            return
        declared = view.spec.hardware
        merged = facts.hardware.model_dump(exclude_unset=True)
        if declared is not None:
            merged.update(declared.model_dump(exclude_unset=True))
        view.hardware = Hardware.model_validate(merged)
        view.links = list(facts.links)
        view.facts_document = facts_doc
        view.facts_collected_at = facts.collected_at
        view.runtime = facts.runtime

    def local_inventory(self) -> InventoryDoc:
        if self.local is None:
            spec = Inventory.model_validate(
                {
                    "apiVersion": API_VERSION,
                    "kind": "Inventory",
                    "hosts": {"localhost": {"address": "127.0.0.1", "connection": "local"}},
                }
            )
            self.local = InventoryDoc(spec=spec, document=None)
            from servespec.spec.localfacts import local_hardware

            self.local.hosts["localhost"] = HostView(
                name="localhost", spec=spec.hosts["localhost"], inventory=self.local, hardware=local_hardware()
            )
        return self.local


def _named(reference: str) -> str:
    """A file reference as the referring file wrote it, quoted (escaped, cut, masked) for a message."""
    return quote_value(reference, limit=200)


def _shown(document: Document, value: Any) -> str:
    # A referenced file's values stay out of messages; the finding's location shows them.
    return "" if document.referenced else f" {quote_value(value)}"


def _header_problem(document: Document, data: dict[str, Any]) -> Finding | None:
    version = data.get("apiVersion")
    kind = data.get("kind")
    if version is None:
        return MISSING_FIELD.at(
            document, "required field 'apiVersion' is missing", hint=f"add 'apiVersion: {API_VERSION}'"
        )
    if version != API_VERSION:
        message = f"unsupported apiVersion{_shown(document, version)}"
        return MISSING_FIELD.at(document, message, ("apiVersion",), hint=f"use '{API_VERSION}'")
    if kind is None:
        hint = "add 'kind: Deployment' or 'kind: Inventory'"
        return MISSING_FIELD.at(document, "required field 'kind' is missing", hint=hint)
    if not isinstance(kind, str) or kind not in KINDS:
        message = f"unsupported kind{_shown(document, kind)}"
        return MISSING_FIELD.at(document, message, ("kind",), hint=f"use {' or '.join(KINDS)}")
    return None


PARALLEL_MIN_FILES = 64
"""From this many files on, YAML parsing (pure Python, the bulk of validate's time) is
spread over worker processes; below it, starting them costs more than it saves."""


def _parse_one(path: Path) -> tuple[list[Document], list[Finding], Usage] | None:
    try:
        usage = Usage()
        documents, findings = load_file(path, display_path(path), usage)
    except (OSError, PathRefusedError):
        return None  # read again in the parent, which turns the error into a usage error
    return documents, findings, usage


def _parse_in_parallel(files: list[Path]) -> dict[Path, tuple[list[Document], list[Finding], Usage]]:
    workers = min(os.cpu_count() or 1, 8)
    if len(files) < PARALLEL_MIN_FILES or workers < 2:
        return {}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = list(pool.map(_parse_one, files, chunksize=max(1, len(files) // (workers * 4))))
    except (OSError, RuntimeError):
        return {}  # no processes available: parse in this one
    return {path: result for path, result in zip(files, results, strict=True) if result is not None}


def load_fleet(paths: list[Path], inventory: Path | None = None, root: Path | None = None) -> Fleet:
    """Load and validate every document under ``paths``; never raises for bad content.

    Files the documents refer to must resolve inside ``root`` (default: the checkout
    containing each path named, see :func:`servespec.spec.paths.default_root`).
    """
    if root is not None and not root.is_dir():
        raise UsageError(f"--root {printable(str(root))}: not a directory")
    fleet = Fleet()
    loader = _Loader(fleet, inventory, root)
    pending: list[tuple[Deployment, Document]] = []
    named = named_files(paths, root)
    loader.parsed = _parse_in_parallel([n.path for n in named if escaping_symlink(n) is None])
    for entry in named:
        for document in loader.read(entry):
            spec = loader.validate(document)
            if isinstance(spec, Deployment):
                pending.append((spec, document))
            elif isinstance(spec, Inventory) and entry.path.resolve() not in loader.inventories:
                loader.inventories[entry.path.resolve()] = loader.register(document, spec)
    for spec, document in pending:
        loader.check_archive(spec, document)
        loader.check_model_config(spec, document)
        placed_in = _resolve(loader, spec, document)
        template = loader.read_chat_template(spec, document)
        dataset = loader.read_slo_dataset(spec, document)
        broken = frozenset(loader.broken.get(id(document), ()))
        inventory_named = loader.override_named or spec.inventory or LOCAL_INVENTORY
        deployment = DeploymentDoc(spec, document, placed_in, broken_references=broken, inventory_named=inventory_named)
        deployment.chat_template = template
        deployment.slo_prompts = dataset
        fleet.deployments.append(deployment)
    return fleet


def _resolve(loader: _Loader, spec: Deployment, document: Document) -> InventoryDoc | None:
    if loader.override is not None:
        return loader.override_inventory()
    if spec.inventory is not None:
        return loader.referenced_inventory(document, spec.inventory)
    return loader.local_inventory()


__all__ = [
    "CHAT_TEMPLATE",
    "IMAGE_ARCHIVE",
    "INVENTORY",
    "MODEL_CONFIG",
    "DeploymentDoc",
    "Fleet",
    "HostView",
    "InventoryDoc",
    "UsageError",
    "collect_files",
    "display_path",
    "load_fleet",
]
