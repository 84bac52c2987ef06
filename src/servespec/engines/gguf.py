"""What the GGUF engines (llama.cpp, Ollama) share: every KV cell allocated up front, layers placed by count.

Each unit's ``memory.py`` says how its KV cache is laid out (``KvCells``: slots, a unified
cache) and which layers go to the GPUs (``GpuLayers``: all, a count the spec gives, or as
many as fit when the engine fits them itself); ``knowledge.memory.estimate_gguf`` does the
arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from servespec.engines.base import Engine

if TYPE_CHECKING:
    from servespec.engines.catalog import EngineRelease
    from servespec.knowledge.gpus import GpuModel
    from servespec.knowledge.memory import EstimateInput

KV_PLACEMENT_SOURCE = (
    "llama.cpp chooses only the buffer type of each layer's K and V by the device holding the layer and sizes both "
    "from n_embd_k/v_gqa x kv_size cells (https://github.com/ollama/ollama/blob/"
    "0cefd46f23ed60d5b41a90e6b6a1864e4214da3b/llama/llama.cpp/src/llama-kv-cache.cpp#L82-L111, b5359; "
    "https://github.com/ollama/ollama/blob/0cf7794b16fab8d4561bc5f6379f6d48bd59e101/llama/llama.cpp/src/"
    "llama-kv-cache.cpp#L112-L134, b7108); --fit changes n_ctx only when it is unset "
    "(https://github.com/ollama/ollama/blob/v0.20.7/llama/llama.cpp/src/llama.cpp#L216-L256)"
)
"""Why a GGUF engine's whole KV cache, for a given context, slots and cache types, is the same on every device."""


@dataclass(frozen=True)
class DeviceFreeKv:
    """The KV cache a GGUF engine lays out over all its devices, where no device changes it
    (:meth:`GgufEngine.kv_without_device`)."""

    kv_bytes: int | None
    """None: a device may change it (``why`` says what)."""
    context_tokens: int
    why: str
    device: str = ""
    """The host's own device as its inventory names it (set by the caller, for the report)."""


def integer(value: Any) -> int | None:
    """An option's value as an integer (``20``, ``"20"``, ``"-1"``), else None (``auto``, ``all``, bad values)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip(), 10)
    except ValueError:
        return None


def pad(tokens: int, step: int) -> int:
    """``GGML_PAD``: ``tokens`` rounded up to a multiple of ``step`` (as is for a step of 1 or less)."""
    return -(-tokens // step) * step if step > 1 else tokens


def switched_on(value: Any) -> bool:
    """Whether a boolean option's value turns it on (``true``, ``1``, ``on``, ``yes``)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "on", "yes", "enabled")


class GgufEngine(Engine):
    """An engine that loads GGUF files and allocates every KV cell at start-up (its memory.py: ``estimate``)."""

    def slots(self, options: dict[str, Any], release: EngineRelease | None = None) -> int:
        """Sequences served at once: the batch option when positive, else the release's default, else the profile's."""
        profile = self.profile
        value = integer(options.get(profile.batch_option)) if profile.batch_option else None
        if value is not None and value >= 1:
            return value
        default = integer(release.default(profile.batch_option)) if release is not None else None
        return default if default is not None and default >= 1 else (profile.batch_default or 1)

    flash_option = "flash_attn"
    """The spec option that turns flash attention on or off; unset or ``auto`` leaves it to the release, which may
    decide it by the device (and pads the cells by it in some releases)."""

    def kv_without_device(
        self, build: Callable[[GpuModel | None], EstimateInput | None], devices: Sequence[GpuModel | None]
    ) -> DeviceFreeKv:
        """The whole KV cache for the inputs ``build`` makes on each of ``devices`` (None: host memory), when one
        figure comes out of all of them and of flash attention on and off where the spec leaves it to the release:
        then the device, catalogued or not, cannot change it (:data:`KV_PLACEMENT_SOURCE`). A context or slots the
        release chooses from memory (llama.cpp's ``--fit``, Ollama's VRAM default and automatic slots) differ
        between the devices, and the answer is None with the spread."""
        figures: dict[int, int] = {}
        flash, by_flash = str(None), False
        for device in devices:
            inp = build(device)
            if inp is None:
                return DeviceFreeKv(None, 0, "no estimate input (model facts or context unknown)")
            value = inp.options.get(self.flash_option)
            decided = isinstance(value, bool) or str(value).strip().lower() in _DECIDED
            flash = "as the spec sets it" if decided else "on and off (left to the release)"
            here = set()
            for options in [inp.options] if decided else [{**inp.options, self.flash_option: on} for on in (1, 0)]:
                plan = self.estimate(replace(inp, options=options))
                if plan is None:
                    where = device.id if device is not None else "host memory"
                    return DeviceFreeKv(None, 0, f"no memory plan on {where}, so no figure to compare")
                here.add(round(plan.kv_cache_bytes_all_devices))
                figures[round(plan.kv_cache_bytes_all_devices)] = plan.context_tokens
            by_flash = by_flash or len(here) > 1
        if len(figures) != 1:
            spread = f"{min(figures):,} to {max(figures):,} bytes" if figures else "no plan"
            contexts = sorted(set(figures.values()))
            cause = (
                f"the context the release chooses from memory ({contexts[0]} to {contexts[-1]} tokens)"
                if len(contexts) > 1
                else "flash attention, left to the release, pads the cells"
                if by_flash
                else "the slots the release chooses from memory"
            )
            return DeviceFreeKv(None, 0, f"the KV cache depends on the device: {cause}: {spread}")
        ((kv_bytes, context),) = figures.items()
        why = (
            f"the same on {len(devices)} device record(s) (host memory and catalogued GPUs, none standing in for "
            f"the host's), flash attention {flash}; " + KV_PLACEMENT_SOURCE
        )
        return DeviceFreeKv(kv_bytes, context, why)


_DECIDED = ("1", "true", "on", "yes", "enabled", "0", "false", "off", "no", "disabled")
