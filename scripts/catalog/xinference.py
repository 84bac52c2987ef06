"""``python scripts/catalog/build.py xinference [VERSION...]``: XInference release catalogs from its git tags.

Reads each tag of github.com/xorbitsai/inference (a bare snapshot: ``gitsrc.repo_dir``, or
``--repo PATH``) and writes ``src/servespec/engines/xinference/releases/<version>.json``.
A release named on the command line that the snapshot has no tag for is read from its sdist on
PyPI instead (``pip download xinference==V --no-binary :all:`` into
``~/.cache/servespec/catalog-src/xinference/``; the commit is the sdist's ``_version.py``
``commit_id``). The sdist holds the Python package but not ``xinference/deploy/docker/``, so
such a release's ``bundled`` is not read (recorded as no pinned engine: the catalog is partial,
as for every release from 3.0, whose image ships no engine) and its notes say so. What is read:

- the ``xinference-local`` server options: the ``@click.option`` decorators of ``local`` in
  ``xinference/deploy/cmdline.py`` (AST; defaults named by constants resolved in
  ``xinference/constants.py``);
- the launch request: the fields ``launch_model`` in ``xinference/api/restful_api.py`` reads
  with ``payload.get(NAME, DEFAULT)`` (AST), typed by the matching ``xinference launch``
  option where there is one; every other payload key is forwarded to the model (``**kwargs``);
- the ``xinference launch`` options (notes) and the ``SUPPORTED_ENGINES`` names
  (``xinference/model/llm/__init__.py``), which ``model_engine`` takes (matched case-insensitively:
  ``llm_family.py`` ``engine.lower() == engine_str.lower()``);
- ``bundled``: the engine releases the GPU image ``xprobe/xinference:v<version>`` carries, read from
  ``xinference/deploy/docker/Dockerfile``: vLLM pinned (``vllm==X``) in a requirements file the
  Dockerfile installs with ``-r``, else a range's upper bound (pip takes the newest release
  within it), else the base image's tag (``FROM vllm/vllm-openai:vX``); SGLang pinned in the
  Dockerfile (``sglang==X``; unpinned: not known). From 3.0 the image ships no engine;
- ``forwarded_defaults``: what XInference itself sets before calling the engine
  (``model_config.setdefault(KEY, LITERAL)`` in ``_sanitize_model_config`` of
  ``xinference/model/llm/{vllm,sglang}/core.py``).

The built-in model registry (``xinference/model/llm/llm_family.json``: Hugging Face model id ->
model_name, format, size, quantizations) of every catalogued release is pooled into
``src/servespec/engines/xinference/registry.json`` on a full build: no VERSION, or ``--all VERSION...``
(every tag, every catalogued release and the releases named, read from their sdists where the snapshot
has no tag).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import catalog_io
import gitsrc

catalog_io.UNITS.setdefault("xinference", "xinference")  # the engine's unit folder (catalog_io's table)

ENGINE = "xinference"
OWNER, NAME = "xorbitsai", "inference"
FIRST = "1.1.0"
"""The oldest release catalogued: 2024-12-13, within two years of the catalogs' build (December 2026)."""
CMDLINE = "xinference/deploy/cmdline.py"
CONSTANTS = "xinference/constants.py"
REST = "xinference/api/restful_api.py"
DOCKERFILE = "xinference/deploy/docker/Dockerfile"
WORKFLOW = ".github/workflows/docker-cd.yaml"
DOCKERFILE_CPU = ("xinference/deploy/docker/Dockerfile.cpu", "xinference/deploy/docker/cpu.Dockerfile")
ENGINES_INIT = "xinference/model/llm/__init__.py"
FAMILY = "xinference/model/llm/llm_family.json"
ADMIN = "xinference/api/routers/admin.py"
CORES = {"vllm": "xinference/model/llm/vllm/core.py", "sglang": "xinference/model/llm/sglang/core.py"}
BLOB = "https://github.com/xorbitsai/inference/blob/{tag}/{file}"

REST_TYPES = {
    "model_uid": "str", "model_name": "str", "model_engine": "str", "model_size_in_billions": "str",
    "model_format": "str", "quantization": "str", "model_type": "str", "replica": "int", "n_gpu": "str",
    "n_worker": "int", "request_limits": "int", "peft_model_config": "dict", "worker_ip": "str",
    "gpu_idx": "list", "download_hub": "str", "model_path": "str", "enable_virtual_env": "bool",
    "virtual_env_packages": "list", "envs": "dict", "enable_thinking": "bool",
}  # fmt: skip
"""JSON types of the launch fields, as ``launch_model`` uses them (``n_gpu``: an int, ``"auto"`` or null;
``model_size_in_billions``: an int or a string such as ``"1_8"``; ``gpu_idx``: an int or a list)."""


SDIST_CACHE = Path(os.environ.get("SERVESPEC_CATALOG_SRC", Path.home() / ".cache/servespec/catalog-src")) / ENGINE
VERSION_FILE = "xinference/_version.py"


@dataclasses.dataclass
class Source:
    """One release's files: a tag of the git snapshot, or (``repo`` None) the release's sdist from PyPI."""

    tag: str
    repo: Path | None = None
    sdist: Path | None = None
    members: dict[str, str] = dataclasses.field(default_factory=dict)

    def show(self, file: str) -> str | None:
        if self.repo is not None:
            return gitsrc.show(self.repo, self.tag, file)
        return self.members.get(file)

    def commit(self) -> str:
        if self.repo is not None:
            return gitsrc.commit(self.repo, self.tag)
        match = re.search(r"commit_id\s*=\s*['\"]g?([0-9a-f]{7,40})['\"]", self.show(VERSION_FILE) or "")
        if not match:
            raise SystemExit(f"{self.tag}: the sdist's {VERSION_FILE} names no commit")
        return match.group(1)

    def artifact(self) -> tuple[str | None, str | None]:
        if self.sdist is None:
            return None, None
        digest = hashlib.sha256(self.sdist.read_bytes()).hexdigest()
        return self.sdist.name, digest


def sdist_source(version: str) -> Source:
    """Release ``version`` read from its sdist on PyPI (downloaded once into the cache)."""
    folder = SDIST_CACHE / version
    found = sorted(folder.glob("xinference-*.tar.gz")) if folder.is_dir() else []
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", f"xinference=={version}", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*cmd, "-d", str(folder), "-q"], check=True)
        found = sorted(folder.glob("xinference-*.tar.gz"))
    wanted = {CMDLINE, CONSTANTS, REST, ENGINES_INIT, FAMILY, DOCKERFILE, *DOCKERFILE_CPU, *CORES.values()}
    wanted |= {VERSION_FILE, ADMIN}
    members: dict[str, str] = {}
    with tarfile.open(found[0]) as archive:
        for member in archive:
            name = member.name.split("/", 1)[-1]  # drop the xinference-V/ prefix
            if name in wanted and member.isfile():
                handle = archive.extractfile(member)
                if handle is not None:
                    members[name] = handle.read().decode("utf-8")
    return Source(f"v{version}", None, found[0], members)


def _const(node: ast.AST, names: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    return None


def constants(text: str | None) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` of xinference/constants.py (the defaults the CLI names)."""
    out: dict[str, Any] = {}
    for node in ast.parse(text or "").body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _const(node.value, out)
            if value is not None:
                out[node.targets[0].id] = value
    return out


def _first_sentence(text: str) -> str:
    text = " ".join(str(text).split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return match.group(1) if match else text


def click_options(tree: ast.Module, function: str, names: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``@click.option`` decorators of ``function`` as catalog entries keyed by the long flag."""
    found: dict[str, dict[str, Any]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.name != function:
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and deco.func.attr == "option"):
                continue
            decls = [a.value for a in deco.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            longs = [d for d in decls if d.startswith("--")]
            if not longs:
                continue
            kw = {k.arg: k.value for k in deco.keywords if k.arg}
            flag = longs[0]
            kind = "str"
            if "type" in kw and isinstance(kw["type"], ast.Name):
                kind = {"int": "int", "float": "float", "bool": "bool", "str": "str"}.get(kw["type"].id, "str")
            if "type" in kw and isinstance(kw["type"], ast.Tuple):
                kind = "list"
            is_flag = "is_flag" in kw or "flag_value" in kw
            if is_flag:
                kind = "bool"
            multiple = "multiple" in kw and _const(kw["multiple"], names) is True
            if multiple:
                kind = "list"
            help_node = kw.get("help")
            found[catalog_io_key(flag)] = {
                "flag": flag,
                "aliases": [d for d in decls if d.startswith("-") and d != flag],
                "env": None,
                "config_key": None,
                "type": kind,
                "choices": None,
                "min": None,
                "max": None,
                "default": _const(kw["default"], names) if "default" in kw else None,
                "bool_form": "flag" if is_flag else None,
                "nargs": "append" if multiple else None,
                "help": _first_sentence(_const(help_node, names) or "") if help_node is not None else "",
                "deprecated": False,
            }
    return found


def catalog_io_key(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def rest_fields(tree: ast.Module) -> tuple[dict[str, Any], list[str]]:
    """``payload.get(NAME[, DEFAULT])`` of ``launch_model`` (first definition), and its ``exclude_keys``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncFunctionDef) and node.name == "launch_model":
            fields: dict[str, Any] = {}
            excluded: list[str] = []
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr == "get"
                    and isinstance(sub.func.value, ast.Name)
                    and sub.func.value.id == "payload"
                    and sub.args
                    and isinstance(sub.args[0], ast.Constant)
                ):
                    fields[sub.args[0].value] = _const(sub.args[1], {}) if len(sub.args) > 1 else None
                if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Set):
                    target = sub.targets[0]
                    if isinstance(target, ast.Name) and target.id == "exclude_keys":
                        excluded = [e.value for e in sub.value.elts if isinstance(e, ast.Constant)]
            return fields, excluded
    raise SystemExit("no launch_model in the REST API")


def supported_engines(text: str | None) -> list[str]:
    """``SUPPORTED_ENGINES["NAME"] = ...`` of xinference/model/llm/__init__.py, in order."""
    return list(dict.fromkeys(re.findall(r'SUPPORTED_ENGINES\["([^"]+)"\]\s*=', text or "")))


def setdefaults(text: str | None) -> dict[str, Any]:
    """``model_config.setdefault(KEY, LITERAL)`` in the first ``_sanitize_model_config`` of an engine's core.py."""
    if not text:
        return {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == "_sanitize_model_config":
            out: dict[str, Any] = {}
            # statements of the function body only: a setdefault under an `if` (a model family, a vLLM
            # version, several workers) is not what every launch gets
            calls = [s.value for s in node.body if isinstance(s, ast.Expr)]
            for sub in calls:
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr == "setdefault"
                    and len(sub.args) == 2
                    and isinstance(sub.args[0], ast.Constant)
                    and isinstance(sub.args[1], ast.Constant)
                ):
                    out.setdefault(str(sub.args[0].value), sub.args[1].value)
            return dict(sorted(out.items()))
    return {}


def _pin(text: str, package: str) -> tuple[str | None, str]:
    """A requirement's version: ``==X``, else a range's ``<=X`` upper bound; with the line it came from."""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(rf"^{package}(\[[^\]]*\])?\s*([=<>!~][^;]*)", line)
        if not match:
            continue
        spec = match.group(2).replace(" ", "")
        exact = re.search(r"==([0-9][0-9a-z.]*)", spec)
        if exact:
            return exact.group(1), line
        upper = re.search(r"<=([0-9][0-9a-z.]*)", spec)
        if upper:
            return upper.group(1), line
        return None, line
    return None, ""


def bundled(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The vLLM and SGLang releases the GPU image carries, each with how that is known."""
    tag = src.tag
    docker = src.show(DOCKERFILE) or ""
    files = [DOCKERFILE]
    out: dict[str, Any] = {}
    base = re.search(r"^FROM\s+vllm/vllm-openai:v([0-9][0-9a-z.]*)", docker, re.M)
    vllm: dict[str, Any] | None = None
    for req in re.findall(r"-r\s+/opt/inference/(\S+)", docker):
        text = src.show(req)
        if text is None:
            continue
        files.append(req)
        version, line = _pin(text, "vllm")
        if version:
            how = f"{req}: `{line}`, installed by the Dockerfile's `pip install -r` over the base image"
            if "==" not in line:
                how += " (a range: pip installs the newest release within it, its upper bound)"
            vllm = {"version": version, "how": how, "source": BLOB.format(tag=tag, file=req)}
    if vllm is None and base:
        vllm = {
            "version": base.group(1),
            "how": f"{DOCKERFILE}: `FROM vllm/vllm-openai:v{base.group(1)}` and no requirements file installs another",
            "source": BLOB.format(tag=tag, file=DOCKERFILE),
        }
    out["vllm"] = vllm
    sglang = re.search(r"sglang(?:\[[^\]]*\])?==([0-9][0-9a-z.]*)", docker)
    if sglang:
        out["sglang"] = {
            "version": sglang.group(1),
            "how": f"{DOCKERFILE}: `pip install --no-deps sglang=={sglang.group(1)}`",
            "source": BLOB.format(tag=tag, file=DOCKERFILE),
        }
    elif re.search(r"\bsglang\b", docker):
        out["sglang"] = None  # installed unpinned: the release is whatever PyPI had when the image was built
    else:
        out["sglang"] = None
    if base is None and "vllm" not in docker.lower():
        out["vllm"] = None
    return out, files


def _quantized_ids(model_id: str, quantizations: list[str]) -> list[tuple[str, list[str]]]:
    if "{quantization}" in model_id:
        return [(model_id.replace("{quantization}", q), [q]) for q in quantizations]
    return [(model_id, quantizations)]


def registry(text: str | None) -> list[dict[str, Any]]:
    """The LLM families' Hugging Face sources: model id -> model_name, format, size, quantizations, context."""
    out = []
    for family in json.loads(text or "[]"):
        for spec in family.get("model_specs", []):
            hub = (spec.get("model_src") or {}).get("huggingface") or (
                spec if spec.get("model_hub", "huggingface") == "huggingface" else {}
            )
            model_id = hub.get("model_id")
            if not model_id:
                continue
            quantizations = list(hub.get("quantizations") or spec.get("quantizations") or [])
            for ident, quants in _quantized_ids(model_id, quantizations):
                out.append(
                    {
                        "model_id": ident,
                        "model_name": family["model_name"],
                        "model_format": spec["model_format"],
                        "model_size_in_billions": spec["model_size_in_billions"],
                        "quantizations": quants,
                        "context_length": family.get("context_length"),
                    }
                )
    return out


def server_entries(tree: ast.Module, names: dict[str, Any]) -> dict[str, dict[str, Any]]:
    options = click_options(tree, "local", names)
    return options


def _engine_choices(engines: list[str]) -> list[str]:
    """SUPPORTED_ENGINES' names, and lower-cased: llm_family.py matches ``model_engine`` case-insensitively."""
    return [*engines, *(e.lower() for e in engines if e.lower() != e)]


def launch_entries(tree: ast.Module, rest: ast.Module, names: dict[str, Any], engines: list[str]) -> dict[str, Any]:
    cli = click_options(tree, "model_launch", names)
    fields, excluded = rest_fields(rest)
    by_rest = {"model_size_in_billions": "size_in_billions"}
    out: dict[str, dict[str, Any]] = {}
    for field, default in fields.items():
        if field not in excluded and excluded:
            continue
        option = cli.get(by_rest.get(field, field))
        out[field] = {
            "flag": None,
            "aliases": [],
            "env": None,
            "config_key": field,
            "type": REST_TYPES.get(field, "str"),
            "choices": _engine_choices(engines) if field == "model_engine" else None,
            "min": 1 if field in ("replica", "n_worker") else None,
            "max": None,
            "default": default,
            "bool_form": None,
            "nargs": None,
            "help": option["help"] if option else f"launch request field `{field}` (restful_api.py launch_model)",
            "deprecated": False,
        }
    for name in ("trust_remote_code", "enable_thinking"):  # CLI options the client sends as plain payload keys
        if name in cli and name not in out:
            out[name] = {**cli[name], "flag": None, "aliases": [], "config_key": name, "bool_form": None}
    return out


def build(src: Source) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    tag = src.tag
    version = tag.removeprefix("v")
    names = constants(src.show(CONSTANTS))
    tree = ast.parse(src.show(CMDLINE) or "")
    rest = ast.parse(src.show(REST) or "")
    engines = supported_engines(src.show(ENGINES_INIT))
    server = server_entries(tree, names)
    launch = launch_entries(tree, rest, names, engines)
    clash = set(server) & set(launch)
    if clash:
        raise SystemExit(f"{tag}: server and launch options share keys {sorted(clash)}")
    engines_in_image, docker_files = bundled(src)
    cpu = next((f for f in DOCKERFILE_CPU if src.show(f) is not None), None)
    if src.repo is None:
        docker_files = []  # the sdist has no xinference/deploy/docker/: nothing about the image was read
    defaults = {engine: setdefaults(src.show(file)) for engine, file in CORES.items()}
    rest_text = src.show(REST) or ""
    api_files = [REST]
    status = '"/status"' in rest_text
    if not status:
        routers = src.show(ADMIN) or ""
        status = 'add_api_route("/status"' in routers
        api_files.append(ADMIN)
    if not status:
        raise SystemExit(f"{tag}: no /status route")
    port = names.get("XINFERENCE_DEFAULT_ENDPOINT_PORT")
    files = [
        CMDLINE,
        CONSTANTS,
        *api_files,
        ENGINES_INIT,
        *docker_files,
        *([cpu] if cpu else []),
        *CORES.values(),
        FAMILY,
    ]
    commit = src.commit()
    method = (
        "AST of the release's click decorators (xinference-local, xinference launch) and of the REST launch_model "
        "(payload.get fields); Dockerfile and requirements read for the bundled engines; "
        "_sanitize_model_config setdefault literals"
    )
    if src.repo is None:
        method = (
            "read from the release's sdist on PyPI (no git tag in the snapshot): " + method.split(";")[0] + "; "
            "_sanitize_model_config setdefault literals; the sdist has no xinference/deploy/docker/, so the image's "
            "bundled engines and CPU image are not read (bundled: no pinned engine, as from 3.0)"
        )
    release = catalog_io.tagged_release(
        version,
        BLOB.format(tag=tag, file=CMDLINE),
        [BLOB.format(tag=tag, file=f) for f in files[1:]],
        tag,
        commit,
        files,
        method,
        None,
        {**server, **launch},
        {},
        {
            "server_command": "xinference-local (click command `local`); supervisor and worker are not rendered",
            "default_port": {"value": port, "source": BLOB.format(tag=tag, file=CONSTANTS)},
            "default_host": names.get("XINFERENCE_DEFAULT_LOCAL_HOST"),
            "health": {"path": "/status", "method": "GET", "source": BLOB.format(tag=tag, file=api_files[-1])},
            "launch": {"path": "/v1/models", "method": "POST", "source": BLOB.format(tag=tag, file=REST)},
            "list": {"path": "/v1/models", "method": "GET"},
            "model_engines": engines,
            "launch_cli_options": sorted(click_options(tree, "model_launch", names)),
            "images": {
                "gpu": f"xprobe/xinference:v{version}",
                "cpu": f"xprobe/xinference:v{version}-cpu" if cpu else None,
                **({"cpu_not_read": "the sdist has no CPU Dockerfile to read"} if src.repo is None else {}),
                "how": "docker-cd.yaml builds $DOCKER_ORG/xinference:${IMAGE_TAG} (the git tag) from the Dockerfile, "
                "...-cpu from the CPU Dockerfile; the org is a secret there, xprobe in "
                "doc/source/getting_started/using_docker_image.rst",
                "source": BLOB.format(tag=tag, file=WORKFLOW),
            },
        },
    )
    release["bundled"] = engines_in_image
    if src.repo is None:
        name, digest = src.artifact()
        release["provenance"].update(artifact=name, sha256=digest)
        release["notes"]["bundled_not_read"] = (
            "built from the PyPI sdist, which has no xinference/deploy/docker/: the engines the image carries were "
            "not read; every 3.x image read from its tag (3.0.0-3.2.1) ships none"
        )
    release["forwarded_defaults"] = {k: v for k, v in defaults.items() if v}
    return release, registry(src.show(FAMILY))


def tags(path: Path) -> list[str]:
    found = [t for t in gitsrc.tags(path) if re.fullmatch(r"v\d+\.\d+\.\d+(\.post\d+)?", t)]
    key = catalog_io_version_key
    return sorted((t for t in found if key(t) >= key(FIRST)), key=key)


def catalog_io_version_key(text: str) -> tuple[int, ...]:
    from servespec.engines.catalog import version_key

    return version_key(text)


def write_registry(entries: dict[str, list[dict[str, Any]]], order: list[str]) -> None:
    """Pool the releases' registries: one entry per (model id, name, format, size, quantizations, context)."""
    pooled: dict[str, dict[str, Any]] = {}
    for version in order:
        for entry in entries[version]:
            ident = json.dumps(entry, sort_keys=True)
            item = pooled.setdefault(ident, {**entry, "releases": []})
            item["releases"].append(version)
    models: dict[str, list[dict[str, Any]]] = {}
    for item in pooled.values():
        releases = item.pop("releases")
        spans = []
        for version in releases:
            index = order.index(version)
            if spans and order.index(spans[-1][1]) == index - 1:
                spans[-1][1] = version
            else:
                spans.append([version, version])
        models.setdefault(item.pop("model_id"), []).append({**item, "releases": spans})
    out = {
        "version": 1,
        "source": "xinference/model/llm/llm_family.json of each catalogued release (huggingface sources)",
        "releases": order,
        "models": {k: sorted(v, key=lambda e: json.dumps(e, sort_keys=True)) for k, v in sorted(models.items())},
    }
    target = catalog_io.REPO / "src" / "servespec" / "engines" / "xinference" / "registry.json"
    target.write_text(json.dumps(out, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--repo"]:
        path, argv = Path(argv[1]), argv[2:]
    else:
        path = gitsrc.repo_dir(OWNER, NAME)
    every = "--all" in argv  # every tag, plus the releases named (the registry is written)
    argv = [a for a in argv if a != "--all"]
    tagged = tags(path)
    wanted = [Source(t, path) for t in tagged if every or not argv or t.removeprefix("v") in argv]
    # a named release the snapshot has no tag for (a snapshot older than the release): its sdist; on a
    # full build (--all) every catalogued release too, so the registry keeps them
    named = list(argv)
    if every:
        named += [p.stem for p in catalog_io.releases_dir(ENGINE).glob("*.json") if p.name != catalog_io.POOL]
    wanted += [sdist_source(v) for v in dict.fromkeys(named) if f"v{v}" not in tagged]
    wanted.sort(key=lambda s: catalog_io_version_key(s.tag))
    pool = catalog_io.read_pool(ENGINE)
    entries: dict[str, list[dict[str, Any]]] = {}
    for src in wanted:
        release, models = build(src)
        catalog_io.write_release(ENGINE, release, pool)
        entries[release["version"]] = models
        print(f"{release['version']}: {len(release['options'])} options, bundled {release['bundled']}")
    catalog_io.write_pool(ENGINE, pool)
    if every or not argv:  # the registry pools every release: written only on a full build
        write_registry(entries, [s.tag.removeprefix("v") for s in wanted])
        catalog_io.prune_pool(ENGINE)


if __name__ == "__main__":
    main(sys.argv[1:])
