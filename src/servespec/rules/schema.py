"""SS rules: a file's syntax and shape.

All but SS005 are reported while loading: their id, name, severity and summary are declared
once in :mod:`servespec.spec.loader_rules`, which builds their findings; the classes here are
their explain pages.
"""

from __future__ import annotations

from servespec.findings import Severity
from servespec.rules.base import Rule, contract
from servespec.spec.loader_rules import MISSING_FIELD, UNKNOWN_FIELD, WRONG_TYPE, YAML_SYNTAX

_YAML_SPEC = "https://yaml.org/spec/1.2.2/"
_CONTRACT = "docs/contract.md"
_GRAMMARS = (
    "https://www.rfc-editor.org/rfc/rfc1123#section-2.1",
    "https://pubs.opengroup.org/onlinepubs/9699919799/basedefs/V1_chap03.html#tag_03_437",
    "https://github.com/distribution/reference/blob/main/regexp.go",
    "https://huggingface.co/docs/huggingface_hub/package_reference/utilities#huggingface_hub.utils.validate_repo_id",
    "https://github.com/ollama/ollama/blob/main/types/model/name.go",
)


class YamlSyntax(Rule):
    """The file must be readable YAML that holds plain data.

    Reported while loading, before any other check, for: YAML syntax errors; duplicate
    keys (YAML 1.2 requires keys to be unique, and a parser that keeps the last one
    silently drops the first); explicit tags such as ``!!python/object/apply`` (a spec
    holds only mappings, lists and scalars, so tags can only be an attack or a mistake);
    anchors and aliases that expand to more than 20,000 nodes in one document (the "billion
    laughs" attack), or, all documents of a file together, to more than 20,000 nodes or
    256 KiB of characters through aliases (a bomb split over many documents, or one large
    scalar repeated into hundreds of megabytes of rendered files); more than 256 documents
    in one file (reported once, and none of them is read); nesting deeper than 32 levels;
    files over 1 MiB, binary files and text that is not UTF-8 (or UTF-16 with a byte-order
    mark); file names holding a line break, a control, bidi or zero-width character, or a
    line separator (such a file is not read: its name would reach rendered headers and
    terminals). All files of one run share a budget too (100,000 documents, and 100,000
    nodes or 1 MiB of characters through aliases); the file that exhausts it is reported
    and it and the files after it are not read.

    Messages quote pieces of the file only escaped, cut to a sane length and with
    anything token-shaped masked; for a file another file refers to (an inventory, a facts
    file) they quote nothing of it.

    Fix: correct the syntax at the reported line; remove the duplicate key or the tag.

    Source: YAML 1.2.2 specification, §3.2.1.1 (mapping keys are unique) and §6.1
    (indentation uses spaces only): https://yaml.org/spec/1.2.2/
    """

    id = YAML_SYNTAX.id
    name = YAML_SYNTAX.name
    severity = YAML_SYNTAX.severity
    evidence = (contract("1-files-a-user-writes", note="The file is not YAML a loader can read."),)
    summary = YAML_SYNTAX.summary
    sources = (_YAML_SPEC,)


class UnknownField(Rule):
    """Every key must be a field of the format; unknown keys are never ignored.

    A misspelt key (``max_model_length`` for ``max_model_len``) would otherwise be
    dropped silently and the engine would run on its default. The finding suggests the
    closest field name, or lists the fields allowed at that place.

    Engine options under ``engine.options`` are checked against the engine's own option
    catalog by ENG001 instead.

    Source: servespec contract v1, §1 (the file formats): docs/contract.md
    """

    id = UNKNOWN_FIELD.id
    name = UNKNOWN_FIELD.name
    severity = UNKNOWN_FIELD.severity
    evidence = (contract("11-deployment", note="A field the grammar does not have."),)
    summary = UNKNOWN_FIELD.summary
    sources = (_CONTRACT,)


class WrongType(Rule):
    """Every value must have the field's type and lie in its allowed set or range.

    Examples: ``tensor_parallel: 0`` (must be 1 or more), ``port: 70000`` (1–65535),
    ``dtype: bf16`` (one of auto, float16, bfloat16, float32), ``health_timeout: 5x``
    (a duration such as 15m), ``metadata.name: Qwen_Chat`` (a DNS label), an engine
    version written as a YAML number (``0.11`` reads as a float: quote it).

    Strings that name something follow that thing's grammar, so that none can read as an
    option or as a second word where it is used: ``address`` (an IPv4/IPv6 literal or an
    RFC 1123 host name, with ``_`` inside labels and a trailing ``.`` as real fleets use
    them), ``serving.bind`` (an IPv4/IPv6 literal only: Docker publishes ports on an
    address, not a name), ``ssh_user`` (a POSIX user name, with ``@`` and a trailing ``$``
    for directory users such as ``ubuntu@corp`` and ``svc$``), ``ssh_key`` (a path of
    portable file name characters), ``engine.image`` (the Docker reference grammar of
    distribution/reference: lower-case path components, a registry host first),
    ``model.source`` (a Hugging Face repo id as huggingface_hub's
    validate_repo_id checks it, a local path, or an Ollama name as ollama's
    types/model/name.go parses it), environment variable names (POSIX portable names),
    label keys (Kubernetes' ``[prefix/]name``). ``metadata.name`` may not be ``models`` or
    ``images``, the folders of /var/lib/servespec every deployment shares. No value or key
    may hold a line break, a control, bidi or zero-width character or a line separator,
    and numbers must be finite and of a sane size (NaN, ``.inf`` and 400-digit integers
    are refused here rather than failing later).

    Source: servespec contract v1, §1: docs/contract.md; the grammars: RFC 1123 §2.1, POSIX.1-2017
    §3.437, distribution/reference regexp.go, huggingface_hub validate_repo_id, ollama name.go.
    """

    id = WRONG_TYPE.id
    name = WRONG_TYPE.name
    severity = WRONG_TYPE.severity
    evidence = (contract("11-deployment", note="A value outside the grammar's type or set."),)
    summary = WRONG_TYPE.summary
    sources = (_CONTRACT, *_GRAMMARS)


class MissingField(Rule):
    """Required fields must be present and every document must name a supported format.

    Every document starts with ``apiVersion: servespec/v1`` and a ``kind``
    (``Deployment`` or ``Inventory``). A Deployment needs ``metadata.name``,
    ``model.source``, ``engine.name`` and ``engine.version``; an Inventory needs
    ``hosts``. An empty file, or a document that is not a mapping, is reported here too.

    Source: servespec contract v1, §1: docs/contract.md
    """

    id = MISSING_FIELD.id
    name = MISSING_FIELD.name
    severity = MISSING_FIELD.severity
    evidence = (contract("11-deployment", note="A field the grammar requires."),)
    summary = MISSING_FIELD.summary
    sources = (_CONTRACT,)


class Suppressions(Rule):
    """A ``suppress`` entry must give a reason and must match a finding.

    A document silences a finding with a top-level list::

        suppress:
          - {rule: SEC003, reason: "revision is pinned by our internal mirror"}

    An entry without a reason silences nothing and is reported, so every silenced
    finding carries its justification in review. An entry that matches no finding of
    its document is reported too, so stale suppressions do not pile up (the practice of
    ``# noqa`` checks in ruff and of ansible-lint's ``skip_list`` warnings).

    Source: servespec contract v1, §2.1: docs/contract.md
    """

    id = "SS005"
    name = "spec.suppression"
    severity = Severity.WARNING
    summary = "a suppress entry without a reason, or one that matches no finding"
    sources = (_CONTRACT,)
