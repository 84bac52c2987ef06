"""A small C++ tokenizer and argument splitter, enough to read llama.cpp's ``common/arg.cpp``.

Not a C++ parser: it yields string, char, number, identifier and punctuation tokens with
comments and preprocessor lines dropped, and splits a call's argument list at its top-level
commas (brackets of every kind nest). The catalog extractors read option tables through it
instead of matching regular expressions against source text.

This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>R"(?P<delim>[^(\s]*)\((?P<body>.*?)\)(?P=delim)")
  | (?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)+')
  | (?P<number>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[fFlLuU]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>::|->|==|!=|<=|>=|&&|\|\||<<|>>|\+\+|--|[-+*/%<>=!&|^~?:;,.(){}\[\]#])
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b"}

OPEN = {"(": ")", "{": "}", "[": "]"}


@dataclass(frozen=True)
class Token:
    kind: str  # string | char | number | ident | punct
    text: str
    """For strings and chars: the decoded value; else the source text."""
    line: int


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "x":
                digits = re.match(r"[0-9a-fA-F]+", body[i + 2 :])
                if digits:
                    out.append(chr(int(digits.group(0), 16)))
                    i += 2 + len(digits.group(0))
                    continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _strip_preprocessor(source: str) -> str:
    """Blank out preprocessor lines (with their continuations), keeping line numbers."""
    lines = source.split("\n")
    out = []
    continued = False
    for line in lines:
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def tokenize(source: str, keep_preprocessor: bool = False) -> list[Token]:
    """Tokens of ``source``; adjacent string literals are joined into one (as C++ does)."""
    text = source if keep_preprocessor else _strip_preprocessor(source)
    tokens: list[Token] = []
    pos = 0
    line = 1
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise ValueError(f"line {line}: cannot tokenize {text[pos : pos + 20]!r}")
        kind = match.lastgroup or ""
        chunk = match.group(0)
        if kind == "raw" or match.group("raw"):
            value, kind = match.group("body"), "string"
        elif kind == "string":
            value = _unescape(chunk[chunk.index('"') + 1 : -1])
        elif kind == "char":
            value = _unescape(chunk[1:-1])
        else:
            value = chunk
        if kind not in ("ws", "comment"):
            if kind == "string" and tokens and tokens[-1].kind == "string":
                tokens[-1] = Token("string", tokens[-1].text + value, tokens[-1].line)
            else:
                tokens.append(Token(kind, value, line))
        line += chunk.count("\n")
        pos = match.end()
    return _join_format_macros(tokens)


_PRI = re.compile(r"PRI([diouxX])(8|16|32|64|MAX|PTR)")


def _join_format_macros(tokens: list[Token]) -> list[Token]:
    """``"%" PRIu32 " tokens"`` -> one string ``"%u tokens"`` (<cinttypes> format macros)."""
    out: list[Token] = []
    for tok in tokens:
        macro = _PRI.fullmatch(tok.text) if tok.kind == "ident" else None
        if macro and out and out[-1].kind == "string":
            out[-1] = Token("string", out[-1].text + macro.group(1), out[-1].line)
            out.append(Token("punct", "<joined>", tok.line))
            continue
        if tok.kind == "string" and len(out) >= 2 and out[-1].text == "<joined>" and out[-2].kind == "string":
            out.pop()
            out[-1] = Token("string", out[-1].text + tok.text, out[-1].line)
            continue
        if out and out[-1].text == "<joined>":
            out.pop()
        out.append(tok)
    if out and out[-1].text == "<joined>":
        out.pop()
    return out


def matching(tokens: list[Token], start: int) -> int:
    """Index of the bracket closing the one at ``start``."""
    stack = [OPEN[tokens[start].text]]
    i = start + 1
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind == "punct":
            if tok.text in OPEN:
                stack.append(OPEN[tok.text])
            elif tok.text in (")", "}", "]"):
                if tok.text != stack[-1]:
                    raise ValueError(f"line {tok.line}: {tok.text} closes {stack[-1]}")
                stack.pop()
                if not stack:
                    return i
        i += 1
    raise ValueError(f"line {tokens[start].line}: unclosed {tokens[start].text}")


def split_args(tokens: list[Token], open_index: int) -> tuple[list[list[Token]], int]:
    """The top-level comma-separated arguments inside the bracket at ``open_index``, and its close."""
    close = matching(tokens, open_index)
    args: list[list[Token]] = [[]]
    i = open_index + 1
    while i < close:
        tok = tokens[i]
        if tok.kind == "punct" and tok.text in OPEN:
            end = matching(tokens, i)
            args[-1].extend(tokens[i : end + 1])
            i = end + 1
            continue
        if tok.kind == "punct" and tok.text == ",":
            args.append([])
        else:
            args[-1].append(tok)
        i += 1
    if args == [[]]:
        args = []
    return args, close
