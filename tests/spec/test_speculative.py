"""``model.speculative`` (spec-v1 section 6): the methods the spec expresses and the draft each needs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from servespec.spec.models import Speculative


def test_dflash_takes_a_draft_like_a_draft_model() -> None:
    """DFlash's block-diffusion draft is a checkpoint of its own (vLLM ``--speculative-config`` ``model``)."""
    found = Speculative.model_validate({"method": "dflash", "draft": "z-lab/Qwen3-8B-DFlash-b16", "num_tokens": 5})
    assert (found.method, found.num_tokens) == ("dflash", 5)
    with pytest.raises(ValidationError, match=r"needs model\.speculative\.draft"):
        Speculative.model_validate({"method": "dflash", "num_tokens": 5})
    with pytest.raises(ValidationError, match="uses no separate draft model"):
        Speculative.model_validate({"method": "mtp", "draft": "z-lab/Qwen3-8B-DFlash-b16"})
    with pytest.raises(ValidationError):
        Speculative.model_validate({"method": "medusa", "draft": "x"})
