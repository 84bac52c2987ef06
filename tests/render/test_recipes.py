"""Real public launch recipes, written as the spec a careful user writes from our docs.

Each ``tests/data/recipes/<id>/`` holds ``recipe.yaml`` (where the recipe was published,
the command or config exactly as published, the arguments the engine receives from it, the
release it targets, and every deliberate difference and justified warning), ``spec.yaml``
(the user's spec) and ``inventory.yaml`` (the hardware). Three checks per recipe:

- the spec validates with no false error: no ERROR finding, and every WARNING is justified
  in ``recipe.yaml`` (``warnings: {RULE: reason}``);
- TGI, Ollama, TensorRT-LLM, llama.cpp: the rendered launch (flags, environment, config
  files) and the upstream one, each normalised through that release's catalog (aliases,
  env names, LLM-API config keys, value types, defaults), give the same option -> value map;
- vLLM, SGLang, KTransformers (``parsers`` tier, slow): the upstream command and the rendered
  one, each parsed by the release's own argument parser (tests/parsers/parse_argv.py in the
  parser environment ``scripts/parser-envs`` builds), give the same namespace;
- LM Studio (``lms load`` / ``lms server start``), OpenLLM (``openllm serve BENTO``, each
  ``--arg KEY=VALUE``) and XInference (the server's flags, and ``xinference launch``'s keywords
  against the rendered launch.json) through the release's catalog, as the second item.

In both comparisons only the options ``recipe.yaml`` lists under ``differences`` (each with
its reason) may differ. A recipe that fails because of a behaviour issue 12 is fixing is
listed once, in ``XFAIL`` below, with the item it waits for: strict, so it fails the day the
fix lands and the entry must go.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.catalog import EngineOption, EngineRelease
from servespec.findings import Severity
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

TESTS = Path(__file__).resolve().parents[1]
RECIPES = TESTS / "data" / "recipes"
ENGINES = ("vllm", "sglang", "tgi", "ollama", "tensorrt-llm", "llama.cpp")
ENGINES += ("xinference", "ktransformers", "lmstudio", "openllm")  # the four platforms of issue 12
MIN_RECIPES = {"xinference": 2, "ktransformers": 1, "lmstudio": 1, "openllm": 2}  # the others: 4 each
KINDS = ("single-gpu", "tensor-parallel", "multi-node", "quantized", "long-context", "lora", "speculative")
PARSED = ("vllm", "sglang", "ktransformers")  # compared through the release's own parser; the others by catalog

# Recipes that fail until a fix of issue 12 lands: (check, recipe id) -> the item it waits for.
# Strict: an entry whose recipe passes fails the run, so it must be removed with the fix.
XFAIL: dict[tuple[str, str], str] = {}

_yaml = YAML(typ="safe")


def _ids() -> list[str]:
    return sorted(p.parent.name for p in RECIPES.glob("*/recipe.yaml"))


def _recipe(rid: str) -> dict[str, Any]:
    data = _yaml.load(RECIPES / rid / "recipe.yaml")
    assert isinstance(data, dict), rid
    return data


def _params(check: str, engines: tuple[str, ...]) -> list[Any]:
    params = []
    for rid in _ids():
        if _recipe(rid)["engine"] not in engines:
            continue
        reason = XFAIL.get((check, rid))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(rid, id=rid, marks=marks))
    return params


def _fleet(rid: str) -> Any:
    folder = RECIPES / rid
    fleet = load_fleet([folder / "spec.yaml"], folder / "inventory.yaml")
    assert fleet.deployments, f"{rid}: spec did not load: {[f.to_text() for f in fleet.findings]}"
    return fleet


def _release(recipe: dict[str, Any]) -> EngineRelease:
    return get(recipe["engine"]).catalog.release(str(recipe["release"]))


def _containers(rid: str) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Each rendered engine container (rank order) with the files rendered beside it."""
    files = render_fleet(_fleet(rid)).files
    found = []
    for name, text in files.items():
        if name.endswith("/container.yaml"):
            folder = name.rsplit("/", 1)[0]
            beside = {k.rsplit("/", 1)[1]: v for k, v in files.items() if k.rsplit("/", 1)[0] == folder}
            found.append((_yaml.load(text), beside))
    found.sort(key=lambda item: (item[0].get("replica", 0), item[0].get("rank", 0)))
    return found


# --- the corpus itself ------------------------------------------------------------------


def test_corpus_covers_every_engine_and_kind() -> None:
    recipes = {rid: _recipe(rid) for rid in _ids()}
    assert len(recipes) >= 60, sorted(recipes)
    per_engine = Counter(r["engine"] for r in recipes.values())
    assert all(per_engine[e] >= MIN_RECIPES.get(e, 4) for e in ENGINES), per_engine
    kinds = Counter(k for r in recipes.values() for k in r["kind"])
    assert all(kinds[k] >= 1 for k in KINDS), kinds
    for rid, r in recipes.items():
        assert r["engine"] in ENGINES, rid
        assert set(r["kind"]) <= set(KINDS), rid
        assert str(r["source"]["url"]).startswith("https://"), rid
        assert str(r["upstream"]["command"]).strip(), rid
        selection = get(r["engine"]).catalog.select(str(r["release"]))
        assert selection.relation == "exact", f"{rid}: release {r['release']} is not catalogued"
        spec = _yaml.load(RECIPES / rid / "spec.yaml")
        assert spec["engine"]["name"] == r["engine"], rid
        assert str(spec["engine"]["version"]) == str(r["release"]), rid
        for key, why in (r.get("differences") or {}).items():
            assert isinstance(why, str) and len(why) > 20, f"{rid}: difference {key!r} needs its reason"
        for rule, why in (r.get("warnings") or {}).items():
            assert isinstance(why, str) and len(why) > 20, f"{rid}: warning {rule} needs its justification"


# --- no false error -----------------------------------------------------------------------


@pytest.mark.parametrize("rid", _params("validate", ENGINES))
def test_recipe_validates_without_false_error(rid: str) -> None:
    recipe = _recipe(rid)
    findings = check_fleet(_fleet(rid))
    errors = [f.to_text() for f in findings if f.severity is Severity.ERROR]
    assert not errors, "\n".join(errors)
    justified = recipe.get("warnings") or {}
    unjustified = [f.to_text() for f in findings if f.severity is Severity.WARNING and f.rule not in justified]
    assert not unjustified, "warnings recipe.yaml does not justify:\n" + "\n".join(unjustified)


# --- catalog equivalence (TGI, Ollama, TensorRT-LLM, llama.cpp) ---------------------------------

_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}


def _value(option: EngineOption | None, raw: Any) -> Any:
    """A value as the engine reads it, by the option's catalogued type."""
    if option is None or raw is None:
        return raw
    kind = option.type
    text = raw if isinstance(raw, str) else None
    try:
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            if text is not None and text.strip().lower() in _TRUE | _FALSE:
                return text.strip().lower() in _TRUE
            return raw
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "list":
            items = raw if isinstance(raw, list) else str(raw).split(",")
            return [str(i).strip() for i in items if str(i).strip()]
    except (TypeError, ValueError):
        return raw
    return str(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) and kind == "str" else raw


def _canonical(option: EngineOption) -> str:
    """One name per option for both sides: its LLM-API config key where it has one, else its key."""
    return option.config_key or option.key


def _flags(release: EngineRelease, argv: list[str], where: str) -> tuple[dict[str, Any], list[str]]:
    """Options given on a command line, by the release's own spellings; and its positional words."""
    found: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or word == "-":
            positional.append(word)
            i += 1
            continue
        flag, eq, inline = word.partition("=")
        option = release.option(flag)
        assert option is not None, f"{where}: {flag} is no option of {release.engine} {release.version}"
        takes_value = option.type != "bool" or option.bool_form == "value"
        if not takes_value:
            negated = flag != option.flag and flag.startswith("--no-")
            value: Any = (inline.lower() in _TRUE) if eq else not negated
        elif eq:
            value = inline
        elif option.nargs in ("+", "*"):
            j = i + 1
            while j < len(argv) and not argv[j].startswith("-"):
                j += 1
            value, i = argv[i + 1 : j], j - 1
        else:
            assert i + 1 < len(argv), f"{where}: {flag} has no value"
            value, i = argv[i + 1], i + 1
        found[_canonical(option)] = _value(option, value)
        i += 1
    return found, positional


def _environment(release: EngineRelease, env: dict[str, Any], where: str) -> dict[str, Any]:
    by_env = {o.env: o for o in release.options.values() if o.env}
    found = {}
    for name, raw in env.items():
        option = by_env.get(name)
        if option is None:
            continue  # not an engine setting (HF_TOKEN, CUDA_VISIBLE_DEVICES is one where catalogued)
        found[_canonical(option)] = _value(option, raw)
    return found


def _config(release: EngineRelease, data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """An LLM-API YAML flattened to dotted keys; a key the release catalogues takes its type."""
    found: dict[str, Any] = {}
    by_key = {(o.config_key or o.key): o for o in release.options.values()}
    for key, value in data.items():
        path = f"{prefix}{key}"
        option = by_key.get(path)
        if isinstance(value, dict):  # nested keys compared one by one (a dict option's too)
            found.update(_config(release, value, path + "."))
        else:
            found[path] = _value(option, value)
    return found


def _env_file(text: str) -> dict[str, str]:
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            env[name] = value
    return env


def _modelfile(release: EngineRelease, text: str) -> tuple[str | None, dict[str, Any]]:
    model, found = None, {}
    for line in text.splitlines():
        words = line.split(None, 2)
        if len(words) >= 2 and words[0].upper() == "FROM":
            model = words[1]
        elif len(words) == 3 and words[0].upper() == "PARAMETER":
            option = release.option(f"modelfile.{words[1]}")
            found[f"modelfile.{words[1]}"] = _value(option, words[2])
    return model, found


def _without_defaults(release: EngineRelease, options: dict[str, Any]) -> dict[str, Any]:
    """Drop options set to the release's own default: giving one or leaving it out is the same launch."""
    by_name = {_canonical(o): o for o in release.options.values()}
    kept = {}
    for name, value in options.items():
        option = by_name.get(name)
        if option is not None and option.default is not None and _value(option, option.default) == value:
            continue
        kept[name] = value
    return kept


_LAUNCHERS = {
    "tgi": ("text-generation-launcher",),
    "tensorrt-llm": ("trtllm-llmapi-launch", "trtllm-serve", "serve"),
    "llama.cpp": ("llama-server", "./llama-server", "/app/llama-server"),
    "ollama": ("ollama", "serve", "/bin/ollama"),
    "xinference": ("xinference-local",),
    "openllm": ("openllm",),
}


def _strip_launcher(engine: str, argv: list[str]) -> list[str]:
    words = list(argv)
    while words and words[0] in _LAUNCHERS[engine]:
        words.pop(0)
    return words


# XInference's `xinference launch` (xinference/deploy/cmdline.py ``model_launch``, v3.2.1): each option and
# the ``launch_model`` keyword (the POST /v1/models body, launch.json) it becomes; any other ``--name value``
# pair is passed on as keyword ``name``, typed by ``handle_click_args_type`` (xinference/deploy/utils.py).
_XINFERENCE_LAUNCH = {
    **dict.fromkeys(("--model-name", "-n"), "model_name"),
    **dict.fromkeys(("--model-type", "-t"), "model_type"),
    **dict.fromkeys(("--model-engine", "-en"), "model_engine"),
    **dict.fromkeys(("--model-uid", "-u"), "model_uid"),
    **dict.fromkeys(("--size-in-billions", "-s"), "model_size_in_billions"),
    **dict.fromkeys(("--model-format", "-f"), "model_format"),
    **dict.fromkeys(("--quantization", "-q"), "quantization"),
    **dict.fromkeys(("--replica", "-r"), "replica"),
    **dict.fromkeys(("--model-path", "-mp"), "model_path"),
    "--n-gpu": "n_gpu",
    "--gpu-idx": "gpu_idx",
    "--worker-ip": "worker_ip",
}


def _click_value(text: str) -> Any:
    """``handle_click_args_type``: None, booleans, numbers and JSON objects/arrays from their text."""
    if text == "None":
        return None
    if text in ("true", "True", "false", "False"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if text.startswith(("{", "[")):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _xinference_launch(words: list[str], where: str) -> dict[str, Any]:
    """The launch_model keywords an ``xinference launch`` command line sends."""
    found: dict[str, Any] = {}
    for flag, value in zip(words[::2], words[1::2], strict=True):
        key = _XINFERENCE_LAUNCH.get(flag)
        if key == "model_size_in_billions":
            found[key] = value if "_" in value or "." in value else int(value)
        elif key is not None:
            found[key] = value
        else:
            assert flag.startswith("--"), f"{where}: {flag} (xinference launch passes on --name value pairs only)"
            found[flag[2:]] = _click_value(value)
    return found


def _xinference_request(body: dict[str, Any]) -> dict[str, Any]:
    """A launch body as XInference reads it: the engine name matched case-insensitively (llm_family.py
    ``get_model_engine_from_spell``), a JSON object or array given as text parsed (vLLM's model config)."""
    found = dict(body)
    if isinstance(found.get("model_engine"), str):
        found["model_engine"] = found["model_engine"].lower()
    for key, value in found.items():
        if isinstance(value, str) and value.startswith(("{", "[")):
            found[key] = _click_value(value)
    return found


def _lms(release: EngineRelease, commands: list[list[str]], where: str) -> dict[str, Any]:
    """``lms load KEY ...`` and ``lms server start ...``: the key and the options of both."""
    found: dict[str, Any] = {}
    for command in commands:
        words = [str(w) for w in command]
        if words[:1] == ["lms"] or (words and words[0].endswith("/lms")):
            words = words[1:]
        if words[:1] == ["load"]:
            options, positional = _flags(release, words[1:], where)
            assert len(positional) == 1, f"{where}: lms load takes one model key, got {positional}"
            found.update(options, model=positional[0])
        elif words[:2] == ["server", "start"]:
            options, positional = _flags(release, words[2:], where)
            assert not positional, f"{where}: {positional}"
            found.update({f"server.{k}" if not k.startswith("server.") else k: v for k, v in options.items()})
    return found


def _openllm(release: EngineRelease, argv: list[str], where: str) -> dict[str, Any]:
    """``openllm serve BENTO ...``: the bento, its options, and each ``--arg KEY=VALUE`` as ``arg.KEY``."""
    words = _strip_launcher("openllm", argv)
    assert words[:1] == ["serve"], f"{where}: {words}"
    rest: list[str] = []
    found: dict[str, Any] = {}
    i = 1
    while i < len(words):
        if words[i] in ("--arg", "--env") and i + 1 < len(words):
            key, _, value = words[i + 1].partition("=")
            found[f"{words[i][2:]}.{key}"] = value
            i += 2
            continue
        rest.append(words[i])
        i += 1
    options, positional = _flags(release, rest, where)
    assert len(positional) == 1, f"{where}: openllm serve takes one bento, got {positional}"
    return {**options, **found, "bento": positional[0]}


def _upstream_options(recipe: dict[str, Any], release: EngineRelease, rid: str) -> dict[str, Any]:
    engine = recipe["engine"]
    up = recipe["upstream"]
    argv = _strip_launcher(engine, [str(a) for a in up.get("argv") or []])
    found, positional = _flags(release, argv, f"{rid} upstream")
    found.update(_environment(release, up.get("env") or {}, f"{rid} upstream"))
    if engine == "tensorrt-llm":
        if positional:
            found["model"] = positional.pop(0)
        for name in ("extra_llm_api_options", "config"):
            path = found.pop(name, None)
            if path is not None:
                found.update(_config(release, _yaml.load(str(up["files"][Path(str(path)).name]))))
    if engine == "ollama":
        if up.get("model"):
            found["model"] = str(up["model"])
        for key, value in (up.get("modelfile") or {}).items():
            found[f"modelfile.{key}"] = _value(release.option(f"modelfile.{key}"), value)
    assert not positional, f"{rid} upstream: positional words {positional} no option takes"
    return found


def _rendered_options(recipe: dict[str, Any], release: EngineRelease, rid: str) -> dict[str, Any]:
    engine = recipe["engine"]
    containers = _containers(rid)
    assert containers, f"{rid}: nothing rendered"
    container, files = containers[0]
    argv = [str(a) for a in [*(container.get("entrypoint") or []), *container["command"]]]
    if engine == "llama.cpp" and "args.json" in files:
        argv = [str(a) for a in json.loads(files["args.json"])]
    argv = _strip_launcher(engine, argv)
    found, positional = _flags(release, argv, f"{rid} rendered")
    env = dict(container.get("environment") or {})
    for name, text in files.items():
        if name.endswith(".env"):
            env.update(_env_file(text))
    found.update(_environment(release, env, f"{rid} rendered"))
    if engine == "tensorrt-llm":
        if positional:
            found["model"] = positional.pop(0)
        for name in ("extra_llm_api_options", "config"):
            path = found.pop(name, None)
            if path is not None:
                found.update(_config(release, _yaml.load(files[Path(str(path)).name]) or {}))
    if engine == "ollama" and "Modelfile" in files:
        model, params = _modelfile(release, files["Modelfile"])
        found.update(params)
        if model is not None:
            found["model"] = model
    assert not positional, f"{rid} rendered: positional words {positional} no option takes"
    return found


def _platform_upstream(recipe: dict[str, Any], release: EngineRelease, rid: str) -> dict[str, Any]:
    """LM Studio, OpenLLM, XInference: the published commands' options."""
    up = recipe["upstream"]
    if recipe["engine"] == "lmstudio":
        return _lms(release, up["argv"], f"{rid} upstream")
    if recipe["engine"] == "openllm":
        return _openllm(release, [str(a) for a in up["argv"]], f"{rid} upstream")
    server, positional = _flags(release, [str(a) for a in up.get("argv") or []], f"{rid} upstream")
    assert not positional, f"{rid} upstream: {positional}"
    launch = _xinference_launch([str(a) for a in up.get("launch") or []], f"{rid} upstream")
    return {**server, **_xinference_request(launch)}


def _platform_rendered(recipe: dict[str, Any], release: EngineRelease, rid: str) -> dict[str, Any]:
    """LM Studio, OpenLLM, XInference: the rendered commands' (and launch request's) options."""
    containers = _containers(rid)
    assert containers, f"{rid}: nothing rendered"
    container, files = containers[0]
    if recipe["engine"] == "lmstudio":
        return _lms(release, json.loads(files["lms-commands.json"])["commands"], f"{rid} rendered")
    if recipe["engine"] == "openllm":
        argv = [str(a) for a in [*(container.get("entrypoint") or []), *container["command"]]]
        return _openllm(release, argv, f"{rid} rendered")
    words = _strip_launcher("xinference", [str(a) for a in container["command"]])
    server, positional = _flags(release, words, f"{rid} rendered")
    assert not positional, f"{rid} rendered: {positional}"
    return {**server, **_xinference_request(json.loads(files["launch.json"]))}


PLATFORMS = ("lmstudio", "openllm", "xinference")  # compared by _platform_upstream / _platform_rendered


@pytest.mark.parametrize("rid", _params("render", tuple(e for e in ENGINES if e not in PARSED)))
def test_recipe_renders_what_upstream_launches(rid: str) -> None:
    recipe = _recipe(rid)
    release = _release(recipe)
    platform = recipe["engine"] in PLATFORMS
    upstream_of, rendered_of = (
        (_platform_upstream, _platform_rendered) if platform else (_upstream_options, _rendered_options)
    )
    upstream = _without_defaults(release, upstream_of(recipe, release, rid))
    rendered = _without_defaults(release, rendered_of(recipe, release, rid))
    _assert_same(recipe, upstream, rendered)


def _assert_same(recipe: dict[str, Any], upstream: dict[str, Any], rendered: dict[str, Any]) -> None:
    allowed = set(recipe.get("differences") or {})
    diff = {
        key: {"upstream": upstream.get(key, "<unset>"), "rendered": rendered.get(key, "<unset>")}
        for key in sorted(set(upstream) | set(rendered))
        if key not in allowed and upstream.get(key, "<unset>") != rendered.get(key, "<unset>")
    }
    assert not diff, "rendered launch differs from the recipe's:\n" + json.dumps(diff, indent=1, default=str)


# --- the engine's own parser (vLLM, SGLang) --------------------------------------------------


@pytest.mark.parsers
@pytest.mark.slow
@pytest.mark.parametrize("rid", _params("parse", PARSED))
def test_recipe_parses_like_upstream(rid: str, tmp_path: Path) -> None:
    from tests.render.test_engine_parsers import CONFIG_IN_CONTAINER, engine_argv, env_python, parse

    recipe = _recipe(rid)
    engine = recipe["engine"]
    python = env_python(engine, str(recipe.get("parser") or recipe["release"]))
    up = recipe["upstream"]
    nodes = up["argv"] if up["argv"] and isinstance(up["argv"][0], list) else [up["argv"]]
    upstream_files = tmp_path / "upstream"
    upstream_files.mkdir()
    for name, text in (up.get("files") or {}).items():
        (upstream_files / name).write_text(str(text))

    rendered: list[list[str]] = []
    for container, files in _containers(rid):
        argv = engine_argv(engine, container)
        if argv is None:
            continue  # a Ray worker: runs `ray start`, not the engine
        if CONFIG_IN_CONTAINER in argv:
            config = tmp_path / f"rendered-{len(rendered)}.yaml"
            config.write_text(files["config.yaml"])
            argv[argv.index(CONFIG_IN_CONTAINER)] = str(config)
        rendered.append(argv)
    assert len(rendered) == len(nodes), f"{len(rendered)} engine containers rendered, the recipe runs {len(nodes)}"

    for rank, (theirs, ours) in enumerate(zip(nodes, rendered, strict=True)):
        theirs = [str(upstream_files / w) if w in (up.get("files") or {}) else str(w) for w in theirs]
        a = parse(python, engine, theirs, tmp_path / f"up-{rank}")
        b = parse(python, engine, ours, tmp_path / f"ours-{rank}")
        for namespace in (a, b):
            namespace.pop("config", None)  # the file's path; its values are in the namespace
        _assert_same(recipe, a, b)


def test_xfail_entries_name_a_recipe_and_an_item() -> None:
    ids = set(_ids())
    for (check, rid), reason in XFAIL.items():
        assert check in ("validate", "render", "parse"), check
        assert rid in ids, rid
        assert re.match(r"issue 12( item \d+|, (a false error )?outside items 1-11): ", reason), reason


def test_upstream_argv_is_the_published_command() -> None:
    """Every word of the arguments the test launches appears in the command as published."""
    for rid in _ids():
        up = _recipe(rid)["upstream"]
        published = str(up["command"]) + "\n".join(str(v) for v in (up.get("files") or {}).values())
        resolved = {str(k): str(v) for k, v in (up.get("variables") or {}).items()}
        expanded = published
        for name, value in resolved.items():  # the recipe's own shell variables, as it sets them
            expanded = re.sub(r"\$\{?" + re.escape(name) + r"\b\}?", value, expanded)
        words = set(shlex.split(expanded.replace("\\\n", " "), comments=True))
        argv = up.get("argv") or []
        nodes = argv if argv and isinstance(argv[0], list) else [argv]
        for node in nodes:
            for word in node:
                word = str(word)
                parts = {word, *word.split("=", 1)}
                assert parts & (words | set(resolved.values())) or any(word in w for w in words), (
                    f"{rid}: {word!r} is not in the published command"
                )
        for name, value in (up.get("env") or {}).items():
            assert name in published and str(value) in published + " ".join(resolved.values()), (rid, name)
