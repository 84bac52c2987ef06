"""Throughput of `deploy validate` against check-jsonschema on the same 1,000 specs.

Both tools run as their real command lines on the same files in the same run;
check-jsonschema only checks the schema, servespec runs every rule too. Prints the
ratio (servespec time / check-jsonschema time: below 1.0 means servespec is faster)
and the cold start of `deploy validate` on one spec against `python -c pass`, beside the floor that
servespec's libraries alone set (import pydantic, click and ruamel.yaml, build one pydantic model).
servespec parses large inputs (64+ files) in one worker process per core, check-jsonschema
in one process; the report prints the core count so the ratio can be read in that light.
The package is byte-compiled first (as a wheel install leaves it), for both figures.

    .venv/bin/python bench/validate_throughput.py [--count 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

ENGINES = [
    ("vllm", "0.11.0", "meta-llama/Llama-3.1-8B-Instruct"),
    ("sglang", "0.5.23", "Qwen/Qwen3-14B"),
    ("tgi", "3.3.7", "Qwen/Qwen2.5-7B-Instruct"),
    ("tensorrt-llm", "1.2.1", "meta-llama/Llama-3.3-70B-Instruct"),
    ("ollama", "0.32.15", "qwen2.5:7b"),
    ("llama.cpp", "b11312", "/srv/models/qwen2.5-0.5b-instruct-q4_k_m.gguf"),
]
HOSTS = ["gpu-nvs-01", "gpu-pcie-01", "gpu-l4-01"]


FLOOR = """
import os
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as deploy sets it
import click, ruamel.yaml
from pydantic import BaseModel
class One(BaseModel):
    x: int
One(x=1)
"""
"""What any CLI on servespec's libraries pays before its own first line: the floor under the cold-start ratio."""


def make_spec(index: int, rng: random.Random) -> str:
    engine, version, source = ENGINES[index % len(ENGINES)]
    tp = rng.choice([1, 1, 2, 4])
    lines = [
        "apiVersion: servespec/v1",
        "kind: Deployment",
        "metadata:",
        f"  name: bench-{index}",
        f"  labels: {{team: t{rng.randrange(20)}, tier: {rng.choice(['gold', 'silver'])}}}",
        "inventory: ../specs/examples/inventory/fleet.yaml".replace("..", str(REPO)),
        "model:",
        f"  source: {source}",
        f"  max_model_len: {rng.choice([2048, 4096, 8192, 16384])}",
        f"  dtype: {rng.choice(['auto', 'bfloat16', 'float16'])}",
        "engine:",
        f"  name: {engine}",
        f'  version: "{version}"',
        "resources:",
        f"  tensor_parallel: {tp}",
        "placement:",
        f"  hosts: [{rng.choice(HOSTS)}]",
        "serving:",
        f"  port: {20000 + index}",
        "  bind: 127.0.0.1",
        "rollout:",
        f"  max_unavailable: {rng.choice([1, 2])}",
        f"  health_timeout: {rng.choice(['5m', '15m', '1h'])}",
    ]
    return "\n".join(lines) + "\n"


def timed(cmd: list[str], repeat: int) -> tuple[float, float]:
    """Median wall-clock seconds, and median CPU seconds of the command and its worker processes."""
    runs, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        runs.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return statistics.median(runs), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    check_jsonschema = shutil.which("check-jsonschema", path=str(BIN)) or shutil.which("check-jsonschema")
    if not check_jsonschema:
        raise SystemExit("check-jsonschema not installed: pip install -e '.[dev]'")
    # Byte-compile the package first, as installing a wheel does: with PYTHONDONTWRITEBYTECODE set
    # (CI images often do) an editable checkout would otherwise compile ~50 modules on every start.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "servespec")], check=True)
    rng = random.Random(1234)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = []
        for index in range(args.count):
            path = folder / f"spec-{index:04d}.yaml"
            path.write_text(make_spec(index, rng))
            files.append(str(path))
        ours, ours_cpu = timed([str(BIN / "deploy"), "validate", "--format", "json", str(folder)], args.repeat)
        schema = str(REPO / "schemas" / "deployment.schema.json")
        theirs, theirs_cpu = timed([check_jsonschema, "--schemafile", schema, *files], args.repeat)
        one = files[0]
        cold, cold_cpu = timed([str(BIN / "deploy"), "validate", one], max(args.repeat, 5))
        baseline, baseline_cpu = timed([sys.executable, "-c", "pass"], max(args.repeat, 5))
        floor, _ = timed([sys.executable, "-c", FLOOR], max(args.repeat, 5))
    print(f"specs: {args.count}, median of {args.repeat} runs each, {os.cpu_count()} cores")
    print(f"deploy validate (every rule): {ours:.2f} s")
    print(f"check-jsonschema (schema only): {theirs:.2f} s")
    print(f"ratio servespec/check-jsonschema: {ours / theirs:.2f}  (target <= 0.5, issue 21)")
    print(f"cold start, one spec: {cold * 1000:.0f} ms vs python -c pass {baseline * 1000:.0f} ms")
    print(f"cold start ratio: {cold / baseline:.1f}x python start-up  (target <= 10, issue 21)")
    print(
        f"of which the libraries' floor (import pydantic, click, ruamel.yaml; build one one-field model): "
        f"{floor * 1000:.0f} ms, {floor / baseline:.1f}x python start-up"
    )
    # CPU seconds (workers included) move less with other load than wall time; servespec's workers
    # spend CPU that a second idle core would hide from the wall-clock ratio.
    print(
        f"CPU time: {ours_cpu / theirs_cpu:.2f}x check-jsonschema ({ours_cpu:.2f} s vs {theirs_cpu:.2f} s); "
        f"cold start {cold_cpu / baseline_cpu:.1f}x ({cold_cpu * 1000:.0f} ms vs {baseline_cpu * 1000:.0f} ms)"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (ratios on a busy machine run high)")


if __name__ == "__main__":
    main()
