"""Bracket groups and top-level commas over a lexer's tokens, for the Go and Rust extractors.

Any token with ``kind``, ``text`` and ``line`` will do (ollama.py's and tgi.py's ``Tok``);
only ``punct`` tokens count as brackets and commas. A development tool: the CLI never imports it.
"""

from __future__ import annotations

from typing import Protocol, TypeVar


class Token(Protocol):
    kind: str
    text: str
    line: int


T = TypeVar("T", bound=Token)

PAIRS = {"(": ")", "[": "]", "{": "}"}


def group_end(toks: list[T], i: int) -> int:
    """Index of the bracket closing the one at ``toks[i]``."""
    opener, close, depth = toks[i].text, PAIRS[toks[i].text], 0
    for j in range(i, len(toks)):
        if toks[j].kind != "punct":
            continue
        if toks[j].text == opener:
            depth += 1
        elif toks[j].text == close:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced {opener} at line {toks[i].line}")


def split_commas(toks: list[T], *, angles: bool = False) -> list[list[T]]:
    """Top-level comma-separated parts of a token list (``angles``: ``<...>`` nests too, as Rust generics)."""
    openers, closers = ("([{<", ")]}>") if angles else ("([{", ")]}")
    parts: list[list[T]] = [[]]
    depth = 0
    for tok in toks:
        if tok.kind == "punct" and tok.text in openers:
            depth += 1
        elif tok.kind == "punct" and tok.text in closers:
            depth -= 1
        if depth == 0 and tok.kind == "punct" and tok.text == ",":
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]
