"""The generated reference pages in docs/ match what the code generates."""

from __future__ import annotations

from servespec.docgen import generate
from tests.conftest import REPO


def test_generated_docs_are_up_to_date() -> None:
    for name, text in generate().items():
        path = REPO / "docs" / name
        assert path.is_file(), f"docs/{name} is missing: run `deploy docs -o docs`"
        assert path.read_text() == text, f"docs/{name} is stale: run `deploy docs -o docs`"


def test_every_rule_has_a_page_naming_its_source() -> None:
    pages = generate()
    for name, text in pages.items():
        if name.startswith("rules/") and name != "rules/index.md":
            sources = text.split("## Sources")[1]
            assert "http" in sources or "docs/contract.md" in sources, name
