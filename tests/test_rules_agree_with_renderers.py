"""Rules and renderers agree (issue 22, item 2), over generated specs.

- What a renderer emits is not refused: a spec in a form the engine's profile says it loads
  (``model_format``), at a layout the profile says it runs, renders, and no rule calls it an error.
- What the renderer refuses is refused by a rule first: a spec ``render_fleet`` rejects always has
  an error finding, so ``deploy validate`` never passes what ``deploy render`` cannot emit (and
  ``deploy render`` itself stops on error findings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from servespec import engines
from servespec.engines.kit import RenderError
from servespec.findings import Severity
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet
from tests.golden.regen import ENGINE_VERSIONS, GOLDEN

LOADS = {
    "hf": ("Qwen/Qwen2.5-7B-Instruct",),
    "gguf": ("/srv/models/qwen2.5-7b-instruct-q4_k_m.gguf", "Qwen/Qwen2.5-7B-Instruct-GGUF"),
    "tag": ("qwen2.5:7b", "hf.co/Qwen/Qwen2.5-7B-Instruct-GGUF", "/srv/models/qwen2.5-7b-instruct-q4_k_m.gguf"),
    "key": ("qwen2.5-7b-instruct",),
}
"""Sources in each form a profile's ``model_format`` declares: what the unit's renderer loads."""
NEEDS = {"xinference": ", options: {model_engine: vLLM}", "openllm": ", image: registry.example.com/openllm:0.6.30"}
"""What a unit cannot run without: XInference launches a model on a named engine; OpenLLM publishes no
server image (ENG003 refuses none: the user builds one)."""
SUPPORTED = [(name, source) for name in engines.names() for source in LOADS[engines.get(name).profile.model_format]]


def _fleet(
    tmp: Path,
    engine: str,
    source: str,
    tp: int,
    numa: Any,
    name: str | None,
    timeout: str | None,
    quantization: str | None = "gguf",
) -> Fleet:
    # a .gguf file with quantization gguf or unset (auto: the file's own format)
    gguf = ", gguf_type: Q4_K_M" + (f", quantization: {quantization}" if quantization else "")
    gguf = gguf if source.endswith(".gguf") else ""
    # a GGUF repo is written as users write it for llama-server -hf: no quantization (HW003 cannot know it)
    lines = [
        "apiVersion: servespec/v1",
        "kind: Deployment",
        "metadata: {name: chat}",
        f"model: {{source: {source}, max_model_len: 4096{gguf}}}",
        f"engine: {{name: {engine}, version: {ENGINE_VERSIONS[engine]}{NEEDS.get(engine, '')}}}",
        f"resources: {{tensor_parallel: {tp}, numa: {str(numa).lower()}}}",
        "placement: {hosts: [h100-a]}",
        "serving: {port: 9000" + (f", model_name: {name}" if name else "") + "}",
    ]
    if timeout:
        lines.append(f"rollout: {{health_timeout: {timeout}}}")
    path = tmp / "chat.yaml"
    path.write_text("\n".join(lines) + "\n")
    return load_fleet([path], GOLDEN / "inventory.yaml")


@pytest.mark.parametrize(("engine", "source"), SUPPORTED, ids=[f"{e}-{s}" for e, s in SUPPORTED])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tp=st.sampled_from([1, 2]),
    numa=st.sampled_from(["auto", "off", False, 0]),
    name=st.sampled_from([None, "chat"]),
    timeout=st.sampled_from([None, "30m"]),
    quantization=st.sampled_from([None, "auto", "gguf"]),
)
def test_what_a_renderer_emits_is_not_refused(
    tmp_path: Path,
    engine: str,
    source: str,
    tp: int,
    numa: Any,
    name: str | None,
    timeout: str | None,
    quantization: str | None,
) -> None:
    profile = engines.get(engine).profile
    tp = tp if profile.tensor_parallel else 1
    fleet = _fleet(tmp_path, engine, source, tp, numa, name, timeout, quantization)
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    rendered = render_fleet(fleet)
    assert rendered.files
    errors = [f.to_text() for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    assert errors == [], (engine, source)


REFUSED_FORMS = ("/etc/models/x.gguf", "models/qwen", "~/qwen", "/srv/models/../../etc/x.gguf", "/var/run/x.gguf")
"""Sources some renderer refuses to mount (system folders, relative, ``~``, ``..``) beside ones they load."""
ALL_SOURCES = sorted({*REFUSED_FORMS, *(s for v in LOADS.values() for s in v)})


def test_what_the_renderer_refuses_a_rule_refuses(tmp_path: Path) -> None:
    refused = 0
    for index, (engine, source) in enumerate((e, s) for e in engines.names() for s in ALL_SOURCES):
        folder = tmp_path / str(index)
        folder.mkdir()
        fleet = _fleet(folder, engine, source, 1, "auto", None, None)
        try:
            render_fleet(fleet)
        except RenderError as error:
            refused += 1
            errors = [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
            assert errors, f"{engine} {source}: the renderer refuses ({error}) but no rule does"
    assert refused  # the grid reaches the renderer's refusals
