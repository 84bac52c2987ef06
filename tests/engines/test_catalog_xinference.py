"""XInference's catalogs: its own options per release, the engines each image bundles, forwarded options checked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import version_key
from servespec.engines.xinference import ENGINE
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.engines.one_option import eng001

FOLDER = Path(str(ENGINE.catalog.folder))
MODEL = "{source: Qwen/Qwen2.5-7B-Instruct, max_model_len: 4096}"


def _findings(tmp_path: Path, engine: str, extra: str = "", version: str = "2.12.0") -> list[tuple[str, str, str]]:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n"
        f"model: {MODEL}\nengine:\n  name: xinference\n  version: '{version}'\n{engine}{extra}"
        "suppress: [{rule: SEC003, reason: test}, {rule: PAR002, reason: test}]\n"
    )
    return [(f.rule, f.path or "", f.message) for f in check_fleet(load_fleet([path]))]


def test_every_release_says_where_it_came_from() -> None:
    versions = ENGINE.catalog.versions
    upto = [v for v in versions if version_key(v) <= version_key("4.1.0")]  # later releases: scripts/catalog/refresh
    assert versions[0] == "1.1.0" and upto[-1] == "4.1.0" and len(upto) == 59
    for version in versions:
        data = json.loads((FOLDER / f"{version}.json").read_text())
        provenance = data["provenance"]
        assert provenance["tag"] == f"v{version}"
        if provenance["artifact"] is None:  # read from the git tag
            assert re.fullmatch("[0-9a-f]{40}", provenance["commit"])
        else:  # read from the PyPI sdist (3.3.0 on): its file, hash and the commit its _version.py names
            assert provenance["artifact"] == f"xinference-{version}.tar.gz"
            assert re.fullmatch("[0-9a-f]{64}", provenance["sha256"])
            assert re.fullmatch("[0-9a-f]{9}", provenance["commit"])
            assert "bundled_not_read" in data["notes"]
        assert "xinference/deploy/cmdline.py" in provenance["files"]
        assert data["notes"]["health"]["path"] == "/status"
        assert data["notes"]["default_port"]["value"] == 9997


@pytest.mark.parametrize("version", ["1.1.0", "2.12.0", "3.2.1", "3.3.0", "4.1.0"])
def test_the_server_and_launch_options_are_the_releases_own(version: str) -> None:
    release = ENGINE.select(version).release
    assert release is not None
    port, host = release.option("port"), release.option("host")
    assert port is not None and port.flag == "--port" and port.aliases == ("-p",) and port.default == 9997
    assert host is not None and host.aliases == ("-H",) and host.default == "127.0.0.1"  # constants.py
    engine = release.option("model_engine")
    assert engine is not None and engine.flag is None and engine.choices is not None
    assert {"vLLM", "vllm", "SGLang", "llama.cpp", "Transformers"} <= set(engine.choices)
    for field in ("model_name", "model_format", "model_size_in_billions", "quantization", "replica", "n_gpu"):
        assert release.option(field) is not None, field


@pytest.mark.parametrize(
    ("version", "vllm", "sglang"),
    [
        ("1.1.0", "0.6.4.post1", None),  # requirements.txt vllm>=0.6.3.post1,<=0.6.4.post1; sglang unpinned
        ("1.5.0", "0.8.4", None),  # requirements-ml.txt (not requirements.txt's 0.7.3: the Dockerfile reads -ml)
        ("1.17.1", "0.9.2", "0.4.6.post5"),
        ("2.12.0", "0.21.0", "0.5.6"),  # FROM vllm/vllm-openai:v0.21.0
        ("3.2.1", None, None),  # the image ships no engine
        ("4.1.0", None, None),  # from the sdist: the Dockerfile is not read, no engine assumed
    ],
)
def test_the_bundled_engine_releases_are_read_from_the_image(
    version: str, vllm: str | None, sglang: str | None
) -> None:
    release = ENGINE.select(version).release
    found = {block: ENGINE.bundled(release, block) for block in ("vllm", "sglang")}
    assert (found["vllm"] and found["vllm"].version, found["sglang"] and found["sglang"].version) == (vllm, sglang)
    for bundled in found.values():
        if bundled is not None:
            assert bundled.release is not None and bundled.source.startswith("https://github.com/xorbitsai/")


def test_forwarded_options_carry_the_bundled_engines_definitions_and_xinferences_defaults() -> None:
    release = ENGINE.select("2.12.0").release
    assert release is not None
    vllm = engines.get("vllm").select("0.21.0").release
    assert vllm is not None
    ours, theirs = release.option("vllm.gpu_memory_utilization"), vllm.option("gpu_memory_utilization")
    assert ours is not None and theirs is not None and (ours.max, ours.type) == (theirs.max, theirs.type)
    seqs = release.option("vllm.max_num_seqs")
    assert seqs is not None and seqs.default == 256  # vllm/core.py setdefault("max_num_seqs", 256)
    assert release.option("vllm.no_such_option") is None
    # 3.x ships no engine: only what XInference itself sets is typed, and the catalog is partial
    three = ENGINE.select("3.2.1").release
    assert three is not None and three.partial
    only = three.option("vllm.max_num_seqs")
    assert only is not None and only.default == 256 and three.option("vllm.enable_prefix_caching") is None
    # before 1.7.1 the Dockerfile installs SGLang unpinned: its block is one mapping, forwarded unchecked
    old = ENGINE.select("1.5.0").release
    assert old is not None and not old.partial and old.option("sglang") is not None
    assert old.option("sglang.mem_fraction_static") is None


def test_eng001_on_xinferences_own_options(tmp_path: Path) -> None:
    found = eng001(tmp_path, "xinference", "2.12.0", MODEL, "n_gpus", "2")
    assert len(found) == 1 and "has no option 'n_gpus'" in found[0].message and "n_gpu" in (found[0].hint or "")
    assert not eng001(tmp_path, "xinference", "2.12.0", MODEL, "n_gpu", "2")


def test_eng001_on_forwarded_options_uses_the_bundled_release(tmp_path: Path) -> None:
    typo = _findings(tmp_path, "  options: {model_engine: vLLM, vllm: {max_num_seq: 8}}\n")
    assert [(r, p) for r, p, _ in typo if r == "ENG001"] == [("ENG001", "engine.options.vllm.max_num_seq")]
    # async_scheduling is in vLLM 0.21.0 (XInference 2.12.0's image), not in 0.9.2 (1.17.1's)
    newer = "  options: {model_engine: vLLM, vllm: {async_scheduling: true}}\n"
    assert not [f for f in _findings(tmp_path, newer) if f[0] == "ENG001"]
    old = [m for r, _, m in _findings(tmp_path, newer, version="1.17.1") if r == "ENG001"]
    assert len(old) == 1 and "vllm.async_scheduling" in old[0] and "added in 2.0.0" in old[0]


def test_eng002_on_own_and_forwarded_values(tmp_path: Path) -> None:
    found = _findings(
        tmp_path,
        "  options: {model_engine: vllmm, replica: 0, vllm: {gpu_memory_utilization: 1.5, max_num_seqs: x}}\n",
    )
    paths = sorted(p for r, p, _ in found if r == "ENG002")
    assert paths == [
        "engine.options.model_engine",
        "engine.options.replica",
        "engine.options.vllm.gpu_memory_utilization",
        "engine.options.vllm.max_num_seqs",
    ]
    assert not [f for f in _findings(tmp_path, "  options: {model_engine: sglang}\n") if f[0] == "ENG002"]


def test_on_releases_without_an_engine_in_the_image_unknown_forwarded_options_are_only_noted(tmp_path: Path) -> None:
    found = _findings(tmp_path, "  options: {model_engine: vLLM, vllm: {enable_prefix_caching: true}}\n", "", "3.2.1")
    assert [(r, p) for r, p, _ in found if r.startswith("ENG")] == [
        ("ENG001", "engine.options.vllm.enable_prefix_caching")
    ]
    path = tmp_path / "spec.yaml"
    fleet = load_fleet([path])
    assert [f.severity.value for f in check_fleet(fleet) if f.rule == "ENG001"] == ["info"]


@pytest.mark.parametrize(
    ("options", "path", "words"),
    [
        ("{}", "engine.options.model_engine", "model_engine"),
        ("{model_engine: vLLM, sglang: {mem_fraction_static: 0.8}}", "engine.options.sglang", "only the vllm block"),
        ("{model_engine: vLLM, vllm: {tensor_parallel_size: 2}}", "engine.options.vllm.tensor_parallel_size", "n_gpu"),
        ("{model_engine: vLLM, vllm: {max_model_len: 2048}}", "engine.options.vllm.max_model_len", "max_model_len"),
        ("{model_engine: vLLM, replica: 2}", "engine.options.replica", "replica 2"),
        ("{model_engine: vLLM, model_format: ggufv2}", "engine.options.model_format", "registers"),
    ],
)
def test_launch_requests_xinference_would_refuse_are_eng003(
    tmp_path: Path, options: str, path: str, words: str
) -> None:
    found = [(p, m) for r, p, m in _findings(tmp_path, f"  options: {options}\n") if r == "ENG003"]
    assert [p for p, _ in found] == [path], found
    assert words in found[0][1]


def test_a_model_outside_the_registry_and_the_cpu_image_are_eng003(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n"
        "model: {source: meta-llama/Llama-3.1-8B-Instruct, max_model_len: 4096}\n"
        "engine: {name: xinference, version: '2.12.0', image: 'xprobe/xinference:v2.12.0-cpu', "
        "options: {model_engine: vLLM}}\n"
    )
    found = {(f.path, f.message.split(":")[0]) for f in check_fleet(load_fleet([path])) if f.rule == "ENG003"}
    assert ("model.source", "XInference 2.12.0's built-in registry (llm_family.json) has no Hugging Face model "
            "'meta-llama/Llama-3.1-8B-Instruct'") in found  # fmt: skip
    assert any(p == "engine.options.model_engine" and "CPU image" in m for p, m in found)
    hints = {f.path: f.hint for f in check_fleet(load_fleet([path])) if f.rule == "ENG003"}
    assert "did you mean model.source 'meta-llama/Meta-Llama-3.1-8B-Instruct'?" in (hints["model.source"] or "")
    assert all(hints.values()), "every finding says how to fix it"


SDIST_FILES = {
    "xinference/_version.py": "__version__ = version = '9.9.0'\n__commit_id__ = commit_id = 'gabcdef123'\n",
    "xinference/constants.py": "XINFERENCE_DEFAULT_ENDPOINT_PORT = 9997\nXINFERENCE_DEFAULT_LOCAL_HOST = '127.0.0.1'\n",
    "xinference/deploy/cmdline.py": (
        "import click\n"
        "from ..constants import XINFERENCE_DEFAULT_ENDPOINT_PORT\n"
        "@click.option('--port', '-p', default=XINFERENCE_DEFAULT_ENDPOINT_PORT, type=int, help='Port. More.')\n"
        "def local(port):\n    pass\n"
        "@click.option('--model-engine', '-en', type=str, help='The engine.')\n"
        "def model_launch(model_engine):\n    pass\n"
    ),
    "xinference/api/restful_api.py": (
        'ROUTE = "/status"\n'
        "async def launch_model(request):\n"
        "    payload = await request.json()\n"
        "    model_engine = payload.get('model_engine')\n"
        "    replica = payload.get('replica', 1)\n"
    ),
    "xinference/model/llm/__init__.py": 'SUPPORTED_ENGINES["vLLM"] = []\nSUPPORTED_ENGINES["SGLang"] = []\n',
    "xinference/model/llm/vllm/core.py": (
        "class VLLMModel:\n    def _sanitize_model_config(self, model_config):\n"
        "        model_config.setdefault('max_num_seqs', 256)\n        return model_config\n"
    ),
    "xinference/model/llm/llm_family.json": "[]",
}


def test_a_release_newer_than_the_snapshot_is_read_from_its_sdist(tmp_path: Path) -> None:
    """scripts/catalog/xinference.py: no git tag for the release -> its PyPI sdist, hashed, commit from _version.py."""
    import hashlib
    import importlib.util
    import io
    import sys
    import tarfile

    scripts = Path(__file__).resolve().parents[2] / "scripts" / "catalog"
    sys.path.insert(0, str(scripts))
    spec = importlib.util.spec_from_file_location("xinference_catalog", scripts / "xinference.py")
    assert spec is not None and spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = builder
    spec.loader.exec_module(builder)
    folder = tmp_path / "9.9.0"
    folder.mkdir()
    sdist = folder / "xinference-9.9.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for name, text in SDIST_FILES.items():
            data = text.encode()
            info = tarfile.TarInfo(f"xinference-9.9.0/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    builder.SDIST_CACHE = tmp_path  # the download cache: the sdist is there, nothing is fetched
    release, models = builder.build(builder.sdist_source("9.9.0"))
    provenance = release["provenance"]
    assert provenance["artifact"] == sdist.name and provenance["commit"] == "abcdef123"
    assert provenance["sha256"] == hashlib.sha256(sdist.read_bytes()).hexdigest()
    assert provenance["tag"] == "v9.9.0" and "xinference/deploy/docker/Dockerfile" not in provenance["files"]
    assert release["bundled"] == {"vllm": None, "sglang": None} and "bundled_not_read" in release["notes"]
    assert release["notes"]["images"]["cpu"] is None and release["notes"]["model_engines"] == ["vLLM", "SGLang"]
    assert release["options"]["port"]["default"] == 9997 and release["options"]["replica"]["default"] == 1
    assert release["forwarded_defaults"] == {"vllm": {"max_num_seqs": 256}} and models == []
