"""Issue 22, item 4: the GPU catalog knows the data-centre and workstation cards users run, by the
names nvidia-smi prints, and the rules that read compute capability or memory judge them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec.knowledge.datafile import load_yaml_data
from servespec.knowledge.gpus import GpuModel, _normalize, _reports, catalog, resolve
from tests.conftest import run_cli

# (what nvidia-smi printed, catalog id, compute capability, memory.total nvidia-smi printed or None)
# Names and memory from real outputs; each is cited in gpus.yaml next to the entry.
REAL_NAMES = [
    ("NVIDIA L20", "L20", (8, 9), 46068),  # vllm-project/vllm#14011
    ("NVIDIA H20", "H20", (9, 0), 97871),
    ("NVIDIA H20-3e", "H20-3e", (9, 0), 143771),  # sgl-project/sglang#6418
    ("NVIDIA H800", "H800-SXM5-80GB", (9, 0), 81559),
    ("NVIDIA H800 PCIe", "H800-PCIE-80GB", (9, 0), None),
    ("NVIDIA A800-SXM4-80GB", "A800-SXM4-80GB", (8, 0), 81920),  # dexmal/dexbotic#41
    ("NVIDIA A800 80GB PCIe", "A800-PCIE-80GB", (8, 0), 81920),  # vllm-project/vllm#41519
    ("NVIDIA L40", "L40", (8, 9), 46068),
    ("NVIDIA RTX A6000", "RTX-A6000", (8, 6), 49140),  # noonghunna/club-3090#1047
    ("NVIDIA GB200", "GB200", (10, 0), 189471),
    ("NVIDIA GB300", "GB300", (10, 3), 284208),
    ("NVIDIA B300 SXM6 AC", "B300", (10, 3), 275040),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-Blackwell", (12, 0), 97887),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000-Blackwell", (12, 0), None),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000-Blackwell", (12, 0), None),
    ("NVIDIA RTX PRO 4500 Blackwell", "RTX-PRO-4500-Blackwell", (12, 0), None),
    ("NVIDIA RTX 5000 Ada Generation", "RTX-5000-Ada", (8, 9), None),
    ("NVIDIA RTX A5500", "RTX-A5500", (8, 6), None),
    ("Quadro RTX 8000", "Quadro-RTX-8000", (7, 5), None),
    ("Tesla P100-SXM2-16GB", "P100-SXM2-16GB", (6, 0), None),
    ("Tesla V100S-PCIE-32GB", "V100S-PCIE-32GB", (7, 0), None),
    ("Tesla V100-SXM3-32GB", "V100-SXM3-32GB", (7, 0), None),
    ("Quadro P6000", "Quadro-P6000", (6, 1), 24576),
    ("Quadro GV100", "Quadro-GV100", (7, 0), 32508),
    ("TITAN V", "TITAN-V", (7, 0), 12066),
    ("NVIDIA GH200 480GB", "GH200-96GB", (9, 0), 97871),
]


@pytest.mark.parametrize(("printed", "gpu_id", "capability", "memory"), REAL_NAMES, ids=[n[0] for n in REAL_NAMES])
def test_real_nvidia_smi_names_resolve(
    printed: str, gpu_id: str, capability: tuple[int, int], memory: int | None
) -> None:
    gpu = resolve(printed)
    assert gpu is not None, printed
    assert (gpu.id, gpu.compute_capability) == (gpu_id, capability)
    if memory is not None:
        assert gpu.memory_mib == memory
    # the same card, given the memory nvidia-smi printed beside the name, still resolves
    assert resolve(printed, gpu.memory_mib) == gpu


@pytest.mark.parametrize("spelling", ["l20", "NVIDIA  L20", "nvidia-l20", "L20", "b300", "GB300", "h20-3e"])
def test_lookups_tolerate_case_and_spacing(spelling: str) -> None:
    assert resolve(spelling) is not None, spelling


def test_every_entry_has_its_sources() -> None:
    entries = load_yaml_data("gpus.yaml")["gpus"]
    assert len(entries) >= 70
    for entry in entries:
        assert str(entry["source"]).startswith("https://"), entry["id"]
        assert entry.get("memory_source"), entry["id"]
        assert entry.get("names"), entry["id"]
        assert isinstance(entry.get("memory_verified"), bool), entry["id"]
        if entry["memory_verified"]:
            # a verified memory.total links the real output it was read from
            assert "https://github.com/" in entry["memory_source"], entry["id"]
        # Pascal..Hopper take the CUDA GPUs page; parts it does not list say where their names come from
        assert entry.get("name_source") or entry["id"] in _ENTRIES_BEFORE_ISSUE_22, entry["id"]


_ENTRIES_BEFORE_ISSUE_22 = {
    "P100-PCIE-16GB", "P40", "V100-PCIE-16GB", "V100-PCIE-32GB", "V100-SXM2-16GB", "V100-SXM2-32GB", "T4",
    "A100-PCIE-40GB", "A100-PCIE-80GB", "A100-SXM4-40GB", "A100-SXM4-80GB", "A800-SXM4-80GB", "A30", "A10",
    "A10G", "A40", "A2", "A16", "RTX-3090", "RTX-A6000", "RTX-A5000", "RTX-A4000", "L4", "L40", "L40S",
    "RTX-4090", "RTX-6000-Ada", "H100-PCIE-80GB", "H100-SXM5-80GB", "H100-NVL-94GB", "H200-SXM-141GB",
    "H200-NVL-141GB", "GH200-96GB", "GH200-144GB", "B200", "RTX-5090",
}  # fmt: skip


def test_a_spelling_shared_by_two_cards_is_told_apart_by_memory() -> None:
    """An id names one card. A printed name may be shared (NVIDIA sells the RTX 3060 with 12 or 8 GB as
    "NVIDIA GeForce RTX 3060"), but only by cards whose memory.total nvidia-smi prints differs, so that the
    name plus memory picks one card and the name alone picks none."""
    ids: dict[str, str] = {}
    shared: dict[str, list[GpuModel]] = {}
    for gpu in catalog():
        key = _normalize(gpu.id)
        assert ids.setdefault(key, gpu.id) == gpu.id, (gpu.id, ids[key])
        for spelling in {_normalize(name) for name in gpu.names}:
            shared.setdefault(spelling, []).append(gpu)
    for spelling, gpus in shared.items():
        assert spelling not in ids or [g.id for g in gpus] == [ids[spelling]], (spelling, [g.id for g in gpus])
        for gpu in gpus:
            seen = (gpu.memory_mib, *gpu.memory_mib_other)
            others = [g for g in gpus if g is not gpu and any(_reports(g, m) for m in seen)]
            assert not others, (spelling, gpu.id, [g.id for g in others])
            if len(gpus) > 1:
                assert resolve(gpu.names[0], gpu.memory_mib) == gpu, (spelling, gpu.id)
                assert resolve(gpu.names[0]) is None, spelling


def test_geforce_names_shared_by_two_memory_sizes() -> None:
    # the name alone is ambiguous; nvidia-smi's memory.total beside it (as discover and the plain table give it) decides
    for name, sizes in [
        ("NVIDIA GeForce RTX 3060", {12288: "RTX-3060-12GB", 8192: "RTX-3060-8GB"}),
        ("NVIDIA GeForce RTX 3080", {10240: "RTX-3080-10GB", 12288: "RTX-3080-12GB"}),
        ("NVIDIA GeForce RTX 4060 Ti", {16380: "RTX-4060-Ti-16GB", 8188: "RTX-4060-Ti-8GB"}),
        ("NVIDIA GeForce RTX 3050", {8192: "RTX-3050-8GB", 6144: "RTX-3050-6GB"}),
    ]:
        assert resolve(name) is None, name
        for memory, gpu_id in sizes.items():
            assert resolve(name, memory).id == gpu_id  # type: ignore[union-attr]
    # the catalog id names one card whatever nvidia-smi printed: what an inventory writes to settle it
    assert resolve("RTX-3060-8GB").memory_mib == 8192  # type: ignore[union-attr]


def test_ambiguous_names_resolve_to_nothing() -> None:
    # "H100" alone is PCIe, SXM or NVL; the driver's bare "NVIDIA H100" (PCI 2339) is a variant whose memory
    # was not found: neither is guessed (REF003 says so instead of a wrong card's memory)
    assert resolve("H100") is None
    assert resolve("NVIDIA H100") is None
    # the 141 GB H20 prints its own name; the 96 GB name never picks it
    assert (resolve("NVIDIA H20").memory_mib, resolve("NVIDIA H20-3e").memory_mib) == (97871, 143771)  # type: ignore[union-attr]


def test_truncated_table_name_is_told_apart_by_memory() -> None:
    assert resolve("NVIDIA A100-SXM...") is None
    assert resolve("NVIDIA A100-SXM...", 81920).id == "A100-SXM4-80GB"  # type: ignore[union-attr]
    assert resolve("NVIDIA A100-SXM...", 40960).id == "A100-SXM4-40GB"  # type: ignore[union-attr]
    assert resolve("NVIDIA A100-SXM...", 40536).id == "A100-SXM4-40GB"  # type: ignore[union-attr]  # old driver
    assert resolve("NVIDIA A100-SXM...", 12345) is None
    # all three RTX PRO 6000 editions are one entry: a prefix of any of them is unique
    assert resolve("NVIDIA RTX PRO 6000 Blac...").id == "RTX-PRO-6000-Blackwell"  # type: ignore[union-attr]


# --- end to end: `deploy validate` on the new cards -------------------------------------------------

_QWEN7B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "max_position_embeddings": 32768, "vocab_size": 152064,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip


def _fleet(root: Path, gpu: str, dtype: str = "bfloat16", quantization: str | None = None, engine: str = "vllm",
           version: str = "0.11.0", driver: str = "580.126.09") -> None:  # fmt: skip
    """Qwen2.5-7B on one ``gpu`` of a host with ``driver`` (tests/knowledge/test_amd_gpus.py uses it too)."""
    (root / "qwen.json").write_text(json.dumps(_QWEN7B))
    (root / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {ssh_user: deploy}\nhosts:\n"
        "  box:\n    address: 10.0.0.9\n    hardware:\n"
        f"      gpus: {{model: {gpu}, count: 1}}\n      interconnect: pcie\n      gpu_numa_nodes: [0]\n"
        f'      pcie_acs: disabled\n      driver_version: "{driver}"\n'
    )
    quant = f"\n  quantization: {quantization}" if quantization else ""
    (root / "spec.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: qwen}\ninventory: inventory.yaml\n"
        "model:\n  source: Qwen/Qwen2.5-7B-Instruct\n  revision: a09a35458c702b33eeacc393d103063234e8bc28\n"
        f"  config: qwen.json\n  dtype: {dtype}{quant}\n"
        f'  max_model_len: 8192\nengine: {{name: {engine}, version: "{version}"}}\nplacement: {{hosts: [box]}}\n'
    )


def _rules(gpu: str, **spec: str) -> list[str]:
    _fleet(Path.cwd(), gpu, **spec)
    result = run_cli("validate", "--strict", "--format", "json", "spec.yaml")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return sorted(f["rule"] for f in json.loads(result.stdout)["findings"])


def test_validate_on_an_l20_knows_the_card(in_tmp: Path) -> None:
    # before issue 22 this said REF003 "GPU model 'NVIDIA L20' of box is not in the catalog"
    _fleet(in_tmp, "NVIDIA L20")
    result = run_cli("validate", "--strict", "--format", "json", "spec.yaml")
    assert json.loads(result.stdout)["findings"] == []
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        ("NVIDIA L20", []),  # Ada 8.9
        ("NVIDIA H20", []),
        ("NVIDIA A800 80GB PCIe", []),
        ("NVIDIA B300 SXM6 AC", []),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", []),
        ("Quadro RTX 8000", ["HW001"]),  # Turing 7.5: no bfloat16
        ("Tesla V100S-PCIE-32GB", ["HW001"]),
    ],
)
def test_bfloat16_needs_ampere(in_tmp: Path, gpu: str, expected: list[str]) -> None:
    assert [r for r in _rules(gpu) if r.startswith("HW")] == expected


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        ("NVIDIA L20", []),  # FP8 on TensorRT-LLM needs Ada or Hopper (8.9)
        ("NVIDIA H800", []),
        ("NVIDIA GB300", []),
        ("NVIDIA A800-SXM4-80GB", ["HW002"]),  # Ampere 8.0
        ("NVIDIA RTX A5500", ["HW002"]),  # 8.6
    ],
)
def test_fp8_on_tensorrt_llm_needs_ada_or_hopper(in_tmp: Path, gpu: str, expected: list[str]) -> None:
    rules = _rules(gpu, quantization="fp8", engine="tensorrt-llm", version="1.2.1")
    assert [r for r in rules if r.startswith("HW")] == expected


def test_discover_names_a_truncated_table_gpu_by_its_memory(tmp_path: Path) -> None:
    """Driver 410's table prints "Tesla V100-PCIE..." (16 and 32 GB both fit); its 32480 MiB picks the 32 GB card."""
    from servespec.discover.facts import facts_from_outputs
    from tests.conftest import REPO

    sample = REPO / "tests" / "data" / "facts" / "samples" / "16-smi-v100pcie-x4-old-410-nocuda" / "output.txt"
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "nvidia-smi.txt").write_text(sample.read_text())
    gpus = facts_from_outputs(folder, "old")["hardware"]["gpus"]
    assert gpus == {"model": "Tesla V100-PCIE-32GB", "count": 4}
    assert resolve(gpus["model"]).id == "V100-PCIE-32GB"  # type: ignore[union-attr]


def test_memory_rules_run_on_a_new_card(in_tmp: Path) -> None:
    """A 7B model in bf16 (about 15 GB of weights) does not fit a 6 GB RTX A2000: the memory rule says so
    (before the card was catalogued, REF003 was all validate could say and the memory rules skipped the host)."""
    rules = _rules("NVIDIA RTX A2000")
    assert "MEM001" in rules and "REF003" not in rules, rules
    assert "MEM001" not in _rules("NVIDIA L20"), "48 GB holds it"


@pytest.mark.parametrize(
    ("gpu", "engine", "version", "expected"),
    [
        ("Tesla P100-SXM2-16GB", "vllm", "0.11.0", ["HW004"]),  # Pascal 6.0: vLLM needs 7.0
        ("Quadro P6000", "vllm", "0.11.0", ["HW004"]),  # 6.1
        ("Quadro GV100", "vllm", "0.11.0", []),  # Volta 7.0 meets it
        ("Quadro RTX 8000", "tensorrt-llm", "1.2.1", ["HW004"]),  # Turing 7.5: TensorRT-LLM needs Ampere
        ("NVIDIA RTX A2000 12GB", "tensorrt-llm", "1.2.1", []),  # Ampere 8.6
    ],
)
def test_engine_minimum_capability_on_old_cards(
    in_tmp: Path, gpu: str, engine: str, version: str, expected: list[str]
) -> None:
    rules = _rules(gpu, dtype="float16", engine=engine, version=version)
    assert [r for r in rules if r.startswith("HW")] == expected
