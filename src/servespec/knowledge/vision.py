"""Vision towers counted as transformers builds them, from a multimodal config.json's ``vision_config``.

Each tower below is one transformers vision model class, counted parameter by parameter from its
modeling file (transformers v5.24.0, the vllm-0.11.0 parser environment) and checked against the
model transformers builds on the meta device (tests/data/transformers_vision_param_counts.json):

- Qwen2-VL (``Qwen2VisionTransformerPretrainedModel``): LayerNorm blocks of width ``embed_dim`` with a
  two-matrix MLP ``embed_dim x mlp_ratio`` wide, a patch merger to the text width (``hidden_size``);
- Qwen2.5-VL (``Qwen2_5_VisionTransformerPretrainedModel``): RMSNorm blocks with a gated MLP of
  ``intermediate_size``, a merger to ``out_hidden_size``;
- Llama 3.2 Vision (``MllamaVisionModel``): local and gated global layers, tile and aspect-ratio position
  embeddings, a projector from ``vision_output_dim`` to the text width;
- Llama 4 (``Llama4VisionModel``): a ViT with a pixel-shuffle MLP adapter and a bias-free projector;
- LLaVA-NeXT with a SigLIP tower (granite-vision): SigLIP's encoder with its attention-pooling head, a
  two-layer projector over the concatenated ``vision_feature_layer`` outputs, the ``image_newline``;
- LFM2-VL (``Siglip2VisionModel``, NaViT): a Linear patch embedding, ``num_patches`` positions, SigLIP layers, and a
  pixel-unshuffle projector (LayerNorm, two biased Linears).

Other towers are left to the generic estimate in :mod:`servespec.knowledge.models`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from servespec.knowledge import config_fields as fields


def _count(config: dict[str, Any], key: str, default: int) -> int:
    value = fields.count(config, key)
    return value if value else default


def _qwen2_vl(vision: dict[str, Any], text_hidden: int) -> float:
    """transformers Qwen2VisionTransformerPretrainedModel: Conv3d patch embedding without bias; blocks of two
    LayerNorms, qkv and proj with biases, fc1/fc2 with biases (quick GELU); PatchMerger (LayerNorm ln_q, two
    linears with biases) from ``embed_dim x merge^2`` to ``hidden_size`` (the text width)."""
    width = _count(vision, "embed_dim", 1280)
    ratio = fields.number(vision, "mlp_ratio") or 4.0
    mlp = int(width * ratio)
    out = fields.count(vision, "hidden_size") or text_hidden
    block = 4 * width + (3 * width * width + 3 * width) + (width * width + width) + 2 * width * mlp + mlp + width
    merged = width * _count(vision, "spatial_merge_size", 2) ** 2
    merger = 2 * width + merged * merged + merged + merged * out + out
    embed = _count(vision, "in_channels", _count(vision, "in_chans", 3)) * _patch_volume(vision) * width
    return float(_count(vision, "depth", 32) * block + embed + merger)


def _qwen2_5_vl(vision: dict[str, Any], text_hidden: int) -> float:
    """transformers Qwen2_5_VisionTransformerPretrainedModel: blocks of two RMSNorms, qkv and proj with biases, a
    gated MLP (gate, up, down with biases); the merger's ln_q is an RMSNorm."""
    width = _count(vision, "hidden_size", 1280)
    mlp = _count(vision, "intermediate_size", 3420)
    out = fields.count(vision, "out_hidden_size") or text_hidden
    block = 2 * width + (3 * width * width + 3 * width) + (width * width + width) + 3 * width * mlp + 2 * mlp + width
    merged = width * _count(vision, "spatial_merge_size", 2) ** 2
    merger = width + merged * merged + merged + merged * out + out
    embed = _count(vision, "in_channels", _count(vision, "in_chans", 3)) * _patch_volume(vision) * width
    return float(_count(vision, "depth", 32) * block + embed + merger)


def _patch_volume(vision: dict[str, Any]) -> int:
    patch = _count(vision, "patch_size", 14)
    return _count(vision, "temporal_patch_size", 2) * patch * patch


def _mllama(vision: dict[str, Any], text_hidden: int) -> float:
    """transformers MllamaVisionModel and MllamaForConditionalGeneration's projector: class embedding, a bias-free
    patch Conv2d, gated position embeddings per tile and aspect ratio (``len(supported_aspect_ratios) + 1`` ids),
    pre- and post-tile embeddings, LayerNorms; ``num_hidden_layers`` local layers (bias-free attention, fc1/fc2 with
    biases, two LayerNorms) and ``num_global_layers`` gated ones; a Linear ``vision_output_dim -> text width``."""
    width = _count(vision, "hidden_size", 1280)
    mlp = _count(vision, "intermediate_size", 5120)
    patch = _count(vision, "patch_size", 14)
    positions = (_count(vision, "image_size", 448) // patch) ** 2 + 1
    tiles = _count(vision, "max_num_tiles", 4)
    ratios = len(fields.items(vision, "supported_aspect_ratios") or [[1, 1]] * 8) + 1
    layer = 4 * width * width + 2 * width * mlp + mlp + width + 4 * width
    embeddings = width + _count(vision, "num_channels", 3) * patch * patch * width
    embeddings += 1 + positions * width + ratios * tiles * positions * width  # gated_positional_embedding
    embeddings += 2 * (1 + ratios * tiles * width) + 4 * width  # pre/post tile embeddings, layernorm_pre/post
    local = _count(vision, "num_hidden_layers", 32) * layer
    global_layers = _count(vision, "num_global_layers", 8) * (layer + 2)  # gate_attn, gate_ffn
    output = _count(vision, "vision_output_dim", 7680)
    return float(embeddings + local + global_layers + output * text_hidden + text_hidden)


def _llama4(vision: dict[str, Any], text_hidden: int) -> float:
    """transformers Llama4VisionModel and Llama4MultiModalProjector: class and position embeddings, an unfolded
    bias-free patch linear, LayerNorms, layers with biased attention and fc1/fc2, the pixel-shuffle adapter
    (fc1 ``intermediate_size -> projector_input_dim``, fc2 ``projector_output_dim`` square, no biases), and a
    bias-free projector ``vision_output_dim -> text width``."""
    width = _count(vision, "hidden_size", 768)
    mlp = _count(vision, "intermediate_size", 5632)
    patch = _count(vision, "patch_size", 14)
    positions = (_count(vision, "image_size", 448) // patch) ** 2 + 1
    layer = 4 * width * width + 4 * width + 2 * width * mlp + mlp + width + 4 * width
    embeddings = width + positions * width + _count(vision, "num_channels", 3) * patch * patch * width + 4 * width
    adapter = mlp * _count(vision, "projector_input_dim", 4096) + _count(vision, "projector_output_dim", 4096) ** 2
    projector = _count(vision, "vision_output_dim", 7680) * text_hidden
    return float(embeddings + _count(vision, "num_hidden_layers", 34) * layer + adapter + projector)


def _siglip_tower(vision: dict[str, Any], positions: int | None = None) -> int:
    """transformers SiglipVisionModel: biased patch Conv2d, (image_size / patch_size)^2 positions (no class token),
    layers with biased attention, LayerNorms and fc1/fc2, the post LayerNorm and the attention-pooling head
    (``vision_use_head``, true by default). ``positions``: the learned position rows where the tower does not derive
    them from the image size (Siglip2's NaViT ``num_patches``); its Linear patch embedding has the Conv2d's count."""
    width = _count(vision, "hidden_size", 768)
    mlp = _count(vision, "intermediate_size", 3072)
    patch = _count(vision, "patch_size", 16)
    mlp_block = 2 * width * mlp + mlp + width
    layer = 4 * width * width + 4 * width + 4 * width + mlp_block
    embeddings = _count(vision, "num_channels", 3) * patch * patch * width + width
    rows = (_count(vision, "image_size", 224) // patch) ** 2 if positions is None else positions
    embeddings += rows * width
    head = 0
    if fields.flag(vision, "vision_use_head") is not False:
        head = width + 4 * width * width + 4 * width + 2 * width + mlp_block  # probe, attention, layernorm, mlp
    return embeddings + _count(vision, "num_hidden_layers", 12) * layer + 2 * width + head


def _siglip_gemma3(config: dict[str, Any], vision: dict[str, Any], text_hidden: int) -> float:
    """Gemma 3 (transformers Gemma3ForConditionalGeneration): a SigLIP tower and Gemma3MultiModalProjector's
    bias-free ``mm_input_projection_weight`` (width x text width) after ``mm_soft_emb_norm`` (an RMSNorm over the
    width); the average pool holds no weights."""
    del config
    width = _count(vision, "hidden_size", 768)
    return float(_siglip_tower(vision) + width * text_hidden + width)


def _siglip_llava(config: dict[str, Any], vision: dict[str, Any], text_hidden: int) -> float:
    """transformers SiglipVisionModel inside LlavaNextForConditionalGeneration: biased patch Conv2d, position
    embeddings (no class token), layers with biased attention, LayerNorms and fc1/fc2, the post LayerNorm and the
    attention-pooling head (``vision_use_head``, true by default); LlavaNextMultiModalProjector (linear_1 over the
    concatenated ``vision_feature_layer`` outputs, linear_2, biased unless ``multimodal_projector_bias`` is false)
    and ``image_newline``."""
    width = _count(vision, "hidden_size", 768)
    tower = _siglip_tower(vision)
    feature = config.get("vision_feature_layer")
    taps = len(feature) if isinstance(feature, list) and feature else 1
    bias = fields.flag(config, "multimodal_projector_bias") is not False
    projector = width * taps * text_hidden + text_hidden * text_hidden + (2 * text_hidden if bias else 0)
    return float(tower + projector + text_hidden)


def _clip_llava(config: dict[str, Any], vision: dict[str, Any], text_hidden: int) -> float:
    """transformers CLIPVisionModel inside LlavaForConditionalGeneration / LlavaNext / LlavaOnevision: the class
    embedding, a bias-free patch Conv2d, (image_size / patch_size)^2 + 1 position embeddings, pre_layrnorm, layers
    with biased attention, LayerNorms and fc1/fc2, post_layernorm; the two-layer projector (linear_1 over the
    concatenated ``vision_feature_layer`` outputs, linear_2, biased unless ``multimodal_projector_bias`` is false),
    and LLaVA-NeXT's and LLaVA-OneVision's ``image_newline``."""
    width = _count(vision, "hidden_size", 768)
    mlp = _count(vision, "intermediate_size", 3072)
    patch = _count(vision, "patch_size", 32)
    layer = 4 * width * width + 4 * width + 4 * width + 2 * width * mlp + mlp + width
    embeddings = width + _count(vision, "num_channels", 3) * patch * patch * width
    embeddings += ((_count(vision, "image_size", 224) // patch) ** 2 + 1) * width
    tower = embeddings + 2 * width + _count(vision, "num_hidden_layers", 12) * layer + 2 * width
    feature = config.get("vision_feature_layer")
    taps = len(feature) if isinstance(feature, list) and feature else 1
    bias = fields.flag(config, "multimodal_projector_bias") is not False
    projector = width * taps * text_hidden + text_hidden * text_hidden + (2 * text_hidden if bias else 0)
    newline = text_hidden if fields.text(config, "model_type") in ("llava_next", "llava_onevision") else 0
    return float(tower + projector + newline)


def _glm4v(vision: dict[str, Any], text_hidden: int) -> float:
    """transformers Glm4vVisionModel (GLM-4.1V): a biased Conv3d patch embedding, post_conv_layernorm, learned
    positions for (image_size / patch_size)^2 patches, ``depth`` blocks (two RMSNorms, qkv biased by
    attention_bias, a bias-free proj, a bias-free gated MLP ``out_hidden_size`` wide), post_layernorm, a biased Conv2d
    downsampling spatial_merge_size^2 patches to ``out_hidden_size``, and the merger (proj, a LayerNorm, a gated MLP
    ``intermediate_size`` wide, no biases) into the text model, ``out_hidden_size`` wide (``text_hidden`` unused)."""
    del text_hidden
    width = _count(vision, "hidden_size", 1536)
    out = _count(vision, "out_hidden_size", 4096)
    inner = _count(vision, "intermediate_size", 13696)
    patch = _count(vision, "patch_size", 14)
    merge = _count(vision, "spatial_merge_size", 2)
    embed = _count(vision, "in_channels", 3) * _count(vision, "temporal_patch_size", 2) * patch * patch * width + width
    positions = (_count(vision, "image_size", 336) // patch) ** 2 * width
    bias = 3 * width if fields.flag(vision, "attention_bias") is True else 0
    block = 2 * width + 4 * width * width + bias + 3 * width * out
    downsample = width * out * merge * merge + out
    merger = out * out + 2 * out + 3 * out * inner
    return float(embed + width + positions + _count(vision, "depth", 24) * block + width + downsample + merger)


PHI3V_CLIP = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "patch_size": 14,
              "image_size": 336, "num_channels": 3}  # fmt: skip
"""The tower vLLM builds for every Phi-3-vision checkpoint, whatever ``img_processor`` names (vLLM v0.11.0 and
later model_executor/models/phi3v.py ``CLIP_VIT_LARGE_PATCH14_336_CONFIG``)."""


def phi3v_params(config: dict[str, Any], text_hidden: int) -> float:
    """Phi-3-vision / Phi-3.5-vision as vLLM loads them (phi3v.py ``Phi3HDImageEmbedding``): CLIP ViT-L/14-336 cut
    after ``img_processor.layer_idx`` (default -2: 23 of 24 layers, then no post_layernorm: clip.py
    ``require_post_norm``), glb_GN and sub_GN of 4 x ``image_dim_out``, and img_projection (Linear 4 x
    ``image_dim_out`` -> hidden, GELU, Linear hidden -> hidden, both biased). 0 for other models."""
    processor = fields.mapping(config, "img_processor")
    if processor is None or fields.text(config, "model_type") != "phi3_v":
        return 0.0
    clip = PHI3V_CLIP
    width, mlp, patch = clip["hidden_size"], clip["intermediate_size"], clip["patch_size"]
    index = processor.get("layer_idx", -2)
    if not isinstance(index, int) or isinstance(index, bool) or not -clip["num_hidden_layers"] <= index < 64:
        raise fields.ConfigFieldError("img_processor.layer_idx", "a layer index of the 24-layer CLIP tower")
    depth = min(clip["num_hidden_layers"] + index + 1 if index < 0 else index + 1, clip["num_hidden_layers"])
    layer = 4 * width * width + 4 * width + 4 * width + 2 * width * mlp + mlp + width
    embeddings = width + clip["num_channels"] * patch * patch * width
    embeddings += ((clip["image_size"] // patch) ** 2 + 1) * width
    post = 2 * width if depth == clip["num_hidden_layers"] else 0
    tower = embeddings + 2 * width + depth * layer + post
    out = _count(processor, "image_dim_out", width)
    projection = 4 * out * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
    return float(tower + 2 * 4 * out + projection)


def _intern_vit(config: dict[str, Any], vision: dict[str, Any], text_hidden: int) -> float:
    """InternViT as transformers InternVLVisionModel (HF-format InternVL, ``internvl_vision``) and the checkpoints' own
    InternVisionModel (``internvl_chat``, ``intern_vit_6b``) build it: a class token, a biased patch Conv2d,
    (image_size / patch_size)^2 + 1 learned positions; layers with q, k, v biased by ``attention_bias`` /
    ``qkv_bias``, a biased output projection, q and k RMSNorms over the width with ``use_qk_norm`` /
    ``qk_normalization``, two norms (``norm_type`` layer_norm with a bias, or rms_norm), biased fc1/fc2 and two
    layer-scale vectors; the projector (a LayerNorm over the pixel-shuffled width, two biased Linears)."""
    width = _count(vision, "hidden_size", 1024)
    mlp = _count(vision, "intermediate_size", 4096)
    given = vision.get("patch_size")
    patch = (
        given[0] if isinstance(given, list) and given and type(given[0]) is int else _count(vision, "patch_size", 14)
    )
    size = vision.get("image_size")
    image = size[0] if isinstance(size, list) and size and type(size[0]) is int else _count(vision, "image_size", 448)
    if patch <= 0 or image <= 0 or patch > image:
        raise fields.ConfigFieldError("vision_config.patch_size", "a whole number no larger than image_size")
    biased = fields.flag(vision, "attention_bias") is True or fields.flag(vision, "qkv_bias") is True
    qk_norm = fields.flag(vision, "use_qk_norm") is True or fields.flag(vision, "qk_normalization") is True
    norm = width if fields.text(vision, "norm_type") == "rms_norm" else 2 * width
    layer = 4 * width * width + (3 * width if biased else 0) + width + (2 * width if qk_norm else 0)
    layer += 2 * norm + 2 * width * mlp + mlp + width + 2 * width
    embeddings = width + _count(vision, "num_channels", 3) * patch * patch * width + width
    embeddings += ((image // patch) ** 2 + 1) * width
    ratio = fields.number(config, "downsample_ratio") or 0.5
    shuffled = width * round(1 / ratio) ** 2 if 0 < ratio < 1 else width
    projector = 2 * shuffled + shuffled * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
    return float(embeddings + _count(vision, "num_hidden_layers", 24) * layer + projector)


def _idefics3(config: dict[str, Any], vision: dict[str, Any], text_hidden: int) -> float:
    """transformers Idefics3VisionTransformer (Idefics3, SmolVLM): a biased patch Conv2d, (image_size /
    patch_size)^2 learned positions, SigLIP layers (biased q, k, v, out, fc1, fc2; two LayerNorms), post_layernorm;
    the connector's bias-free Linear from the width x scale_factor^2 of the pixel shuffle to the text width."""
    width = _count(vision, "hidden_size", 1152)
    mlp = _count(vision, "intermediate_size", 3072)
    patch = _count(vision, "patch_size", 32)
    layer = 4 * width * width + 4 * width + 4 * width + 2 * width * mlp + mlp + width
    embeddings = _count(vision, "num_channels", 3) * patch * patch * width + width
    embeddings += (_count(vision, "image_size", 224) // patch) ** 2 * width
    tower = embeddings + _count(vision, "num_hidden_layers", 12) * layer + 2 * width
    return float(tower + width * _count(config, "scale_factor", 2) ** 2 * text_hidden)


def audio_params(config: dict[str, Any], text_hidden: int) -> float:
    """Qwen2-Audio's audio tower and projector (transformers Qwen2AudioEncoder, Qwen2AudioMultiModalProjector): two
    biased Conv1d (num_mel_bins -> d_model and d_model -> d_model, kernel 3), a learned table of
    ``max_source_positions`` positions, Whisper encoder layers (q, v, out biased, k not; two LayerNorms; fc1/fc2 of
    ``encoder_ffn_dim`` biased), the closing LayerNorm, and a biased Linear to the text width. 0 for other models."""
    audio = fields.mapping(config, "audio_config")
    if audio is None or fields.text(config, "model_type") != "qwen2_audio":
        return 0.0
    width = _count(audio, "d_model", 1280)
    ffn = _count(audio, "encoder_ffn_dim", 5120)
    convs = _count(audio, "num_mel_bins", 128) * width * 3 + width + width * width * 3 + width
    layer = 4 * width * width + 3 * width + 2 * width * 2 + 2 * width * ffn + ffn + width
    tower = convs + _count(audio, "max_source_positions", 1500) * width
    tower += _count(audio, "encoder_layers", 32) * layer + 2 * width
    return float(tower + width * text_hidden + text_hidden)


def mllama_encoder_states(config: dict[str, Any]) -> tuple[int, int, int]:
    """Llama 3.2 Vision: (tokens one image occupies in the vision encoder, its width, hidden states it holds at once).

    vLLM's MllamaVisionModel pads each tile's ``(image_size / patch_size)^2 + 1`` patches to a multiple of 8 and runs
    ``max_num_tiles`` tiles per image; MllamaVisionEncoder keeps the hidden state of every
    ``intermediate_layers_indices`` layer until the last layer has run, beside the live one (vLLM v0.6.3 and v0.8.0
    model_executor/models/mllama.py ``MllamaVisionEncoder.forward``: ``encoder_states += (hidden_states,)``).
    (0, 0, 0) for any other model.
    """
    vision = fields.mapping(config, "vision_config")
    if vision is None or fields.text(config, "model_type") != "mllama":
        return (0, 0, 0)
    patch = _count(vision, "patch_size", 14)
    patches = (_count(vision, "image_size", 448) // patch) ** 2 + 1
    padded = patches + (8 - patches % 8) % 8
    kept = len(fields.items(vision, "intermediate_layers_indices") or []) + 1
    return (_count(vision, "max_num_tiles", 4) * padded, _count(vision, "hidden_size", 1280), kept)


def mllama_encoder_mlp(config: dict[str, Any]) -> int:
    """Llama 3.2 Vision: the width of the vision tower's MLP (``vision_config.intermediate_size``), whose ``fc1``
    output and GELU output a layer holds at once (vLLM v0.6.3 model_executor/models/clip.py ``CLIPMLP.forward``,
    L277-281: ``fc1`` a ColumnParallelLinear, ``nn.GELU`` out of place); 0 for any other model."""
    vision = fields.mapping(config, "vision_config")
    if vision is None or fields.text(config, "model_type") != "mllama":
        return 0
    return _count(vision, "intermediate_size", 5120)


def _siglip2_navit_lfm2_vl(config: dict[str, Any], vision: dict[str, Any], text_hidden: int) -> float:
    """LFM2-VL (transformers Lfm2VlForConditionalGeneration, modeling_lfm2_vl.py; vLLM lfm2_vl.py with its
    lfm2_siglip2.py tower): a Siglip2VisionModel (NaViT) tower, whose patch embedding is a biased Linear over
    ``num_channels x patch_size^2`` pixels and whose positions are ``num_patches`` learned rows, SigLIP layers
    (biased q, k, v, out, fc1, fc2; two LayerNorms), post_layernorm and the attention-pooling head when
    ``vision_use_head`` (transformers builds it unless the config says false; LFM2-VL's say false and vLLM's tower
    has none); Lfm2VlMultiModalProjector: a LayerNorm over ``hidden_size x downsample_factor^2`` (when
    ``projector_use_layernorm``), linear_1 to ``projector_hidden_size`` and linear_2 to the text width, both biased
    unless ``projector_bias`` is false. Defaults: Siglip2VisionConfig and Lfm2VlConfig (transformers v5.24.0)."""
    width = _count(vision, "hidden_size", 768)
    tower = _siglip_tower(vision, positions=_count(vision, "num_patches", 256))
    unshuffled = width * _count(config, "downsample_factor", 2) ** 2
    inner = _count(config, "projector_hidden_size", 2560)
    projector = unshuffled * inner + inner * text_hidden
    if fields.flag(config, "projector_bias") is not False:
        projector += inner + text_hidden
    if fields.flag(config, "projector_use_layernorm") is not False:
        projector += 2 * unshuffled
    return float(tower + projector)


_VISION_ONLY = {
    "qwen2_vl": ("qwen2_vl", "qwen2_vl_vision"),
    "qwen2_5_vl": ("qwen2_5_vl", "qwen2_5_vl_vision"),
    "mllama": ("mllama_vision_model",),
    "llama4": ("llama4_vision_model",),
    "glm4v": ("glm4v_vision",),
    "glm4v_moe": ("glm4v_moe_vision",),
}
_VISION_COUNTS: dict[str, Callable[[dict[str, Any], int], float]] = {
    "qwen2_vl": _qwen2_vl,
    "qwen2_5_vl": _qwen2_5_vl,
    "mllama": _mllama,
    "llama4": _llama4,
    "glm4v": _glm4v,
    "glm4v_moe": _glm4v,  # Glm4vMoeVisionModel: Glm4vVisionModel's layers and defaults (transformers 5.20.2)
}
_WITH_CONFIG = {
    "internvl": (("internvl", "internvl_chat"), ("internvl_vision", "intern_vit_6b"), _intern_vit),
    "idefics3": (("idefics3", "smolvlm"), ("idefics3_vision", "smolvlm_vision"), _idefics3),
    "lfm2_vl": (("lfm2_vl",), (), _siglip2_navit_lfm2_vl),
}


def tower_params(config: dict[str, Any], text_hidden: int) -> float | None:
    """The vision tower and projector of a config whose tower is one of the classes above; None otherwise."""
    vision = fields.mapping(config, "vision_config")
    if vision is None:
        return None
    model_type = fields.text(config, "model_type") or ""
    vision_type = fields.text(vision, "model_type") or ""
    for family, vision_types in _VISION_ONLY.items():
        if model_type == family or vision_type in vision_types:
            return float(_VISION_COUNTS[family](vision, text_hidden))
    for model_types, vision_types, count in _WITH_CONFIG.values():
        if model_type in model_types or vision_type in vision_types:
            return count(config, vision, text_hidden)
    if model_type == "gemma3" and vision_type == "siglip_vision_model":
        return _siglip_gemma3(config, vision, text_hidden)
    if model_type in ("llava_next", "llava_onevision") and vision_type == "siglip_vision_model":
        return _siglip_llava(config, vision, text_hidden)
    if model_type in ("llava", "llava_next", "llava_onevision") and vision_type == "clip_vision_model":
        return _clip_llava(config, vision, text_hidden)
    return None


QWEN2_VL_MAX_PIXELS = 12845056
"""``max_pixels`` of the Qwen2-VL and Qwen2.5-VL checkpoints' preprocessor_config.json (3584 x 3584; the
transformers class default is lower, 28 x 28 x 1280, but vLLM reads the checkpoint's processor): with 28-pixel merged
patches, 16,384 tokens per image, which vLLM 0.10.2 logs for Qwen2-VL-2B-Instruct as its encoder budget
(tests/data/vllm_logs/081: "Encoder cache will be initialized with a budget of 16384 tokens")."""
QWEN3_VL_MAX_PIXELS = 16777216
"""``size.longest_edge`` of the Qwen3-VL, Qwen3.5 and Qwen3.6 checkpoints' preprocessor_config.json (4096 x 4096,
e.g. Qwen/Qwen3.6-35B-A3B-FP8 and Qwen/Qwen3.5-2B-Base, image processor Qwen2VLImageProcessorFast): 16,384 tokens of
32-pixel merged patches per image."""
_QWEN2_TYPES = ("qwen2_vl", "qwen2_5_vl")
_QWEN3_TYPES = ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")


@dataclass(frozen=True)
class VisionProfile:
    """What vLLM's profiling run feeds a vision tower: one dummy image of the most features the model's processor
    gives, and the tower's shape (the working set per patch is :func:`patch_bytes`)."""

    tokens: int
    """Tokens one dummy image occupies in the language model (after the patch merger)."""
    patches: int
    """Patches the tower runs for that image (before merging)."""
    width: int
    mlp: int
    patch_volume: int
    """Pixel values per patch (channels x temporal x patch x patch), as the processor hands them over."""
    rotary: bool
    """The tower rotates q and k in float32 (Qwen's 2D RoPE), which its attention's working set holds."""
    max_pixels: int = 0
    """The processor's pixel cap where the image size follows it (Qwen), which ``mm_processor_kwargs`` may override;
    0: a fixed image size."""
    unit: int = 0
    """Pixels per merged token along one side (patch x merge) where ``max_pixels`` applies."""


def _qwen_tokens(max_pixels: int, unit: int) -> int:
    """vLLM's Qwen2-VL ``get_image_size_with_most_features``: the merged-patch count ``max_pixels // unit^2``,
    lowered until a factor pair has an aspect ratio of at most 200 (v0.24.0 model_executor/models/qwen2_vl.py
    L965-1016; the same in v0.10.2)."""
    for count in range(max(max_pixels // (unit * unit), 1), 0, -1):
        side = next(d for d in range(math.isqrt(count), 0, -1) if count % d == 0)
        if count // side / side <= 200:
            return count
    return 1


def vision_profile(config: dict[str, Any]) -> VisionProfile | None:
    """The dummy image and tower shape of the families whose dummy image servespec derives: Qwen2-VL, Qwen2.5-VL,
    Qwen3-VL and Qwen3.5/3.6 (the processor's pixel cap, :data:`QWEN2_VL_MAX_PIXELS`, :data:`QWEN3_VL_MAX_PIXELS`)
    and Gemma 3 (a fixed ``image_size`` square, ``mm_tokens_per_image`` tokens, pan-and-scan off by default);
    None for any other model."""
    vision = fields.mapping(config, "vision_config")
    if vision is None:
        return None
    model_type = fields.text(config, "model_type") or ""
    if model_type in _QWEN2_TYPES + _QWEN3_TYPES:
        qwen2 = model_type in _QWEN2_TYPES
        width = _count(vision, "embed_dim", 0) if model_type == "qwen2_vl" else _count(vision, "hidden_size", 0)
        mlp = int(width * (fields.number(vision, "mlp_ratio") or 4.0)) if model_type == "qwen2_vl" else 0
        mlp = mlp or _count(vision, "intermediate_size", 4 * width)
        merge = _count(vision, "spatial_merge_size", 2)
        unit = _count(vision, "patch_size", 14 if qwen2 else 16) * merge
        max_pixels = QWEN2_VL_MAX_PIXELS if qwen2 else QWEN3_VL_MAX_PIXELS
        tokens = _qwen_tokens(max_pixels, unit)
        volume = _count(vision, "in_channels", _count(vision, "in_chans", 3)) * _patch_volume(vision)
        return VisionProfile(tokens, tokens * merge * merge, width, mlp, volume, True, max_pixels, unit)
    if model_type == "gemma3":
        patch = _count(vision, "patch_size", 14)
        side = _count(vision, "image_size", 896) // patch
        width = _count(vision, "hidden_size", 1152)
        tokens = fields.count(config, "mm_tokens_per_image") or 256
        volume = _count(vision, "num_channels", 3) * patch * patch
        return VisionProfile(tokens, side * side, width, _count(vision, "intermediate_size", 4304), volume, False)
    return None


def with_max_pixels(profile: VisionProfile, max_pixels: int) -> VisionProfile:
    """The profile under an ``mm_processor_kwargs`` ``max_pixels`` override (Qwen: vLLM's ``_get_vision_info`` and
    ``get_image_size_with_most_features`` apply it over the processor's ``size``); unchanged for a fixed size."""
    if not profile.max_pixels or max_pixels <= 0:
        return profile
    tokens = _qwen_tokens(max_pixels, profile.unit)
    merged = profile.patches // profile.tokens
    return VisionProfile(
        tokens, tokens * merged, profile.width, profile.mlp, profile.patch_volume, True, max_pixels, profile.unit
    )
