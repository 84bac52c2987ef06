"""Parse an engine command line with the engine's own argument parser.

Run INSIDE an engine environment made by ``scripts/parser-envs`` (not in the
servespec venv)::

    python parse_argv.py vllm   ARGV.json   # ARGV: the arguments after `vllm serve`
    python parse_argv.py sglang ARGV.json   # ARGV: the arguments after `python3 -m sglang.launch_server`
    python parse_argv.py ktransformers ARGV.json   # sglang-kt: the arguments after `python -m sglang.launch_server`

``ARGV.json`` holds a JSON list of strings. A ``--config FILE`` in it must already
point at a readable file (the caller rewrites the in-container path). On success
the parsed namespace is printed to stdout as one JSON object and the exit status
is 0; when the engine rejects the command line, its error goes to stderr and the
exit status is non-zero (argparse's 2, or 1 for an error the engine raises itself).

Only the parser is built: nothing is loaded onto a device and no model is fetched.
The engines' own code and dependencies are real; what cannot work on a machine
without a GPU is replaced, and each replacement is marked "GPU STUB" below.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import types
from pathlib import Path


def _unloadable_extensions() -> None:
    """GPU STUB: vLLM's compiled CUDA extensions, which cannot load here, are made absent.

    vllm._C, vllm._core_C, vllm._moe_C (and vllm._C_stable_libtorch in newer releases)
    link libcudart and the exact torch the release was built against; neither is here.
    They register custom ops, which parsing never calls. Each extension that fails to
    load becomes an empty module, and ``importlib.util.find_spec`` answers "not
    installed" for it, as on a platform vLLM builds without them (0.6's ``_core_ext``
    then uses its own pure-Python ScalarType). This runs before ``import vllm``: old
    releases (0.6) import the whole engine from ``vllm/__init__.py``.
    """
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        return
    import torch  # noqa: F401 - the extensions need torch's libraries loaded first

    unloadable: set[str] = set()
    for path in sorted(Path(spec.origin).parent.glob("_*.abi3.so")):
        name = "vllm." + path.name.split(".")[0]
        try:
            ext_spec = importlib.util.spec_from_file_location(name, path)
            assert ext_spec is not None and ext_spec.loader is not None
            module = importlib.util.module_from_spec(ext_spec)
            ext_spec.loader.exec_module(module)
        except Exception:  # ImportError (libcudart, torch ABI) or a torch RuntimeError
            sys.modules[name] = types.ModuleType(name)
            unloadable.add(name)
        else:
            sys.modules[name] = module
    if not unloadable:
        return
    original = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None):  # type: ignore[no-untyped-def]
        full = importlib.util.resolve_name(name, package) if name.startswith(".") else name
        return None if full in unloadable else original(name, package)

    importlib.util.find_spec = find_spec


def _vllm(argv: list[str]) -> argparse.Namespace:
    _unloadable_extensions()
    import vllm.platforms

    # GPU STUB: platform detection asks NVML for a GPU and, finding none, picks a
    # platform with no device type, on which the parser cannot even be built
    # (DeviceConfig's "auto" fails). The image runs on CUDA, so resolve the CUDA
    # platform the way vLLM would on a GPU host; VLLM_TARGET_DEVICE=cuda alone does
    # not do it in 0.11. (NVML still fails here, so vLLM picks its non-NVML
    # CudaPlatform variant; device queries are never made while parsing.) Releases
    # before this function existed (0.6) pick their platform at import time and do
    # not use it to build the parser.
    vllm.platforms.resolve_current_platform_cls_qualname = lambda: "vllm.platforms.cuda.CudaPlatform"

    if argv and argv[0].startswith("-"):
        # No positional model: the arguments of `python3 -m vllm.entrypoints.openai.api_server`
        # (an older image's or a vendor build's entrypoint), which takes the model as --model.
        return _vllm_api_server(argv)

    try:
        from vllm.entrypoints.cli.serve import ServeSubcommand
    except ModuleNotFoundError:  # releases before vllm.entrypoints.cli (0.6, 0.7)
        return _vllm_scripts(argv)

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser  # newer vLLM
    except ImportError:
        from vllm.utils import FlexibleArgumentParser

    # As vllm.entrypoints.cli.main.main() builds it, with the `serve` subcommand
    # only (the others do not take part in parsing `vllm serve ...`).
    parser = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    cmd = ServeSubcommand()
    cmd.subparser_init(subparsers).set_defaults(dispatch_function=cmd.cmd)
    args = parser.parse_args(["serve", *argv])
    cmd.validate(args)
    # What ServeSubcommand.cmd does first: the positional model wins.
    if getattr(args, "model_tag", None) is not None:
        args.model = args.model_tag
    return args


def _vllm_api_server(argv: list[str]) -> argparse.Namespace:
    """As vllm/entrypoints/openai/api_server.py's ``__main__`` builds, parses and validates it."""
    from vllm.entrypoints.openai import cli_args

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser  # newer vLLM
    except ImportError:
        from vllm.utils import FlexibleArgumentParser

    parser = cli_args.make_arg_parser(FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server."))
    args = parser.parse_args(argv)
    if hasattr(cli_args, "validate_parsed_serve_args"):
        cli_args.validate_parsed_serve_args(args)
    return args


def _vllm_scripts(argv: list[str]) -> argparse.Namespace:
    """`vllm serve` of releases whose CLI is vllm/scripts.py: its parser, as main() builds it."""
    import vllm.scripts as scripts

    captured: list[argparse.ArgumentParser] = []

    def capture(self: argparse.ArgumentParser, args=None, namespace=None):  # type: ignore[no-untyped-def]
        captured.append(self)
        raise _CapturedError

    # main() builds the parser and parses sys.argv at once; take the parser it built
    # (nothing is parsed or run) and parse ARGV with it.
    parse_args = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    try:
        scripts.main()
    except _CapturedError:
        pass
    finally:
        argparse.ArgumentParser.parse_args = parse_args  # type: ignore[method-assign]
    if not captured:
        raise RuntimeError("vllm.scripts.main() built no parser")
    parser = captured[0]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.dest = "subparser"
    args = parser.parse_args(["serve", *argv])
    if getattr(args, "model_tag", None) is not None:
        args.model = args.model_tag
    return args


class _CapturedError(Exception):
    """Raised in place of parse_args() to take the parser vllm.scripts.main() built."""


def _sglang(argv: list[str]) -> argparse.Namespace:
    from sglang.srt.server_args import ServerArgs

    # As sglang.srt.server_args.prepare_server_args() does it, up to parse_args;
    # ServerArgs.from_cli_args (which probes the hardware) is left out.
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    if "--config" in argv:
        try:
            from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger
        except ModuleNotFoundError:
            try:  # 0.5.x before the module moved under srt/utils, with its older constructor
                older_merger = importlib.import_module("sglang.srt.server_args_config_parser").ConfigArgumentMerger
            except ModuleNotFoundError:
                older_merger = None  # no config files in this release (0.4): argparse rejects --config itself
            if older_merger is not None:
                # As that release's prepare_server_args() does it.
                boolean_actions = [
                    action.dest
                    for action in parser._actions
                    if hasattr(action, "dest")
                    and hasattr(action, "action")
                    and action.action in ["store_true", "store_false"]
                ]
                argv = older_merger(boolean_actions=boolean_actions).merge_config_with_args(argv)
        else:
            argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
    return parser.parse_args(argv)


def _torchvision_ops() -> None:
    """GPU STUB: the schemas of torchvision's nms/qnms ops, when its compiled ops cannot load.

    The only torchvision 0.28 wheel at hand is PyPI's CUDA build; its _C extension links
    libtorch_cuda and does not load beside the CPU torch (torchvision then has no ops, as it
    allows), but _meta_registrations.py still registers fake kernels for ``torchvision::nms``
    and ``qnms`` unconditionally, which fails on an undefined op. Defining the two schemas
    (as torchvision's C++ does) lets ``import torchvision`` finish; nothing calls them while
    parsing. sglang-kt imports torchvision from server_args.py (srt/configs, srt/multimodal).
    """
    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return
    library = Path(spec.origin).parent / "_C.so"
    try:
        torch.ops.load_library(str(library))
    except (ImportError, OSError):
        for op in ("nms", "qnms"):
            torch.library.define(f"torchvision::{op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


def _ktransformers(argv: list[str]) -> argparse.Namespace:
    """sglang-kt (KTransformers) as its prepare_server_args() parses, up to parse_args."""
    _torchvision_ops()
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    if "--config" in argv:
        from sglang.srt.server_args_config_parser import ConfigArgumentMerger  # sglang-kt 0.7.2's place

        argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
    return parser.parse_args(argv)


ENGINES = {"vllm": _vllm, "sglang": _sglang, "ktransformers": _ktransformers}


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if callable(value):
        return f"<{getattr(value, '__qualname__', type(value).__name__)}>"
    return repr(value)


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ENGINES:
        print(f"usage: {sys.argv[0]} {{{','.join(ENGINES)}}} ARGV.json", file=sys.stderr)
        return 64
    argv = json.loads(Path(sys.argv[2]).read_text())
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        print("ARGV.json must hold a JSON list of strings", file=sys.stderr)
        return 64

    # The engines log to stdout; keep stdout for the JSON answer alone.
    answer = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    try:
        namespace = ENGINES[sys.argv[1]](argv)
    except SystemExit as e:  # argparse has printed usage and the error to stderr
        return e.code if isinstance(e.code, int) and e.code else 2
    except Exception as e:  # an error the engine raises while reading the command line
        print(f"{sys.argv[1]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    json.dump({k: _jsonable(v) for k, v in sorted(vars(namespace).items())}, answer, indent=1)
    answer.write("\n")
    answer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
