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


def _lines() -> Iterator[str]:
    for fragment in FRAGMENTS:
        yield fragment * (SIZE // len(fragment))
        yield "|" + fragment * (SIZE // len(fragment)) + "x"
        yield "| 0 " + fragment * (SIZE // len(fragment)) + " On"


@pytest.fixture
def hang_guard() -> Iterator[None]:
    """Fail instead of hanging: a super-linear pattern takes hours on these lines, a linear one milliseconds."""

    def expired(_: int, __: FrameType | None) -> None:
        raise TimeoutError("parser still running after 60 s: super-linear on a long line")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
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
