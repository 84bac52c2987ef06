"""Release catalogs: pooled option definitions, lazy loading, partial catalogs, versions not catalogued."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import POOL, Catalog, CatalogError, option_id
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

ENTRY = {
    "flag": "--block-size", "aliases": [], "env": None, "config_key": None, "type": "int", "choices": None,
    "min": None, "max": None, "default": None, "bool_form": None, "nargs": None, "help": "", "deprecated": False,
}  # fmt: skip


def _catalog(tmp_path: Path, releases: dict[str, dict[str, object]], pool: dict[str, object]) -> Catalog:
    folder = tmp_path / "releases"
    folder.mkdir()
    (folder / POOL).write_text(json.dumps({"version": 1, "options": pool}))
    for version, body in releases.items():
        (folder / f"{version}.json").write_text(json.dumps({"engine": "x", "version": version, "source": "s", **body}))
    return Catalog("x", folder)


def test_pooled_and_inline_options_read_alike(tmp_path: Path) -> None:
    ident = option_id(ENTRY)
    catalog = _catalog(
        tmp_path,
        {"1.0": {"options": {"block_size": ident}}, "1.1": {"options": {"block_size": ENTRY}, "partial": True}},
        {ident: ENTRY},
    )
    assert catalog.versions == ("1.0", "1.1")
    old, new = catalog.all()
    assert old.options == new.options and old.option("--block-size") is not None
    assert (old.partial, new.partial) == (False, True)
    assert catalog.nearest("1.0.5") == ("1.0", "1.1")


def test_a_key_renamed_between_releases_is_found_by_the_other_releases_spellings(tmp_path: Path) -> None:
    """trtllm-serve 1.0 spells tensor parallelism only --tp_size; 1.2 keys it tensor_parallel_size, alias --tp_size."""
    old = {**ENTRY, "flag": "--tp_size", "aliases": ["-t"]}
    new = {**ENTRY, "flag": "--tensor_parallel_size", "aliases": ["--tp_size", "-t"]}
    other = {**ENTRY, "flag": "--threads", "aliases": ["-T"]}
    catalog = _catalog(
        tmp_path,
        {
            "1.0": {"options": {"tp_size": old, "threads": other}},
            "1.2": {"options": {"tensor_parallel_size": new, "threads": {**other, "aliases": ["-t"]}}},
        },
        {},
    )
    first, second = catalog.all()
    assert first.option("tensor_parallel_size") is first.options["tp_size"]
    assert second.option("tp_size") is second.options["tensor_parallel_size"]  # its own alias
    assert first.option("--tensor_parallel_size") is None  # a flag as written must be the release's own
    assert first.option("threads") is first.options["threads"]  # short forms (-t) never join two options
    assert first.option("no_such_option") is None


def test_a_dangling_pool_id_is_a_catalog_error(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, {"1.0": {"options": {"block_size": "0123456789ab"}}}, {})
    with pytest.raises(CatalogError, match=r"options\.json does not hold"):
        catalog.release("1.0")


def test_choosing_a_release_reads_only_file_names(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, {"1.0": {"options": {}}, "2.0": {"options": {}}}, {})
    (tmp_path / "releases" / "2.0.json").write_text("not json")  # never parsed to choose 1.5 -> 1.0
    assert catalog.select("1.5").release is not None and catalog.select("1.5").release.version == "1.0"


def test_every_shipped_pool_entry_is_named_and_every_id_resolves() -> None:
    for engine in engines.ENGINES:
        folder = Path(str(engine.catalog.folder))
        pool = json.loads((folder / POOL).read_text())["options"]
        named = set()
        for version in engine.catalog.files:  # pre-releases too (TensorRT-LLM 1.3.0rc24)
            data = json.loads((folder / f"{version}.json").read_text())
            named |= {v for v in data["options"].values() if isinstance(v, str)}
        assert named <= set(pool), engine.name
        assert set(pool) <= named, f"{engine.name}: pool entries no release names (scripts/catalog prune_pool)"
        assert all(option_id(entry) == ident for ident, entry in pool.items()), engine.name


def _spec(tmp_path: Path, version: str, options: str = "") -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n"
        f"model: {{source: Qwen/Qwen2.5-7B-Instruct}}\nengine: {{name: vllm, version: '{version}'{options}}}\n"
    )
    return path


def test_a_version_not_catalogued_is_one_warning_naming_the_nearest(tmp_path: Path) -> None:
    fleet = load_fleet([_spec(tmp_path, "0.12.3")])
    found = [f for f in check_fleet(fleet) if f.rule == "ENG001"]
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert "nearest: 0.12.0, 0.13.0" in found[0].message and "scripts/catalog/build.py vllm" in found[0].hint
    assert not [f for f in check_fleet(load_fleet([_spec(tmp_path, "0.11.0")])) if f.rule == "ENG001"]


def test_a_version_newer_than_the_catalogs_names_the_refresh_command(tmp_path: Path) -> None:
    newest = engines.get("vllm").catalog.versions[-1]
    later = ".".join([*newest.split(".")[:1], str(int(newest.split(".")[1]) + 1), "0"])
    found = [f for f in check_fleet(load_fleet([_spec(tmp_path, later)])) if f.rule == "ENG001"]
    assert len(found) == 1 and found[0].severity.value == "warning"
    assert f"nearest: {newest}" in found[0].message and f"checked against {newest}" in found[0].message
    assert found[0].hint is not None and "scripts/catalog/refresh vllm" in found[0].hint
    # a release between catalogued ones is not what refresh adds: the hint names the builder for it
    between = [f for f in check_fleet(load_fleet([_spec(tmp_path, "0.12.3")])) if f.rule == "ENG001"]
    assert between[0].hint is not None and "scripts/catalog/build.py vllm 0.12.3" in between[0].hint


def test_an_option_a_partial_catalog_lacks_is_only_noted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    vllm = engines.get("vllm")
    release = vllm.select("0.11.0").release
    assert release is not None
    partial = dataclasses.replace(release, partial=True)
    monkeypatch.setattr(type(vllm.catalog), "release", lambda self, version: partial)
    fleet = load_fleet([_spec(tmp_path, "0.11.0", ", options: {no_such_option: 1}")])
    found = [f for f in check_fleet(fleet) if f.rule == "ENG001"]
    assert [f.severity.value for f in found] == ["info"] and "partial" in found[0].message
    assert "has no option" not in found[0].message  # not known to be missing


def test_a_prerelease_named_exactly_is_checked_against_its_own_file(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, {"1.0": {"options": {}}, "1.1-rc2": {"options": {}}}, {})
    assert catalog.versions == ("1.0",)  # release candidates stay out of "nearest earlier" and "added in"
    chosen = catalog.select("1.1-rc2")
    assert (chosen.relation, chosen.release and chosen.release.version) == ("exact", "1.1-rc2")
    assert catalog.select("1.1").relation == "newer"  # the final 1.1 is not its candidate


@pytest.mark.parametrize(("version", "found"), [("2.1.0", 1), ("3.3.7", 0)])
def test_a_spec_field_the_release_has_no_option_for_is_found(tmp_path: Path, version: str, found: int) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n"
        f"model: {{source: Qwen/Qwen2.5-7B-Instruct}}\nengine: {{name: tgi, version: '{version}'}}\n"
        "serving: {api_key: {from_env: KEY}}\n"
    )
    hits = [f for f in check_fleet(load_fleet([path])) if f.rule == "ENG001" and f.path == "serving.api_key"]
    assert len(hits) == found, hits  # TGI's launcher gained --api-key in 2.3.0
    if hits:
        assert "added in 2.3.0" in hits[0].message
