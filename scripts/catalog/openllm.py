"""OpenLLM release catalogs from ``openllm serve`` at each 0.6 tag, and the model repository's bentos.

``python scripts/catalog/openllm.py`` (every 0.6 release published on PyPI from 2024-12-01,
two years before this catalog was made, to the last one, 0.6.30 of 2025-04-21).

Sources, both read from git snapshots (``gitsrc.repo_dir``):

- github.com/bentoml/OpenLLM at each ``v<version>`` tag: ``src/openllm/__main__.py``, the
  typer ``serve`` command's parameters by AST (an annotated ``typer.Option(default, '--flag',
  help=...)`` or a plain default; ``list[str]`` options repeat; ``bool`` ones are typer's
  ``--x/--no-x`` pairs), and ``pyproject.toml``'s dependency pins (OpenLLM pins ``bentoml``,
  never vLLM). The wheel's sha256 and upload time come from PyPI's JSON API
  (``https://pypi.org/pypi/openllm/json``, cached beside the snapshots as ``openllm.json``).
- github.com/bentoml/openllm-models at the newest commit of ``main`` (the repository
  ``openllm serve`` clones: ``common.py`` ``Config.repos['default']``): every
  ``bentoml/bentos/<name>/<version>/`` bento, its ``src/service.py`` ``BentoArgs`` fields
  (the arguments ``--arg KEY=VALUE`` sets through ``bentoml.use_arguments``) with their
  annotations and defaults, ``openllm_model_id`` (the Hugging Face model it serves), the
  aliases and the pinned model revision from ``bento.yaml``, its GPU resources, and the
  vLLM its ``env/python/requirements.txt`` pins. Written to the unit's ``bentos.json``.

Releases from 0.6.25 take ``--arg``: there each bento argument is an option of the release
(``flag`` null: it is rendered as ``--arg KEY=VALUE``), typed by its ``BentoArgs``
annotation, with the choices of the vLLM option of the same name in servespec's catalog of the
vLLM release every bento pins (0.8.5). Earlier releases forward nothing to vLLM.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import catalog_io
from catalog_io import prune_pool, read_pool, releases_dir, tagged_release, write_pool, write_release
from gitsrc import CACHE, commit, git, repo_dir, show, tags

ENGINE = "openllm"
catalog_io.UNITS.setdefault(ENGINE, "openllm")
OWNER, NAME = "bentoml", "OpenLLM"
MODELS_OWNER, MODELS_NAME = "bentoml", "openllm-models"
BLOB = f"https://github.com/{OWNER}/{NAME}/blob"
MODELS_BLOB = f"https://github.com/{MODELS_OWNER}/{MODELS_NAME}/blob"
MAIN = "src/openllm/__main__.py"
PYPROJECT = "pyproject.toml"
SINCE = "2024-12-01"
FIRST_ARG = (0, 6, 25)
PYPI_JSON = CACHE / "openllm.json"
VLLM_PINNED = "0.8.5"

_TYPES = {"int": "int", "str": "str", "bool": "bool", "float": "float"}


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _pypi() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PYPI_JSON.read_text())
    return data


def _wheel(pypi: dict[str, Any], version: str) -> dict[str, Any]:
    files = pypi["releases"][version]
    return next(f for f in files if f["filename"].endswith(".whl"))


def _annotation(node: ast.expr) -> tuple[str, str | None]:
    """(type, nargs) of a typer parameter's annotation."""
    text = ast.unparse(node)
    inner = re.sub(r"^typing\.Annotated\[(.*?),.*\]$", r"\1", text)
    inner = re.sub(r"^typing\.Optional\[(.*)\]$", r"\1", inner)
    if inner.startswith("list["):
        return "list", "append"
    return _TYPES.get(inner, "str"), None


def _serve_options(source: str) -> tuple[dict[str, Any], int]:
    """``serve``'s options (the positional MODEL left out) and the line it is defined on."""
    tree = ast.parse(source)
    serve = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "serve")
    args = serve.args.args
    defaults = [None] * (len(args) - len(serve.args.defaults)) + list(serve.args.defaults)
    out: dict[str, Any] = {}
    for arg, default in zip(args, defaults, strict=True):
        assert arg.annotation is not None
        if "typer.Argument" in ast.unparse(arg.annotation):
            continue  # MODEL, positional
        kind, nargs = _annotation(arg.annotation)
        flag = "--" + arg.arg.replace("_", "-")
        help_text = ""
        value: Any = None
        if isinstance(default, ast.Call) and ast.unparse(default.func) == "typer.Option":
            value = ast.literal_eval(default.args[0]) if default.args else None
            spelled = [ast.literal_eval(a) for a in default.args[1:]]
            flag = next((s for s in spelled if s.startswith("--")), flag)
            for keyword in default.keywords:
                if keyword.arg == "help":
                    help_text = str(ast.literal_eval(keyword.value))
        elif default is not None:
            value = ast.literal_eval(default)
        out[arg.arg] = {
            "flag": flag,
            "aliases": [],
            "env": None,
            "config_key": None,
            "type": kind,
            "choices": None,
            "min": None,
            "max": None,
            "default": value,
            "bool_form": "negatable" if kind == "bool" else None,  # typer's --x/--no-x for a bool default
            "nargs": nargs,
            "help": help_text.split(". ")[0].rstrip(".") + "." if help_text else _HELP.get(arg.arg, ""),
            "deprecated": False,
        }
    return out, serve.lineno


_HELP = {
    "repo": "The model repository to look the model up in (a name from `openllm repo list`; default: default_repo).",
    "port": "The port bentoml serve listens on.",
    "verbose": "Verbose output.",
}


def _pins(pyproject: str) -> dict[str, str]:
    """Exact ``==`` pins of the project's dependencies."""
    block = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    pins = {}
    for name, version in re.findall(r'"([A-Za-z0-9_.-]+)==([^"]+)"', block):
        pins[name.lower()] = version
    return pins


def _pinned(pins: dict[str, str]) -> str:
    return ", ".join(f"{name}=={version}" for name, version in sorted(pins.items()))


# --- the model repository -----------------------------------------------------------------


def _bento_args(service: str) -> dict[str, dict[str, Any]]:
    tree = ast.parse(service)
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BentoArgs")
    out: dict[str, dict[str, Any]] = {}
    for statement in klass.body:
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        annotation = ast.unparse(statement.annotation)
        kind = "dict" if annotation.startswith("dict") else _TYPES.get(annotation, "str")
        value: Any = None
        computed = None
        if statement.value is not None:
            try:
                value = ast.literal_eval(statement.value)
            except ValueError:
                computed = ast.unparse(statement.value)  # pydantic.Field(default_factory=... os.environ ...)
        entry: dict[str, Any] = {"type": kind, "annotation": annotation, "default": value}
        if computed:
            entry["computed"] = computed
        out[statement.target.id] = entry
    return out


def bentos(path: Path, ref: str) -> dict[str, Any]:
    """Every bento of openllm-models at ``ref``: name:version -> what servespec reads."""
    import yaml

    names = git(path, "ls-tree", "-r", "--name-only", ref, "bentoml/bentos").split()
    out: dict[str, Any] = {}
    for service_path in sorted(n for n in names if n.endswith("/src/service.py")):
        base = service_path.removesuffix("/src/service.py")
        _, _, name, version = base.split("/")
        service = show(path, ref, service_path) or ""
        args = _bento_args(service)
        bento = yaml.safe_load(show(path, ref, f"{base}/bento.yaml") or "{}")
        requirements = show(path, ref, f"{base}/env/python/requirements.txt") or ""
        pinned = re.search(r"^vllm==(\S+)", requirements, re.M)
        config = (bento.get("services") or [{}])[0].get("config", {})
        resources = config.get("resources", {})
        models = [m for s in bento.get("services", []) for m in s.get("models", [])]
        revision = models[0]["metadata"].get("revision") if models else None
        aliases = [a for a in str(bento.get("labels", {}).get("aliases", "")).split(",") if a]
        out[f"{name}:{version}"] = {
            "model_id": args.pop("openllm_model_id")["default"],
            "revision": revision,
            "aliases": aliases,
            "gpu": resources.get("gpu", 0),
            "gpu_type": resources.get("gpu_type"),
            "vllm": pinned.group(1) if pinned else None,
            "arguments": args,
            "source": f"{MODELS_BLOB}/{ref}/{service_path}",
        }
    return out


def _argument_options(models: dict[str, Any]) -> dict[str, Any]:
    """One option per bento argument any bento declares, typed by it, choices from vLLM's catalog."""
    vllm = json.loads((releases_dir("vllm") / f"{VLLM_PINNED}.json").read_text())
    pool = read_pool("vllm")
    seen: dict[str, str] = {"openllm_model_id": "str"}  # every bento's; bentos.json keeps it as model_id
    for bento in models.values():
        for key, entry in bento["arguments"].items():
            seen.setdefault(key, entry["type"])
    out = {}
    for key, kind in sorted(seen.items()):
        ident = vllm["options"].get(key)
        vllm_option = pool[ident] if isinstance(ident, str) else None
        if key == "openllm_model_id":
            text = "The Hugging Face model the bento downloads and serves (model.source renders it)."
        elif key.startswith("openllm_"):
            text = "A bento argument of OpenLLM's own (not a vLLM option)."
        elif vllm_option:
            text = f"vLLM {VLLM_PINNED} `{vllm_option['flag']}`: {vllm_option['help']}"
        else:
            text = f"Set on the bento's vLLM argument namespace; vLLM {VLLM_PINNED}'s parser has no such option."
        out[key] = {
            "flag": None,
            "aliases": [],
            "env": None,
            "config_key": None,
            "type": kind,
            "choices": vllm_option["choices"] if vllm_option and kind == vllm_option["type"] else None,
            "min": None,
            "max": None,
            "default": None,  # per bento: bentos.json
            "bool_form": "value" if kind == "bool" else None,  # --arg key=true|false (pydantic's lax bool)
            "nargs": None,
            "help": f"Bento argument, `--arg {key}=VALUE`. {text}",
            "deprecated": False,
        }
    return out


def main() -> None:
    path = repo_dir(OWNER, NAME)
    models_path = repo_dir(MODELS_OWNER, MODELS_NAME)
    models_ref = git(models_path, "rev-parse", "main").strip()
    models_date = git(models_path, "log", "-1", "--format=%cI", models_ref).strip()
    models = bentos(models_path, models_ref)
    unit = releases_dir(ENGINE).parent
    (unit / "bentos.json").write_text(
        json.dumps(
            {
                "version": 1,
                "repository": f"https://github.com/{MODELS_OWNER}/{MODELS_NAME}",
                "branch": "main",
                "commit": models_ref,
                "committed": models_date,
                "method": "AST of each bento's src/service.py BentoArgs; bento.yaml; env/python/requirements.txt "
                "(scripts/catalog/openllm.py)",
                "bentos": models,
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    arguments = _argument_options(models)
    pinned = json.loads((releases_dir("vllm") / f"{VLLM_PINNED}.json").read_text())["facts"]["context_default"]
    context_default = {
        **pinned,
        "source": f"{pinned['source']}; a bento's own BentoArgs max_model_len default wins "
        "(src/servespec/engines/openllm/memory.py reads it from bentos.json)",
    }
    pypi = _pypi()
    pool = read_pool(ENGINE)
    releases = sorted(
        (v for v, files in pypi["releases"].items() if files and re.fullmatch(r"0\.6\.\d+", v)), key=_vkey
    )
    have = set(tags(path))
    for version in releases:
        wheel = _wheel(pypi, version)
        if wheel["upload_time"][:10] < SINCE:
            continue
        tag = f"v{version}"
        assert tag in have, tag
        source = show(path, tag, MAIN) or ""
        options, line = _serve_options(source)
        if _vkey(version) >= FIRST_ARG:
            options.update(arguments)
        pins = _pins(show(path, tag, PYPROJECT) or "")
        sha = commit(path, tag)
        release = tagged_release(
            version=version,
            source=f"{BLOB}/{tag}/{MAIN}#L{line}",
            sources=[f"{BLOB}/{tag}/{PYPROJECT}", f"{MODELS_BLOB}/{models_ref}/bentoml/bentos"],
            tag=tag,
            commit=sha,
            files=[MAIN, PYPROJECT],
            method="AST of the typer `serve` command in src/openllm/__main__.py at the tag"
            + (
                f"; bento arguments: AST of BentoArgs in every bento of {MODELS_OWNER}/{MODELS_NAME}@{models_ref[:12]}"
                if _vkey(version) >= FIRST_ARG
                else ""
            ),
            kept=None,
            options=options,
            facts={"context_default": context_default},
            notes={
                "pypi": {
                    "wheel": wheel["filename"],
                    "sha256": wheel["digests"]["sha256"],
                    "uploaded": wheel["upload_time"],
                },
                "pins": pins,
                "vllm": f"OpenLLM pins no vLLM (pyproject.toml dependencies: {_pinned(pins)}); each bento pins "
                f"its own in env/python/requirements.txt (every bento of openllm-models@{models_ref[:12]}: "
                f"vllm=={VLLM_PINNED}), installed by `openllm serve` into a venv under ~/.openllm/venv "
                "(src/openllm/venv.py)",
                "model_repository": f"https://github.com/{MODELS_OWNER}/{MODELS_NAME}@main, cloned again by every "
                "`openllm serve` (cmd_update)",
            },
        )
        release["provenance"]["artifact"] = wheel["filename"]
        release["provenance"]["sha256"] = wheel["digests"]["sha256"]
        write_release(ENGINE, release, pool)
        print(version, len(options))
    write_pool(ENGINE, pool)
    prune_pool(ENGINE)  # entries of an earlier build no release names any more


if __name__ == "__main__":
    main()
