"""Build one SGLang release's own argument parser and dump its actions as JSON.

Run with the SGLang parser environment's interpreter (``scripts/parser-envs``: torch CPU,
triton and the pure-Python packages SGLang's parser needs), never the servespec venv::

    python sglang_parser.py PACKAGE_ROOT [EXTRA_SITE]   # PACKAGE_ROOT holds the release's sglang/ tree

EXTRA_SITE: a folder of real pure-Python packages the environment lacks (dill), put on
sys.path after the environment's own.

The release's ``sglang`` package is imported from PACKAGE_ROOT (ahead of the environment's
own SGLang), then ``ServerArgs.add_cli_args(argparse.ArgumentParser())`` builds the parser
exactly as ``prepare_server_args`` does. The actions are printed to stdout as one JSON object.

Third-party modules the release imports but the environment lacks (transformers, fastapi,
vllm, ...) become STUB modules, and nothing else: a stub is only created for a module the
environment's finders cannot find, ``importlib.util.find_spec`` still answers "not
installed" for it, and every stub value is poisoned (a class that cannot be iterated,
compared or turned into a string for argparse). After the parser is built, every recorded
field of every action (default, const, choices, type, nargs, help) is checked to hold no
stub value; one that does fails the run, so a stub can never change what is recorded.
The stubbed module names are printed with the actions (``stubs``).
"""

from __future__ import annotations

import argparse
import enum
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

STUBBED: set[str] = set()


class StubError(RuntimeError):
    """A stub value was used in a way that could change what the parser records."""


_PASSED_DUNDERS = {"__func__"}
"""Dunder attributes a stub answers with another stub (``Stub.method.__func__``); every other
dunder is missing, so Python's protocols (iteration, length, pydantic, inspect) never see a value."""


class _StubMeta(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> _StubMeta:
        # class X(StubBase, total=False): class keywords a stubbed base would take are dropped
        return super().__new__(mcs, name, bases, namespace)

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(name, bases, namespace)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _PASSED_DUNDERS:
            raise AttributeError(name)
        return _stub_class(f"{cls.__qualname__}.{name}", cls.__module__)

    def __iter__(cls) -> Any:
        raise StubError(f"stub {cls.__qualname__} iterated")

    def __len__(cls) -> int:
        raise StubError(f"stub {cls.__qualname__} measured")

    def __getitem__(cls, item: Any) -> Any:
        return _stub_class(f"{cls.__qualname__}[]", cls.__module__)

    def __setitem__(cls, item: Any, value: Any) -> None:
        pass  # registering into a stubbed registry (transformers' CONFIG_MAPPING)

    def __contains__(cls, item: Any) -> bool:
        return False

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__


class Stub(metaclass=_StubMeta):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        # a stub used as a field type in one of the release's pydantic models (not ServerArgs)
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # A stubbed decorator applied to a function returns a stub in its place.
        return _stub_class(f"{type(self).__qualname__}()", type(self).__module__)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _PASSED_DUNDERS:
            raise AttributeError(name)
        return _stub_class(f"{type(self).__qualname__}.{name}", type(self).__module__)

    def __iter__(self) -> Any:
        raise StubError(f"stub {type(self).__qualname__} instance iterated")

    def __getitem__(self, item: Any) -> Any:
        return _stub_class(f"{type(self).__qualname__}[]", type(self).__module__)

    def __setitem__(self, item: Any, value: Any) -> None:
        pass

    def __contains__(self, item: Any) -> bool:
        return False


def _stub_class(qualname: str, module: str) -> type:
    cls = _StubMeta(qualname.rsplit(".", 1)[-1], (Stub,), {"__module__": module})
    cls.__qualname__ = qualname
    return cls


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{self.__name__}.{name}", self.__name__)


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        module.__spec__ = spec
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        STUBBED.add(module.__name__.split(".")[0])


def _probing() -> bool:
    """Whether the import system was asked by ``importlib.util.find_spec`` (an availability probe)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "find_spec" and Path(code.co_filename).parts[-2:] == ("importlib", "util.py"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class _StubFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: answers only for the stubbed top-level modules."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] not in WANTED or _probing():
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


WANTED: set[str] = {name for name in os.environ.get("SGLANG_CATALOG_STUBS", "").split(",") if name}
"""Top-level modules to stub: added one at a time, each only after an import of it failed
uncaught (so a module the release imports optionally, under try/except, is never stubbed)."""


def _import_server_args(root: str) -> Any:
    for _ in range(64):
        for name in [m for m in sys.modules if m.split(".")[0] in WANTED | {"sglang"}]:
            del sys.modules[name]
        try:
            from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

            return ServerArgs
        except ImportError as err:
            # Not installed, or installed at a version without the name the release imports.
            top = (err.name or "").split(".")[0]
            if not top or top == "sglang" or top in WANTED:
                # Retrying in this process failed (a half-imported release left state behind):
                # the caller reruns with the stubs found so far named up front.
                print(f"SGLANG_CATALOG_STUBS={','.join(sorted(WANTED))}", file=sys.stderr)
                raise
            WANTED.add(top)
    raise SystemExit("too many missing modules")


def _has_stub(value: Any, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if (isinstance(value, type) and issubclass(value, Stub)) or isinstance(value, Stub):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_has_stub(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_has_stub(k, depth + 1) or _has_stub(v, depth + 1) for k, v in value.items())
    return False


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return {"repr": repr(value)}


def _type_name(kind: Any) -> Any:
    if kind is None:
        return None
    if isinstance(kind, type):
        return kind.__name__
    return getattr(kind, "__qualname__", None) or getattr(kind, "__name__", None) or type(kind).__name__


def dump(root: str, extra: str | None = None) -> dict[str, Any]:
    sys.path.insert(0, root)
    if extra:
        sys.path.append(extra)  # real pure-Python packages the environment lacks (after its own)
    sys.meta_path.insert(0, _StubFinder())
    os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")
    ServerArgs = _import_server_args(root)  # noqa: N806
    import sglang  # type: ignore[import-not-found]

    where = Path(sglang.__file__).parent
    if not where.resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"sglang imported from {where}, not from {root}")
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    actions = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        fields = {
            "option_strings": action.option_strings,
            "dest": action.dest,
            "default": action.default,
            "const": action.const,
            "choices": action.choices,
            "type": action.type,
            "nargs": action.nargs,
            "help": action.help,
            "required": action.required,
        }
        for name, value in fields.items():
            if _has_stub(value):
                raise StubError(f"{action.option_strings}: {name} holds a stub value ({value!r})")
        actions.append(
            {
                "option_strings": list(action.option_strings),
                "dest": action.dest,
                "action": type(action).__name__,
                "action_mro": [c.__name__ for c in type(action).__mro__],
                "default": _jsonable(action.default),
                "default_type": type(action.default).__name__,
                "const": _jsonable(action.const),
                # A set of choices (no order of its own) is recorded sorted, not in hash order.
                "choices": None
                if action.choices is None
                else _jsonable(
                    sorted(action.choices, key=str)
                    if isinstance(action.choices, (set, frozenset))
                    else list(action.choices)
                ),
                "type": _type_name(action.type),
                "nargs": action.nargs,
                "help": None if action.help is None else str(action.help),
                "required": bool(action.required),
            }
        )
    return {"actions": actions, "stubs": sorted(STUBBED)}


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(f"usage: {sys.argv[0]} PACKAGE_ROOT [EXTRA_SITE]", file=sys.stderr)
        return 64
    answer = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the release logs to stdout
    sys.stdout = io.TextIOWrapper(os.fdopen(sys.stderr.fileno(), "wb", closefd=False))
    result = dump(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
    json.dump(result, answer, sort_keys=True)
    answer.write("\n")
    answer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
