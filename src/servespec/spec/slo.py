"""``slo.workload.dataset``: the JSON Lines prompts ``deploy verify`` sends, parsed with each bad line named."""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_SLO_DATASET_BYTES = 4 * 1024 * 1024
"""Largest slo dataset read: it travels to each host as a module argument."""
MAX_SLO_PROMPTS = 10_000


@dataclass(frozen=True)
class SloPrompt:
    """One request of an slo dataset."""

    prompt: str
    output_tokens: int


def parse_slo_dataset(text: str) -> tuple[tuple[SloPrompt, ...], str]:
    """The prompts of a JSON Lines dataset, and '' or what is wrong (naming the line). Blank lines are skipped."""
    prompts: list[SloPrompt] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            return (), f"line {number} is not JSON"
        if not isinstance(entry, dict) or set(entry) - {"prompt", "output_tokens"}:
            return (), f'line {number} is not an object with "prompt" and "output_tokens" only'
        prompt, tokens = entry.get("prompt"), entry.get("output_tokens")
        if not isinstance(prompt, str) or not prompt:
            return (), f'line {number}: "prompt" is not a non-empty string'
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= 1_000_000:
            return (), f'line {number}: "output_tokens" is not a whole number from 1 to 1000000'
        prompts.append(SloPrompt(prompt, tokens))
        if len(prompts) > MAX_SLO_PROMPTS:
            return (), f"more than {MAX_SLO_PROMPTS} prompts"
    if not prompts:
        return (), "no prompts"
    return tuple(prompts), ""
