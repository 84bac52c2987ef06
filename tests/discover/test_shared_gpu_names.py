"""Issue 23: NVIDIA prints one name for two memory sizes of some GeForce cards ("NVIDIA GeForce RTX 3060" is the
12 GB and the 8 GB card). The catalog resolves such a name only with nvidia-smi's memory.total, so discover records
the card's catalog id, which the rules resolve without it; a name that picks one card is recorded as printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec.discover.facts import facts_from_outputs
from servespec.knowledge.gpus import resolve
from servespec.spec.models import FactsFile

# The GPU rows of the nvidia-smi 580.95.05 table at https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/790
# (an RTX 3060 12GB on a Raspberry Pi CM5), verbatim; the lines after the GPU section are left out.
RTX3060_TABLE = """\
Fri Dec  5 17:40:55 2025
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 3060        Off |   00000001:01:00.0 Off |                  N/A |
|  0%   26C    P8              4W /  170W |       1MiB /  12288MiB |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""


def _facts(folder: Path, name: str, text: str) -> dict[str, object]:
    (folder / name).write_text(text)
    facts = facts_from_outputs(folder, "box")
    FactsFile.model_validate(facts)
    return facts["hardware"]["gpus"]  # type: ignore[no-any-return]


def test_a_shared_name_in_the_table_is_recorded_as_the_card_its_memory_picks(tmp_path: Path) -> None:
    gpus = _facts(tmp_path, "nvidia-smi.txt", RTX3060_TABLE)
    assert gpus == {"model": "RTX-3060-12GB", "count": 1}
    assert resolve("NVIDIA GeForce RTX 3060") is None  # the printed name alone would leave the rules guessing
    assert resolve(str(gpus["model"])).memory_mib == 12288  # type: ignore[index, union-attr]


@pytest.mark.parametrize(
    ("row", "model"),
    [
        ("NVIDIA GeForce RTX 3060, 12288 MiB", "RTX-3060-12GB"),
        ("NVIDIA GeForce RTX 3060, 8192 MiB", "RTX-3060-8GB"),
        ("NVIDIA GeForce RTX 4060 Ti, 16380 MiB", "RTX-4060-Ti-16GB"),
        ("NVIDIA GeForce RTX 4060 Ti, 8188", "RTX-4060-Ti-8GB"),  # --format=csv,nounits
        ("NVIDIA GeForce RTX 3060, 4096 MiB", "NVIDIA GeForce RTX 3060"),  # no card of that memory: as printed
        ("NVIDIA GeForce RTX 4070, 12282 MiB", "NVIDIA GeForce RTX 4070"),  # one card has the name: as printed
        ("NVIDIA H100 80GB HBM3, 81559 MiB", "NVIDIA H100 80GB HBM3"),
    ],
)
def test_a_shared_name_in_the_query_csv(tmp_path: Path, row: str, model: str) -> None:
    csv = "name, memory.total [MiB]\n" + row + "\n"
    assert _facts(tmp_path, "nvidia-smi.csv", csv) == {"model": model, "count": 1}


@pytest.mark.parametrize(
    ("printed", "memory", "model"),
    [
        # the table cuts "NVIDIA GeForce RTX 4080 SUPER" so (driver 595.71.05 in the capture cited in gpus.yaml); the
        # RTX 4080 reports the same 16376 MiB, so the facts keep what was printed and the rules say it is unknown
        ("NVIDIA GeForce RTX 4080 ...   ", "16376MiB", "NVIDIA GeForce RTX 4080 ..."),
        # a made-up cut of a name only the RTX 5080 starts with: recorded as the name nvidia-smi gives it
        ("NVIDIA GeForce RTX 508...     ", "16303MiB", "NVIDIA GeForce RTX 5080"),
        # the RTX 5090 and the RTX 5090 D both start so and both report 32607 MiB: kept as printed
        ("NVIDIA GeForce RTX 509...     ", "32607MiB", "NVIDIA GeForce RTX 509..."),
    ],
)
def test_a_truncated_table_name(tmp_path: Path, printed: str, memory: str, model: str) -> None:
    table = RTX3060_TABLE.replace("NVIDIA GeForce RTX 3060       ", printed).replace("12288MiB", memory)
    assert printed in table and memory in table
    assert _facts(tmp_path, "nvidia-smi.txt", table) == {"model": model, "count": 1}
