"""Issue 23: SGLang's default mem_fraction_static follows the rule of the release in question.

The rule changed five times from 0.4.0 to 0.5.3; scripts/catalog/sglang_memory.py reads it from each
release's ``srt/server_args.py`` (``srt/arg_groups/memory_hook.py`` from 0.5.19) into the catalog's
``mem_fraction_default``. The expected fractions below are each release's arithmetic done by hand from
the lines the fact cites (device totals in MiB as nvidia-smi reports them: H100 81559, H200 143771,
B200 183359, L4 23034).
"""

from __future__ import annotations

import pytest

from servespec.engines import get
from servespec.engines.sglang.memory import _sglang_fraction
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput

H100, H200, B200, L4 = 81559, 143771, 183359, 23034


def _fraction(version: str, gpu: str, tensor_parallel: int = 1) -> float:
    engine = get("sglang")
    model = models.catalogued("meta-llama/Llama-3.1-8B-Instruct")
    found = gpus.resolve(gpu)
    assert model is not None and found is not None
    inp = EstimateInput(
        engine="sglang",
        release=engine.select(version).release,
        model=model,
        gpu=found,
        tensor_parallel=tensor_parallel,
        max_model_len=8192,
        options={},
        engine_version=version,
    )
    return _sglang_fraction(inp, found)


CASES = [
    # v0.4.0 server_args.py L158: a table by tp_size
    ("0.4.0", "NVIDIA H100 80GB HBM3", 1, 0.88),
    ("0.4.0", "NVIDIA H200", 8, 0.81),
    # v0.4.5.post3 L224: the table up to 80 GiB, above it (gpu_mem - 13 GiB) / gpu_mem
    ("0.4.5.post3", "NVIDIA H100 80GB HBM3", 2, 0.87),
    ("0.4.5.post3", "NVIDIA H200", 1, (H200 - 13 * 1024) / H200),
    # v0.4.6.post5 L247: 0.88 above 80 GiB; over 96 GiB min(f + 48 GiB (1 - f) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem)
    ("0.4.6.post5", "NVIDIA H200", 1, min(0.88 + 48 * 1024 * 0.12 / H200, (H200 - 18 * 1024) / H200)),
    # v0.4.7 L253: over 180,000 MiB (B200) a fixed 0.79
    ("0.4.7", "NVIDIA B200", 1, 0.79),
    # v0.4.9 L280: reserved (9.5 + parallel / 2) GiB below 90 GiB, (2.8 + parallel / 10) GiB below 35
    ("0.4.9", "NVIDIA H100 80GB HBM3", 1, round((H100 - 10 * 1024) / H100, 3)),
    ("0.4.9", "NVIDIA L4", 2, round((L4 - 3.0 * 1024) / L4, 3)),
    # v0.5.3 L637: 512 + 8192 * 1.5 + 256 * 2 + 1 / 8 * 1024 MiB on an H100, at least 10 GiB
    ("0.5.3", "NVIDIA H100 80GB HBM3", 1, round((H100 - (512 + 8192 * 1.5 + 256 * 2 + 128)) / H100, 3)),
    # 20-35 GiB GPUs: chunk 2048 and cuda_graph_max_bs 16 (0.5.3) or 24 (0.5.4.post1) for tp < 4;
    # from 0.5.20 (memory_hook.py) chunk 4096 and 48
    ("0.5.3", "NVIDIA L4", 1, round((L4 - (512 + 2048 * 1.5 + 16 * 2 + 128)) / L4, 3)),
    ("0.5.4.post1", "NVIDIA L4", 1, round((L4 - (512 + 2048 * 1.5 + 24 * 2 + 128)) / L4, 3)),
    ("0.5.23", "NVIDIA L4", 1, round((L4 - (512 + 4096 * 1.5 + 48 * 2 + 128)) / L4, 3)),
]


@pytest.mark.parametrize(("version", "gpu", "tp", "expected"), CASES)
def test_each_release_uses_its_own_rule(version: str, gpu: str, tp: int, expected: float) -> None:
    assert _fraction(version, gpu, tp) == pytest.approx(expected, abs=1e-9)


def test_every_catalogued_release_has_the_rule_its_arithmetic_reads() -> None:
    engine = get("sglang")
    rules = {release.version: release.facts.mem_fraction_default for release in engine.releases}
    assert len(rules) == len(list(engine.folder.joinpath("releases").glob("[0-9]*.json")))
    assert not [version for version, rule in rules.items() if rule is None or not rule.source]
    variants = {rule.variant for rule in rules.values() if rule is not None}
    assert variants == {
        "tp_table",
        "tp_table_large_gpu",
        "parallel_table_large_gpu",
        "reserved_by_gpu",
        "reserved_formula",
    }
