"""The Triton experts' workspace a block-FP8 MoE checkpoint holds in vLLM 0.18 on (the ``block_fp8_moe_workspace``
fact, scripts/catalog/vllm_moe_workspace.py) and what the estimator adds for it.

The figures are worked by hand from v0.27.1's source, not from the code under test: ``FusedMoEModularKernel.
_allocate_buffers`` (fused_moe/modular_kernel.py L1113) asks the workspace manager (vllm/v1/worker/workspace.py
L92-L180, one ``torch.empty`` that only grows) for ``max(prod(workspace13), prod(output))`` and ``prod(workspace2)``
elements in the activation dtype, each rounded up to 256 bytes, with ``TritonExperts.workspace_shapes``
(experts/triton_moe.py L197-L212) ``workspace1 = (M, topk, max(N // 2, K))``, ``workspace2 = (M, topk, max(N, K))``,
``output = (M, K)``, ``M_chunk = M_full`` (no chunking). Qwen3-235B-A22B-Instruct-2507-FP8: hidden 4096, 128 experts,
top-8, moe_intermediate_size 1536, bf16 activations, ``weight_block_size [128, 128]``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.catalog import version_key
from servespec.engines.vllm.memory import block_fp8_moe_workspace_gib
from servespec.knowledge import gpus
from servespec.knowledge.memory import EstimateInput
from tests import vllm_logs

VLLM = get("vllm")
GIB = 1024**3
LOGS = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"


def test_the_fact_is_read_from_0_18_on_and_absent_before() -> None:
    """0.13-0.17 chunk the buffers (``CHUNK_SIZE`` in modular_kernel.py), older releases free them after each call:
    the fact is written only where the buffers are held for the whole batch."""
    for version in VLLM.catalog.versions:
        fact = VLLM.catalog.release(version).facts.block_fp8_moe_workspace
        key = version_key(version)
        assert key is not None
        assert (fact is not None) == (key >= (0, 18, 0)), version
        if fact is not None:
            assert fact.source.startswith(f"https://github.com/vllm-project/vllm/blob/v{version}/"), version


def test_deep_gemm_capabilities_as_each_release_names_them() -> None:
    """0.18-0.19 utils/deep_gemm.py ``is_deep_gemm_supported``: 9.0 and the 10.x family; 0.27.1 platforms/cuda.py
    L665-L671 ``support_deep_gemm`` adds the 12.x family."""
    early = VLLM.catalog.release("0.19.0").facts.block_fp8_moe_workspace
    late = VLLM.catalog.release("0.27.1").facts.block_fp8_moe_workspace
    assert early is not None and late is not None
    assert early.deep_gemm_capabilities == ("9.0", "10")
    assert late.deep_gemm_capabilities == ("9.0", "10", "12")


def _log(number: str) -> EstimateInput:
    path = next(LOGS.glob(f"{number}-*.yaml"))
    data: dict[str, Any] = YAML(typ="safe").load(path.read_text())
    facts, gpu = vllm_logs._facts(data), vllm_logs._gpu(data)
    assert facts is not None and gpu is not None
    version = str(data["vllm_version"])
    return vllm_logs._vllm_input(data, facts, version, gpu, VLLM.select(version).release, {})


# 8192 tokens x top-8 x max(N/2 or N, 4096) x 2 bytes, twice: N = 2 x 1536 / 4 = 768 (TP4) or 2 x 1536 = 3072 (EP):
# both below K = 4096, so each buffer is 8192 * 8 * 4096 * 2 = 536,870,912 B (a multiple of 256).
BOTH = 2 * 536_870_912 / GIB


@pytest.mark.parametrize("number", ["207", "208"])
def test_the_logged_sm120_starts_hold_two_batch_wide_buffers(number: str) -> None:
    """207 (TP4) and 208 (TP4 + EP) on RTX PRO 6000 (12.0) with VLLM_USE_DEEP_GEMM=0: the oracle takes Triton."""
    gib, notes = block_fp8_moe_workspace_gib(_log(number), 8192)
    assert gib == pytest.approx(BOTH)
    assert any("Triton experts' workspace 1.00 GiB" in note for note in notes)


def test_the_estimate_counts_it_once_in_the_overhead() -> None:
    """The KV figure drops by exactly the workspace: no other input moves."""
    inp = _log("207")
    with_it = VLLM.estimate(inp)
    without = VLLM.estimate(replace(inp, release=replace(inp.release, facts=replace_facts(inp))))
    assert with_it is not None and without is not None
    assert without.kv_cache_gib - with_it.kv_cache_gib == pytest.approx(BOTH, abs=0.011)


def replace_facts(inp: EstimateInput) -> Any:
    assert inp.release is not None
    return inp.release.facts.model_copy(update={"block_fp8_moe_workspace": None})


def test_a_wider_expert_split_sizes_the_buffers_by_the_gate_and_up_width() -> None:
    """Where 2·I exceeds the hidden size (EP, I = 4096, K = 2048): max(N/2, K) = 4096, max(N, K) = 8192."""
    inp = _log("208")
    model = replace(inp.model, hidden_size=2048, moe_intermediate_size=4096)
    gib, _ = block_fp8_moe_workspace_gib(replace(inp, model=model), 1024)
    assert gib * GIB == 1024 * 8 * 4096 * 2 + 1024 * 8 * 8192 * 2


def test_deep_gemm_left_on_is_not_modelled_on_sm120() -> None:
    """Without VLLM_USE_DEEP_GEMM=0, 0.27.1 lists DeepGEMM (ahead of Triton) for 12.x: nothing added, a note."""
    inp = replace(_log("207"), env={})
    gib, notes = block_fp8_moe_workspace_gib(inp, 8192)
    assert gib == 0.0 and any("DeepGEMM" in note for note in notes)


def test_hopper_takes_triton_without_expert_parallelism_only() -> None:
    """fused_moe/oracle/fp8.py L112-L122: on 9.0 Triton first for TP, FlashInfer CUTLASS first under EP."""
    h100 = gpus.resolve("H100-SXM5-80GB")
    assert h100 is not None
    plain = replace(_log("207"), gpu=h100, env={})
    gib, _ = block_fp8_moe_workspace_gib(plain, 8192)
    assert gib == pytest.approx(BOTH)
    expert = replace(_log("208"), gpu=h100, env={})
    gib, notes = block_fp8_moe_workspace_gib(expert, 8192)
    assert gib == 0.0 and any("FlashInfer CUTLASS" in note for note in notes)


def test_nothing_for_unquantized_or_per_tensor_or_older_releases() -> None:
    inp = _log("207")
    assert block_fp8_moe_workspace_gib(replace(inp, model=replace(inp.model, weight_block_size=None)), 8192)[0] == 0
    assert block_fp8_moe_workspace_gib(replace(inp, model=replace(inp.model, quant_method=None)), 8192)[0] == 0
    older = replace(inp, release=VLLM.select("0.17.1").release)
    assert block_fp8_moe_workspace_gib(older, 8192) == (0.0, [])


# Unquantized (bf16) MoE: the same TritonExperts inside the modular kernel, worked by hand from v0.19.0
# fused_moe/oracle/unquantized.py L71-L176 (``select_unquantized_moe_backend``: on CUDA FlashInfer only with
# VLLM_USE_FLASHINFER_MOE_FP16=1, envs.py L1240 default "0"; otherwise ``UnquantizedMoeBackend.TRITON``).
# 067 Qwen3-30B-A3B TP1: hidden K = 2048, moe_intermediate_size 768 -> N = 1536, top-8, 8192 tokens, bf16:
# max(N/2, K) = max(N, K) = 2048, so each buffer is 8192 * 8 * 2048 * 2 B = 268,435,456 B = 0.25 GiB.
QWEN3_30B = 2 * 268_435_456 / GIB


def test_unquantized_triton_on_0_19_holds_the_batch_wide_buffers() -> None:
    gib, notes = block_fp8_moe_workspace_gib(_log("067"), 8192)
    assert gib == pytest.approx(QWEN3_30B)
    assert any("unquantized MoE Triton experts' workspace 0.50 GiB" in note for note in notes)


def test_unquantized_mixtral_tp2_splits_the_expert_width() -> None:
    """050 Mixtral-8x7B TP2: K = 4096, I = 14336 -> N = 2 x 7168 = 14336, top-2: workspace13 = 8192*2*7168*2 B,
    workspace2 = 8192*2*14336*2 B."""
    gib, _ = block_fp8_moe_workspace_gib(_log("050"), 8192)
    assert gib * GIB == 8192 * 2 * 7168 * 2 + 8192 * 2 * 14336 * 2


def test_flashinfer_asked_for_on_0_19_drops_it() -> None:
    inp = replace(_log("067"), env={"VLLM_USE_FLASHINFER_MOE_FP16": "1"})
    gib, notes = block_fp8_moe_workspace_gib(inp, 8192)
    assert gib == 0.0 and any("FlashInfer" in note for note in notes)


def _on(number: str, version: str, gpu: str, env: dict[str, str] | None = None) -> EstimateInput:
    card = gpus.resolve(gpu)
    assert card is not None
    return replace(_log(number), release=VLLM.select(version).release, gpu=card, env=env or {})


def test_the_priority_list_from_0_20_puts_flashinfer_first_where_it_runs() -> None:
    """0.20.0 oracle/unquantized.py L47-L84: FlashInfer TRT-LLM, FlashInfer CUTLASS, Triton; FlashInferExperts
    (flashinfer_cutlass_moe.py L125-L134) runs on 9.0 and the 10/11/12 families: Hopper is not modelled, Ampere
    (8.0, neither FlashInfer kernel) takes Triton, and VLLM_USE_FLASHINFER_MOE_FP16=0 removes FlashInfer (L229-L235)."""
    gib, notes = block_fp8_moe_workspace_gib(_on("067", "0.20.0", "H100-SXM5-80GB"), 8192)
    assert gib == 0.0 and any("FlashInfer TRT-LLM or CUTLASS" in note for note in notes)
    assert block_fp8_moe_workspace_gib(_on("067", "0.20.0", "A100-SXM4-80GB"), 8192)[0] == pytest.approx(QWEN3_30B)
    off = _on("067", "0.20.0", "H100-SXM5-80GB", {"VLLM_USE_FLASHINFER_MOE_FP16": "0"})
    assert block_fp8_moe_workspace_gib(off, 8192)[0] == pytest.approx(QWEN3_30B)


def test_hopper_prefers_triton_for_unquantized_from_0_23() -> None:
    """0.23.0 oracle/unquantized.py L73-L75 moves both FlashInfer backends behind Triton on the 9.x family; Blackwell
    (10.0) still lists them first."""
    fact = VLLM.catalog.release("0.23.0").facts.block_fp8_moe_workspace
    assert fact is not None and fact.unquantized_triton_first_families == ("9",)
    assert block_fp8_moe_workspace_gib(_on("067", "0.23.0", "H100-SXM5-80GB"), 8192)[0] == pytest.approx(QWEN3_30B)
    gib, _ = block_fp8_moe_workspace_gib(_on("067", "0.23.0", "B200"), 8192)
    assert gib == 0.0


def test_no_unquantized_workspace_before_0_18() -> None:
    assert block_fp8_moe_workspace_gib(_on("067", "0.17.1", "H100-SXM5-80GB"), 8192) == (0.0, [])


# Per-tensor FP8, worked from v0.22.1: quantization/fp8.py L593-L598 gives a runtime ``--quantization fp8`` (the
# Fp8Config default activation_scheme "dynamic") ``(kFp8StaticTensorSym, kFp8DynamicTensorSym)``;
# experts/flashinfer_cutlass_moe.py L153-L170 takes per-tensor FP8 with static activations only, DeepGEMM block
# scales only, vLLM CUTLASS is not allowed (L605 ``allow_vllm_cutlass=False``), so TritonExperts (triton_moe.py L80-L101
# lists the scheme) runs -- as 101's own log says ("Using TRITON Fp8 MoE backend"). The activations stay bf16, so the
# buffers are those of 067: 8192 x 8 x 2048 x 2 B each.


def test_runtime_fp8_of_a_bf16_moe_takes_triton_on_hopper() -> None:
    gib, notes = block_fp8_moe_workspace_gib(_log("101"), 8192)
    assert gib == pytest.approx(QWEN3_30B)
    assert any("per-tensor FP8 MoE Triton experts' workspace 0.50 GiB" in note for note in notes)


def test_a_serialized_per_tensor_checkpoint_on_hopper_is_not_modelled() -> None:
    """Its activation scheme may be static, which FlashInfer CUTLASS takes from 9.0; on Ada (8.9) it cannot."""
    inp = _log("101")
    served = replace(inp, model=replace(inp.model, quant_method="fp8"))
    gib, notes = block_fp8_moe_workspace_gib(served, 8192)
    assert gib == 0.0 and any("activation scheme is static" in note for note in notes)
    ada = gpus.resolve("L40S")
    assert ada is not None and ada.compute_capability == (8, 9)
    assert block_fp8_moe_workspace_gib(replace(served, gpu=ada), 8192)[0] == pytest.approx(QWEN3_30B)


def test_per_tensor_fp8_is_read_in_every_release_with_the_workspace() -> None:
    for version in VLLM.catalog.versions:
        fact = VLLM.catalog.release(version).facts.block_fp8_moe_workspace
        if fact is not None:
            assert "quantization/fp8.py#L" in fact.per_tensor_fp8_source, version
            assert fact.unquantized_source, version


def test_an_explicit_moe_backend_decides_before_the_oracle() -> None:
    """``--moe-backend triton`` runs Triton even where FlashInfer leads (0.20.0 on H100); any other named backend is
    not modelled (v0.18.0 oracle/unquantized.py L56-L67 ``map_unquantized_backend``)."""
    inp = _on("067", "0.20.0", "H100-SXM5-80GB")
    forced = replace(inp, options={**inp.options, "moe_backend": "triton"})
    assert block_fp8_moe_workspace_gib(forced, 8192)[0] == pytest.approx(QWEN3_30B)
    other = replace(_log("067"), options={**inp.options, "moe_backend": "flashinfer_cutlass"})
    gib, notes = block_fp8_moe_workspace_gib(other, 8192)
    assert gib == 0.0 and any("moe_backend flashinfer_cutlass" in note for note in notes)


# MXFP4 (gpt-oss), worked from v0.19.0: fused_moe/oracle/mxfp4.py L78-L147 ``backend_to_kernel_cls`` lists
# ``OAITritonMxfp4ExpertsMonolithic`` first for TRITON (Hopper's default) and ``TrtLlmMxfp4ExpertsMonolithic`` first for
# FlashInfer TRT-LLM; modular_kernel.py L1393 ``FusedMoEKernelMonolithicImpl`` never calls ``_allocate_buffers``, and
# gpt_oss_triton_kernels_moe.py ``triton_kernel_moe_forward`` takes its intermediates with ``torch.empty`` per call.
# Marlin (8.x) returns ``MarlinExperts`` (modular): fused_marlin_moe.py L666-L696
# ``workspace1 = (M * topk, max(N, K))``, ``workspace2 = (M * topk * max(2 * N, K),)``, ``output = (M, K)``.
# gpt-oss-20b: hidden 2880, top-4, intermediate 2880; Marlin pads hidden to 256 (3072) and the per-rank
# intermediate to 128 (2944), TP1, 8192 tokens:
# workspace13 = max(8192*4*3072, 8192*3072) * 2 B = 201,326,592; workspace2 = 8192*4*5888 * 2 B = 385,875,968.
MARLIN_20B = (201_326_592 + 385_875_968) / GIB


def test_mxfp4_kernels_read_per_release() -> None:
    for version in ("0.18.0", "0.19.0", "0.24.0", "0.34.0"):
        fact = VLLM.catalog.release(version).facts.block_fp8_moe_workspace
        assert fact is not None
        assert fact.mxfp4_held_backends == ("marlin",), version
        assert set(fact.mxfp4_transient_backends) == {"triton", "flashinfer_trtllm"}, version
        assert f"/v{version}/" in fact.mxfp4_source


@pytest.mark.parametrize("number", ["055", "075", "076"])
def test_mxfp4_triton_on_hopper_holds_nothing(number: str) -> None:
    """gpt-oss-20b on H100, 0.19.0: the monolithic Triton kernel; its buffers are transient."""
    gib, notes = block_fp8_moe_workspace_gib(_log(number), 8192)
    assert gib == 0
    assert any("triton: monolithic kernel" in note for note in notes)


def test_mxfp4_marlin_on_ampere_holds_the_batch_wide_buffers() -> None:
    inp = replace(_log("075"), gpu=gpus.resolve("A100-SXM4-80GB"))
    gib, notes = block_fp8_moe_workspace_gib(inp, 8192)
    assert gib == pytest.approx(MARLIN_20B)
    assert any("MXFP4 MoE marlin experts' workspace 0.55 GiB" in note for note in notes)
    toggled = replace(inp, env={"VLLM_MXFP4_USE_MARLIN": "1"})
    assert block_fp8_moe_workspace_gib(toggled, 8192)[0] == 0
    older = replace(inp, release=VLLM.select("0.17.1").release)
    assert block_fp8_moe_workspace_gib(older, 8192)[0] == 0


def test_mxfp4_marlin_workspace_lowers_the_kv_estimate_by_itself() -> None:
    """The KV figure drops by the workspace (within the estimate's rounding, as for 207 above)."""
    inp = replace(_log("075"), gpu=gpus.resolve("A100-SXM4-80GB"))
    assert inp.release is not None and inp.release.facts.block_fp8_moe_workspace is not None
    stripped = inp.release.facts.block_fp8_moe_workspace.model_copy(update={"mxfp4_source": ""})
    facts = inp.release.facts.model_copy(update={"block_fp8_moe_workspace": stripped})
    without = VLLM.estimate(replace(inp, release=replace(inp.release, facts=facts)))
    with_ws = VLLM.estimate(inp)
    assert with_ws is not None and without is not None
    assert without.kv_cache_gib - with_ws.kv_cache_gib == pytest.approx(MARLIN_20B, abs=0.011)
