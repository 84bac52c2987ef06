"""KTransformers' release catalogs (scripts/catalog/ktransformers.py): the sglang-kt wheels' own parser.

Cross-checked against the wheels on PyPI: sglang_kt-0.7.2's sglang/srt/server_args.py defines
``--kt-method`` (type=str, default "AMXINT4"), ``--kt-cpuinfer`` (type=int, no default),
``--kt-threadpool-count`` (type=int, default 2) and ``--kt-numa-nodes`` (type=int, nargs="+");
``--kt-expert-lora-path`` is in 0.6.4 and 0.7.2 and not in 0.5.3. The ``--kt-method`` choices
are kt-kernel 0.7.2's ``INFERENCE_METHODS`` (kt_kernel/experts.py), and for 0.5.3 the methods
``KTMoEWrapper.__new__`` dispatches on (no NVFP4/MXFP4 there).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.engines.one_option import eng001

KT = engines.get("ktransformers")
MOE = "{source: deepseek-ai/DeepSeek-V3}"


def test_releases_resolve_exactly_with_provenance() -> None:
    assert set(KT.catalog.versions) >= {"0.5.3", "0.6.4", "0.7.2"}
    for version in KT.catalog.versions:
        release = KT.select(version).release
        assert release is not None and release.version == version
        assert release.engine == "ktransformers"
        assert f"sglang_kt-{version}-" in release.source and "pypi.org/project/sglang-kt" in release.source


def test_kt_options_as_the_release_defines_them() -> None:
    release = KT.select("0.7.2").release
    assert release is not None
    method = release.options["kt_method"]
    assert (method.flag, method.type, method.default) == ("--kt-method", "str", "AMXINT4")
    assert method.choices is not None and {"AMXINT4", "AMXINT8", "LLAMAFILE", "FP8", "BF16", "NVFP4"} <= set(
        method.choices
    )
    cpuinfer = release.options["kt_cpuinfer"]
    assert (cpuinfer.type, cpuinfer.default) == ("int", None)
    pools = release.options["kt_threadpool_count"]
    assert (pools.type, pools.default) == ("int", 2)
    nodes = release.options["kt_numa_nodes"]
    assert (nodes.type, nodes.nargs) == ("list", "+")
    strategies = ("frequency", "front-loading", "uniform", "random")
    assert release.options["kt_expert_placement_strategy"].choices == strategies
    assert release.options["kt_num_gpu_experts"].help.startswith("[ktransformers parameter] Number of GPU experts")
    old = KT.select("0.5.3").release
    assert old is not None and "NVFP4" not in (old.options["kt_method"].choices or ())


@pytest.mark.parametrize(("version", "known"), [("0.5.3", False), ("0.6.4", True), ("0.7.2", True)])
def test_eng001_follows_the_release(tmp_path: Path, version: str, known: bool) -> None:
    found = [f.message for f in eng001(tmp_path, "ktransformers", version, MOE, "kt_expert_lora_path", "/srv/a")]
    assert bool(found) is not known, found
    assert eng001(tmp_path, "ktransformers", version, MOE, "kt_cpuinfer", "8") == []
    assert eng001(tmp_path, "ktransformers", version, MOE, "kt_cpu_infer", "8"), "a misspelt kt option is ENG001"


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("kt_method", "amxint4", "must be one of AMXINT4"),
        ("kt_cpuinfer", "many", "kt_cpuinfer"),
        ("kt_expert_placement_strategy", "hottest", "must be one of frequency"),
    ],
)
def test_eng002_on_kt_option_values(tmp_path: Path, option: str, value: str, problem: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n"
        f"model: {MOE}\nengine: {{name: ktransformers, version: '0.7.2', options: {{{option}: {value}}}}}\n"
    )
    found = [f.message for f in check_fleet(load_fleet([path])) if f.rule == "ENG002"]
    assert any(problem in message for message in found), found
