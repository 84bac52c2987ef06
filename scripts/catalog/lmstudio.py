"""LM Studio's ``lms`` CLI: the options of ``lms load`` and ``lms server start`` at one commit of lmstudio-ai/lms.

    python scripts/catalog/build.py lmstudio [COMMIT...]   # default: the commit in COMMITS

``lms`` is open source (MIT, TypeScript, https://github.com/lmstudio-ai/lms); the daemon it
drives, ``llmster`` (LM Studio's headless core, which runs the llama.cpp and MLX engines and the
HTTP server), is closed source: nothing about it is read here, and the catalog says so. The
repository has no release tags: since "Commit hash as version" (lms#413, bf809b5) ``lms version``
prints the CLI's commit hash (src/subcommands/version.ts ``getCommitHash``), and package.json still
says 0.3.43 as it has since @Release-55. So a release here is named by its short commit, the
value an operator reads from ``lms version``.

Options are read from the commander.js definitions (``new Option("FLAGS", text`HELP`)`` and
``.option("FLAGS", text`HELP`)``, with their ``.argParser(createRefinedNumberParser({...}))``
bounds) of ``src/subcommands/load.ts`` (the load command) and ``src/subcommands/server.ts``
(the ``start`` subcommand), tokenised by regular expressions over the TypeScript text; the
client options ``addCreateClientOptions`` adds (hidden ``--host``/``--port``: another LM Studio
instance) and the log-level options are not serving options and are left out. Server options
are keyed ``server.<flag>`` (``server.port``), load options by their flag (``context_length``).

This is a development tool: the CLI never imports it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_io import TOOL_VERSION, write_release
from gitsrc import git, repo_dir, show

OWNER, NAME = "lmstudio-ai", "lms"
COMMITS = ("07b7252",)
"""The catalogued lms commits (main on 2026-08-13, the newest snapshot read)."""
FILES = (
    "src/subcommands/load.ts",
    "src/subcommands/server.ts",
    "src/subcommands/daemon/up.ts",
    "src/subcommands/get.ts",
    "src/createClient.ts",
    "src/types/refinedNumber.ts",
    "src/subcommands/version.ts",
)

CONTEXT_DEFAULT = {
    "tokens": 4096,
    "within_model": True,
    "source": "https://github.com/zed-industries/zed/issues/33938 (observed, not read from source: a model loaded "
    "with no context length reports loaded_context_length 4096; llmster is closed source, and LM Studio 0.4.20 also "
    "fits the context to memory: https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/2212)",
}
"""--context-length unset: what llmster loads with. Not in lms (it passes contextLength undefined to the SDK)."""

_OPTION = re.compile(
    r"(?:new Option\(|\.option\()\s*\"(?P<flags>[^\"]+)\",\s*(?:text`(?P<text>[^`]*)`|\"(?P<plain>[^\"]*)\")\s*,?\s*\)"
    r"(?P<chain>(?:\s*\.(?:argParser|hideHelp|default)\((?:[^()]|\([^()]*(?:\([^()]*\))?[^()]*\))*\))*)"
)
_REFINED = re.compile(r"createRefinedNumberParser\(\{(?P<args>[^}]*)\}\)")


def _help(text: str) -> str:
    """The first sentence of a help text, on one line."""
    words = " ".join(text.split())
    first = re.split(r"(?<=[.!?])\s", words, maxsplit=1)[0]
    return first


def _bounds(chain: str) -> tuple[str, float | None, float | None]:
    """(type, min, max) from an option's ``.argParser(...)``; ``str`` without one."""
    refined = _REFINED.search(chain)
    if refined:
        args = dict(re.findall(r"(\w+)\s*:\s*([\w.-]+)", refined.group("args")))
        kind = "int" if args.get("integer") == "true" else "float"
        low = float(args["min"]) if "min" in args else None
        high = float(args["max"]) if "max" in args else None
        as_int = kind == "int"
        return (
            kind,
            (int(low) if as_int and low is not None else low),
            (int(high) if as_int and high is not None else high),
        )
    return "str", None, None


def _options(text: str, prefix: str, source: str) -> dict[str, dict[str, Any]]:
    """Every commander option in ``text``, keyed ``prefix + long flag`` ('-' -> '_')."""
    out: dict[str, dict[str, Any]] = {}
    negated: set[str] = set()
    for match in _OPTION.finditer(text):
        flags = match.group("flags")
        words = [w.rstrip(",") for w in flags.split()]
        long = next(w for w in words if w.startswith("--"))
        takes_value = any(w.startswith("<") for w in words)
        if long.startswith("--no-"):
            negated.add(long.removeprefix("--no-"))
            continue
        kind, low, high = _bounds(match.group("chain"))
        if not takes_value:
            kind = "bool"
        key = prefix + long.removeprefix("--").replace("-", "_")
        parser = re.search(r"\.argParser\((\w+)\)", match.group("chain"))
        entry: dict[str, Any] = {
            "flag": long,
            "aliases": [w for w in words if w.startswith("-") and not w.startswith("--")],
            "env": None,
            "config_key": None,
            "type": kind,
            "choices": None,
            "min": low,
            "max": high,
            "default": None,
            "bool_form": "flag" if kind == "bool" else None,
            "nargs": None,
            "help": _help(match.group("text") or match.group("plain") or ""),
            "deprecated": False,
            "hidden": ".hideHelp()" in match.group("chain"),
            "source": source,
        }
        if parser and parser.group(1) == "gpuOptionParser":
            # off | max | a ratio in [0, 1] (gpuOptionParser in load.ts): checked by the unit's own ENG002
            entry.update({"type": "str", "value_parser": "gpuOptionParser: off, max, or a number 0..1"})
        out[key] = entry
    for name in negated:
        key = prefix + name.replace("-", "_")
        if key in out:
            out[key]["bool_form"] = "negatable"
    return out


def _between(text: str, start: str, end: str) -> str:
    begin = text.index(start)
    return text[begin : text.index(end, begin)]


def build(short: str) -> dict[str, Any]:
    """One release of the catalog, read at commit ``short``."""
    path = repo_dir(OWNER, NAME)
    commit = git(path, "rev-parse", short).strip()
    blob = f"https://github.com/{OWNER}/{NAME}/blob/{commit}"
    load = show(path, commit, "src/subcommands/load.ts") or ""
    server = show(path, commit, "src/subcommands/server.ts") or ""
    client = show(path, commit, "src/createClient.ts") or ""
    load_block = _between(load, "const loadCommand", "addCreateClientOptions(loadCommand)")
    start_block = _between(server, "const start = ", "addLogLevelOptions(start)")
    options = {
        **_options(load_block, "", f"{blob}/src/subcommands/load.ts"),
        **_options(start_block, "server.", f"{blob}/src/subcommands/server.ts"),
    }
    port = re.search(r"DEFAULT_SERVER_PORT: number = (\d+)", client)
    if port is None:
        raise SystemExit(f"{short}: no DEFAULT_SERVER_PORT in src/createClient.ts")
    options["server.port"]["default"] = int(port.group(1))
    bind = re.search(r'bind \?\? envNetworkInterface \?\? "([^"]+)"', server)
    if bind:
        options["server.bind"]["default"] = bind.group(1)
        options["server.bind"]["env"] = "LMS_SERVER_HOST"
    method = (
        "regular expressions over the commander.js option definitions of load.ts (the load command) and "
        "server.ts (server start), with createRefinedNumberParser bounds (scripts/catalog/lmstudio.py)"
    )
    return {
        "version": short,
        "source": f"{blob}/src/subcommands/load.ts",
        "sources": [f"{blob}/{name}" for name in FILES],
        "commit": commit,
        "extracted_by": method,
        "provenance": {
            "artifact": None,
            "sha256": None,
            "tag": None,
            "commit": commit,
            "files": list(FILES),
            "method": method,
            "tool": TOOL_VERSION,
        },
        "partial": False,
        "options": dict(sorted(options.items())),
        "facts": {"context_default": CONTEXT_DEFAULT},
        "notes": _notes(blob, commit),
    }


def _notes(blob: str, commit: str) -> dict[str, Any]:
    """What people need besides the options, each with the file it is read from."""
    return {
        "version": {
            "text": "lms has no release tags; `lms version --json` prints the CLI commit (getCommitHash, "
            "'Commit hash as version', lms#413); package.json says 0.3.43 since @Release-55 (b8e99a8)",
            "source": f"{blob}/src/subcommands/version.ts",
        },
        "daemon": {
            "text": "`lms daemon up` starts llmster (findOrStartLlmster from @lmstudio/lms-common-server, not in "
            "this repository) and returns; llmster itself is closed source. Any lms command that makes a client "
            "wakes the daemon the same way (createClient).",
            "source": f"{blob}/src/subcommands/daemon/up.ts",
        },
        "load_key": {
            "text": "`lms load KEY --yes` fuzzy-matches KEY against the downloaded models' keys and loads the first "
            "match; `--exact` loads only the model whose path is exactly KEY (ModelInfo.path, as `lms ls` lists).",
            "source": f"{blob}/src/subcommands/load.ts",
        },
        "gpu": {
            "text": "--gpu: 'off' is 0, 'max' is 1, else a number in [0, 1], sent as the load config's gpu.ratio; "
            "unset, LM Studio chooses the offload itself",
            "source": f"{blob}/src/subcommands/load.ts",
        },
        "server_defaults": {
            "text": "server start: port from --port, else the last started port (http-server-config.json), else "
            "1234; bind from --bind, else LMS_SERVER_HOST, else 127.0.0.1; it then checks "
            "GET /lmstudio-greeting up to 5 times",
            "source": f"{blob}/src/subcommands/server.ts",
        },
        "added_in": {
            "text": "--estimate-only 819f92b (2025-09-23), server start --bind 42c4bf3 (2025-10-30), "
            "lms daemon up 5793881 (2025-11-29), load --parallel 687cf96 (2026-01-29)",
            "source": f"https://github.com/lmstudio-ai/lms/commits/{commit}",
        },
        "get": {
            "text": "`lms get MODEL` downloads from LM Studio's catalog or Hugging Face; --mlx / --gguf restrict the "
            "formats, else the formats the machine supports",
            "source": f"{blob}/src/subcommands/get.ts",
        },
    }


def main(argv: list[str]) -> None:
    for short in argv or COMMITS:
        print(write_release("lmstudio", build(short)))


if __name__ == "__main__":
    main(sys.argv[1:])
