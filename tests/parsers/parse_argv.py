"""Parse an engine command line with the engine's own argument parser.

Run INSIDE an engine environment made by ``scripts/parser-envs`` (not in the
servespec venv)::

    python parse_argv.py vllm   ARGV.json   # ARGV: the arguments after `vllm serve`
    python parse_argv.py sglang ARGV.json   # ARGV: the arguments after `python3 -m sglang.launch_server`

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
import json
import os
import sys
import types
from pathlib import Path


def _vllm(argv: list[str]) -> argparse.Namespace:
    import vllm.platforms

    # GPU STUB: vllm._C (and vllm._C_stable_libtorch in newer releases) are vLLM's
    # compiled CUDA extensions; they link libcudart and cannot load without the CUDA
    # runtime. vllm.platforms.cuda imports them only to register custom ops, which
    # parsing never calls; one that fails to load becomes an empty module. (vLLM's
    # other extensions are imported under try/except by vLLM itself and left alone.)
    for name in ("vllm._C", "vllm._C_stable_libtorch"):
        if not (Path(vllm.__file__).parent / name.removeprefix("vllm.")).with_suffix(".abi3.so").exists():
            continue
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)

    # GPU STUB: platform detection asks NVML for a GPU and, finding none, picks a
    # platform with no device type, on which the parser cannot even be built
    # (DeviceConfig's "auto" fails). The image runs on CUDA, so resolve the CUDA
    # platform the way vLLM would on a GPU host; VLLM_TARGET_DEVICE=cuda alone does
    # not do it in 0.11. (NVML still fails here, so vLLM picks its non-NVML
    # CudaPlatform variant; device queries are never made while parsing.)
    vllm.platforms.resolve_current_platform_cls_qualname = lambda: "vllm.platforms.cuda.CudaPlatform"

    from vllm.entrypoints.cli.serve import ServeSubcommand

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


def _sglang(argv: list[str]) -> argparse.Namespace:
    from sglang.srt.server_args import ServerArgs

    # As sglang.srt.server_args.prepare_server_args() does it, up to parse_args;
    # ServerArgs.from_cli_args (which probes the hardware) is left out.
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    if "--config" in argv:
        from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger

        argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
    return parser.parse_args(argv)


ENGINES = {"vllm": _vllm, "sglang": _sglang}


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
