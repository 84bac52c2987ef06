"""The discovery parsers take time linear in their input: a host's output cannot stall discover.

A compromised or broken host chooses what its commands print; one long line must not make
a regular expression backtrack for minutes. Each parser gets lines of 100 KB+ built from
the fragments its patterns look for, under a generous hang guard (no timing assertion).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from servespec.discover import parsers

SIZE = 120_000

FRAGMENTS = [" ", "\t", "0", "| 0 ", "|   0  ", "0MiB /", "0 MiB", "MiB", "[", "] ", "[0", ":", ".", "GPU0 ", "node 0 "]
"""What the patterns match on: table bars, indices, digits before units, brackets, separators."""

PARSERS: dict[str, Callable[[str], Any]] = {
    "smi-table": parsers.parse_smi_table,
    "memory": parsers.memory_mib,
    "query-csv": parsers.parse_query_csv,
    "query-csv-rows": lambda text: parsers.parse_query_csv("index, name\n" + text),
    "busy-gpus": lambda text: parsers.busy_gpus(text, "index, pci.bus_id\n0, " + text),
    "topo": lambda text: parsers.parse_topo("\tGPU0\tGPU1\n" + text),
    "lspci": parsers.parse_lspci_acs,
    "numactl": parsers.parse_numactl,
    "meminfo": parsers.parse_meminfo,
    "gpu-numa": parsers.parse_gpu_numa,
    "df": parsers.parse_df_free_gib,
}


PREFIXES = [
    "node 0 cpus:",  # numactl: node CPUs
    "node ",
    "available:",  # numactl: node count
    "MemTotal:",  # meminfo
    "Driver Version:",  # nvidia-smi table header
    "CUDA Version:",
    "ACSCtl:",  # lspci
    "0000:00:00.0 ",  # lspci device header, gpu-numa bus id
    "GPU0",  # topo header and rows
    " GPU0 ",
    "0MiB /",  # nvidia-smi memory
    "0, ",  # CSV rows
]
"""The literal each pattern family anchors on; a long run after it is where a pattern could backtrack."""

RUNS = [" ", "\t", "0", "0 ", " 0", ".", "\n", " \n", "0\n"]
"""Long runs of what those patterns repeat: spaces, tabs, digits, numbers, dots, line breaks."""

TAILS = ["x", ""]
"""What ends a run: a character no pattern expects there, or nothing."""


def _lines() -> Iterator[str]:
    for fragment in FRAGMENTS:
        yield fragment * (SIZE // len(fragment))
        yield "|" + fragment * (SIZE // len(fragment)) + "x"
        yield "| 0 " + fragment * (SIZE // len(fragment)) + " On"
    for prefix in PREFIXES:
        for run in RUNS:
            for tail in TAILS:
                # Many short lines are a loop's load, not a pattern's: a tenth of the size is enough.
                size = SIZE // 10 if "\n" in run else SIZE
                yield prefix + run * (size // len(run)) + tail


@pytest.fixture
def hang_guard() -> Iterator[None]:
    """Fail instead of hanging: a super-linear pattern takes hours on these lines, a linear one milliseconds."""

    def expired(_: int, __: FrameType | None) -> None:
        raise TimeoutError("parser still running after 300 s: super-linear on a long line")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(300)  # generous: a loaded 2-core CI machine must never trip it
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", PARSERS)
def test_long_adversarial_lines_do_not_stall_a_parser(name: str, hang_guard: None) -> None:
    parse = PARSERS[name]
    for line in _lines():
        parse(line)
        parse(line + "\n" + line)


def test_a_topology_header_claiming_many_gpus_does_not_stall(hang_guard: None) -> None:
    """Links are read from the cells the rows hold, not from every pair of the header's columns."""
    header = "\t" + "\t".join(f"GPU{i}" for i in range(50_000)) + "\tCPU Affinity\tNUMA Affinity\n"
    parsed = parsers.parse_topo(header + "GPU0\t X \tNV12\nGPU1\tNV12\t X \n")
    assert parsed["gpu_count"] == 50_000 and parsed["links"] == [[0, 1, "NV12"]]


@pytest.mark.parametrize(
    "header",
    ["\tGPU0\tGPU1\tNUMA Affinity\n", "\tGPU0\tGPU1\tNUMA Affinity\tCPU Affinity\n"],
)
def test_a_numa_column_out_of_place_is_unknown_not_a_crash(header: str) -> None:
    parsed = parsers.parse_topo(header + "GPU0\t X \tNV12\t0\nGPU1\tNV12\t X \t0\n")
    assert parsed["links"] == [[0, 1, "NV12"]] and "gpu_numa_nodes" not in parsed


def test_busy_gpus_without_the_bus_id_column_is_not_a_crash() -> None:
    """A GPU row with an empty bus id and an apps header without ``gpu_bus_id`` used to raise KeyError."""
    assert parsers.busy_gpus("pid, used_memory\n1, 2\n", "index, pci.bus_id\n0, \n") == []
    assert parsers.busy_gpus("gpu_bus_id, pid\n0000:18:00.0, 1\n", "index, pci.bus_id\n3, 0000:18:00.0\n") == [3]


def test_the_numactl_lines_are_read_one_at_a_time() -> None:
    text = "available: 2 nodes (0-1)\nnode 0 cpus: 0 1 2 3 8\nnode 0 size: 1 MB\nnode 1 cpus:\t4 5  \r\n"
    assert parsers.parse_numactl(text) == {"nodes": 2, "cpus": {0: "0-3,8", 1: "4-5"}}
    for line in ("node 0 cpus: 0 -1", "node 0 cpus: 0 x", "node 0 cpus:", "node 0 cpus: 0 \u00b2", "xnode 0 cpus: 1"):
        assert "cpus" not in parsers.parse_numactl(line + "\n"), line
    assert parsers.parse_numactl("node 0 cpus:\n1 2\n") == {}  # a CPU list never continues on the next line


def test_the_rewritten_patterns_still_read_real_rows() -> None:
    row = "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |"
    memory = "| N/A   34C    P0             69W /  700W |       4MiB /  81559MiB |      0%      Default |"
    assert parsers.parse_smi_table(f"{row}\n{memory}\n")["gpus"] == [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559}
    ]
    assert parsers.memory_mib("81920 MiB") == 81920 and parsers.memory_mib("x12MiB") == 12
    assert parsers.parse_query_csv("index, memory.total [MiB]\n0, 81920 MiB\n") == [
        {"index": "0", "memory.total": "81920 MiB"}
    ]
    assert parsers.parse_smi_table("|   0  Tesla T4  Off | 0000:00:04.0|\n")["gpus"] == []  # no space after the bus id


HUGE = "9" * 5000
"""More digits than int() converts (Python refuses over 4300): a host's number, not a crash."""


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parsers.memory_mib, f"{HUGE} MiB"),
        (parsers.parse_smi_table, f"|   0  GPU  On  | 0000:00:04.0 Off |\n| N/A | {HUGE}MiB / {HUGE}MiB |\n"),
        (parsers.parse_smi_table, f"|   {HUGE}  GPU  On  | 0000:00:04.0 Off |\n"),
        (parsers.parse_topo, f"\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-1\t{HUGE}\n"),
        (parsers.parse_numactl, f"available: {HUGE} nodes (0)\nnode {HUGE} cpus: {HUGE} 1\n"),
        (parsers.parse_meminfo, f"MemTotal:       {HUGE} kB\n"),
        (parsers.parse_gpu_numa, f"00000000:18:00.0 {HUGE}\n"),
        (
            parsers.parse_df_free_gib,
            f"Filesystem 1024-blocks Used Available Capacity Mounted\n/dev/x 1 1 {HUGE} 1% /\n",
        ),
        (
            lambda text: parsers.busy_gpus(text, f"index, pci.bus_id\n{HUGE}, 0000:00:04.0\n"),
            "gpu_bus_id\n0000:00:04.0\n",
        ),
    ],
)
def test_numbers_too_long_to_convert_are_not_a_crash(parse: Callable[[str], Any], text: str) -> None:
    parse(text)


def test_a_huge_processor_count_is_not_a_crash(tmp_path: Any) -> None:
    from servespec.discover.facts import facts_from_outputs

    (tmp_path / "nproc.txt").write_text(HUGE + "\n")
    assert "cpus" not in facts_from_outputs(tmp_path, "gpu-01")["hardware"]
