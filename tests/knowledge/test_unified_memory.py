"""Unified-memory GPUs (DGX Spark's GB10, Jetson AGX Thor): the catalog says so, vLLM's arithmetic on them is each
release's own, and a spec on one validates with the warning that the host's memory is the GPU's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from servespec.engines import get
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput, cuda_total_gib
from tests.conftest import run_cli
from tests.knowledge.test_gpu_catalog_cards import _fleet


def test_the_unified_memory_devices_are_catalogued_with_the_cuda_total() -> None:
    spark, thor = gpus.resolve("NVIDIA GB10"), gpus.resolve("NVIDIA Thor")
    assert spark is not None and thor is not None
    assert (spark.id, spark.compute_capability, spark.unified_memory) == ("GB10", (12, 1), True)
    assert (thor.id, thor.compute_capability, thor.unified_memory) == ("Jetson-AGX-Thor", (11, 0), True)
    # the catalogued memory is cudaMemGetInfo's total itself (nvidia-smi prints none): no CUDA-visible share taken
    assert round(cuda_total_gib(spark), 2) == 121.69
    assert round(cuda_total_gib(thor), 2) == 122.80
    # the other total GB10 installs print (119.7 GiB) is kept, and names the same card
    assert [round(m / 1024, 2) for m in spark.memory_mib_other] == [119.70]
    assert gpus.resolve("NVIDIA GB10", 122573) == spark
    # a discrete card is not unified, and keeps the share
    h100 = gpus.resolve("H100-SXM5-80GB")
    assert h100 is not None and not h100.unified_memory and cuda_total_gib(h100) < h100.memory_gib


def _plan(gpu: gpus.GpuModel, version: str, **options: object) -> object:
    facts = models.catalogued("meta-llama/Llama-3.1-8B-Instruct")
    assert facts is not None
    vllm = get("vllm")
    return vllm.estimate(
        EstimateInput(
            engine="vllm",
            release=vllm.select(version).release,
            model=facts,
            gpu=gpu,
            tensor_parallel=1,
            pipeline_parallel=1,
            dtype="bfloat16",
            quantization=None,
            max_model_len=8192,
            options=dict(options),
            engine_version=version,
        )
    )


@pytest.mark.parametrize(
    ("version", "free"),
    [
        ("0.10.2", "cudaMemGetInfo's free, which leaves out the page cache"),
        ("0.11.0", "cudaMemGetInfo's free, which leaves out the page cache"),
        ("0.11.1", "the host's MemAvailable (capability 8.7, 11.0 or 12.1"),
        ("0.13.0", "the host's MemAvailable (capability 8.7, 11.0 or 12.1"),
        ("0.20.0", "the host's MemAvailable (torch reports the GPU integrated"),
    ],
)
def test_vllm_on_gb10_per_release(version: str, free: str) -> None:
    spark = gpus.resolve("NVIDIA GB10")
    assert spark is not None
    plan = _plan(spark, version, gpu_memory_utilization=0.5)
    # the budget is the fraction of cudaMemGetInfo's total, as on any card ...
    assert plan.total_gib == pytest.approx(121.69, abs=0.01)  # type: ignore[attr-defined]
    assert plan.claimed_fraction == 0.5  # type: ignore[attr-defined]
    # ... with vLLM's small defaults: NVML has no memory figure for a unified-memory GPU, so the >= 70 GiB
    # defaults (max_num_seqs 1024, max_num_batched_tokens 8192) do not apply
    assert "max_num_seqs 256" in plan.notes and "max_num_batched_tokens 2048" in plan.notes  # type: ignore[attr-defined]
    # ... and what the free memory it subtracts from is, release by release
    said = plan.unified_memory  # type: ignore[attr-defined]
    assert said.startswith(f"unified memory: vLLM {version} reads free memory as {free}"), said
    assert "host state decides" in said
    # the same card with memory of its own (same total, not unified) gets the big defaults and no such words
    discrete = dataclasses.replace(spark, id="discrete-stand-in", unified_memory=False, memory_mib=130000)
    other = _plan(discrete, version, gpu_memory_utilization=0.5)
    assert "max_num_seqs 1024" in other.notes and other.unified_memory == ""  # type: ignore[attr-defined]


def test_a_unified_gpu_outside_the_list_reads_cuda_free_before_0_20() -> None:
    """0.11.1-0.19.x read MemAvailable only on capabilities 8.7, 11.0 and 12.1; 0.20.0 asks torch."""
    spark = gpus.resolve("NVIDIA GB10")
    assert spark is not None
    other = dataclasses.replace(spark, compute_capability=(10, 3))
    assert "cudaMemGetInfo's free" in _plan(other, "0.13.0").unified_memory  # type: ignore[attr-defined]
    assert "MemAvailable" in _plan(other, "0.20.0").unified_memory  # type: ignore[attr-defined]


def _findings(root: Path, gpu: str, version: str) -> list[dict[str, object]]:
    _fleet(root, gpu, version=version)
    result = run_cli("validate", "--format", "json", "spec.yaml")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return list(json.loads(result.stdout)["findings"])


def test_a_spec_on_gb10_validates_with_the_shared_memory_warning(in_tmp: Path) -> None:
    found = _findings(in_tmp, "NVIDIA GB10", "0.13.0")
    assert [f["rule"] for f in found] == ["MEM009"], found
    (warning,) = found
    assert warning["severity"] == "warning"
    assert run_cli("validate", "spec.yaml").exit_code == 0  # a warning: the spec validates
    message = str(warning["message"])
    assert "box's NVIDIA GB10 shares the host's RAM (121.69 GiB as CUDA reports it)" in message
    # the default fraction (0.9) claims 109.52 GiB, which must be free at start; 12.17 GiB is left for the host
    assert "gpu_memory_utilization 0.9 claims 109.52 GiB" in message and "leaving 12.17 GiB" in message
    assert "reads free memory as the host's MemAvailable" in message


def test_a_spec_on_thor_names_the_page_cache_for_an_old_release(in_tmp: Path) -> None:
    (warning,) = _findings(in_tmp, "NVIDIA Thor", "0.10.2")
    assert warning["rule"] == "MEM009"
    assert "page cache filled reading the checkpoint" in str(warning["message"])


def test_a_discrete_card_gets_no_shared_memory_warning(in_tmp: Path) -> None:
    assert [f["rule"] for f in _findings(in_tmp, "NVIDIA L20", "0.13.0")] == []


def test_discover_names_a_gb10_whose_memory_nvidia_smi_does_not_print(tmp_path: Path) -> None:
    """nvidia-smi prints no memory.total for a unified-memory GPU ("[N/A]"); the name alone picks the GB10 entry."""
    from servespec.discover.facts import facts_from_outputs

    folder = tmp_path / "spark"
    folder.mkdir()
    (folder / "nvidia-smi.csv").write_text(
        "index, name, uuid, pci.bus_id, memory.total [MiB], compute_cap, driver_version\n"
        "0, NVIDIA GB10, GPU-00000000-0000-0000-0000-000000000000, 0000000F:01:00.0, [N/A], 12.1, 580.95.05\n"
    )
    found = facts_from_outputs(folder, "spark")["hardware"]
    assert found["gpus"] == {"model": "NVIDIA GB10", "count": 1}
    assert found["driver_version"] == "580.95.05"
    model = gpus.resolve(found["gpus"]["model"])
    assert model is not None and model.unified_memory
