"""Dump the argparse actions of one vLLM release's `vllm serve` parser as JSON (run in a parser env).

    python vllm_dump.py SRC_DIR OUT.json      # SRC_DIR: the release's .py tree (vllm/ inside)
    python vllm_dump.py - OUT.json            # the vllm installed in this interpreter (a real env)

Run with an interpreter that has vLLM's pure-Python dependencies and torch (the parser envs of
``scripts/parser-envs``); the release's own source is put first on ``sys.path``, so its own
``vllm serve`` parser is built by its own code. Only what cannot load on a CPU machine is
replaced, and every replacement is recorded in the output's ``stubbed``:

- vLLM's compiled extensions (``vllm._C`` ...): empty modules, as in tests/parsers/parse_argv.py;
- NVML (``pynvml``): reports one GPU, so the release resolves its CUDA platform as on a GPU host;
- a module the release imports that this interpreter lacks (after a ModuleNotFoundError):
  an inert module, named in ``stubbed``.

The parser is taken when the release's CLI entry point calls ``parse_args`` (nothing is parsed,
nothing is loaded). Pydantic ``Field`` bounds of the config dataclasses behind the options are
dumped too (``bounds``). This file is a development tool; the CLI never imports it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.abc
import importlib.util
import importlib.machinery
import json
import os
import sys
import types
from typing import Any

STUBBED: list[str] = []
STUB_ROOTS: set[str] = set()


class _Inert(types.ModuleType):
    """A module whose every attribute is an inert class (subclassable, callable, falsy)."""

    __path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _inert_class(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


def _inert_class(name: str) -> type:
    class _Meta(type):
        def __getattr__(cls, attr: str) -> Any:
            if attr.startswith("__") and attr.endswith("__"):
                raise AttributeError(attr)
            return _inert_class(f"{name}.{attr}")

        def __bool__(cls) -> bool:
            return False

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and not kwargs and callable(args[0]):
                return args[0]  # used as a decorator
            return cls

        def __getitem__(cls, item: Any) -> Any:
            return cls

        def __or__(cls, other: Any) -> Any:
            return cls

        __ror__ = __or__

        def __iter__(cls) -> Any:
            return iter(())

    return _Meta(name.rsplit(".", 1)[-1], (), {"__module__": name.rsplit(".", 1)[0]})


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in STUB_ROOTS or fullname in STUB_ROOTS:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> Any:
        if spec.name not in STUBBED:
            STUBBED.append(spec.name)
        module = _Inert(spec.name)
        module.__file__ = f"<servespec stub {spec.name}>"
        module.__version__ = "0.0.0"  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: Any) -> None:
        return None


class _FakeNvml(types.ModuleType):
    """NVML with one GPU (compute capability 9.0), so the release picks its CUDA platform."""

    NVMLError = type("NVMLError", (Exception,), {})
    __file__ = "pynvml.py"  # vLLM 0.6 refuses the `pynvml` package's __init__.py

    def __getattr__(self, name: str) -> Any:
        answers: dict[str, Any] = {
            "nvmlDeviceGetCount": lambda *a: 1,
            "nvmlDeviceGetCudaComputeCapability": lambda *a: (9, 0),
            "nvmlDeviceGetName": lambda *a: "NVIDIA H100 80GB HBM3",
            "nvmlSystemGetDriverVersion": lambda *a: "550.54.15",
        }
        if name in answers:
            return answers[name]
        if name.startswith("nvml"):
            return lambda *a, **k: None
        raise AttributeError(name)


class _NvmlFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the fake NVML as ``pynvml`` and as vLLM's vendored ``vllm.third_party.pynvml``."""

    NAMES = ("pynvml", "vllm.third_party.pynvml")

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname in self.NAMES:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: Any) -> Any:
        return self.module

    def exec_module(self, module: Any) -> None:
        return None


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _install(src: str, extensions: list[str]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # scripts/catalog/vllm.py is not vLLM
    if src != "-":
        sys.path.insert(0, src)
    _host_compat()  # before any stub exists: torch's own optional imports must see the real host
    for name in extensions:
        STUB_ROOTS.add(name)
    sys.meta_path.append(_StubFinder())
    nvml = _FakeNvml("pynvml")
    sys.modules.pop("pynvml", None)
    sys.meta_path.insert(0, _NvmlFinder(nvml))  # pynvml and the vendored vllm.third_party.pynvml
    STUBBED.append("pynvml (one GPU, capability 9.0)")
    if src == "-":  # an installed release: its compiled extensions need the CUDA runtime, absent here
        for name in extensions:
            sys.modules[name] = types.ModuleType(name)
            STUBBED.append(name)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cuda")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_NO_USAGE_STATS", "DO_NOT_TRACK"):
        os.environ[name] = "1"  # nothing is fetched while the parser is built


def _host_compat() -> None:
    """Make the host env's newer torch and transformers accept an older release's import-time calls.

    - torch's compiler stack is imported before vLLM: releases that install a placeholder
      ``triton`` module when Triton is absent (0.8.x) would otherwise make a module-level
      ``torch.compile`` import inductor against the placeholder and fail;
    - ``AutoConfig.register`` (and the other auto-mappings) accept a model type the host's newer
      transformers already defines, as the release's own transformers did not.
    """
    for name in ("torch._dynamo.backends.debugging", "torch._inductor.codecache", "torch._inductor.compile_fx"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - host without torch (or that part of it)
            STUBBED.append(f"{name}: not importable in the host env")
    try:
        auto = importlib.import_module("transformers.models.auto.configuration_auto")
        mapping = importlib.import_module("transformers.models.auto.auto_factory")
    except Exception:  # noqa: BLE001
        return
    for cls in (getattr(auto, "_LazyConfigMapping", None), getattr(mapping, "_LazyAutoMapping", None)):
        if cls is None or getattr(cls.register, "_servespec", False):
            continue
        original = cls.register

        def register(self: Any, key: Any, value: Any, exist_ok: bool = False, _original: Any = original) -> Any:
            return _original(self, key, value, exist_ok=True)

        register._servespec = True  # type: ignore[attr-defined]
        cls.register = register
    STUBBED.append("transformers auto-mapping register(exist_ok=True)")
    try:
        ops = importlib.import_module("torch._ops")
    except Exception:  # noqa: BLE001
        ops = None
    namespace = getattr(ops, "_OpNamespace", None)
    if namespace is not None and not getattr(namespace.__getattr__, "_servespec", False):
        original_getattr = namespace.__getattr__

        def op_getattr(self: Any, name: str) -> Any:
            try:
                return original_getattr(self, name)
            except AttributeError:
                if "supports" in name and getattr(self, "name", "").lstrip("_").split("_")[0] in ("C", "moe"):
                    # GPU STUB: a `*_supports_*` query op of vLLM's compiled extensions (not loadable
                    # without CUDA), asked at import time whether a kernel is supported: it answers False.
                    return lambda *args, **kwargs: False
                raise

        op_getattr._servespec = True  # type: ignore[attr-defined]
        namespace.__getattr__ = op_getattr
        STUBBED.append("torch.ops._C.*supports* queries answer False")
    if importlib.util.find_spec("triton") is None:
        # Triton absent: 0.8.x-0.9.x put a placeholder `triton` (no __spec__) in sys.modules, on which
        # the host torch's find_spec("triton") raises; it answers "not installed" as before it.
        original_find_spec = importlib.util.find_spec

        def find_spec(name: str, package: str | None = None) -> Any:
            if name == "triton" and getattr(sys.modules.get("triton"), "__spec__", 1) is None:
                return None
            return original_find_spec(name, package)

        importlib.util.find_spec = find_spec
        STUBBED.append("find_spec('triton') -> None (Triton absent)")


class _MissingError(Exception):
    """The release imports a module the host env lacks: rerun the child with it stubbed."""


def _import_retrying(name: str) -> Any:
    """Import ``name``; a module this interpreter lacks is reported, to be stubbed in a fresh child.

    (A fresh process, not a re-import: the release registers torch ops at import time, which
    cannot be registered twice.)
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        missing = err.name or ""
        if not missing or missing in STUB_ROOTS or (missing.startswith("vllm") and "_C" not in missing):
            raise
        raise _MissingError(missing) from None


def _serve_parser() -> argparse.ArgumentParser:
    try:
        _import_retrying("vllm.platforms")
    except ModuleNotFoundError:  # 0.4.x: no platform layer
        pass
    platforms = sys.modules.get("vllm.platforms")
    if platforms is not None and hasattr(platforms, "resolve_current_platform_cls_qualname"):
        platforms.resolve_current_platform_cls_qualname = lambda: "vllm.platforms.cuda.CudaPlatform"

    def capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Captured(self)

    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign]
    # vLLM fills in help texts only when an argument contains "--help" (NEEDS_HELP), and 0.9.2+
    # drop --model from `vllm serve --help` itself; "--help-texts" gets the texts and keeps --model.
    sys.argv = ["vllm", "serve", "--help-texts"]  # (0.10+ handles "--help=<group>" itself)
    try:
        cli = _import_retrying("vllm.entrypoints.cli.main")
    except ModuleNotFoundError:
        try:
            cli = _import_retrying("vllm.scripts")
        except ModuleNotFoundError:  # before `vllm serve` (0.4.x-0.5.1): the OpenAI server's own parser
            sys.argv = ["api_server", "--help-texts"]
            return _import_retrying("vllm.entrypoints.openai.cli_args").make_arg_parser()  # type: ignore[no-any-return]
    try:
        cli.main()
    except _Captured as got:
        top = got.parser
    except ModuleNotFoundError as err:  # a subcommand's import, inside main()
        missing = err.name or ""
        if not missing or missing in STUB_ROOTS or (missing.startswith("vllm") and "_C" not in missing):
            raise
        raise _MissingError(missing) from None
    else:
        raise RuntimeError("the CLI never parsed its arguments")
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction) and "serve" in action.choices:
            return action.choices["serve"]
    raise RuntimeError("no `serve` subcommand")


def _jsonable(value: Any) -> Any:
    module = getattr(value, "__module__", None) or getattr(type(value), "__module__", "")
    if isinstance(module, str) and (module.split(".")[0] in STUB_ROOTS or module in STUB_ROOTS):
        return {"<stub>": f"{module}.{getattr(value, '__name__', type(value).__name__)}"}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "value") and type(value).__class__.__name__ == "EnumType" or hasattr(value, "_value_"):
        return _jsonable(value.value)
    if dataclasses.is_dataclass(value):
        return {"<dataclass>": type(value).__name__}
    return {"<repr>": repr(value)[:200]}


def _type_info(fn: Any, depth: int = 0) -> list[str]:
    """Names describing an argparse ``type`` callable: itself and what its closure wraps."""
    if fn is None:
        return []
    names = [getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__]
    module = getattr(fn, "__module__", "") or ""
    if module:
        names[0] = f"{module}.{names[0]}"
    if depth < 3:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if callable(inner):
                names.extend(_type_info(inner, depth + 1))
            elif isinstance(inner, (tuple, list)):
                for item in inner:
                    if callable(item):
                        names.extend(_type_info(item, depth + 1))
        wrapped = getattr(fn, "func", None) or getattr(fn, "__wrapped__", None)
        if wrapped is not None and callable(wrapped):
            names.extend(_type_info(wrapped, depth + 1))
    return names


def _actions(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    # FlexibleArgumentParser keeps `deprecated=True` actions in a class-level set on Python < 3.13
    marked: set[int] = set()
    for cls in type(parser).__mro__:
        marked |= {id(a) for a in (vars(cls).get("_deprecated") or ())}
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        out.append(
            {
                "option_strings": list(action.option_strings),
                "dest": action.dest,
                "kind": type(action).__name__,
                "type": _type_info(action.type),
                "choices": _jsonable(list(action.choices)) if action.choices is not None else None,
                "default": _jsonable(action.default) if action.default is not argparse.SUPPRESS else "==SUPPRESS==",
                "const": _jsonable(action.const),
                "nargs": action.nargs if isinstance(action.nargs, (str, int, type(None))) else str(action.nargs),
                "metavar": _jsonable(action.metavar),
                "help": action.help if isinstance(action.help, str) else None,
                "deprecated": bool(getattr(action, "deprecated", False)) or id(action) in marked,
                "required": bool(action.required),
            }
        )
    return out


def _bounds() -> dict[str, dict[str, Any]]:
    """Pydantic Field bounds (ge/gt/le/lt) of vllm.config's dataclasses, by field name and class."""
    out: dict[str, dict[str, Any]] = {}
    config = sys.modules.get("vllm.config")
    if config is None:
        return out
    modules = [config] + [m for n, m in list(sys.modules.items()) if n.startswith("vllm.config.") and m]
    seen: set[int] = set()
    for module in modules:
        for name, cls in sorted(vars(module).items()):
            if not isinstance(cls, type) or id(cls) in seen or not dataclasses.is_dataclass(cls):
                continue
            if not getattr(cls, "__module__", "").startswith("vllm.config"):
                continue
            seen.add(id(cls))
            pyd = getattr(cls, "__pydantic_fields__", None) or {}
            for field_name, info in pyd.items():
                found: dict[str, Any] = {}
                for meta in getattr(info, "metadata", None) or ():
                    for bound in ("ge", "gt", "le", "lt"):
                        value = getattr(meta, bound, None)
                        if isinstance(value, (int, float)) and not isinstance(value, bool):
                            found[bound] = value
                if found:
                    out.setdefault(field_name, {})[cls.__name__] = found
    return out


def _quantization_methods() -> list[str] | None:
    """The methods ModelConfig accepts for --quantization (QUANTIZATION_METHODS / QuantizationMethods)."""
    module = sys.modules.get("vllm.model_executor.layers.quantization")
    if module is None:
        return None
    methods = getattr(module, "QUANTIZATION_METHODS", None)
    if methods is None and hasattr(module, "QuantizationMethods"):
        import typing

        methods = typing.get_args(module.QuantizationMethods)
    return [str(m) for m in methods] if methods else None


PRELOAD = (
    "torch", "transformers", "fastapi", "openai", "pydantic", "aiohttp", "uvicorn", "huggingface_hub",
    "numpy", "safetensors", "msgspec", "prometheus_client", "tokenizers", "PIL", "yaml", "zmq", "psutil",
)  # fmt: skip
"""Imported once by ``--batch`` before forking one child per release (each child imports vLLM afresh)."""


def _dump_to(src: str, dest: str, extensions: list[str]) -> int:
    _install(src, extensions)
    parser = _serve_parser()
    found = str(sys.modules["vllm"].__file__)
    if src != "-" and not found.startswith(os.path.abspath(src)):
        raise RuntimeError(f"imported {found}, not the release's source under {src}")
    result = {
        "vllm_file": sys.modules["vllm"].__file__,
        "actions": _actions(parser),
        "bounds": _bounds(),
        "stubbed": sorted(set(STUBBED)),
        "quantization_methods": _quantization_methods(),
        "python": sys.version.split()[0],
    }
    with open(dest + ".tmp", "w") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    os.replace(dest + ".tmp", dest)
    return len(result["actions"])


NEVER_PRESTUB = {
    "triton", "torch_xla", "habana_frameworks", "intel_extension_for_pytorch", "jax", "libtpu", "tpu_info",
    "aiter", "oneccl_bindings_for_pytorch", "vllm_hpu_extension", "flashinfer", "xformers", "pplx_kernels",
    "deep_gemm", "deep_ep", "amdsmi", "pynvml", "neuronxcc", "neuronx_distributed", "neuronx_distributed_inference",
    "transformers_neuronx", "torch_neuronx", "ray", "tpu_commons", "tpu_inference", "flash_attn", "quark",
}  # fmt: skip
"""Kernel and platform packages: vLLM probes for them (find_spec, try/except) to pick platforms and
backends, so a stub would be taken for the real thing; they are stubbed only when an import fails."""


def _unguarded_missing(src: str) -> list[str]:
    """Top-level packages the release imports unconditionally (an import statement at column 0: not
    under try/if/def) that this interpreter lacks: stubbed up front, as a fresh child per missing
    module would find them one by one. Imports under try/except keep failing as the release expects.
    (A candidate list only: a module is served as a stub only if the import system finds no real one.)"""
    missing: set[str] = set()
    known: dict[str, bool] = {}
    for root, _dirs, files in os.walk(os.path.join(src, "vllm")):
        for name in files:
            if not name.endswith(".py"):
                continue
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as fh:
                lines = [line for line in fh if line.startswith(("import ", "from "))]
            for line in lines:
                words = line.split()
                if len(words) < 2 or words[1].startswith("."):
                    continue
                tops = (
                    [w.split(".")[0] for w in line[7:].split(",")] if words[0] == "import" else [words[1].split(".")[0]]
                )
                for top in (t.strip().split(" ")[0] for t in tops):
                    if (
                        not top.isidentifier()
                        or top == "vllm"
                        or top in sys.builtin_module_names
                        or top in NEVER_PRESTUB
                    ):
                        continue
                    if top not in known:
                        try:
                            known[top] = importlib.util.find_spec(top) is not None
                        except (ImportError, ValueError):
                            known[top] = True
                    if not known[top]:
                        missing.add(top)
    return sorted(missing)


def batch(extensions: list[str], pairs: list[str]) -> int:
    """Dump many releases: heavy dependencies imported once, then one forked child per release."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_NO_USAGE_STATS", "DO_NOT_TRACK"):
        os.environ[name] = "1"
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cuda")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - absent from this env: the release may stub it
            pass
    failed = 0
    for pair in pairs:
        src, dest = pair.split("::", 1)
        extra: list[str] = _unguarded_missing(src) if src != "-" else []
        for _attempt in range(40):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                code = _child(src, dest, [*extensions, *extra], write)
                os._exit(code)
            os.close(write)
            with os.fdopen(read) as pipe:
                missing = pipe.read().strip()
            _, status = os.waitpid(pid, 0)
            if missing:
                extra.append(missing)
                continue
            failed += status != 0
            break
    return 1 if failed else 0


def _child(src: str, dest: str, stubs: list[str], pipe: int) -> int:
    try:
        STUB_ROOTS.update(stubs)
        count = _dump_to(src, dest, stubs)
        print(f"OK {src} {count} actions", file=sys.stderr, flush=True)
        return 0
    except _MissingError as err:
        os.write(pipe, str(err).encode())
        return 3
    except BaseException as err:  # noqa: BLE001 - reported, the next release goes on
        import traceback

        traceback.print_exc()
        print(f"FAIL {src}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
        return 1


def main() -> int:
    if sys.argv[1] == "--batch":
        return batch(sys.argv[2].split(",") if sys.argv[2] else [], sys.argv[3:])
    # one release: as a batch of one (a fresh child per attempt)
    extensions = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[3] else []
    return batch(extensions, [f"{sys.argv[1]}::{sys.argv[2]}"])


if __name__ == "__main__":
    sys.exit(main())
