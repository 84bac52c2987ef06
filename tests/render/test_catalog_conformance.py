"""Every flag, env var and config key a renderer emits exists in that engine release's catalog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.catalog import EngineRelease
from tests.golden.regen import cases, render_case

CASES = cases()
_yaml = YAML(typ="safe")
LAUNCHERS = (["python3", "-m", "sglang.launch_server"], ["trtllm-serve", "serve"], ["llama-server"])


def _release(engine: str, version: str) -> EngineRelease:
    chosen = get(engine).select(version).release
    assert chosen is not None
    return chosen


def _known_flag(release: EngineRelease, flag: str) -> bool:
    if release.option(flag) is not None:
        return True
    if flag.startswith("--no-"):
        option = release.option("--" + flag.removeprefix("--no-"))
        return option is not None and option.bool_form == "negatable"
    return False


def _flags(argv: list[str]) -> list[str]:
    for launcher in LAUNCHERS:
        if argv[: len(launcher)] == launcher:
            argv = argv[len(launcher) :]
    return [word.split("=", 1)[0] for word in argv if word.startswith("--")]


def _keys(tree: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        if isinstance(value, dict):
            out.extend(_keys(value, f"{prefix}{key}."))
        else:
            out.append(f"{prefix}{key}")
    return out


def _engine_argv(container: dict[str, Any]) -> list[str]:
    argv = [str(w) for w in container["command"]]
    entrypoint = container["entrypoint"] or []
    if entrypoint[:1] == ["ray"]:
        return []  # a Ray worker joins the head; it runs no engine
    if entrypoint == ["/bin/bash", "-c"]:
        return argv[0].split("exec vllm serve ", 1)[-1].split()
    return argv


def _env_names(text: str) -> list[str]:
    return [line.split("=", 1)[0] for line in text.splitlines() if line and not line.startswith("#")]


def _check_native_files(files: dict[str, str], folder: str, release: EngineRelease) -> None:
    known_env = {o.env for o in release.options.values() if o.env}
    for env_name in ("tgi.env", "ollama.env"):
        for name in _env_names(files.get(f"{folder}/{env_name}", "")):
            assert name in known_env, f"{env_name}: {name}"
    for config_name in ("config.yaml", "extra_llm_api_options.yaml"):
        if f"{folder}/{config_name}" in files:
            for key in _keys(_yaml.load(files[f"{folder}/{config_name}"])):
                assert release.option(key) is not None, f"{config_name}: {key}"
    for line in files.get(f"{folder}/Modelfile", "").splitlines():
        if line.startswith("PARAMETER "):
            assert release.option("modelfile." + line.split()[1]) is not None, line


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_emitted_names_exist_in_the_catalog(case: Path) -> None:
    files = render_case(case)
    for name, text in files.items():
        if not name.endswith("container.yaml"):
            continue
        container = _yaml.load(text)
        release = _release(container["engine"]["name"], container["engine"]["version"])
        folder = name.rsplit("/", 1)[0]
        argv = _engine_argv(container)
        for flag in _flags(argv):
            assert _known_flag(release, flag), f"{name}: {flag} not in {release.engine} {release.version}"
        _check_native_files(files, folder, release)
        if f"{folder}/args.json" in files:
            assert json.loads(files[f"{folder}/args.json"])[1:] == argv
