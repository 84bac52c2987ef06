"""Derive the ``mla_kv_cache`` fact of every catalogued vLLM release from its own source.

    python scripts/catalog/vllm_mla.py            # every catalogued release
    python scripts/catalog/vllm_mla.py 0.6.3      # only these

How a release caches multi-head latent attention (DeepSeek-V2/V3 and the models vLLM runs through the same code),
read by ``ast`` from the files cited:

* the latent cache: ``ModelConfig.use_mla`` (vllm/config.py, vllm/config/model.py; 0.7.1 on) is
  ``is_deepseek_mla and not envs.VLLM_MLA_DISABLE`` (0.7.1/0.7.2: and a quantization in a short list); then the
  attention layer caches one ``kv_lora_rank + qk_rope_head_dim`` vector per token and layer (``get_head_size``,
  ``get_num_kv_heads`` 1, one cache tensor instead of K and V). ``latent_model_types``: the ``hf_text_config``
  model types ``is_deepseek_mla`` names (vllm/config.py or, from 0.14, transformers_utils/
  model_arch_config_convertor.py); ``latent_quantizations``: the methods ``use_mla`` lets through (None: any);
  ``disable_env``: the environment variable that turns it off.
* otherwise (releases before 0.7.1, or the latent cache off), DeepSeek-V2's attention expands the latent into
  per-head keys and values and caches both for every local head (``num_kv_heads=self.num_local_heads``):
  ``padded_head_size`` is the constant head size ``DeepseekV2Attention`` passes to ``Attention`` (256 in
  0.5.1-0.6.6.post1: keys of ``qk_nope + qk_rope`` and values of ``v_head_dim`` zero-padded to 256); absent where it
  passes ``self.qk_head_dim`` (values padded to ``qk_nope + qk_rope``).
* ``text_model_types``: multimodal configs vLLM builds with a DeepSeek text config (transformers_utils/configs/
  ``*.py``: a class whose ``model_type = "X"`` sets ``text_config = DeepseekV2Config(...)``), so
  ``hf_text_config.model_type`` is the DeepSeek one (Kimi-VL: ``kimi_vl`` -> ``deepseek_v2``).
* ``deepseek_v2``: whether the release has the DeepSeek-V2 model at all (model_executor/models/deepseek_v2.py,
  0.5.1 on).

Sources are the releases' sdists, unpacked by scripts/catalog/vllm_mxfp4.py's ``sdist`` (its wheel fallback for
0.15.x). A development tool: the CLI never imports it.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import srcast
import vllm as builder  # scripts/catalog/vllm.py (url, fetch, vkey)
import vllm_sampler
from catalog_io import releases_dir

from servespec.engines.catalog import MlaKvCache

MODEL = "vllm/model_executor/models/deepseek_v2.py"
ARCH = "vllm/transformers_utils/model_arch_config_convertor.py"
CONFIGS = "vllm/transformers_utils/configs"


def _config_files(src: Path) -> list[str]:
    return [*builder._config_files(src), ARCH]


def _functions(src: Path, name: str) -> list[tuple[str, ast.FunctionDef]]:
    """Every function ``name`` in the release's config files (a ModelConfig property, or the 0.14+ converter)."""
    out = []
    for rel in _config_files(src):
        tree = srcast.parse(src, rel)
        for node in ast.walk(tree) if tree is not None else []:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                out.append((rel, node))
    return out


def _function(src: Path, name: str) -> tuple[str, ast.FunctionDef] | None:
    found = _functions(src, name)
    return found[0] if found else None


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _membership(function: ast.FunctionDef, left: str) -> ast.Compare | None:
    """The first ``<...>.left in (...)`` / ``not in [...]`` test in ``function`` with string constants."""
    for node in ast.walk(function):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            target = node.left
            if isinstance(target, ast.Attribute) and target.attr == left and _strings(node.comparators[0]):
                return node
    return None


def _latent(version: str, src: Path) -> tuple[dict[str, Any], list[str]]:
    """(fields, sources) of the latent cache: ``latent_model_types``, ``latent_quantizations``, ``disable_env``."""
    use = _function(src, "use_mla")
    if use is None:
        return {"latent_model_types": []}, []
    rel, node = use
    sources = [builder.url(version, rel, node.lineno) + " (ModelConfig.use_mla)"]
    env = next(
        (
            n.attr
            for n in ast.walk(node)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "envs"
        ),
        None,
    )
    quant = _membership(node, "quantization")
    quantizations = _strings(quant.comparators[0]) if quant is not None else None
    if quant is not None:
        sources.append(builder.url(version, rel, quant.lineno) + " (quantization methods the latent cache takes)")
    types: list[str] = []
    for where, function in _functions(src, "is_deepseek_mla"):  # 0.14+: ModelConfig's delegates to the converter
        test = _membership(function, "model_type")
        if test is not None:
            types = _strings(test.comparators[0])
            sources.append(builder.url(version, where, test.lineno) + " (is_deepseek_mla: hf_text_config.model_type)")
            break
    return {"latent_model_types": types, "latent_quantizations": quantizations, "disable_env": env}, sources


def _padded(version: str, src: Path) -> tuple[int | None, str | None]:
    """The constant head size DeepseekV2Attention passes to ``Attention`` (None: a computed one), and its line."""
    tree = srcast.parse(src, MODEL)
    cls = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DeepseekV2Attention"), None
    ) if tree is not None else None  # fmt: skip
    if cls is None:
        return None, None
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Attention":
            size = node.args[1] if len(node.args) > 1 else None
            where = builder.url(version, MODEL, node.lineno) + " (DeepseekV2Attention: Attention(num_local_heads, "
            if isinstance(size, ast.Constant) and isinstance(size.value, int):
                return size.value, where + f"{size.value}, num_kv_heads=num_local_heads))"
            return None, where + "qk_head_dim, num_kv_heads=num_local_heads))"
    return None, None


def _text_types(version: str, src: Path) -> tuple[dict[str, str], list[str]]:
    """Multimodal config classes whose ``text_config`` vLLM builds as a DeepSeek config: outer -> inner model type."""
    folder = src / CONFIGS
    out: dict[str, str] = {}
    sources: list[str] = []
    inner_of = {"DeepseekV2Config": "deepseek_v2", "DeepseekV3Config": "deepseek_v3"}
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            outer = next(
                (
                    s.value.value
                    for s in cls.body
                    if isinstance(s, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "model_type" for t in s.targets)
                    and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, str)
                ),
                None,
            )
            built = [
                n
                for n in ast.walk(cls)
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "text_config" for t in n.targets)
                and isinstance(n.value, ast.Call)
                and isinstance(n.value.func, ast.Name)
                and n.value.func.id in inner_of
            ]
            if outer and built:
                call = built[0].value
                assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                out[outer] = inner_of[call.func.id]
                rel = str(path.relative_to(src))
                sources.append(builder.url(version, rel, built[0].lineno) + f" ({outer}: text_config {call.func.id})")
    return out, sources


def mla_kv_cache(version: str, src: Path) -> dict[str, Any]:
    """The release's ``mla_kv_cache`` fact (see the module docstring)."""
    latent, sources = _latent(version, src)
    padded, where = _padded(version, src)
    texts, text_sources = _text_types(version, src)
    has_model = (src / MODEL).is_file()
    fact: dict[str, Any] = {**latent, "deepseek_v2": has_model, "text_model_types": texts}
    if padded is not None:
        fact["padded_head_size"] = padded
    if where:
        sources.append(where)
    elif not has_model:
        sources.append(builder.url(version, "vllm/model_executor/models") + " (no deepseek_v2.py)")
    sources += text_sources
    fact["source"] = "; ".join(sources)
    return fact


def main(argv: list[str]) -> int:
    folder = releases_dir("vllm")
    wanted = set(argv)
    for path in sorted(folder.glob("*.json"), key=lambda p: builder.vkey(p.stem) if p.stem[0].isdigit() else ()):
        if path.name == "options.json" or (wanted and path.stem not in wanted):
            continue
        data = json.loads(path.read_text())
        version = data["version"]
        fact = mla_kv_cache(version, vllm_sampler.tree(version))
        MlaKvCache.model_validate(fact)
        data.setdefault("facts", {})["mla_kv_cache"] = fact
        path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        kind = f"latent for {', '.join(fact['latent_model_types'])}" if fact["latent_model_types"] else "per head"
        print(f"{version}: {kind}; padded head {fact.get('padded_head_size')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
