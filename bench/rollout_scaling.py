"""Rollout scaling: the controller's cost on 1, 8 and 32 lightweight test hosts.

    .venv/bin/python bench/rollout_scaling.py [--hosts 1,8,32] [--repeat 2] [--keep]

What it separates. On this machine the controller (``deploy apply``: ansible-runner, two
ansible-playbook runs, their forks and ssh) and every test host share the same cores, so a
host that runs a real engine makes the controller look slow. Here each host is a *lightweight*
test host: the same test-host image as the rollout tests (sshd, python3, its own dockerd;
Docker-in-Docker, reached over real SSH by the real role), whose engine is the stand-in
(tests/hosts/standin) in a slim image: the stand-in image's python3, its standard library and
the stand-in script, nothing else (about 30 MB instead of 336 MB), loaded into each host's
dockerd with ``docker load`` before the runs ("image already present"). The stand-in answers
health at once, so an apply is the controller's work plus the hosts' module runs and one
container start each. The hosts' own CPU (their cgroups: sshd, dockerd, module runs, the
stand-in) is measured and printed beside the controller's.

Each round, for every host count N (rounds interleave the counts, so load from other work on
the machine falls on all of them alike), on hosts cleaned of servespec state and containers:
  * a first apply of a llama.cpp-shaped spec to N hosts (``strategy: recreate``: one batch),
  * a re-apply of the unchanged spec (a no-op: nothing restarts).
Per apply it measures:
  * wall time of ``deploy apply --yes``;
  * controller CPU-seconds: user+system time of ``deploy`` and every process below it, from
    getrusage(RUSAGE_CHILDREN). The bench is a child subreaper, so ssh's ControlPersist masters,
    which detach from Ansible, become its children; after each apply they are stopped and
    reaped, so their CPU (all the SSH encryption) is counted too, and every apply starts cold;
  * SSH connections per host: sshd's "Accepted publickey" log lines on the hosts (sshd runs
    with -e, so they are the host containers' logs), i.e. real authenticated TCP connections;
  * ssh invocations per host: runs of ssh/sftp/scp counted by wrappers named in
    ANSIBLE_SSH_EXECUTABLE / ANSIBLE_SFTP_EXECUTABLE / ANSIBLE_SCP_EXECUTABLE: each is one
    session multiplexed over a connection (with pipelining, one per module run);
  * hosts' CPU-seconds, from the host containers' cpuacct cgroups and their engines' cgroup parent.
It prints the medians, the ratios N/1, and a linear fit (model: wall = a + b*N,
CPU = c + d*N, least squares over the first-apply medians) projected to 500 hosts. The load
average is printed at start and end; everything it starts is removed at the end (--keep: not).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import ctypes
import io
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "hosts"))
sys.path.insert(0, str(REPO))

import images  # noqa: E402
from tests.rollout.helpers import DEMO_ARCH, container_address, ssh_ready, write_inventory  # noqa: E402

CAPS = ["SYS_ADMIN", "NET_ADMIN", "MKNOD", "SYS_PTRACE", "AUDIT_WRITE", "NET_RAW"]
PREFIX = os.environ.get("SERVESPEC_TEST_PROJECT", "servespec-bench")
"""Names of everything the bench starts begin with this (set SERVESPEC_TEST_PROJECT to run beside others)."""
SLIM = "servespec-standin-slim"
KEEP = (
    "usr/bin/python3",
    "usr/lib/python3.11/",
    "usr/lib/x86_64-linux-gnu/libc.so",
    "usr/lib/x86_64-linux-gnu/libm.so",
    "usr/lib/x86_64-linux-gnu/libz.so",
    "usr/lib/x86_64-linux-gnu/libexpat.so",
    "usr/lib/x86_64-linux-gnu/ld-linux",
    "usr/lib64",
    "usr/local/bin/servespec-standin",
    "etc/passwd",
    "etc/group",
    "bin",
    "lib",
    "lib64",
    "sbin",
    "tmp",
)
DROP = ("test/", "ensurepip/", "idlelib/", "tkinter/", "lib2to3/", "pydoc_data/", "config-3")


def slim_standin() -> str:
    """The stand-in engine in an image of its runtime files only (tagged by the full image's id)."""
    full = images.standin_image()
    image_id = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", full], capture_output=True, text=True, check=True
    ).stdout.strip()
    tag = f"{SLIM}:{image_id.split(':')[-1][:12]}"
    if images.image_exists(tag):
        return tag
    created = subprocess.run(["docker", "create", full], capture_output=True, text=True, check=True).stdout.strip()
    try:
        exported = subprocess.run(["docker", "export", created], capture_output=True, check=True).stdout
    finally:
        subprocess.run(["docker", "rm", created], capture_output=True, check=False)
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(exported)) as source, tarfile.open(fileobj=out, mode="w") as slim:
        for member in source.getmembers():
            name = member.name.removeprefix("./")
            if not name.startswith(KEEP) or any(f"python3.11/{drop}" in name for drop in DROP):
                continue
            slim.addfile(member, source.extractfile(member) if member.isfile() else None)
    subprocess.run(
        ["docker", "import", "--change", 'ENTRYPOINT ["/usr/local/bin/servespec-standin"]', "-", tag],
        input=out.getvalue(),
        capture_output=True,
        check=True,
    )
    return tag


@dataclass
class Host:
    """One lightweight test host."""

    name: str
    container: str
    address: str = ""
    cid: str = ""

    def sh(self, command: str) -> str:
        return subprocess.run(
            ["docker", "exec", self.container, "sh", "-c", command], capture_output=True, text=True, check=False
        ).stdout

    def accepted(self) -> int:
        """sshd's authenticated connections since the host started (its log is the container's stderr)."""
        logs = subprocess.run(["docker", "logs", self.container], capture_output=True, text=True, check=False)
        return (logs.stdout + logs.stderr).count("Accepted publickey")

    def cpu_ns(self) -> int:
        """CPU time of the host container's cgroup and of its engines' cgroup parent (host-entrypoint.sh)."""
        total = 0
        for group in (f"docker/{self.cid}", f"servespec-test-{self.container}"):
            path = Path("/sys/fs/cgroup/cpuacct") / group / "cpuacct.usage"
            if path.is_file():
                total += int(path.read_text())
        return total

    def rss_kib(self) -> int:
        """Summed RSS of every process of the host (its engines' namespaces included: shared pages count twice)."""
        out = self.sh("ps -e -o rss=")
        return sum(int(x) for x in out.split() if x.isdigit())


def start_host(index: int, pubkey: str, network: str) -> Host:
    container = f"{PREFIX}-h{index}"
    subprocess.run(["docker", "rm", "-f", "-v", container], capture_output=True, check=False)
    argv = ["docker", "run", "-d", "--name", container, "--hostname", container, "--network", network]
    argv += ["-e", f"SERVESPEC_TEST_PUBKEY={pubkey}"]
    for cap in CAPS:
        argv += ["--cap-add", cap]
    argv += ["--security-opt", "apparmor=unconfined", "--security-opt", "seccomp=unconfined"]
    argv += ["--tmpfs", "/run", "--tmpfs", "/tmp", "-v", "/var/lib/docker", "servespec-testhost:latest"]
    cid = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()
    return Host(f"host{index}", container, container_address(container), cid)


def remove_leftovers(network: str) -> None:
    """Remove the hosts and network of an earlier run of the same prefix (one kept with --keep, or killed)."""
    listed = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"name=^{PREFIX}-h[0-9]+$"], capture_output=True, text=True, check=False
    ).stdout.split()
    if listed:
        subprocess.run(["docker", "rm", "-f", "-v", *listed], capture_output=True, check=False)
    subprocess.run(["docker", "network", "rm", network], capture_output=True, check=False)


def prepare(host: Host, archive: Path, model: Path) -> None:
    """Wait for the host's dockerd and sshd, load the slim stand-in image, put the model file in place."""
    for _ in range(240):
        if host.sh("docker info >/dev/null 2>&1 && echo ok").strip() == "ok":
            break
        time.sleep(0.5)
    subprocess.run(["docker", "cp", str(archive), f"{host.container}:/root/engine.tar"], check=True)
    host.sh("docker load -i /root/engine.tar >/dev/null && rm /root/engine.tar && mkdir -p /srv/models")
    subprocess.run(["docker", "cp", str(model), f"{host.container}:/srv/models/demo.gguf"], check=True)
    while not ssh_ready(host.address):
        time.sleep(0.5)


def clean(host: Host) -> None:
    host.sh("docker rm -f $(docker ps -aq) >/dev/null 2>&1; rm -rf /var/lib/servespec /etc/servespec")


def write_spec(path: Path, hosts: list[str], image: str) -> Path:
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: bench}}
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
    return path


WRAPPER = """#!/bin/sh
printf '%s %s\\n' {tool} "$*" >> {log}
exec {tool} "$@"
"""


def ssh_wrappers(folder: Path) -> Path:
    """ssh/sftp/scp wrappers that log each run; Ansible runs them through ANSIBLE_*_EXECUTABLE."""
    log = folder / "ssh-calls.log"
    log.touch()
    for tool in ("ssh", "sftp", "scp"):
        wrapper = folder / f"count-{tool}"
        wrapper.write_text(WRAPPER.format(tool=tool, log=log))
        wrapper.chmod(0o755)
        os.environ[f"ANSIBLE_{tool.upper()}_EXECUTABLE"] = str(wrapper)
    return log


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphans below this process (ssh's ControlPersist masters) become its children, so it can reap them."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed: the masters' CPU could not be counted")


def reap_children() -> int:
    """Stop and reap every leftover child (the ssh masters); how many there were."""
    mine = str(os.getpid())
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == mine:
            pids.append(int(stat.parent.name))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    return len(pids)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Measure:
    """One apply's figures."""

    wall: float
    cpu: float
    connections: int
    calls: int
    host_cpu: float
    masters: int


@dataclass
class Series:
    runs: dict[tuple[int, str], list[Measure]] = field(default_factory=dict)

    def add(self, hosts: int, kind: str, measure: Measure) -> None:
        self.runs.setdefault((hosts, kind), []).append(measure)

    def median(self, hosts: int, kind: str, attribute: str) -> float:
        return statistics.median(getattr(m, attribute) for m in self.runs[(hosts, kind)])


def timed_apply(spec: Path, hosts: list[Host], calls_log: Path) -> Measure:
    deploy = Path(sys.executable).parent / "deploy"
    reap_children()
    accepted0 = sum(h.accepted() for h in hosts)
    host0 = sum(h.cpu_ns() for h in hosts)
    calls0 = len(calls_log.read_text().splitlines())
    cpu0 = _children_cpu()
    start = time.perf_counter()
    result = subprocess.run(
        [str(deploy), "apply", str(spec), "--yes", "--format", "json"], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    masters = reap_children()
    cpu = _children_cpu() - cpu0
    if result.returncode != 0:
        raise SystemExit(f"apply failed:\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
    return Measure(
        wall=wall,
        cpu=cpu,
        connections=sum(h.accepted() for h in hosts) - accepted0,
        calls=len(calls_log.read_text().splitlines()) - calls0,
        host_cpu=(sum(h.cpu_ns() for h in hosts) - host0) / 1e9,
        masters=masters,
    )


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares a, b of y = a + b*x."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0
    return mean_y - slope * mean_x, slope


def ssh_settings(calls_log: Path) -> str:
    """What the ssh command lines show: ControlPersist, the ControlPath and its length."""
    for line in calls_log.read_text().splitlines():
        if line.startswith("ssh ") and "ControlPath=" in line:
            path = line.split("ControlPath=", 1)[1].split()[0].strip("\"'")
            persist = "ControlPersist=" in line
            return f"ControlPersist {'on' if persist else 'OFF'}; ControlPath {path} ({len(path)} bytes, limit 107)"
    return "no ssh command line named a ControlPath (ControlPersist is off)"


def report(series: Series, counts: list[int], cores: int) -> None:
    one = series.median(counts[0], "first", "wall")
    header = (
        f"{'hosts':>5} {'apply':>6} {'wall s':>7} {'runs':>18} {'N/1':>5} {'ctl CPU s':>9} {'CPU/host':>8} "
        f"{'conn/host':>9} {'ssh/host':>8} {'host CPU/host':>13}"
    )
    print(header)
    for count in counts:
        for kind in ("first", "noop"):
            runs = series.runs[(count, kind)]
            wall = series.median(count, kind, "wall")
            cpu = series.median(count, kind, "cpu")
            base = one if kind == "first" else series.median(counts[0], "noop", "wall")
            print(
                f"{count:>5} {kind:>6} {wall:>7.1f} {' '.join(f'{m.wall:.1f}' for m in runs):>18} "
                f"{wall / base:>5.2f} {cpu:>9.1f} {cpu / count:>8.2f} "
                f"{series.median(count, kind, 'connections') / count:>9.1f} "
                f"{series.median(count, kind, 'calls') / count:>8.1f} "
                f"{series.median(count, kind, 'host_cpu') / count:>13.2f}"
            )
    for other in counts[1:]:
        ratio = series.median(other, "first", "wall") / one
        print(
            f"ratio {other}/{counts[0]} hosts (first apply): {ratio:.2f}" + ("  (target <= 1.5)" if other == 32 else "")
        )
    if len(counts) < 2:
        return
    for kind in ("first", "noop"):
        wall_a, wall_b = fit([(c, series.median(c, kind, "wall")) for c in counts])
        cpu_c, cpu_d = fit([(c, series.median(c, kind, "cpu")) for c in counts])
        cpu500 = cpu_c + cpu_d * 500
        floor = cpu500 / cores
        print(
            f"projection, 500 hosts, {kind} apply: wall = {wall_a:.1f} + {wall_b:.3f}*N s "
            f"-> {wall_a + wall_b * 500:.0f} s; "
            f"controller CPU = {cpu_c:.1f} + {cpu_d:.3f}*N s -> {cpu500:.0f} CPU-s ({cpu500 / 500:.2f} per host), "
            f"which alone needs >= {floor:.0f} s on this machine's {cores} cores"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="1,8,32", help="host counts, comma-separated (default 1,8,32)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; medians are reported (default 2)")
    parser.add_argument("--keep", action="store_true", help="leave the hosts running at the end")
    args = parser.parse_args()
    counts = sorted({int(x) for x in args.hosts.split(",")})
    cores = os.cpu_count() or 1
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({cores} cores)", flush=True)
    become_subreaper()
    images.test_host_image()
    image = slim_standin()
    archive = images.archive(image)
    os.environ["ANSIBLE_HOST_KEY_CHECKING"] = "False"
    network = f"{PREFIX}-net"
    hosts: list[Host] = []
    series = Series()
    with tempfile.TemporaryDirectory(prefix="servespec-bench-") as tmp:
        work = Path(tmp)
        os.environ["ANSIBLE_SSH_CONTROL_PATH_DIR"] = str(work / "cp")
        calls_log = ssh_wrappers(work)
        key = work / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        model = work / "demo.gguf"
        subprocess.run(
            [sys.executable, str(REPO / "scripts" / "make_demo_gguf.py"), str(model)], check=True, capture_output=True
        )
        remove_leftovers(network)
        subprocess.run(["docker", "network", "create", network], capture_output=True, check=True)
        pubkey = key.with_suffix(".pub").read_text().strip()
        try:
            began = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                hosts = list(pool.map(lambda i: start_host(i, pubkey, network), range(1, max(counts) + 1)))
                list(pool.map(lambda h: prepare(h, archive, model), hosts))
            print(f"{len(hosts)} hosts ready in {time.perf_counter() - began:.0f} s (image {image})", flush=True)
            write_inventory(work / "inventory.yaml", [(h.name, h.address) for h in hosts], key)
            for round_ in range(args.repeat):
                for count in counts:
                    used = hosts[:count]
                    for host in used:
                        clean(host)
                    spec = write_spec(work / f"bench-{count}.yaml", [h.name for h in used], image)
                    first = timed_apply(spec, used, calls_log)
                    series.add(count, "first", first)
                    noop = timed_apply(spec, used, calls_log)
                    series.add(count, "noop", noop)
                    print(
                        f"round {round_ + 1}, {count} hosts: first {first.wall:.1f} s ({first.cpu:.1f} CPU-s), "
                        f"no-op {noop.wall:.1f} s ({noop.cpu:.1f} CPU-s)",
                        flush=True,
                    )
            rss = sorted(h.rss_kib() for h in hosts[: max(counts)])
            print(f"host RSS (all processes of one host, deployment running): median {rss[len(rss) // 2] >> 10} MiB")
            print(ssh_settings(calls_log))
            report(series, counts, cores)
        finally:
            reap_children()
            if not args.keep:
                for host in hosts:
                    subprocess.run(["docker", "rm", "-f", "-v", host.container], capture_output=True, check=False)
                subprocess.run(["docker", "network", "rm", network], capture_output=True, check=False)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(json.dumps({f"{c}/{k}": [m.__dict__ for m in ms] for (c, k), ms in series.runs.items()}))


if __name__ == "__main__":
    main()
