"""vLLM's own option limits, checked before start-up (ENG002, ENG003)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from servespec.engines.base import EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known

SCHEDULER = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/scheduler.py"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def checks(known: Known) -> Iterator[EngineCheck]:
    """Block sizes the CUDA attention backends refuse; a batch budget below the context without chunked prefill;
    adapters and speculative decoding the release refuses (:func:`adapter_checks`, :func:`speculative_checks`)."""
    yield from adapter_checks(known)
    yield from speculative_checks(known)
    block = known.effective.get("block_size")
    size = _int(block.value) if block else None
    multiple = known.release.facts.block_size_multiple if known.release else None
    if block is not None and size is not None and multiple is not None and size % multiple.value:
        # FlashAttention's get_kv_cache_shape: "Block size must be a multiple of 16." (the fact's source)
        yield EngineCheck(
            "ENG002",
            block.path,
            f"block_size {size} is accepted by the parser but not by vLLM's CUDA attention backends "
            f"(multiple of {multiple.value})",
            hint=f"use a multiple of {multiple.value}, e.g. 16 or 32",
        )
    batched = known.effective.get("max_num_batched_tokens")
    chunked = known.effective.get("enable_chunked_prefill")
    tokens = _int(batched.value) if batched else None
    length = known.deployment.spec.model.max_model_len
    if batched and chunked and chunked.value is False and tokens is not None and length and tokens < length:
        # SchedulerConfig._verify_args (SCHEDULER)
        yield EngineCheck(
            "ENG003",
            batched.path,
            f"max_num_batched_tokens {tokens} is smaller than max_model_len {length} with chunked prefill disabled",
        )


# --- model.adapters and model.speculative as this release refuses them (ADP002, ADP003, SPD001).

LORA_RANK = (
    "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/lora/peft_helper.py#L113-L127",
    "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/lora/peft_helper.py#L188-L202",
    "https://github.com/vllm-project/vllm/blob/v0.6.0/vllm/lora/worker_manager.py#L108-L111",
)
"""Where the catalogued releases refuse an adapter whose rank exceeds ``max_lora_rank`` (``validate_legal``;
0.33.0 takes the largest ``rank_pattern`` value too)."""
PEFT_CHECKS_FROM = "0.8.5"
"""The first release whose PEFTHelper refusals (DoRA, modules_to_save) were read: 0.8.5, 0.11.0 and 0.33.0 have
them (vllm/lora/peft_helper.py ``_validate_features``, v0.11.0 L42-L51, v0.33.0 L53-L68); 0.6.0 has no PEFTHelper."""
SCORING_HEADS = ("classifier", "score")
"""modules_to_save entries 0.33.0 accepts (peft_helper.py L56-L64); earlier releases accept none, and are not
reported for them (a missed refusal, never a false one)."""


def adapter_checks(known: Known) -> Iterator[EngineCheck]:
    """Each adapter's adapter_config.json against this release: its rank over ``max_lora_rank`` (ADP002), DoRA or
    ``modules_to_save`` from 0.8.5 (ADP003); an adapter whose config is not at hand is not checked."""
    from servespec.engines.catalog import version_key
    from servespec.knowledge.adapters import adapter_config

    release = known.release
    adapters = known.deployment.spec.model.adapters
    if release is None or not adapters or release.option("max_lora_rank") is None:
        return
    setting = known.effective.get("max_lora_rank")
    limit = _int(setting.value) if setting is not None else _int(release.default("max_lora_rank"))
    peft = version_key(release.version) >= version_key(PEFT_CHECKS_FROM)
    for index, adapter in enumerate(adapters):
        config, _ = adapter_config(known.deployment, index)
        if config is None:
            continue
        where = ("model", "adapters", index, "source")
        if limit is not None and config.rank is not None and config.rank > limit:
            yield EngineCheck(
                "ADP002",
                setting.path if setting is not None else where,
                f"adapter {adapter.name!r} has rank {config.rank} ({config.where}'s adapter_config.json) but "
                f'max_lora_rank is {limit}: vLLM refuses to load it ("LoRA rank {config.rank} is greater than '
                f'max_lora_rank {limit}")',
                hint=f"set engine.options.max_lora_rank to at least {config.rank}",
            )
        refusals = ['use_dora is true ("vLLM does not yet support DoRA")'] if config.use_dora and peft else []
        saved = [module for module in config.modules_to_save if module not in SCORING_HEADS]
        if saved and peft:
            refusals.append(f"modules_to_save names {', '.join(saved[:4])}")
        for refused in refusals:
            yield EngineCheck(
                "ADP003",
                where,
                f"adapter {adapter.name!r}: {refused} ({config.where}'s adapter_config.json): vLLM refuses to load it",
                hint="use an adapter without modules_to_save or DoRA, or another engine",
                error=True,
            )


def speculative_checks(known: Known) -> Iterator[EngineCheck]:
    """``num_speculative_tokens`` that SpeculativeConfig requires unless the draft's config gives ``n_predict``
    (v0.11.0 vllm/config/speculative.py L518-L524): an error for ngram (no draft config), a warning for a draft
    or EAGLE head; MTP takes the checkpoint's ``num_nextn_predict_layers``."""
    speculative = known.deployment.spec.model.speculative
    release = known.release
    if speculative is None or speculative.num_tokens is not None or speculative.method == "mtp":
        return
    if release is None or release.option("speculative_config") is None:
        return
    unless = "" if speculative.method == "ngram" else " unless the draft's config has n_predict"
    yield EngineCheck(
        "SPD001",
        ("model", "speculative"),
        f"vLLM {release.version} refuses {speculative.method} speculation without num_speculative_tokens{unless} "
        '("num_speculative_tokens must be provided with speculative model")',
        hint="set model.speculative.num_tokens (e.g. 3 to 5)",
        error=speculative.method == "ngram",
    )
