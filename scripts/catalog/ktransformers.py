"""Regenerate KTransformers' release catalogs from the released ``sglang-kt`` and ``kt-kernel`` wheels on PyPI.

    python scripts/catalog/ktransformers.py             # the releases in VERSIONS
    python scripts/catalog/ktransformers.py 0.7.2

KTransformers serves through ``sglang-kt``, SGLang with the ``--kt-*`` options, released
in lockstep with ``ktransformers`` and ``kt-kernel`` (the ktransformers X wheel pins
``kt-kernel==X`` and, in its ``sglang`` extra, ``sglang-kt==X``; docker/Dockerfile: "sglang-kt
version = ktransformers version (aligned)"). A release's catalog is therefore the
``sglang-kt`` wheel of that version read exactly as ``scripts/catalog/sglang.py`` reads an
SGLang artefact (the release's own ``ServerArgs.add_cli_args``, run by ``sglang_parser.py``
in the SGLang parser environment), with one addition from the ``kt-kernel`` wheel of the
same version: ``--kt-method`` has no argparse choices, but ``KTMoEWrapper`` refuses any
method outside ``INFERENCE_METHODS`` (``kt_kernel/experts.py``) when the model loads, so
those methods become the option's ``choices`` (read from the file's AST).

A development tool: never imported by the CLI.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catalog_io
import sglang
from catalog_io import prune_pool, read_pool, write_pool, write_release
from sglang_memory import memory_facts, read_sources

ENGINE = "ktransformers"
catalog_io.UNITS.setdefault(ENGINE, "ktransformers")
CACHE = Path.home() / ".cache" / "servespec" / "catalog-src" / "sglang-kt"
VERSIONS = ("0.5.3", "0.6.4", "0.7.2")
"""The releases catalogued (each sglang-kt 0.7 wheel is ~100 MB: not every post-release is read)."""
PYPI = "https://pypi.org/project/{name}/{version}/"
REPO = "https://github.com/kvcache-ai/sglang"
KT_KERNEL_TAG = "cp311-cp311-manylinux_2_35_x86_64"


def _index(name: str) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        f"https://pypi.org/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        files: list[dict[str, Any]] = json.load(answer)["files"]
    return files


def artefacts(version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sglang-kt wheel and the kt-kernel cp311 wheel of one release, as PyPI's index lists them."""
    pattern = re.compile(rf"sglang_kt-{re.escape(version)}-py3-none-(?:any|manylinux_2_35_x86_64)\.whl")
    server = [f for f in _index("sglang-kt") if pattern.fullmatch(f["filename"]) and not f.get("yanked")]
    kernel = [f for f in _index("kt-kernel") if f["filename"] == f"kt_kernel-{version}-{KT_KERNEL_TAG}.whl"]
    if not server or not kernel:
        raise SystemExit(f"{version}: no sglang-kt wheel or kt-kernel {KT_KERNEL_TAG} wheel on PyPI")
    return server[0], kernel[0]


def fetch(entry: dict[str, Any]) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / entry["filename"]
    want = entry["hashes"]["sha256"]
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == want:
        return path
    with urllib.request.urlopen(entry["url"], timeout=900) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != want:
        raise SystemExit(f"{entry['filename']}: sha256 differs from PyPI's")
    path.write_bytes(data)
    return path


def inference_methods(kernel_wheel: Path) -> list[str]:
    """``INFERENCE_METHODS`` of kt_kernel/experts.py (a frozenset literal), in source order."""
    with zipfile.ZipFile(kernel_wheel) as wheel:
        tree = ast.parse(wheel.read("kt_kernel/experts.py").decode())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "INFERENCE_METHODS" for t in node.targets
        ):
            call = node.value
            if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.List | ast.Set):
                return [e.value for e in call.args[0].elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    # Before INFERENCE_METHODS (0.5.x): the methods KTMoEWrapper.__new__ dispatches on
    # (`method in [...]` / `method == "..."`), anything else raising NotImplementedError.
    found: list[str] = []
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KTMoEWrapper"]:
        for node in ast.walk(cls):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "method":
                right = node.comparators[0]
                values = right.elts if isinstance(right, ast.List | ast.Tuple | ast.Set) else [right]
                found += [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if found:
        return list(dict.fromkeys(found))
    raise SystemExit(f"{kernel_wheel.name}: no INFERENCE_METHODS literal or method dispatch in kt_kernel/experts.py")


def _where(version: str, wheel: str, path: str) -> str:
    return f"{PYPI.format(name='sglang-kt', version=version)} ({wheel}: {path})"


def cite_wheel(memory: dict[str, Any], version: str, wheel: str) -> None:
    """facts.memory's sources name the sglang-kt wheel read (with the line), not an SGLang tag."""
    for fact in memory.values():
        if fact is None:
            continue
        for key in ("source", "dtype_source"):  # mamba_split cites its state dtypes apart
            if fact.get(key):
                fact[key] = "; ".join(
                    _where(version, wheel, part.split(f"/v{version}/python/", 1)[-1]) for part in fact[key].split("; ")
                )


def refresh_memory(only: str | None = None) -> int:
    """Rewrite facts.memory of the catalogued releases from their sglang-kt wheels (no parser run); with ``only``,
    that one fact alone (``--mamba-split-only``: the other memory facts of these catalogs predate all_reduce /
    cpu_offload / rope_cache, and rewriting them changes more than the hybrid linear-attention state pool)."""
    for version in VERSIONS:
        path = sglang.releases_dir(ENGINE) / f"{version}.json"
        if not path.is_file():
            continue
        server, _kernel = artefacts(version)
        release = json.loads(path.read_text())
        memory = memory_facts(version, read_sources(fetch(server)))
        if only is not None:
            memory = dict(sorted({**release["facts"]["memory"], only: memory[only]}.items()))
        cite_wheel(memory if only is None else {only: memory[only]}, version, server["filename"])
        release["facts"]["memory"] = memory
        release["facts"] = dict(sorted(release["facts"].items()))
        path.write_text(sglang._dump(release))
        print(path, file=sys.stderr)
    return 0


def build(version: str) -> dict[str, Any]:
    server, kernel = artefacts(version)
    sglang.CACHE = CACHE  # the parsed-artefact cache of sglang.read_release lives beside these wheels
    fetch(server)
    kernel_path = fetch(kernel)
    raw = sglang.read_release(version, server)
    release = sglang.build(version, server, raw)
    options = release["options"]
    missing = [k for k in ("kt_method", "kt_cpuinfer", "kt_weight_path", "kt_num_gpu_experts") if k not in options]
    if missing:
        raise SystemExit(f"sglang-kt {version}: no {', '.join(missing)}: not a KTransformers release")
    methods = inference_methods(kernel_path)
    options["kt_method"] = {**options["kt_method"], "choices": methods}
    wheel = server["filename"]
    # SGLang's URLs (sgl-project tags) do not hold sglang-kt's sources: cite the wheel read instead.
    for method in release["facts"].get("quantization_methods", {}).values():
        path = method["source"].split(f"/v{version}/python/", 1)[-1]
        method["source"] = _where(version, wheel, path)
    cite_wheel(release["facts"]["memory"], version, wheel)
    kt_method = (
        f"--kt-method choices: INFERENCE_METHODS of kt_kernel/experts.py in {kernel['filename']} (AST; before it "
        "existed, the methods KTMoEWrapper.__new__ dispatches on), which KTMoEWrapper enforces when the model "
        "loads (argparse takes any string)."
    )
    method = (
        release["extracted_by"].replace("the artefact's sglang/", "the sglang-kt wheel's sglang/") + " " + kt_method
    )
    with zipfile.ZipFile(CACHE / wheel) as archive:
        model_config = archive.read("sglang/srt/configs/model_config.py").decode()
    if not re.search(r"self\.context_len = derived_context_len", model_config):
        raise SystemExit(f"sglang-kt {version}: the derived context default is not in model_config.py")
    release["facts"]["context_default"] = {  # as SGLang's (scripts/catalog/context_facts.py sglang)
        "source": _where(version, wheel, "sglang/srt/configs/model_config.py")
        + " context_length None = get_context_length(hf_text_config)"
    }
    release.update(
        # the repository sglang-kt is built from (ktransformers' third_party/sglang); its wheel is what was read
        source=f"{REPO} ({_where(version, wheel, 'sglang/srt/server_args.py')})",
        sources=[
            _where(version, wheel, "sglang/srt/layers/moe/kt_ep_wrapper.py"),
            f"{PYPI.format(name='kt-kernel', version=version)} ({kernel['filename']}: kt_kernel/experts.py)",
        ],
        commit=f"sglang-kt {version}",
        extracted_by=method,
    )
    release["provenance"] = {
        **release["provenance"],
        "tag": None,
        "files": ["sglang/srt/server_args.py", "sglang/srt/layers/quantization/**", "kt_kernel/experts.py"],
        "method": method,
        "kt_kernel_artifact": kernel["filename"],
        "kt_kernel_sha256": kernel["hashes"]["sha256"],
    }
    release["notes"] = {
        "kt_methods": {
            "value": methods,
            "source": f"{PYPI.format(name='kt-kernel', version=version)} (kt_kernel/experts.py INFERENCE_METHODS)",
        },
        "lockstep": "ktransformers X pins kt-kernel==X and (extra sglang) sglang-kt==X; docker/Dockerfile: "
        "sglang-kt version = ktransformers version (aligned)",
    }
    return release


def main(argv: list[str]) -> int:
    if "--memory-only" in argv:
        return refresh_memory()
    if "--mamba-split-only" in argv:
        return refresh_memory(only="mamba_split")
    wanted = argv or list(VERSIONS)
    releases = [build(v) for v in sorted(wanted, key=sglang.pep440_key)]
    published = [v for v in VERSIONS if v in wanted]
    sglang.add_removed(releases, published)  # catalogued releases only: removed_in is set for adjacent ones
    for release in releases:
        for entry in release["facts"].get("removed_options", {}).values():
            entry["removed_in"] = None  # the catalogued releases are not adjacent on PyPI: only "absent here"
            last = re.search(r"/v([^/]+)/python/", entry["source"])
            if last:  # the last catalogued release with the option (sglang.add_removed names an SGLang tag)
                entry["source"] = PYPI.format(name="sglang-kt", version=last.group(1)) + " (sglang/srt/server_args.py)"
    pool = read_pool(ENGINE)
    for release in releases:
        print(write_release(ENGINE, release, pool), file=sys.stderr)
    write_pool(ENGINE, pool)
    prune_pool(ENGINE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
