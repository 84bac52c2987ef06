"""Rollout scaling on real test hosts: apply to 1 host and to 8 hosts, and a no-op re-apply.

    .venv/bin/python bench/rollout_scaling.py [--hosts 8]

Starts N test hosts (containers with sshd and their own Docker engine, as in the rollout
tests), preloads the llama.cpp image and the random-weight demo model on each (the engine
image "already present", as the benchmark asks), then times in the same run:
  * a first apply of the llama.cpp spec to 1 host,
  * a first apply to N hosts (strategy recreate: one batch, one fork per host),
  * a re-apply of the unchanged spec to the N hosts (nothing restarts).
It prints the ratios N-host/1-host (target <= 1.5) and no-op/first apply (target <= 0.2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "hosts"))
sys.path.insert(0, str(REPO))

import images  # noqa: E402
from tests.rollout.helpers import DEMO_ARCH, container_address, ssh_ready, write_inventory  # noqa: E402

CAPS = ["SYS_ADMIN", "NET_ADMIN", "MKNOD", "SYS_PTRACE", "AUDIT_WRITE", "NET_RAW"]


def start_hosts(count: int, pubkey: str) -> list[tuple[str, str]]:
    hosts = []
    for index in range(1, count + 1):
        name = f"servespec-bench-host{index}"
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        argv = [
            "docker",
            "run",
            "-d",
            "--name",
            name,
            "--hostname",
            f"host{index}",
            "-e",
            f"SERVESPEC_TEST_PUBKEY={pubkey}",
        ]
        for cap in CAPS:
            argv += ["--cap-add", cap]
        argv += ["--security-opt", "apparmor=unconfined", "--security-opt", "seccomp=unconfined"]
        argv += ["--tmpfs", "/run", "--tmpfs", "/tmp", "-v", "/var/lib/docker", "servespec-testhost:latest"]
        subprocess.run(argv, check=True, capture_output=True)
        hosts.append((name, container_address(name)))
    return hosts


def prepare(hosts: list[tuple[str, str]], archive: Path, model: Path) -> None:
    for name, _ in hosts:
        for _ in range(60):
            if (
                subprocess.run(["docker", "exec", name, "docker", "info"], capture_output=True, check=False).returncode
                == 0
            ):
                break
            time.sleep(0.5)
        subprocess.run(["docker", "cp", str(archive), f"{name}:/root/engine.tar"], check=True)
        subprocess.run(
            ["docker", "exec", name, "sh", "-c", "docker load -i /root/engine.tar >/dev/null && mkdir -p /srv/models"],
            check=True,
        )
        subprocess.run(["docker", "cp", str(model), f"{name}:/srv/models/demo.gguf"], check=True)


def write_spec(path: Path, name: str, hosts: list[str], image: str) -> None:
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: {name}}}
inventory: inventory.yaml
model:
  source: /srv/models/demo.gguf
  quantization: gguf
  gguf_type: F32
  max_model_len: 256
  architecture: {DEMO_ARCH}
engine: {{name: llama.cpp, version: b11434, image: {image}, options: {{parallel: 1, threads: 1}}}}
placement: {{hosts: [{", ".join(hosts)}]}}
serving: {{port: 8080, bind: 127.0.0.1}}
rollout: {{strategy: recreate, health_timeout: 2m}}
"""
    )


def _cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


BUSY: dict[str, float] = {}


def timed_apply(spec: Path, label: str = "") -> float:
    deploy = Path(sys.executable).parent / "deploy"
    busy0, total0 = _cpu()
    start = time.perf_counter()
    result = subprocess.run(
        [str(deploy), "apply", str(spec), "--yes", "--format", "json"], capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    busy1, total1 = _cpu()
    BUSY[label] = (busy1 - busy0) / max(total1 - total0, 1)
    if result.returncode != 0:
        raise SystemExit(f"apply failed:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
    return elapsed


def destroy(spec: Path) -> None:
    deploy = Path(sys.executable).parent / "deploy"
    subprocess.run([str(deploy), "destroy", str(spec), "--yes"], capture_output=True, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    args = parser.parse_args()
    images.test_host_image()
    image = images.llama_cpp_image()
    archive = images.archive(image)
    os.environ["ANSIBLE_HOST_KEY_CHECKING"] = "False"
    with tempfile.TemporaryDirectory(prefix="servespec-bench-") as tmp:
        work = Path(tmp)
        key = work / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        model = work / "demo.gguf"
        subprocess.run(
            [sys.executable, str(REPO / "scripts" / "make_demo_gguf.py"), str(model)], check=True, capture_output=True
        )
        hosts = start_hosts(args.hosts, key.with_suffix(".pub").read_text().strip())
        try:
            prepare(hosts, archive, model)
            for _, address in hosts:
                while not ssh_ready(address):
                    time.sleep(0.5)
            write_inventory(work / "inventory.yaml", [(f"host{i}", a) for i, (_, a) in enumerate(hosts, 1)], key)
            names = [f"host{i}" for i in range(1, args.hosts + 1)]
            write_spec(work / "one.yaml", "bench-one", names[:1], image)
            write_spec(work / "many.yaml", "bench-many", names, image)
            one = timed_apply(work / "one.yaml", "one")
            destroy(work / "one.yaml")
            many = timed_apply(work / "many.yaml", "many")
            noop = timed_apply(work / "many.yaml", "noop")
        finally:
            for name, _ in hosts:
                subprocess.run(["docker", "rm", "-f", "-v", name], capture_output=True, check=False)
    print(f"first apply, 1 host:        {one:6.1f} s")
    print(f"first apply, {args.hosts} hosts:       {many:6.1f} s")
    print(f"no-op re-apply, {args.hosts} hosts:    {noop:6.1f} s")
    print(f"ratio {args.hosts} hosts / 1 host:      {many / one:.2f}  (target <= 1.5)")
    print(f"ratio no-op / first apply:  {noop / many:.2f}  (target <= 0.2)")
    cores = os.cpu_count()
    print(
        f"CPU busy during the applies (all {cores} cores of this machine, which also runs every test host): "
        f"1 host {BUSY['one']:.0%}, {args.hosts} hosts {BUSY['many']:.0%}"
    )


if __name__ == "__main__":
    main()
