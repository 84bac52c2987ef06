"""AMD Instinct cards in the GPU catalog: their facts, and NVIDIA-only rules that must not judge them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec.engines import get
from servespec.knowledge.gpus import resolve
from servespec.knowledge.memory import EstimateInput, nvls_gib
from servespec.knowledge.models import catalogued
from tests.conftest import run_cli
from tests.knowledge.test_gpu_catalog_cards import _fleet


@pytest.mark.parametrize(
    ("printed", "gpu_id", "gfx", "hip", "mib"),
    [
        ("AMD Instinct MI300X", "MI300X", "gfx942", (9, 4), 196608),  # rocm-smi 206158430208 B
        ("AMD Instinct MI300X VF", "MI300X", "gfx942", (9, 4), 196608),
        ("AMD-Instinct-MI300X", "MI300X", "gfx942", (9, 4), 196608),  # a Kubernetes label's spelling
        ("AMD Instinct MI325X", "MI325X", "gfx942", (9, 4), 256 * 1024),
        ("AMD Instinct MI355X", "MI355X", "gfx950", (9, 5), 288 * 1024),
        ("mi355x", "MI355X", "gfx950", (9, 5), 288 * 1024),
        ("AMD Instinct MI210", "MI210", "gfx90a", (9, 0), 65520),
        ("AMD Instinct MI250X / MI250", "MI250X", "gfx90a", (9, 0), 65520),  # one GCD
    ],
)
def test_amd_names_resolve_with_their_rocm_facts(
    printed: str, gpu_id: str, gfx: str, hip: tuple[int, int], mib: int
) -> None:
    gpu = resolve(printed)
    assert gpu is not None, printed
    assert (gpu.id, gpu.vendor, gpu.gfx_arch, gpu.memory_mib) == (gpu_id, "amd", gfx, mib)
    assert gpu.compute_capability == hip  # what HIP (torch on ROCm) reports, which SGLang's ROCm code compares
    assert gpu.cuda_capability is None  # ... and no CUDA compute capability


def test_nvidia_cards_keep_their_cuda_capability() -> None:
    gpu = resolve("NVIDIA H100 80GB HBM3")
    assert gpu is not None and gpu.vendor == "nvidia" and gpu.cuda_capability == (9, 0) and gpu.gfx_arch is None


def test_no_nvls_buffers_on_infinity_fabric() -> None:
    """NCCL's NVLink SHARP buffers are an NVSwitch board's; eight MI300X over XGMI have none."""
    model = catalogued("Qwen/Qwen3-0.6B")
    assert model is not None
    for name, expected in (("AMD Instinct MI300X", 0.0), ("NVIDIA H100 80GB HBM3", 1.8)):
        inp = EstimateInput(engine="vllm", release=None, model=model, gpu=resolve(name), tensor_parallel=8)
        assert nvls_gib(inp) == expected, name


def _hw_rules(root: Path, gpu: str, driver: str, quantization: str = "", engine: str = "vllm 0.11.0") -> list[str]:
    name, version = engine.split()
    _fleet(root, gpu, quantization=quantization or None, engine=name, version=version, driver=driver)
    result = run_cli("validate", "--strict", "--format", "json", "spec.yaml")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return sorted(f["rule"] for f in json.loads(result.stdout)["findings"] if f["rule"].startswith(("HW", "REF")))


def test_an_amd_driver_version_is_not_judged_by_cuda_rules(in_tmp: Path) -> None:
    """amdgpu's version (6.8.5) read as an NVIDIA driver is far below CUDA 12's 525: HW005 would be a false error."""
    assert _hw_rules(in_tmp, "Tesla T4", "6.8.5") == ["HW001", "HW005"]  # the same file on an NVIDIA card
    assert _hw_rules(in_tmp, "AMD Instinct MI300X", "6.8.5") == []


def test_cuda_capability_minimums_do_not_judge_an_amd_card(in_tmp: Path) -> None:
    """SGLang's NVFP4 kernels need CUDA capability 10.0 (HW002 on an H100). An MI355X's 9.5 is HIP's numbering,
    not a CUDA capability: "needs compute capability 10.0; the GPU has 9.5" would be a false statement there."""
    sglang = "sglang 0.5.12"
    assert _hw_rules(in_tmp, "NVIDIA H100 80GB HBM3", "580.126.09", "nvfp4", sglang) == ["HW002"]
    assert _hw_rules(in_tmp, "AMD Instinct MI355X", "6.8.5", "nvfp4", sglang) == []


def test_sglang_dsa_cache_on_rocm_follows_the_hip_capability() -> None:
    """SGLang's DSA KV-cache ``auto`` is FP8 from capability major 10; on ROCm torch reports 9 (gfx950 -> 9.5), so
    GLM-5 on an MI355X stores the latent in bfloat16 (v0.5.12 server_args.py L1690-L1694), and an explicit
    fp8_e4m3 keeps the raw 576-byte latent with the HIP kernels (v0.5.17 kv_cache_configurator.py L2011-L2017)."""
    from servespec.engines.sglang import dsa

    model = catalogued("zai-org/GLM-5")
    assert model is not None
    sglang = get("sglang")

    def layer(version: str, gpu: str, **options: str) -> float:
        release = sglang.select(version).release
        inp = EstimateInput(engine="sglang", release=release, model=model, gpu=resolve(gpu), options=options,
                            kv_cache_dtype_option="kv_cache_dtype")  # fmt: skip
        return dsa.layer_bytes(inp)

    indexer = 128 + 4
    assert layer("0.5.12", "AMD Instinct MI355X") == 576 * 2 + indexer  # bfloat16 by default
    assert layer("0.5.12", "NVIDIA B200") == 576 + indexer  # FP8 by default on capability 10
    assert layer("0.5.23", "AMD Instinct MI355X", kv_cache_dtype="fp8_e4m3") == 576 + indexer  # raw on ROCm
    assert layer("0.5.23", "NVIDIA H200", kv_cache_dtype="fp8_e4m3") == 512 + 4 * 4 + 64 * 2 + indexer  # scaled
