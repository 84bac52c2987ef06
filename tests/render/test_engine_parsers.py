"""Rendered vLLM and SGLang command lines, parsed by the engines' own argument parsers.

The ``parsers`` tier (also marked slow): each golden container of vLLM and SGLang has its
engine argv (plus the rendered config.yaml, in place of /etc/servespec/config.yaml) parsed
by ``tests/parsers/parse_argv.py`` inside a virtualenv holding that exact engine release,
made by ``scripts/parser-envs`` outside the repository (``scripts/test`` builds them before
pytest, so CI runs this tier). Where an environment is missing the case fails in CI
(``CI`` set) and is skipped elsewhere::

    scripts/parser-envs
    .venv/bin/python -m pytest -m parsers tests/render/test_engine_parsers.py tests/render/test_recipes.py
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines.ktransformers.render import PYTHON as KT_PYTHON
from servespec.engines.sglang.render import KEY_LAUNCHER

pytestmark = [pytest.mark.parsers, pytest.mark.slow]

TESTS = Path(__file__).resolve().parents[1]
GOLDEN = TESTS / "golden"
PARSE_ARGV = TESTS / "parsers" / "parse_argv.py"
ENVS = Path(os.environ.get("SERVESPEC_PARSER_ENVS") or Path.home() / ".cache/servespec/parser-envs")
STAMP = ".servespec-lock.sha256"  # written by scripts/parser-envs once an environment is complete
CONFIG_IN_CONTAINER = "/etc/servespec/config.yaml"
RENDERED_IN_CONTAINER = "/etc/servespec/"

# What runs the engine in each image: vllm/vllm-openai's ENTRYPOINT is `vllm serve`;
# SGLang's command names the module itself.
LAUNCHERS = {
    "vllm": ["vllm", "serve"],
    "sglang": ["python3", "-m", "sglang.launch_server"],
    "ktransformers": [KT_PYTHON, "-m", "sglang.launch_server"],  # sglang-kt in the image's serve environment
}
DEFAULT_ENTRYPOINT = {"vllm": ["vllm", "serve"], "sglang": [], "ktransformers": []}
API_SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
# Option names of the values checked by name: port, parallelism, context, served name, model.
KEYS = {
    "vllm": {"tp": "tensor_parallel_size", "context": "max_model_len", "model": "model"},
    "sglang": {"tp": "tp_size", "context": "context_length", "model": "model_path"},
    "ktransformers": {"tp": "tensor_parallel_size", "context": "context_length", "model": "model_path"},
}

_yaml = YAML(typ="safe")


def _containers() -> list[Any]:
    params = []
    for engine in LAUNCHERS:
        for path in sorted(GOLDEN.glob(f"{engine}/*/expected/*/*/container.yaml")):
            container = _yaml.load(path)
            if engine_argv(engine, container) is None:
                continue  # a Ray worker of a vLLM multi-node replica runs `ray start`, not the engine
            version = container["engine"]["version"]
            case = path.relative_to(GOLDEN / engine).parts
            params.append(
                pytest.param(
                    engine,
                    version,
                    path,
                    id=f"{engine}-{version}/{case[0]}/{container['deployment']}/{container['host']}",
                )
            )
    return params


def _expand(script: str, positional: list[str], environment: dict[str, str]) -> list[str]:
    """The argv of the `exec` a bash -c script ends in: "$@" and $VARS expanded."""
    assert "exec " in script, f"bash -c script does not exec the engine: {script!r}"
    words = shlex.split(script[script.rindex("exec ") + len("exec ") :])
    argv: list[str] = []
    for word in words:
        if word == "$@":
            argv += positional
        elif m := re.fullmatch(r"\$\{?(\w+)\}?", word):
            # secrets are references only; any non-empty stand-in parses the same
            argv.append(environment.get(m.group(1), f"servespec-test-{m.group(1).lower()}"))
        else:
            assert "$" not in word, f"unexpanded shell word {word!r} in {script!r}"
            argv.append(word)
    return argv


def engine_argv(engine: str, container: dict[str, Any]) -> list[str] | None:
    """The arguments the engine's parser sees, or None for a container that does not run the engine."""
    entrypoint = container["entrypoint"]
    argv = [*(DEFAULT_ENTRYPOINT[engine] if entrypoint is None else entrypoint), *container["command"]]
    if argv[0] == "ray":  # a Ray worker of a vLLM multi-node replica
        return None
    if argv[1:3] == ["-c", KEY_LAUNCHER] and argv[0] == LAUNCHERS[engine][0]:
        # SGLang's key launcher (also KTransformers'): runs sglang.launch_server with --api-key appended in-process.
        argv = [*LAUNCHERS[engine], *argv[3:], "--api-key", "KEY"]
    if Path(argv[0]).name in ("bash", "sh") and argv[1] == "-c":
        # bash -c SCRIPT [$0 [$1 ...]]
        argv = _expand(argv[2], argv[4:], container.get("environment") or {})
    launcher = LAUNCHERS[engine]
    if engine == "vllm" and Path(argv[0]).name in ("python", "python3") and argv[1:3] == API_SERVER[1:]:
        launcher = argv[:3]  # engine.entrypoint of an older image (or the docs' `python -m ...`): the same engine args
    assert argv[: len(launcher)] == launcher, f"{engine} container does not run {shlex.join(launcher)}: {argv}"
    return argv[len(launcher) :]


def env_python(engine: str, version: str) -> Path:
    """The interpreter of the parser environment of one release (CI: fails where it is missing)."""
    env = ENVS / f"{engine}-{version}"
    if not (env / STAMP).is_file():
        message = f"no parser environment for {engine} {version} at {env} (create it with scripts/parser-envs)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return env / "bin" / "python"


def parse(python: Path, engine: str, argv: list[str], tmp_path: Path) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(argv))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    done = subprocess.run(
        [str(python), str(PARSE_ARGV), engine, str(argv_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        tail = "\n".join([line for line in lines if "error" in line.lower()] or lines[-5:])
        pytest.fail(f"{engine}'s own parser rejected {shlex.join(argv)}\n(exit {done.returncode})\n{tail}")
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def _on_controller(value: Any, container_yaml: Path) -> Any:
    """A rendered file's path in the container (/etc/servespec/NAME) as the rendered file beside container.yaml."""
    if isinstance(value, str) and value.startswith(RENDERED_IN_CONTAINER):
        return str(container_yaml.with_name(value.removeprefix(RENDERED_IN_CONTAINER)))
    return value


def _given_on_cli(argv: list[str], key: str) -> bool:
    flags = {word.split("=", 1)[0].replace("_", "-") for word in argv if word.startswith("--")}
    return "--" + key.replace("_", "-") in flags


@pytest.mark.parametrize(("engine", "version", "path"), _containers())
def test_engine_parser_accepts_rendered_command(engine: str, version: str, path: Path, tmp_path: Path) -> None:
    container = _yaml.load(path)
    argv = engine_argv(engine, container)
    assert argv is not None  # Ray workers are not collected
    python = env_python(engine, version)

    config_path = path.with_name("config.yaml")
    assert argv.count("--config") == 1 and argv[argv.index("--config") + 1] == CONFIG_IN_CONTAINER, argv
    assert "config.yaml" in container["files"]
    written = _yaml.load(config_path)
    if any(isinstance(value, str) and value.startswith(RENDERED_IN_CONTAINER) for value in written.values()):
        # Files the container reads beside config.yaml (the chat template): the parser checks they exist.
        written = {key: _on_controller(value, path) for key, value in written.items()}
        config_path = tmp_path / "config.yaml"
        tmp_path.mkdir(parents=True, exist_ok=True)
        config_path.write_text(json.dumps(written))  # JSON is YAML: the keys as rendered
    config = {key.replace("-", "_"): value for key, value in written.items()}
    argv[argv.index("--config") + 1] = str(config_path)

    parsed = parse(python, engine, argv, tmp_path)
    keys = KEYS[engine]

    # Every value of config.yaml reaches the option it names (unless the command line overrides it).
    for key, value in config.items():
        if _given_on_cli(argv, key):
            continue
        dest = key.replace("-", "_")
        assert dest in parsed, f"config.yaml key {key!r} is no option of {engine} {version}"
        got = parsed[dest]
        if isinstance(got, list) and not isinstance(value, list):
            got = got[0] if len(got) == 1 else got
        if isinstance(got, dict) and isinstance(value, str):
            value = json.loads(value)  # a mapping goes in as JSON text (engines/kit.py split_config)
        assert got == value, f"config.yaml {key}: {value!r}, parsed {parsed[dest]!r}"

    # The values the rest of the deployment relies on.
    assert parsed["port"] == config["port"] == container["healthcheck"]["port"]
    for mapping in container["ports"]:
        assert mapping["container_port"] == parsed["port"]
    assert parsed[keys["tp"]] == config[keys["tp"]]
    assert parsed[keys["context"]] == config[keys["context"]]
    # serving.model_name where the spec names one; unset, no name (the engine serves the model as given).
    served = parsed["served_model_name"]
    served = served if isinstance(served, list) or served is None else [served]
    assert (served or [None])[0] == container["model_name"]
    if engine == "vllm" and argv[0].startswith("--model="):
        assert parsed["model"] == argv[0].removeprefix("--model=")
    elif engine == "vllm":
        assert parsed["model"] == parsed["model_tag"] == argv[0]
        assert parsed["subparser"] == "serve"
    else:
        assert parsed[keys["model"]] == config[keys["model"]]
    if "--api-key" in argv:
        assert parsed["api_key"] == argv[argv.index("--api-key") + 1]


# XInference: the server command (xinference-local, the click command `local` of
# xinference/deploy/cmdline.py) parsed by the release's own click command, for the golden
# cases whose release has a lock file (tests/parsers/requirements-xinference-<version>.txt).
XINFERENCE_PARSE = (
    "import json, sys; from xinference.deploy.cmdline import local; "
    "ctx = local.make_context('xinference-local', json.load(open(sys.argv[1]))); print(json.dumps(ctx.params))"
)


def _xinference_containers() -> list[Any]:
    params = []
    for path in sorted(GOLDEN.glob("xinference/*/expected/*/*/container.yaml")):
        container = _yaml.load(path)
        version = container["engine"]["version"]
        if (TESTS / "parsers" / f"requirements-xinference-{version}.txt").is_file():
            params.append(pytest.param(version, path, id=f"xinference-{version}/{path.relative_to(GOLDEN).parts[1]}"))
    return params


@pytest.mark.parametrize(("version", "path"), _xinference_containers())
def test_xinference_parser_accepts_rendered_command(version: str, path: Path, tmp_path: Path) -> None:
    container = _yaml.load(path)
    argv = [*(container["entrypoint"] or []), *container["command"]]
    assert argv[0] == "xinference-local", argv  # the image's ENTRYPOINT is empty: the command names it
    python = env_python("xinference", version)
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(argv[1:]))
    done = subprocess.run(
        [str(python), "-c", XINFERENCE_PARSE, str(argv_file)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"xinference-local rejected {shlex.join(argv)}:\n{done.stderr[-2000:]}"
    parsed = json.loads(done.stdout)
    assert parsed["host"] == "0.0.0.0"
    assert parsed["port"] == container["healthcheck"]["port"] == container["ports"][0]["container_port"]


# OpenLLM: `openllm serve BENTO ...` parsed by the release's own typer app (openllm.__main__,
# built into its click command by typer.main.get_command), for the golden cases whose release
# has a lock file (tests/parsers/requirements-openllm-<version>.txt). Importing OpenLLM creates
# ~/.openllm, so HOME is a temporary folder.
OPENLLM_PARSE = (
    "import json, sys, typer.main, openllm.__main__ as m; "
    "serve = typer.main.get_command(m.app).commands['serve']; "
    "ctx = serve.make_context('serve', json.load(open(sys.argv[1]))); print(json.dumps(ctx.params))"
)


def _openllm_containers() -> list[Any]:
    params = []
    for path in sorted(GOLDEN.glob("openllm/*/expected/*/*/container.yaml")):
        container = _yaml.load(path)
        version = container["engine"]["version"]
        if (TESTS / "parsers" / f"requirements-openllm-{version}.txt").is_file():
            params.append(pytest.param(version, path, id=f"openllm-{version}/{path.relative_to(GOLDEN).parts[1]}"))
    return params


@pytest.mark.parametrize(("version", "path"), _openllm_containers())
def test_openllm_parser_accepts_rendered_command(version: str, path: Path, tmp_path: Path) -> None:
    container = _yaml.load(path)
    argv = [*(container["entrypoint"] or []), *container["command"]]
    assert argv[:2] == ["openllm", "serve"], argv
    python = env_python("openllm", version)
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(argv[2:]))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HOME=str(tmp_path), BENTOML_DO_NOT_TRACK="true")
    done = subprocess.run(
        [str(python), "-c", OPENLLM_PARSE, str(argv_file)], capture_output=True, text=True, env=env, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"openllm serve rejected {shlex.join(argv)}:\n{done.stderr[-2000:]}"
    parsed = json.loads(done.stdout)
    assert parsed["model"] == argv[2] and ":" in parsed["model"]  # a bento name:version, not a Hub id
    assert parsed["port"] == container["healthcheck"]["port"] == container["ports"][0]["container_port"]
    arguments = dict(pair.split("=", 1) for pair in parsed["arg"])
    assert all("," not in value for value in arguments.values())  # bentoml splits --arg on ','
    assert (container["command"].count("--arg"), len(arguments)) == (len(parsed["arg"]), len(parsed["arg"]))
