"""Characters no servespec value, file name or output line may carry unescaped.

Terminals act on C0/C1 control characters (ANSI and OSC escape sequences), CI runners act
on lines that start with ``::`` (GitHub workflow commands), and bidirectional overrides,
zero-width characters and Unicode line separators make text read differently from what it
is (Trojan Source, CVE-2021-42574). Loading refuses them in values and file names; every
printer escapes them in what it shows.
"""

from __future__ import annotations

import re

UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f"  # C0 controls but tab, DEL, C1 controls (ESC, CSI, OSC)
    "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2028\u2029\u2060-\u2064\u2066-\u2069\ufeff"
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers: blank glyphs that pass for letters
    "\U000e0000-\U000e007f]"  # tag characters: invisible ASCII look-alikes (ASCII smuggling)
)
"""Line breaks, control characters, bidi controls, zero-width and invisible characters (soft hyphen,
Mongolian vowel separator, invisible operators, Hangul fillers, tag characters), line separators."""


def unsafe_character(text: str) -> str | None:
    """The first unsafe character of ``text`` as ``U+XXXX``, or None."""
    match = UNSAFE.search(text)
    return f"U+{ord(match.group()):04X}" if match else None


def printable(text: str) -> str:
    """``text`` with every unsafe character written as a visible escape (``\\n``, ``\\x1b``, ``\\u202e``)."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if char == "\n":
            return "\\n"
        if char == "\r":
            return "\\r"
        code = ord(char)
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"

    return UNSAFE.sub(escape, text)


def is_number(word: str) -> bool:
    """Whether a command-line word is a number (``-1``, ``0.5``): a flag's value even with a leading ``-``."""
    try:
        float(word)
    except ValueError:
        return False
    return True


def markdown_cell(text: object) -> str:
    """A markdown table cell: escaped, ``|`` (a new column) and ``<`` (HTML) made literal."""
    return printable(str(text)).replace("|", "\\|").replace("<", "&lt;")
