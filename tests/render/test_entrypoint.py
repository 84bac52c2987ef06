"""engine.entrypoint and engine.command: vendor images that start the server another way.

``engine.entrypoint`` replaces the image's entrypoint, ``engine.command`` the words servespec
starts the server with; the rendered arguments follow, still checked (ENG001-ENG003), and
the words themselves carry no engine option and no shell script (ENG005).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from servespec.findings import Finding, Severity
from servespec.render import Rendered, render_fleet
from servespec.render.container import docker_run
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet
from tests.golden.regen import GOLDEN
from tests.render.test_container_agreement import from_docker_run, role, role_args

__all__ = ["role"]  # the agreement test's fixture, used here

API_SERVER = "[python3, -m, vllm.entrypoints.openai.api_server]"


def _fleet(
    tmp_path: Path, engine: str, version: str, launch: str, more: str = "", placement: str = "{hosts: [h100-a]}"
) -> Fleet:
    path = tmp_path / "vendor.yaml"
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: vendor}}
model: {{source: Qwen/Qwen2.5-7B-Instruct, revision: 0123456789abcdef0123456789abcdef01234567, max_model_len: 4096}}
engine:
  name: {engine}
  version: "{version}"
{launch}
placement: {placement}
{more}
"""
    )
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    return fleet


def _argv(rendered: Rendered, host: str = "h100-a") -> list[str]:
    container = rendered.containers[("vendor", host)]
    return [*(container.entrypoint or ()), *container.command]


def _errors(fleet: Fleet) -> list[Finding]:
    return [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]


def test_an_api_server_entrypoint_takes_the_model_as_a_flag(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.8.5", f"  entrypoint: {API_SERVER}")
    assert _errors(fleet) == []
    rendered = render_fleet(fleet)
    container = rendered.containers[("vendor", "h100-a")]
    assert container.entrypoint == ("python3", "-m", "vllm.entrypoints.openai.api_server")
    # Only `vllm serve` has a positional model; one word, first (vLLM 0.6's --config reader keeps args[0] first).
    assert container.command[:3] == ("--model=Qwen/Qwen2.5-7B-Instruct", "--config", "/etc/servespec/config.yaml")
    readme = rendered.files["vendor/README.md"]
    assert "--entrypoint python3 vllm/vllm-openai:v0.8.5 -m vllm.entrypoints.openai.api_server --model=" in readme
    assert "python3 -m vllm.entrypoints.openai.api_server --model=Qwen/Qwen2.5-7B-Instruct --config" in readme


def test_launcher_words_under_the_images_entrypoint(tmp_path: Path) -> None:
    """An NGC image: its entrypoint (nvidia_entrypoint.sh) runs the words it is given."""
    fleet = _fleet(tmp_path, "vllm", "0.11.0", "  image: nvcr.io/nvidia/vllm:25.09-py3\n  command: [vllm, serve]")
    container = render_fleet(fleet).containers[("vendor", "h100-a")]
    assert container.entrypoint is None
    assert container.command[:4] == ("vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--config")


@pytest.mark.parametrize(
    ("engine", "version", "command", "expected"),
    [
        ("sglang", "0.5.23", "[python3.12, -m, sglang.launch_server]", ["python3.12", "-m", "sglang.launch_server"]),
        ("tensorrt-llm", "1.2.1", "[trtllm-serve]", ["trtllm-serve", "Qwen/Qwen2.5-7B-Instruct"]),
        ("tgi", "3.3.7", "[text-generation-launcher]", ["text-generation-launcher"]),  # options: tgi.env
    ],
)
def test_command_replaces_servespecs_launcher_words(
    tmp_path: Path, engine: str, version: str, command: str, expected: list[str]
) -> None:
    fleet = _fleet(tmp_path, engine, version, f"  command: {command}")
    argv = _argv(render_fleet(fleet))
    assert argv[: len(expected)] == expected
    assert "sglang.launch_server" not in argv[3:] and argv.count("serve") <= 1


def test_the_tgi_key_wrapper_runs_the_given_entrypoint(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "tgi",
        "3.3.7",
        "  entrypoint: [/usr/bin/vendor-launcher]",
        "serving: {api_key: {from_env: KEY}}",
    )
    container = render_fleet(fleet).containers[("vendor", "h100-a")]
    assert container.entrypoint is not None
    assert container.entrypoint[:2] == ("/bin/bash", "-c") and container.entrypoint[-1] == "/usr/bin/vendor-launcher"
    assert "/tgi-entrypoint.sh" not in container.entrypoint[2] and 'exec "$@"' in container.entrypoint[2]


def test_a_ray_leader_execs_the_given_launcher(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "vllm",
        "0.11.0",
        f"  entrypoint: {API_SERVER}",
        "resources: {tensor_parallel: 8, pipeline_parallel: 2}",
        placement="{hosts: [h100-a, h100-b], hosts_per_replica: 2}",
    )
    rendered = render_fleet(fleet)
    leader = rendered.containers[("vendor", "h100-a")]
    assert leader.entrypoint == ("/bin/bash", "-c")
    assert "exec python3 -m vllm.entrypoints.openai.api_server --model=Qwen/Qwen2.5-7B-Instruct" in leader.command[0]


def test_the_readme_and_the_role_run_the_same_argv(tmp_path: Path, role: ModuleType) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.8.5", f"  entrypoint: {API_SERVER}\n  command: [--disable-log-stats]")
    container = render_fleet(fleet).containers[("vendor", "h100-a")]
    readme, ran = from_docker_run(docker_run(container)), role_args(role, container)
    assert readme["argv"] == ran["argv"]
    assert ran["argv"][:4] == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--disable-log-stats"]


# ENG005: what the words may not carry ------------------------------------------------------------


@pytest.mark.parametrize(
    ("launch", "path", "says"),
    [
        ("  command: [vllm, serve, --max-model-len, '999999']", "engine.command[2]", "is a vLLM 0.11.0 option"),
        ("  entrypoint: [python3, -m, vllm.entrypoints.openai.api_server, --api-key=abc]", "engine.entrypoint[3]", ""),
    ],
)
def test_an_option_in_the_launch_words_is_a_warning(tmp_path: Path, launch: str, path: str, says: str) -> None:
    """It escapes the checks but the engine runs it: no refusal to cite, so not an error (issue 22)."""
    fleet = _fleet(tmp_path, "vllm", "0.11.0", launch)
    (found,) = [f for f in check_fleet(fleet) if f.rule == "ENG005"]
    assert found.severity is Severity.WARNING and found.path == path and says in found.message
    assert "abc" not in found.message  # a value is never echoed
    secrets = [f for f in _errors(fleet) if f.rule == "SEC001"]
    assert [f.path for f in secrets] == ([path] if "api-key" in launch else [])  # a literal key is a secret


@pytest.mark.parametrize(
    ("launch", "path", "says"),
    [
        ("  entrypoint: [/bin/bash, -lc]\n  command: ['vllm serve']", "engine.entrypoint[1]", "runs a shell script"),
        ("  entrypoint: [sh]\n  command: [-c, 'exec vllm serve']", "engine.command[0]", "$0, $1"),
    ],
)
def test_launch_words_that_escape_the_checks_are_refused(tmp_path: Path, launch: str, path: str, says: str) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.11.0", launch)
    (error,) = [f for f in _errors(fleet) if f.rule == "ENG005"]
    assert error.path == path, error.to_text()
    assert says in error.message and error.hint
    assert "abc" not in error.message  # a value is never echoed


def test_sglang_cannot_swap_the_launcher_that_carries_its_key(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "sglang",
        "0.5.23",
        "  command: [python3, -m, sglang.launch_server]",
        "serving: {api_key: {from_env: K}}",
    )
    (error,) = [f for f in _errors(fleet) if f.rule == "ENG005"]
    assert error.path == "engine.command" and "serving.api_key" in error.message


def test_an_interpreter_and_its_flags_are_fine(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.11.0", "  entrypoint: [python3, -u, -m, vllm.entrypoints.openai.api_server]")
    assert [f for f in check_fleet(fleet) if f.rule == "ENG005"] == []


def test_the_rendered_arguments_are_still_checked(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "vllm", "0.11.0", f"  entrypoint: {API_SERVER}\n  extra_args: [--max-nun-seqs, '8']")
    assert [f.rule for f in _errors(fleet)] == ["ENG001"]
    fleet = _fleet(tmp_path, "vllm", "0.11.0", f"  entrypoint: {API_SERVER}\n  options: {{gpu_memory_utilization: 2}}")
    assert [f.rule for f in _errors(fleet)] == ["ENG002"]


@pytest.mark.parametrize(
    "launch",
    ["  entrypoint: []", "  command: ['']", "  entrypoint: python3 -m vllm.entrypoints.openai.api_server",
     "  command: [\"vllm\\nserve\"]"],
)  # fmt: skip
def test_malformed_launch_words_are_refused_where_written(tmp_path: Path, launch: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: vendor}\n"
        f'model: {{source: Qwen/Qwen2.5-7B-Instruct}}\nengine:\n  name: vllm\n  version: "0.11.0"\n{launch}\n'
        "placement: {hosts: [h100-a]}\n"
    )
    errors = _errors(load_fleet([path], GOLDEN / "inventory.yaml"))
    assert errors and all(f.line == 8 and f.path.startswith("engine.") for f in errors), [f.to_text() for f in errors]


@pytest.mark.parametrize("version", ["0.6.0", "0.8.5", "0.33.0"])
def test_vllm_names_its_entrypoint_instead_of_trusting_the_image(tmp_path: Path, version: str) -> None:
    """vllm/vllm-openai's ENTRYPOINT was ``python3 -m vllm.entrypoints.openai.api_server`` (no positional
    model) in older images and vendor builds: the container names ``vllm serve`` itself."""
    container = render_fleet(_fleet(tmp_path, "vllm", version, "")).containers[("vendor", "h100-a")]
    assert container.entrypoint == ("vllm", "serve")
    assert container.command[0] == "Qwen/Qwen2.5-7B-Instruct"
