"""The YAML loader: plain data, positions, and refusals located where they happen."""

from __future__ import annotations

from pathlib import Path

from servespec.spec.source import load_text

MULTI = """\
apiVersion: servespec/v1
kind: Inventory
hosts:
  gpu-01:
    address: 10.0.0.1
---
apiVersion: servespec/v1
kind: Deployment
metadata:
  name: demo
resources:
  gpu_ids: [0, 1]
"""


def load(text: str):  # type: ignore[no-untyped-def]
    return load_text(text, "f.yaml", Path("f.yaml"))


def test_multi_document_positions_are_absolute_and_one_based() -> None:
    documents, findings = load(MULTI)
    assert findings == []
    assert [d.index for d in documents] == [0, 1]
    second = documents[1].source_map
    assert second.locate(("metadata", "name")).line == 10
    assert second.locate(("metadata", "name")).column == 9
    assert second.locate(("resources", "gpu_ids", 1)).line == 12
    assert second.locate(("resources", "gpu_ids", 1)).column == 16
    assert second.locate(("metadata",), at_key=True).column == 1


def test_missing_path_falls_back_to_nearest_ancestor_key() -> None:
    documents, _ = load(MULTI)
    pos = documents[1].source_map.locate(("metadata", "labels", "team"))
    assert (pos.line, pos.column) == (9, 1)


def test_yaml_12_keeps_on_off_as_strings_and_dates_as_text() -> None:
    documents, _ = load("a: off\nb: 2024-01-02\nc: 0x10\n")
    assert documents[0].data == {"a": "off", "b": "2024-01-02", "c": 16}


def test_documents_before_a_syntax_error_are_kept() -> None:
    documents, findings = load(MULTI + "---\nkind: [\n")
    assert len(documents) == 2
    assert [(f.rule, f.line) for f in findings] == [("SS001", 15)]


def test_duplicate_key_points_at_second_occurrence() -> None:
    _, findings = load("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert [(f.rule, f.line, f.column) for f in findings] == [("SS001", 4, 3)]
    assert "line 3" in findings[0].message


def test_alias_bomb_is_refused_quickly() -> None:
    text = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    prev = "a"
    for name in "bcdefghijk":
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]\n"
        prev = name
    _, findings = load(text)
    assert [f.rule for f in findings] == ["SS001"]
    assert "expands" in findings[0].message


def test_small_aliases_are_fine() -> None:
    documents, findings = load("a: &x {p: 1}\nb: *x\n")
    assert findings == []
    assert documents[0].data == {"a": {"p": 1}, "b": {"p": 1}}


def test_syntax_findings_of_a_referenced_file_quote_nothing_of_it() -> None:
    for text in ("a: *CANARYalias\n", "a: !CANARYtag x\n", "CANARYkey: 1\nCANARYkey: 2\n"):
        _, findings = load_text(text, "f.yaml", Path("f.yaml"), referenced=True)
        assert [f.rule for f in findings] == ["SS001"], text
        assert "CANARY" not in findings[0].message


def test_syntax_findings_escape_and_mask_what_they_quote() -> None:
    token = "hf_" + "Q1w" * 10
    for text, hidden in ((f"{token}: 1\n{token}: 2\n", token), ('"a\\u202eb": 1\n"a\\u202eb": 2\n', "\u202e")):
        _, findings = load_text(text, "f.yaml", Path("f.yaml"))
        assert findings and hidden not in findings[0].message


SCALARS = ["123", "0x1F", "1.5", "1e3", ".inf", "true", "True", "no", "null", "~", "", "7b", "q4_k_m"]


def test_a_scalar_reads_the_same_each_time_it_appears() -> None:
    """The loader remembers the tag of each scalar text it resolved: plain and quoted forms stay apart, in any order,
    file after file, and agree with ruamel.yaml's own reading (YAML 1.2)."""
    from ruamel.yaml import YAML

    plain = "\n".join(f"p{i}: {text}" for i, text in enumerate(SCALARS)) + "\n"
    quoted = "\n".join(f"q{i}: '{text}'" for i, text in enumerate(SCALARS)) + "\n"
    expected = {**YAML(typ="safe", pure=True).load(plain), **YAML(typ="safe", pure=True).load(quoted)}
    assert isinstance(expected["p0"], int) and expected["q0"] == "123" and expected["p5"] is True
    for text in (plain + quoted, quoted + plain, plain + quoted, "x: [" + ", ".join(SCALARS[:10]) + "]\n"):
        documents, findings = load(text)
        assert findings == []
        data = documents[0].data
        assert {k: v for k, v in data.items() if k != "x"} == {k: expected[k] for k in data if k != "x"}
    assert documents[0].data["x"] == [expected[f"p{i}"] for i in range(10)]
