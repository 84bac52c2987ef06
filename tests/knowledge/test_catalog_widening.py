"""Issue 23 item 4: catalogue entries added for the models held-out start-up logs are likely to name.

Each entry is a cited config.json copy (knowledge/data/models.yaml ``source``); these tests check that every one
resolves to facts, that its parameter count matches the count published for the model within 1 %, and, where
transformers 5.24 built the model from the same config on the meta device (scripts/catalog/transformers_params.py
in the vllm-0.33.0 parser environment), that servespec counts exactly what transformers builds.
"""

from __future__ import annotations

from typing import Any

import pytest

from servespec.knowledge.models import catalogued

ADDED = [
    "Qwen/Qwen2.5-VL-3B-Instruct",
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "Qwen/Qwen3-VL-4B-Instruct",
    "Qwen/Qwen3-VL-32B-Thinking",
    "XiaomiMiMo/MiMo-7B-Base",
    "nvidia/Qwen3-235B-A22B-NVFP4",
    "nvidia/Kimi-K2.6-NVFP4",
    "nvidia/MiniMax-M2.5-NVFP4",
    "nvidia/Gemma-4-31B-IT-NVFP4",
    "nvidia/Qwen3.5-397B-A17B-NVFP4",
    "nvidia/DeepSeek-V3.1-NVFP4",
    "nvidia/GLM-5-NVFP4",
    "zai-org/GLM-5-FP8",
    "allenai/OLMo-2-1124-7B",
    "allenai/OLMo-2-1124-13B",
    "allenai/OLMo-2-0325-32B",
    "moonshotai/Kimi-K2.6",
    "zai-org/GLM-5.1-FP8",
    "nvidia/GLM-5.1-NVFP4",
    "nvidia/Gemma-4-26B-A4B-NVFP4",
    "nvidia/Kimi-K2.5-NVFP4",
    "nvidia/Kimi-K2.7-Code-NVFP4",
    "nvidia/MiniMax-M2.7-NVFP4",
    "nvidia/Qwen3.5-122B-A10B-NVFP4",
    "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-70B",
    "meta-llama/Meta-Llama-3.1-405B",
    "meta-llama/Llama-3.2-90B-Vision-Instruct",
    "Qwen/Qwen2.5-32B-Instruct",
    "LGAI-EXAONE/EXAONE-4.0-32B",
    "mistralai/Devstral-Small-2-24B-Instruct-2512",
    "mistralai/Devstral-2-123B-Instruct-2512",
    "allenai/Olmo-3.1-32B-Instruct",
    "Qwen/Qwen3.5-9B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    "Qwen/Qwen2.5-1.5B",
    "Qwen/Qwen2.5-72B",
    "meta-llama/Llama-2-7b-hf",
    "meta-llama/Llama-2-13b-hf",
    "meta-llama/Llama-2-70b-hf",
    "nvidia/DeepSeek-V3-0324-NVFP4",
    "nvidia/Qwen3-30B-A3B-NVFP4",
    "nvidia/Qwen3-32B-NVFP4",
    "Qwen/Qwen3-30B-A3B-Thinking-2507-FP8",
    # second widening (i23t-configs2)
    "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    "HuggingFaceTB/SmolLM3-3B",
    # third widening (i23v-configs)
    "naver-hyperclovax/HyperCLOVAX-SEED-Text-Instruct-0.5B",
    "meta-llama/Llama-3.2-1B",
    # Qwen/Alibaba widening (cat-qwen)
    "Qwen/Qwen3-8B-FP8",
    "Qwen/Qwen3-32B-AWQ",
    "Qwen/Qwen3-Embedding-0.6B",
    "Qwen/Qwen3-Embedding-4B",
    "Qwen/Qwen3-Reranker-0.6B",
    "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8",
    # fourth widening (cat-western): Meta / Mistral / Google / Microsoft families and their quantizations
    "meta-llama/Llama-2-7b-chat-hf",
    "meta-llama/Llama-2-13b-chat-hf",
    "mistralai/Mistral-7B-Instruct-v0.1",
    "google/gemma-7b-it",
    "google/gemma-2b-it",
    "meta-llama/Meta-Llama-3-8B",
    "meta-llama/Meta-Llama-3-70B-Instruct",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
    "TheBloke/Llama-2-7B-AWQ",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    "mistralai/Ministral-8B-Instruct-2410",
    "microsoft/Phi-3.5-vision-instruct",
    "google/gemma-2-9b",
    "meta-llama/Llama-3.2-11B-Vision-Instruct",
    "meta-llama/Meta-Llama-3.1-8B-Instruct",
    # fourth widening (cat-misc: other organisations)
    "THUDM/chatglm3-6b",
    "bigcode/starcoder2-7b",
    "HuggingFaceTB/SmolLM2-135M-Instruct",
    "HuggingFaceTB/SmolLM2-1.7B-Instruct",
    "stabilityai/stablelm-2-zephyr-1_6b",
    "CohereForAI/aya-23-8B",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "ibm-granite/granite-3.3-8b-instruct-FP8",
    "THUDM/glm-4-9b-chat",
    "llava-hf/llava-1.5-7b-hf",
    "allenai/olmOCR-2-7B-1025",
    "ALLaM-AI/ALLaM-7B-Instruct-preview",
    "humain-ai/ALLaM-7B-Instruct-preview",
    "openbmb/MiniCPM-2B-sft-bf16",
    # large MoE / MLA widening (cat-moe)
    "MiniMaxAI/MiniMax-M2",
    "moonshotai/Kimi-Linear-48B-A3B-Instruct",
    "zai-org/GLM-4.5-Air",
    "zai-org/GLM-4.5V",
    # pooling models (pool)
    "Qwen/Qwen3-Embedding-8B",
    "Qwen/Qwen3-Reranker-8B",
    # quantized checkpoints (cat-quant)
    "TheBloke/Llama-2-7B-Chat-GPTQ",
    "TheBloke/Llama-2-13B-chat-GPTQ",
    "TheBloke/Llama-2-7B-GPTQ",
    "TheBloke/Mistral-7B-Instruct-v0.1-AWQ",
    "Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4",
    "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
    # held-out proxy, SGLang/TGI (ho-sgtgi): tests/data/startup_logs/tgi/010
    "tokyotech-llm/Swallow-7b-hf",
    # popular base/instruct widening (cat-pop)
    "mistralai/Mistral-Nemo-Instruct-2407",
    "01-ai/Yi-34B",
    "codellama/CodeLlama-34b-Instruct-hf",
    "mistralai/Mixtral-8x22B-Instruct-v0.1",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    "Qwen/Qwen2.5-VL-72B-Instruct",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
    "mistralai/Ministral-3-14B-Instruct-2512",
    "mistralai/Ministral-3-8B-Instruct-2512",
    "mistralai/Ministral-3-3B-Instruct-2512",
    "NousResearch/Hermes-3-Llama-3.1-70B",
    "NousResearch/Hermes-3-Llama-3.1-405B",
    "NousResearch/Hermes-4-70B",
    "NousResearch/Hermes-4-405B",
    "moonshotai/Kimi-K2-Instruct-0905",
    "deepseek-ai/DeepSeek-V3.1-Terminus",
    "zai-org/GLM-4.6V",
    "openai/gpt-oss-safeguard-20b",
    "ibm-granite/granite-4.0-h-micro",
    "LiquidAI/LFM2.5-2.6B",
    "Gryphe/MythoMax-L2-13b",
    "Qwen/Qwen2-72B-Instruct",
    "Qwen/Qwen1.5-7B-Chat",
    "Qwen/Qwen3-4B-Thinking-2507",
    # DeepSeek V4 (dsv4)
    "deepseek-ai/DeepSeek-V4-Flash",
    "deepseek-ai/DeepSeek-V4-Pro",
]

# (repo id, published total parameters, where it is published)
PUBLISHED = [
    ("Qwen/Qwen2.5-VL-3B-Instruct", 3.75e9, "https://huggingface.co/Qwen/Qwen2.5-VL-3B-Instruct"),
    ("Qwen/Qwen2.5-VL-7B-Instruct", 8.29e9, "https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct"),
    ("Qwen/Qwen3-VL-4B-Instruct", 4.44e9, "https://huggingface.co/Qwen/Qwen3-VL-4B-Instruct"),
    ("Qwen/Qwen3-VL-32B-Thinking", 33.4e9, "https://huggingface.co/Qwen/Qwen3-VL-32B-Thinking"),
    ("nvidia/Qwen3-235B-A22B-NVFP4", 235e9, "https://huggingface.co/Qwen/Qwen3-235B-A22B"),
    ("nvidia/MiniMax-M2.5-NVFP4", 229.9e9, "https://www.emergentmind.com/topics/minimax-m2-5"),
    ("nvidia/Gemma-4-31B-IT-NVFP4", 31.27e9, "https://huggingface.co/google/gemma-4-31B-it"),
    ("nvidia/Qwen3.5-397B-A17B-NVFP4", 397e9, "https://huggingface.co/Qwen/Qwen3.5-397B-A17B"),
    ("nvidia/DeepSeek-V3.1-NVFP4", 671e9, "https://huggingface.co/deepseek-ai/DeepSeek-V3.1"),
    ("nvidia/GLM-5-NVFP4", 744e9, "https://arxiv.org/abs/2602.15763"),
    ("zai-org/GLM-5-FP8", 744e9, "https://arxiv.org/abs/2602.15763"),
    ("allenai/OLMo-2-1124-7B", 7.3e9, "https://huggingface.co/allenai/OLMo-2-1124-7B"),
    ("allenai/OLMo-2-1124-13B", 13.7e9, "https://huggingface.co/allenai/OLMo-2-1124-13B"),
    ("allenai/OLMo-2-0325-32B", 32.2e9, "https://huggingface.co/allenai/OLMo-2-0325-32B"),
    ("zai-org/GLM-5.1-FP8", 744e9, "https://arxiv.org/abs/2602.15763"),
    ("nvidia/GLM-5.1-NVFP4", 744e9, "https://arxiv.org/abs/2602.15763"),
    ("nvidia/MiniMax-M2.7-NVFP4", 230e9, "https://huggingface.co/docs/transformers/model_doc/minimax_m2"),
    ("nvidia/Qwen3.5-122B-A10B-NVFP4", 122e9, "https://huggingface.co/Qwen/Qwen3.5-122B-A10B"),
    ("meta-llama/Meta-Llama-3.1-8B", 8.03e9, "https://huggingface.co/meta-llama/Llama-3.1-8B"),
    ("meta-llama/Meta-Llama-3.1-70B", 70.6e9, "https://huggingface.co/meta-llama/Llama-3.1-70B"),
    ("meta-llama/Meta-Llama-3.1-405B", 405.9e9, "https://huggingface.co/meta-llama/Llama-3.1-405B"),
    (
        "meta-llama/Llama-3.2-90B-Vision-Instruct",
        88.6e9,
        "https://huggingface.co/meta-llama/Llama-3.2-90B-Vision-Instruct",
    ),
    ("Qwen/Qwen2.5-32B-Instruct", 32.5e9, "https://huggingface.co/Qwen/Qwen2.5-32B-Instruct"),
    ("LGAI-EXAONE/EXAONE-4.0-32B", 32.0e9, "https://huggingface.co/LGAI-EXAONE/EXAONE-4.0-32B"),
    (
        "mistralai/Devstral-Small-2-24B-Instruct-2512",
        24e9,
        "https://huggingface.co/mistralai/Devstral-Small-2-24B-Instruct-2512",
    ),
    ("allenai/Olmo-3.1-32B-Instruct", 32e9, "https://huggingface.co/allenai/Olmo-3.1-32B-Instruct"),
    (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
        32.8e9,
        "https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    ),
    ("Qwen/Qwen2.5-1.5B", 1.54e9, "https://huggingface.co/Qwen/Qwen2.5-1.5B"),
    ("Qwen/Qwen2.5-72B", 72.7e9, "https://huggingface.co/Qwen/Qwen2.5-72B"),
    ("meta-llama/Llama-2-7b-hf", 6.74e9, "https://huggingface.co/meta-llama/Llama-2-7b-hf"),
    ("meta-llama/Llama-2-13b-hf", 13.0e9, "https://huggingface.co/meta-llama/Llama-2-13b-hf"),
    ("meta-llama/Llama-2-70b-hf", 69.0e9, "https://huggingface.co/meta-llama/Llama-2-70b-hf"),
    ("nvidia/DeepSeek-V3-0324-NVFP4", 671e9, "https://arxiv.org/abs/2412.19437"),
    ("nvidia/Qwen3-30B-A3B-NVFP4", 30.5e9, "https://huggingface.co/Qwen/Qwen3-30B-A3B"),
    ("nvidia/Qwen3-32B-NVFP4", 32.8e9, "https://huggingface.co/Qwen/Qwen3-32B"),
    # second widening (i23t-configs2)
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 30.5e9, "https://huggingface.co/Qwen/Qwen3-Coder-30B-A3B-Instruct"),
    ("HuggingFaceTB/SmolLM3-3B", 3.08e9, "https://huggingface.co/HuggingFaceTB/SmolLM3-3B"),
    # third widening (i23v-configs)
    (
        "naver-hyperclovax/HyperCLOVAX-SEED-Text-Instruct-0.5B",
        0.57e9,
        "https://huggingface.co/naver-hyperclovax/HyperCLOVAX-SEED-Text-Instruct-0.5B",
    ),
    ("meta-llama/Llama-3.2-1B", 1.23e9, "https://huggingface.co/meta-llama/Llama-3.2-1B"),
    # fourth widening (cat-western)
    ("meta-llama/Llama-2-7b-chat-hf", 6.74e9, "https://huggingface.co/meta-llama/Llama-2-7b-chat-hf"),
    ("meta-llama/Llama-2-13b-chat-hf", 13.0e9, "https://huggingface.co/meta-llama/Llama-2-13b-chat-hf"),
    ("mistralai/Mistral-7B-Instruct-v0.1", 7.24e9, "https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.1"),
    ("google/gemma-7b-it", 8.54e9, "https://huggingface.co/google/gemma-7b-it"),
    ("google/gemma-2b-it", 2.51e9, "https://huggingface.co/google/gemma-2b-it"),
    ("meta-llama/Meta-Llama-3-8B", 8.03e9, "https://huggingface.co/meta-llama/Meta-Llama-3-8B"),
    ("meta-llama/Meta-Llama-3-70B-Instruct", 70.6e9, "https://huggingface.co/meta-llama/Meta-Llama-3-70B-Instruct"),
    (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        1.78e9,
        "https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
    ),
    (
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        8.03e9,
        "https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    ),
    ("mistralai/Ministral-8B-Instruct-2410", 8.02e9, "https://huggingface.co/mistralai/Ministral-8B-Instruct-2410"),
    ("microsoft/Phi-3.5-vision-instruct", 4.15e9, "https://huggingface.co/microsoft/Phi-3.5-vision-instruct"),
    ("google/gemma-2-9b", 9.24e9, "https://huggingface.co/google/gemma-2-9b"),
    (
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        10.6e9,
        "https://huggingface.co/meta-llama/Llama-3.2-11B-Vision-Instruct",
    ),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", 8.03e9, "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct"),
    # fourth widening (cat-misc)
    ("THUDM/chatglm3-6b", 6.24e9, "https://huggingface.co/THUDM/chatglm3-6b"),
    ("bigcode/starcoder2-7b", 7.17e9, "https://huggingface.co/bigcode/starcoder2-7b"),
    ("HuggingFaceTB/SmolLM2-135M-Instruct", 135e6, "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct"),
    ("HuggingFaceTB/SmolLM2-1.7B-Instruct", 1.71e9, "https://huggingface.co/HuggingFaceTB/SmolLM2-1.7B-Instruct"),
    ("stabilityai/stablelm-2-zephyr-1_6b", 1.64e9, "https://huggingface.co/stabilityai/stablelm-2-zephyr-1_6b"),
    ("CohereForAI/aya-23-8B", 8.03e9, "https://huggingface.co/CohereForAI/aya-23-8B"),
    (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        31.6e9,
        "https://huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    ),
    ("THUDM/glm-4-9b-chat", 9.4e9, "https://huggingface.co/THUDM/glm-4-9b-chat"),
    ("llava-hf/llava-1.5-7b-hf", 7.06e9, "https://huggingface.co/llava-hf/llava-1.5-7b-hf"),
    ("allenai/olmOCR-2-7B-1025", 8.29e9, "https://huggingface.co/allenai/olmOCR-2-7B-1025"),
    ("openbmb/MiniCPM-2B-sft-bf16", 2.7e9, "https://huggingface.co/openbmb/MiniCPM-2B-sft-bf16"),
    # large MoE / MLA widening (cat-moe)
    ("MiniMaxAI/MiniMax-M2", 230e9, "https://huggingface.co/docs/transformers/model_doc/minimax_m2"),
    ("zai-org/GLM-4.5-Air", 106e9, "https://huggingface.co/zai-org/GLM-4.5-Air"),
    # quantized checkpoints (cat-quant): the count of the model each one quantizes
    ("TheBloke/Llama-2-7B-Chat-GPTQ", 6.74e9, "https://huggingface.co/meta-llama/Llama-2-7b-chat-hf"),
    ("TheBloke/Llama-2-13B-chat-GPTQ", 13.0e9, "https://huggingface.co/meta-llama/Llama-2-13b-chat-hf"),
    ("TheBloke/Llama-2-7B-GPTQ", 6.74e9, "https://huggingface.co/meta-llama/Llama-2-7b-hf"),
    ("TheBloke/Mistral-7B-Instruct-v0.1-AWQ", 7.24e9, "https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.1"),
    ("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", 32.5e9, "https://huggingface.co/Qwen/Qwen2.5-32B-Instruct"),
    (
        "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
        70.6e9,
        "https://huggingface.co/meta-llama/Llama-3.1-70B-Instruct",
    ),
    # popular base/instruct widening (cat-pop)
    ("mistralai/Mistral-Nemo-Instruct-2407", 12.2e9, "https://huggingface.co/mistralai/Mistral-Nemo-Instruct-2407"),
    ("01-ai/Yi-34B", 34.4e9, "https://huggingface.co/01-ai/Yi-34B"),
    ("codellama/CodeLlama-34b-Instruct-hf", 33.7e9, "https://huggingface.co/codellama/CodeLlama-34b-Instruct-hf"),
    ("mistralai/Mixtral-8x22B-Instruct-v0.1", 141e9, "https://huggingface.co/mistralai/Mixtral-8x22B-Instruct-v0.1"),
    (
        "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
        70.6e9,
        "https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    ),
    ("Qwen/Qwen2.5-VL-72B-Instruct", 73.4e9, "https://huggingface.co/Qwen/Qwen2.5-VL-72B-Instruct"),
    (
        "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        24.0e9,
        "https://huggingface.co/mistralai/Mistral-Small-3.2-24B-Instruct-2506",
    ),
    # the card: a 13.5B language model and a 0.4B vision encoder
    (
        "mistralai/Ministral-3-14B-Instruct-2512",
        13.9e9,
        "https://hff.sound2gd.work/mistralai/Ministral-3-14B-Instruct-2512",
    ),
    ("NousResearch/Hermes-3-Llama-3.1-70B", 70.6e9, "https://huggingface.co/NousResearch/Hermes-3-Llama-3.1-70B"),
    ("NousResearch/Hermes-3-Llama-3.1-405B", 406e9, "https://huggingface.co/NousResearch/Hermes-3-Llama-3.1-405B"),
    ("NousResearch/Hermes-4-70B", 70.6e9, "https://huggingface.co/NousResearch/Hermes-4-70B"),
    ("NousResearch/Hermes-4-405B", 406e9, "https://huggingface.co/NousResearch/Hermes-4-405B"),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", 671e9, "https://huggingface.co/deepseek-ai/DeepSeek-V3.1-Terminus"),
    ("Gryphe/MythoMax-L2-13b", 13.0e9, "https://huggingface.co/Gryphe/MythoMax-L2-13b"),
    ("Qwen/Qwen2-72B-Instruct", 72.7e9, "https://huggingface.co/Qwen/Qwen2-72B-Instruct"),
    ("Qwen/Qwen1.5-7B-Chat", 7.72e9, "https://huggingface.co/Qwen/Qwen1.5-7B-Chat"),
    ("Qwen/Qwen3-4B-Thinking-2507", 4.0e9, "https://huggingface.co/Qwen/Qwen3-4B-Thinking-2507"),
    # DeepSeek V4 (dsv4): Flash only; Pro is checked to its card's two figures (tests/knowledge/test_deepseek_v4.py)
    (
        "deepseek-ai/DeepSeek-V4-Flash",
        284e9,
        "https://huggingface.co/deepseek-ai/DeepSeek-V4-Flash (284B, 13B activated)",
    ),
]

# Parameters of transformers 5.24's own model built from each catalogued config (quantization_config dropped).
TRANSFORMERS_COUNTS = {
    "Qwen/Qwen2.5-VL-3B-Instruct": 3_754_622_976,  # Qwen2_5_VLForConditionalGeneration, vision 668,684,288
    "Qwen/Qwen2.5-VL-7B-Instruct": 8_292_166_656,  # vision 676,550,144
    "Qwen/Qwen3-VL-4B-Instruct": 4_437_815_808,
    "Qwen/Qwen3-VL-32B-Thinking": 33_357_390_064,
    "nvidia/Qwen3-235B-A22B-NVFP4": 235_093_634_560,
    "nvidia/MiniMax-M2.5-NVFP4": 228_689_748_992,
    "nvidia/Gemma-4-31B-IT-NVFP4": 31_273_086_512,
    "allenai/OLMo-2-1124-7B": 7_298_617_344,  # Olmo2ForCausalLM: q_norm and k_norm over all heads
    "allenai/OLMo-2-1124-13B": 13_716_198_400,
    "allenai/OLMo-2-0325-32B": 32_234_279_936,
    "nvidia/MiniMax-M2.7-NVFP4": 228_689_748_992,
    "meta-llama/Llama-3.2-90B-Vision-Instruct": 88_593_355_323,  # MllamaForConditionalGeneration
    "Qwen/Qwen2.5-32B-Instruct": 32_763_876_352,
    "LGAI-EXAONE/EXAONE-4.0-32B": 32_003_216_384,  # Exaone4Attention: q_norm and k_norm per head
    "mistralai/Devstral-2-123B-Instruct-2512": 125_025_988_608,
    "allenai/Olmo-3.1-32B-Instruct": 32_233_522_176,  # Olmo3Attention: q_norm and k_norm over all heads
    "Qwen/Qwen3.5-9B": 9_409_813_744,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": 32_763_876_352,
    "Qwen/Qwen2.5-1.5B": 1_543_714_304,
    "Qwen/Qwen2.5-72B": 72_706_203_648,
    "meta-llama/Llama-2-7b-hf": 6_738_415_616,
    "meta-llama/Llama-2-13b-hf": 13_015_864_320,
    "meta-llama/Llama-2-70b-hf": 68_976_648_192,
    "nvidia/Qwen3-30B-A3B-NVFP4": 30_532_122_624,
    "nvidia/Qwen3-32B-NVFP4": 32_762_123_264,
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": 30_532_122_624,  # Qwen3MoeForCausalLM
    "HuggingFaceTB/SmolLM3-3B": 3_075_098_624,  # SmolLM3ForCausalLM: tie_word_embeddings defaults to true
    "naver-hyperclovax/HyperCLOVAX-SEED-Text-Instruct-0.5B": 566_281_216,  # LlamaForCausalLM, tied head
    "meta-llama/Llama-3.2-1B": 1_235_814_400,  # LlamaForCausalLM, tied head
    # Mistral3ForConditionalGeneration: 1,024 short until the projector's RMSNorm was counted (test_config_families)
    "mistralai/Devstral-Small-2-24B-Instruct-2512": 24_011_361_280,
    # Qwen/Alibaba widening (cat-qwen): transformers 5.20.2 (vllm-0.33.0 parser environment)
    "Qwen/Qwen3-8B-FP8": 8_190_735_360,  # Qwen3ForCausalLM, untied head
    "Qwen/Qwen3-32B-AWQ": 32_762_123_264,
    "Qwen/Qwen3-Embedding-0.6B": 595_776_512,  # tied head: the checkpoint's Qwen3Model total (595,776,512)
    "Qwen/Qwen3-Embedding-4B": 4_021_774_336,
    "Qwen/Qwen3-Reranker-0.6B": 595_776_512,
    "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8": 79_674_391_296,  # Qwen3NextForCausalLM (no MTP block)
    # fourth widening (cat-western)
    "meta-llama/Llama-2-7b-chat-hf": 6_738_415_616,  # LlamaForCausalLM
    "meta-llama/Llama-2-13b-chat-hf": 13_015_864_320,
    "mistralai/Mistral-7B-Instruct-v0.1": 7_241_732_096,  # MistralForCausalLM
    "google/gemma-7b-it": 8_537_680_896,  # GemmaForCausalLM, tied head
    "google/gemma-2b-it": 2_506_172_416,
    "meta-llama/Meta-Llama-3-8B": 8_030_261_248,
    "meta-llama/Meta-Llama-3-70B-Instruct": 70_553_706_496,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": 1_777_088_000,  # Qwen2ForCausalLM, untied head
    "TheBloke/Llama-2-7B-AWQ": 6_738_415_616,  # quantization_config dropped: Llama-2-7b's architecture
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": 8_030_261_248,  # LlamaForCausalLM
    "mistralai/Ministral-8B-Instruct-2410": 8_019_808_256,  # MistralForCausalLM
    "google/gemma-2-9b": 9_241_705_984,  # Gemma2ForCausalLM, tied head
    "meta-llama/Llama-3.2-11B-Vision-Instruct": 10_670_220_835,  # MllamaForConditionalGeneration
    "meta-llama/Meta-Llama-3.1-8B-Instruct": 8_030_261_248,  # LlamaForCausalLM
    # fourth widening (cat-misc), transformers 5.20.2 (vllm-0.33.0 parser environment)
    "bigcode/starcoder2-7b": 7_173_923_840,  # Starcoder2ForCausalLM: biased projections and LayerNorms, tied head
    "HuggingFaceTB/SmolLM2-135M-Instruct": 134_515_008,  # LlamaForCausalLM, tied head
    "HuggingFaceTB/SmolLM2-1.7B-Instruct": 1_711_376_384,  # LlamaForCausalLM, tied head
    "stabilityai/stablelm-2-zephyr-1_6b": 1_644_515_328,  # StableLmForCausalLM: qkv biases, LayerNorms with bias
    "CohereForAI/aya-23-8B": 8_028_033_024,  # CohereForCausalLM: tie_word_embeddings defaults to true
    "ibm-granite/granite-3.3-8b-instruct-FP8": 8_170_864_640,  # GraniteForCausalLM (quantization_config dropped)
    "llava-hf/llava-1.5-7b-hf": 7_063_427_072,  # LlavaForConditionalGeneration: text sizes from LlamaConfig's defaults
    "allenai/olmOCR-2-7B-1025": 8_292_166_656,  # Qwen2_5_VLForConditionalGeneration, vision 676,550,144
    "ALLaM-AI/ALLaM-7B-Instruct-preview": 7_000_559_616,  # LlamaForCausalLM
    # large MoE / MLA widening (cat-moe): transformers 5.20.2 (the vllm-0.33.0 parser environment)
    "MiniMaxAI/MiniMax-M2": 228_689_748_992,  # MiniMaxM2ForCausalLM
    "moonshotai/Kimi-Linear-48B-A3B-Instruct": 49_122_675_072,  # KimiLinearForCausalLM
    "zai-org/GLM-4.5-Air": 106_852_245_504,  # Glm4MoeForCausalLM (no MTP layer)
    "zai-org/GLM-4.5V": 107_710_927_360,  # Glm4vMoeForConditionalGeneration, vision 858,681,856
    # catalogued earlier; its entry now keeps the quoted config's attention_bias and use_qk_norm (q/k/v biases and
    # q_norm/k_norm in the report's module tree): 1,342,464 more than before
    "zai-org/GLM-4.5-FP8": 352_797_814_784,
    # GptOssForCausalLM: each router's per-expert bias counted (was layers x experts short: 4,608 and 768)
    "openai/gpt-oss-120b": 116_829_156_672,
    "openai/gpt-oss-20b": 20_914_757_184,
    # pooling models (pool): not a transformers run; the checkpoints' safetensors totals in gogongxt/python@ec996269
    "Qwen/Qwen3-Reranker-8B": 8_188_548_096,  # Qwen3ForCausalLM, untied head: its 399 tensors, lm_head included
    "Qwen/Qwen3-Embedding-8B": 7_567_295_488 + 151_665 * 4096,  # its 398 tensors (no lm_head) + the config's head
}


# A checkpoint whose config has the layer shapes of a catalogued model: (checkpoint, the catalogued model)
SAME_LAYOUT = [
    ("nvidia/Qwen3-235B-A22B-NVFP4", "Qwen/Qwen3-235B-A22B"),
    ("nvidia/MiniMax-M2.5-NVFP4", "MiniMaxAI/MiniMax-M2.5"),
    ("nvidia/MiniMax-M2.7-NVFP4", "MiniMaxAI/MiniMax-M2.7"),
    ("nvidia/DeepSeek-V3.1-NVFP4", "deepseek-ai/DeepSeek-V3.1"),
    ("nvidia/Gemma-4-31B-IT-NVFP4", "google/gemma-4-31B-it"),
    ("nvidia/Gemma-4-26B-A4B-NVFP4", "google/gemma-4-26B-A4B"),
    ("nvidia/Qwen3.5-397B-A17B-NVFP4", "Qwen/Qwen3.5-397B-A17B"),
    ("nvidia/Qwen3.5-122B-A10B-NVFP4", "Qwen/Qwen3.5-122B-A10B"),
    ("nvidia/GLM-5-NVFP4", "zai-org/GLM-5"),
    ("zai-org/GLM-5-FP8", "zai-org/GLM-5"),
    ("nvidia/GLM-5.1-NVFP4", "zai-org/GLM-5.1"),
    ("zai-org/GLM-5.1-FP8", "zai-org/GLM-5.1"),
    ("moonshotai/Kimi-K2.6", "moonshotai/Kimi-K2.5"),
    ("nvidia/Kimi-K2.5-NVFP4", "moonshotai/Kimi-K2.5"),
    ("nvidia/Kimi-K2.6-NVFP4", "moonshotai/Kimi-K2.5"),
    ("nvidia/Kimi-K2.7-Code-NVFP4", "moonshotai/Kimi-K2.5"),
    ("Qwen/Qwen3-VL-32B-Thinking", "Qwen/Qwen3-VL-32B-Instruct"),
    ("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    ("meta-llama/Meta-Llama-3.1-70B", "meta-llama/Llama-3.1-70B"),
    ("meta-llama/Meta-Llama-3.1-405B", "meta-llama/Llama-3.1-405B"),
    ("nvidia/DeepSeek-V3-0324-NVFP4", "deepseek-ai/DeepSeek-V3"),
    ("nvidia/Qwen3-30B-A3B-NVFP4", "Qwen/Qwen3-30B-A3B"),
    ("nvidia/Qwen3-32B-NVFP4", "Qwen/Qwen3-32B"),
    ("Qwen/Qwen3-30B-A3B-Thinking-2507-FP8", "Qwen/Qwen3-30B-A3B-Thinking-2507"),
    ("meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct"),
    # Qwen/Alibaba widening (cat-qwen)
    ("Qwen/Qwen3-8B-FP8", "Qwen/Qwen3-8B"),
    ("Qwen/Qwen3-32B-AWQ", "Qwen/Qwen3-32B"),
    ("Qwen/Qwen3-Reranker-0.6B", "Qwen/Qwen3-Embedding-0.6B"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct-FP8", "Qwen/Qwen3-Next-80B-A3B-Instruct"),
    # fourth widening (cat-western)
    ("meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf"),
    ("meta-llama/Llama-2-13b-chat-hf", "meta-llama/Llama-2-13b-hf"),
    ("mistralai/Mistral-7B-Instruct-v0.1", "mistralai/Mistral-7B-v0.1"),
    ("google/gemma-7b-it", "google/gemma-7b"),
    ("google/gemma-2b-it", "google/gemma-2b"),
    ("meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B-Instruct"),
    ("meta-llama/Meta-Llama-3-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct"),
    ("TheBloke/Llama-2-7B-AWQ", "meta-llama/Llama-2-7b-hf"),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "meta-llama/Llama-3.1-8B"),
    ("google/gemma-2-9b", "google/gemma-2-9b-it"),
    ("meta-llama/Llama-3.2-11B-Vision-Instruct", "meta-llama/Llama-3.2-11B-Vision"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
    ("ibm-granite/granite-3.3-8b-instruct-FP8", "ibm-granite/granite-3.3-8b-instruct"),
    ("allenai/olmOCR-2-7B-1025", "Qwen/Qwen2.5-VL-7B-Instruct"),
    ("humain-ai/ALLaM-7B-Instruct-preview", "ALLaM-AI/ALLaM-7B-Instruct-preview"),
    ("MiniMaxAI/MiniMax-M2", "MiniMaxAI/MiniMax-M2.5"),
    # quantized checkpoints (cat-quant)
    ("TheBloke/Llama-2-7B-Chat-GPTQ", "meta-llama/Llama-2-7b-chat-hf"),
    ("TheBloke/Llama-2-13B-chat-GPTQ", "meta-llama/Llama-2-13b-chat-hf"),
    ("TheBloke/Llama-2-7B-GPTQ", "meta-llama/Llama-2-7b-hf"),
    ("TheBloke/Mistral-7B-Instruct-v0.1-AWQ", "mistralai/Mistral-7B-Instruct-v0.1"),
    ("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-32B-Instruct"),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "meta-llama/Llama-3.1-70B-Instruct"),
    # popular base/instruct widening (cat-pop): fine-tunes and re-releases with the layers of a catalogued model
    ("mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Base-2407"),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "meta-llama/Llama-3.3-70B-Instruct"),
    ("NousResearch/Hermes-3-Llama-3.1-70B", "meta-llama/Llama-3.1-70B"),
    ("NousResearch/Hermes-4-70B", "meta-llama/Llama-3.1-70B"),
    ("NousResearch/Hermes-3-Llama-3.1-405B", "meta-llama/Llama-3.1-405B"),
    ("NousResearch/Hermes-4-405B", "meta-llama/Llama-3.1-405B"),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
    ("moonshotai/Kimi-K2-Instruct-0905", "moonshotai/Kimi-K2-Instruct"),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-ai/DeepSeek-V3.1"),
    ("zai-org/GLM-4.6V", "zai-org/GLM-4.5V"),
    ("openai/gpt-oss-safeguard-20b", "openai/gpt-oss-20b"),
    ("Gryphe/MythoMax-L2-13b", "meta-llama/Llama-2-13b-hf"),
    ("Qwen/Qwen2-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct"),
    ("Qwen/Qwen3-4B-Thinking-2507", "Qwen/Qwen3-4B"),
]


@pytest.mark.parametrize("repo", ADDED)
def test_every_added_entry_resolves(repo: str) -> None:
    facts = catalogued(repo)
    assert facts is not None, repo
    assert facts.name == repo
    assert facts.layers > 0 and facts.hidden_size > 0 and facts.params > facts.active_params / 2 > 0


@pytest.mark.parametrize(("repo", "total", "card"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_added_entries_match_their_published_counts(repo: str, total: float, card: str) -> None:
    facts = catalogued(repo)
    assert facts is not None, repo
    assert facts.params == pytest.approx(total, rel=0.01), card


@pytest.mark.parametrize("repo", list(TRANSFORMERS_COUNTS))
def test_added_entries_count_what_transformers_builds(repo: str) -> None:
    facts = catalogued(repo)
    assert facts is not None, repo
    assert facts.params == TRANSFORMERS_COUNTS[repo]


@pytest.mark.parametrize(
    ("repo", "sliding", "full", "window"),
    [
        ("LGAI-EXAONE/EXAONE-4.0-32B", 48, 16, 4096),
        ("allenai/Olmo-3.1-32B-Instruct", 48, 16, 4096),
        ("Qwen/Qwen2.5-32B-Instruct", 0, 64, None),
    ],
)
def test_added_sliding_layouts_follow_layer_types(repo: str, sliding: int, full: int, window: int | None) -> None:
    facts = catalogued(repo)
    assert facts is not None, repo
    assert (facts.kv_sliding_layers, facts.kv_full_layers) == (sliding, full)
    if window is not None:
        assert facts.sliding_window == window


@pytest.mark.parametrize(("checkpoint", "base"), SAME_LAYOUT, ids=[c for c, _ in SAME_LAYOUT])
def test_checkpoints_of_catalogued_models_keep_their_layout(checkpoint: str, base: str) -> None:
    """A quantized or renamed checkpoint of a catalogued model sizes the same layers, weights and cache.

    (NVIDIA's GLM-5.1 config, written by transformers 5.8, drops head_dim; an MLA cache does not read it.)"""
    from servespec.knowledge.memory import kv_bytes_per_token

    q, b = catalogued(checkpoint), catalogued(base)
    assert q is not None and b is not None
    assert (q.layers, q.experts, q.kv_lora_rank, q.params, q.active_params) == (
        b.layers,
        b.experts,
        b.kv_lora_rank,
        b.params,
        b.active_params,
    )
    assert kv_bytes_per_token(q, 2.0, 1, 1) == kv_bytes_per_token(b, 2.0, 1, 1) > 0


@pytest.mark.parametrize(
    ("checkpoint", "method"),
    [
        ("nvidia/Qwen3-235B-A22B-NVFP4", "nvfp4"),
        ("nvidia/Kimi-K2.7-Code-NVFP4", "nvfp4"),
        ("zai-org/GLM-5-FP8", "fp8"),
        ("zai-org/GLM-5.1-FP8", "fp8"),
        ("Qwen/Qwen3-30B-A3B-Thinking-2507-FP8", "fp8"),
        ("mistralai/Devstral-2-123B-Instruct-2512", "fp8"),
        ("moonshotai/Kimi-K2.6", "int4"),
        ("ibm-granite/granite-3.3-8b-instruct-FP8", "fp8"),
        ("Qwen/Qwen3-VL-4B-Instruct", None),
        ("Qwen/Qwen3-8B-FP8", "fp8"),
        ("Qwen/Qwen3-32B-AWQ", "awq"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct-FP8", "fp8"),
        ("MiniMaxAI/MiniMax-M2", "fp8"),
        ("moonshotai/Kimi-Linear-48B-A3B-Instruct", None),
        ("mistralai/Ministral-3-14B-Instruct-2512", "fp8"),
        ("mistralai/Ministral-3-3B-Instruct-2512", "fp8"),
        ("moonshotai/Kimi-K2-Instruct-0905", "fp8"),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", "fp8"),
        ("openai/gpt-oss-safeguard-20b", "mxfp4"),
        ("Qwen/Qwen2.5-VL-72B-Instruct", None),
    ],
)
def test_quantized_checkpoints_name_their_scheme(checkpoint: str, method: str | None) -> None:
    facts = catalogued(checkpoint)
    assert facts is not None
    assert facts.quant_method == method


def test_smollm3_ties_its_head_when_the_config_is_silent() -> None:
    """SmolLM3's config.json has no tie_word_embeddings; transformers' SmolLM3Config defaults it to true."""
    facts = catalogued("HuggingFaceTB/SmolLM3-3B")
    assert facts is not None
    assert facts.tie_word_embeddings is True
    assert (facts.layers, facts.kv_heads, facts.head_dim) == (36, 4, 128)


@pytest.mark.parametrize(
    ("checkpoint", "file_gib"),
    [
        # the checkpoints' safetensors totals as the cited gogongxt/python reports print them (GiB)
        ("Qwen/Qwen3-8B-FP8", 8.79),
        ("Qwen/Qwen3-32B-AWQ", 18.00),
        ("Qwen/Qwen3-Embedding-0.6B", 1.11),
        # 76.40 GiB of tensors less the MTP block vLLM loads only as a draft (1.55 GiB: 512 FP8 experts, attention, fc)
        ("Qwen/Qwen3-Next-80B-A3B-Instruct-FP8", 74.85),
        # GEMM AWQ, 4-bit, group 128, zero point: the cited report lists its 739 tensors at 3.62 GiB (the
        # unquantized layout would be 12.55 GiB)
        ("TheBloke/Llama-2-7B-AWQ", 3.62),
    ],
)
def test_quantized_checkpoints_weigh_what_their_files_hold(checkpoint: str, file_gib: float) -> None:
    """The weights the estimator loads for an FP8 / AWQ checkpoint match the size of its files: block-wise FP8 with
    bfloat16 scales per 128 x 128, AWQ 4-bit with a 16-bit scale and a 4-bit zero point per 128."""
    from servespec.knowledge.memory import EstimateInput, weight_bytes

    facts = catalogued(checkpoint)
    assert facts is not None
    assert weight_bytes(EstimateInput("vllm", None, facts, None)) / 2**30 == pytest.approx(file_gib, rel=0.01)


def test_kimi_linear_caches_only_its_mla_layers() -> None:
    """Kimi-Linear-48B-A3B: 20 Kimi Delta Attention layers keep a fixed state, the 7 MLA layers (full_attn_layers)
    a per-token latent of kv_lora_rank + qk_rope_head_dim (512 + 64) elements; the checkpoint's safetensors total
    (the cited report: 49,122,681,728) is the count plus the 26 MoE layers' 256-entry e_score_correction_bias
    buffers."""
    from servespec.knowledge.memory import kv_bytes_per_token

    facts = catalogued("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    assert facts is not None and facts.layers == 27
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 7 * (512 + 64) * 2
    assert facts.params + 26 * 256 == 49_122_681_728


@pytest.mark.parametrize(
    ("repo", "layers", "kv_heads", "head_dim"),
    [
        ("Qwen/Qwen3-8B-FP8", 36, 8, 128),
        ("Qwen/Qwen3-32B-AWQ", 64, 8, 128),
        ("Qwen/Qwen3-Embedding-0.6B", 28, 8, 128),
        ("Qwen/Qwen3-Embedding-4B", 36, 8, 128),
        ("Qwen/Qwen3-Reranker-0.6B", 28, 8, 128),
        # Qwen3-Next: only the 12 full-attention layers (every 4th) keep a paged KV cache
        ("Qwen/Qwen3-Next-80B-A3B-Instruct-FP8", 12, 2, 256),
        ("MiniMaxAI/MiniMax-M2", 62, 8, 128),
        ("zai-org/GLM-4.5-Air", 46, 8, 128),
    ],
)
def test_added_entries_cache_keys_and_values_of_their_attention_layers(
    repo: str, layers: int, kv_heads: int, head_dim: int
) -> None:
    """K and V of every KV head of every attention layer, 2 bytes each (heads x head_dim x layers, from config.json)."""
    from servespec.knowledge.memory import kv_bytes_per_token

    facts = catalogued(repo)
    assert facts is not None
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * kv_heads * head_dim * layers * 2


def test_nemotron3_nano_counts_its_router_bias_and_caches_six_layers() -> None:
    """Nemotron 3 Nano (Nemotron-H with MoE blocks): transformers 5.20.2 builds 31,577,937,344 parameters and keeps each
    MoE router's e_score_correction_bias (128 experts) as a buffer; vLLM loads it as a parameter, so servespec counts
    23 x 128 more. Only the six attention layers of the 52 cache keys and values."""
    from servespec.knowledge.memory import kv_bytes_per_token

    facts = catalogued("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert facts is not None
    assert facts.params == 31_577_937_344 + 23 * 128
    assert (facts.layers, facts.kv_full_layers, facts.linear_layers) == (52, 6, 23)
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * 6 * 2 * 128 * 2


def test_chatglm_and_starcoder2_caches_follow_their_configs() -> None:
    """ChatGLM3-6B and GLM-4-9B-Chat: 2 multi-query groups of kv_channels 128 in 28 and 40 layers; StarCoder2-7B: 4 KV
    heads of 128 in 32 layers, each sliding a 4,096-token window (Starcoder2Config.sliding_window, no layer_types)."""
    from servespec.knowledge.memory import kv_bytes_per_token

    glm, sc2 = catalogued("THUDM/chatglm3-6b"), catalogued("bigcode/starcoder2-7b")
    glm4 = catalogued("THUDM/glm-4-9b-chat")
    assert glm is not None and sc2 is not None and glm4 is not None
    assert glm.params == 6_243_584_000  # tests/knowledge/test_config_families.py works it out layer by layer
    assert kv_bytes_per_token(glm, 2.0, 1, 1) == 2 * 28 * 2 * 128 * 2
    # remote code only: per layer 4096 x 4608 + 4608 (query_key_value), 4096 x 4096 (dense), 4096 x 27392 and
    # 13696 x 4096 (the SwiGLU MLP), two RMSNorms; 2 x 151,552 x 4096 embedding and output layer; the final norm
    layer = 4096 * 4608 + 4608 + 4096 * 4096 + 4096 * 27392 + 13696 * 4096 + 2 * 4096
    assert glm4.params == 40 * layer + 2 * 151_552 * 4096 + 4096 == 9_399_951_360
    assert (glm4.layers, glm4.kv_heads, glm4.head_dim, glm4.max_position_embeddings) == (40, 2, 128, 131_072)
    assert kv_bytes_per_token(glm4, 2.0, 1, 1) == 2 * 40 * 2 * 128 * 2
    assert (sc2.kv_sliding_layers, sc2.kv_full_layers, sc2.sliding_window) == (32, 0, 4096)
    assert kv_bytes_per_token(sc2, 2.0, 1, 1) == 2 * 32 * 4 * 128 * 2


def test_llava_text_config_takes_llama_defaults_only_when_nested() -> None:
    """llava-hf's Llava 1.5 config names only the vocabulary and context of its Llama text model; LlavaConfig builds it
    as a LlamaConfig whose defaults give 32 layers of 4096 with 32 heads (MHA) and an 11008-wide MLP. A top-level Llama
    config that names no sizes is still refused: the defaults are those of a wrapper's sub-config."""
    from servespec.knowledge.config_fields import MissingFieldsError
    from servespec.knowledge.memory import kv_bytes_per_token
    from servespec.knowledge.models import facts_from_config

    facts = catalogued("llava-hf/llava-1.5-7b-hf")
    assert facts is not None
    assert (facts.layers, facts.hidden_size, facts.kv_heads, facts.intermediate_size) == (32, 4096, 32, 11008)
    assert (facts.vocab_size, facts.max_position_embeddings) == (32064, 4096)  # the file's, over the defaults
    assert facts.vision_params == 303_507_456 + 20_979_712  # CLIP ViT-L/14-336 and the two-layer projector
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * 32 * 32 * 128 * 2
    with pytest.raises(MissingFieldsError):
        facts_from_config({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 32064}, "llama")


def test_minicpm_2b_is_a_tied_llama_block_without_gqa() -> None:
    """MiniCPM-2B (remote code): per layer four 2304 x 2304 attention projections, a 2304 x 5760 SwiGLU MLP and two
    RMSNorms; one 122,753-row table shared by the embedding and the head; 36 KV heads of 64 in each of 40 layers."""
    from servespec.knowledge.memory import kv_bytes_per_token

    facts = catalogued("openbmb/MiniCPM-2B-sft-bf16")
    assert facts is not None
    layer = 4 * 2304 * 2304 + 3 * 2304 * 5760 + 2 * 2304
    assert facts.params == 40 * layer + 122_753 * 2304 + 2304 == 2_724_880_896
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * 40 * 36 * 64 * 2


def _raw_config(repo: str) -> dict[str, Any]:
    """A catalogued entry's config block as stored in knowledge/data/models.yaml."""
    from servespec.knowledge.models import _catalog

    config: dict[str, Any] = _catalog()[repo.lower()]["config"]
    return config


def test_glm45v_is_glm45_air_with_glm41v_tower() -> None:
    """GLM-4.5V (glm4v_moe): its text model counts what GLM-4.5-Air's does, q, k and v biased (Glm4vMoeTextAttention),
    and its tower is Glm4vVisionModel's (858,681,856 in transformers 5.20.2); the checkpoint's safetensors total (the
    cited report: 107,710,933,120) adds the 45 MoE layers' 128-entry e_score_correction_bias buffers."""
    from servespec.knowledge.memory import kv_bytes_per_token

    vl, air = catalogued("zai-org/GLM-4.5V"), catalogued("zai-org/GLM-4.5-Air")
    assert vl is not None and air is not None
    assert vl.vision_params == 858_681_856
    assert vl.params - vl.vision_params == air.params
    assert vl.params + 45 * 128 == 107_710_933_120
    assert kv_bytes_per_token(vl, 2.0, 1, 1) == kv_bytes_per_token(air, 2.0, 1, 1) == 46 * 8 * 128 * 2 * 2


def test_glm4v_moe_text_biases_qkv_by_default() -> None:
    """Glm4vMoeTextConfig defaults attention_bias to true (transformers 5.20.2): a text_config without the key keeps
    the biases; one that sets it false drops 46 x (q + k + v) of them."""
    from servespec.knowledge.models import facts_from_config

    config = _raw_config("zai-org/GLM-4.5V")
    text = dict(config["text_config"])
    del text["attention_bias"]
    silent = facts_from_config({**config, "text_config": text}, "silent")
    unbiased = facts_from_config({**config, "text_config": {**text, "attention_bias": False}}, "unbiased")
    facts = catalogued("zai-org/GLM-4.5V")
    assert facts is not None
    assert silent.params == facts.params
    assert facts.params - unbiased.params == 46 * (96 * 128 + 2 * 8 * 128)


def test_glm4_moe_counts_its_qk_norms_when_set() -> None:
    """GLM-4.5/4.6/4.7 set use_qk_norm: Glm4MoeAttention then holds q_norm and k_norm over head_dim (transformers
    5.20.2). GLM-4.5-Air's config with the flag set: transformers builds 106,852,257,280 parameters (46 x 256 more)."""
    from servespec.knowledge.models import facts_from_config

    config = _raw_config("zai-org/GLM-4.5-Air")
    facts = facts_from_config({**config, "use_qk_norm": True}, "qk")
    assert facts.params == 106_852_257_280


# quantized checkpoints (cat-quant): (checkpoint, method, its safetensors files in decimal GB as the repo's tree
# page lists them, three significant digits each)
QUANTIZED_FILES = [
    # https://huggingface.co/TheBloke/Llama-2-7B-Chat-GPTQ/tree/refs%2Fpr%2F19: model.safetensors 3.9 GB
    ("TheBloke/Llama-2-7B-Chat-GPTQ", "gptq", (3.90,)),
    # https://huggingface.co/TheBloke/Llama-2-13B-chat-GPTQ/tree/ac57f0a972a560f19aec59b6ba6a41892e1f0dff: 7.26 GB
    ("TheBloke/Llama-2-13B-chat-GPTQ", "gptq", (7.26,)),
    # https://huggingface.co/Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4/tree/main: five shards
    ("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", "gptq", (3.95, 3.98, 3.95, 3.98, 3.48)),
    # https://huggingface.co/hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4/tree/cdc64fda3267703c5c120d9247f1e53d5a8a28e5
    # and /tree/db9578a3ca8283c541f608de8a1d060d35823c6e: nine shards
    (
        "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4",
        "awq",
        (4.97, 4.89, 4.89, 4.89, 4.89, 4.89, 4.89, 3.36, 2.10),
    ),
]


@pytest.mark.parametrize(("checkpoint", "method", "shards_gb"), QUANTIZED_FILES, ids=[q[0] for q in QUANTIZED_FILES])
def test_quantized_checkpoints_weigh_their_safetensors(
    checkpoint: str, method: str, shards_gb: tuple[float, ...]
) -> None:
    """GPTQ and AWQ checkpoints: 4-bit weights, a 16-bit scale and a 4-bit zero point per 128 on every decoder linear
    layer, embedding and LM head in float16 (4.15625 bits a quantized weight). The estimate matches the files within
    0.5 %: the tree pages round each shard to 0.005 GB, and GPTQ's g_idx (an int32 per input row of each layer, 0.1 %)
    is not sized; weights counted at 4 bits without scales would fall 3-4 % short."""
    from servespec.knowledge.memory import EstimateInput, weight_bytes

    facts = catalogued(checkpoint)
    assert facts is not None
    assert facts.quant_method == method
    assert facts.quant_bits == pytest.approx(4 + 20 / 128)
    assert weight_bytes(EstimateInput("vllm", None, facts, None)) == pytest.approx(sum(shards_gb) * 1e9, rel=0.005)


def test_quantized_checkpoints_name_their_awq_and_gptq_schemes() -> None:
    """The AWQ and GPTQ checkpoints without a file-size quote still resolve to their group-quantized scheme."""
    for checkpoint, method in (
        ("TheBloke/Llama-2-7B-GPTQ", "gptq"),
        ("TheBloke/Mistral-7B-Instruct-v0.1-AWQ", "awq"),
    ):
        facts = catalogued(checkpoint)
        assert facts is not None
        assert (facts.quant_method, facts.quant_bits) == (method, pytest.approx(4 + 20 / 128))


def test_swallow_7b_is_llama_2_7b_with_its_extended_vocabulary() -> None:
    """Swallow 7B keeps Llama 2 7B's blocks; only its embedding and untied head grow by the 11,176 tokens its
    Japanese vocabulary adds (43,176 against 32,000), and its KV cache is Llama 2 7B's."""
    from servespec.knowledge.memory import kv_bytes_per_token

    swallow, llama = catalogued("tokyotech-llm/Swallow-7b-hf"), catalogued("meta-llama/Llama-2-7b-hf")
    assert swallow is not None and llama is not None
    assert swallow.params - llama.params == (43176 - 32000) * 4096 * 2
    assert kv_bytes_per_token(swallow, 2.0, 1, 1) == kv_bytes_per_token(llama, 2.0, 1, 1) == 32 * 2 * 4096 * 2


def test_granite4_h_micro_counts_mamba2_and_attention_layers_by_hand() -> None:
    """Granite 4.0 H Micro (granitemoehybrid, no experts): 36 Mamba-2 layers and 4 attention layers of 2048, each with
    a shared SwiGLU MLP of 8192 and two RMSNorms; a tied 100,352-row embedding. A Mamba-2 mixer of 64 heads of 64
    (inner 4096, one group, state 128): in_proj to 2 x 4096 + 2 x 128 + 64, a depthwise convolution of width 4 with bias
    over 4096 + 2 x 128 channels, dt_bias, A_log and D per head, the gated norm over 4096, out_proj back to 2048.
    Only the attention layers cache keys and values (8 KV heads of 2048 / 32)."""
    from servespec.knowledge.memory import kv_bytes_per_token

    facts = catalogued("ibm-granite/granite-4.0-h-micro")
    assert facts is not None
    hidden, inner, state, heads = 2048, 4096, 128, 64
    mixer = hidden * (2 * inner + 2 * state + heads) + (inner + 2 * state) * 5 + 3 * heads + inner + inner * hidden
    mlp = hidden * 2 * 8192 + 8192 * hidden
    attention = hidden * hidden + 2 * hidden * 512 + hidden * hidden
    total = 36 * (mixer + mlp + 2 * hidden) + 4 * (attention + mlp + 2 * hidden) + 100_352 * hidden + hidden
    assert facts.params == total == 3_191_396_096
    assert (facts.layers, facts.kv_full_layers, facts.linear_layers) == (40, 4, 36)
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * 4 * 8 * 64 * 2


def test_lfm25_is_lfm2_2_6b_with_a_larger_vocabulary() -> None:
    """LFM2.5-2.6B has LFM2-2.6B's layout (30 layers of 2048: 22 short-convolution blocks, 8 GQA layers); the LFM2-2.6B
    card states 2,569,272,320 parameters with a 65,536-token vocabulary. The same config with that vocabulary counts
    exactly that, and LFM2.5's 128,000 tokens add their tied embedding rows. Only the 8 attention layers cache K and
    V."""
    from servespec.knowledge.memory import kv_bytes_per_token
    from servespec.knowledge.models import facts_from_config

    facts = catalogued("LiquidAI/LFM2.5-2.6B")
    assert facts is not None
    lfm2 = facts_from_config({**_raw_config("LiquidAI/LFM2.5-2.6B"), "vocab_size": 65_536}, "lfm2-2.6b")
    assert lfm2.params == 2_569_272_320
    assert facts.params == 2_569_272_320 + (128_000 - 65_536) * 2048
    assert (facts.layers, facts.kv_full_layers, facts.linear_layers) == (30, 8, 22)
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 2 * 8 * 8 * 64 * 2


def test_qwen25_vl_72b_is_qwen25_72b_with_its_vit() -> None:
    """Qwen2.5-VL-72B-Instruct's language model counts what Qwen2.5-72B-Instruct does; its ViT is Qwen2.5-VL-7B's but
    for the merger's output width (8192, not 3584) and an MLP of 3456 (not 3420) in each of the 32 blocks."""
    vl, text, small = (
        catalogued("Qwen/Qwen2.5-VL-72B-Instruct"),
        catalogued("Qwen/Qwen2.5-72B-Instruct"),
        catalogued("Qwen/Qwen2.5-VL-7B-Instruct"),
    )
    assert vl is not None and text is not None and small is not None
    assert vl.params - vl.vision_params == text.params
    merger = 5120 * (8192 - 3584) + (8192 - 3584)
    mlp = 32 * (3 * 1280 * (3456 - 3420) + 2 * (3456 - 3420))
    assert vl.vision_params - small.vision_params == merger + mlp


def test_ministral3_14b_counts_the_cards_language_model() -> None:
    """The Ministral 3 14B card: a 13.5B language model and a 0.4B vision encoder (FP8 release, the tower in bf16)."""
    facts = catalogued("mistralai/Ministral-3-14B-Instruct-2512")
    assert facts is not None
    assert facts.params - facts.vision_params == pytest.approx(13.5e9, rel=0.01)
    assert facts.vision_params == pytest.approx(0.4e9, rel=0.1)
    assert facts.max_position_embeddings == 262_144
