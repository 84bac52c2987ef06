"""HW rules: dtype, quantization, kernels and driver against the host's GPUs."""

from __future__ import annotations

from collections.abc import Iterator

from servespec.engines.base import CheckpointQuantization
from servespec.engines.images import CUDA_COMPAT_URL, image_policy
from servespec.findings import Finding, Severity
from servespec.hostpaths import is_local_path
from servespec.knowledge import resolve
from servespec.knowledge.gpus import CUDA_GPUS_URL
from servespec.rules.base import Rule, placements, quoted, refusal
from servespec.spec.fleet import Fleet, HostView

_VLLM_BF16 = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/platforms/cuda.py"


def _cc(host: HostView) -> tuple[int, int] | None:
    """The host's CUDA compute capability; None when unknown or not an NVIDIA GPU (an AMD card's major.minor is
    HIP's, which NVIDIA's thresholds do not measure: the rules resting on them skip it)."""
    gpu = resolve.host_gpus(host)
    if not gpu.count or gpu.model is None:
        return None
    return gpu.model.cuda_capability


def _text(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


class DtypeNotSupported(Rule):
    """The dtype must be supported by the GPU: bfloat16 needs compute capability 8.0 or newer.

    vLLM: "Bfloat16 is only supported on GPUs with compute capability of at least 8.0.
    Your {gpu} GPU has compute capability {x.y}. You can use float16 instead by explicitly
    setting the `dtype` flag" (platforms/cuda.py, check_if_supports_dtype). TensorRT-LLM
    raises "Pre SM 80 GPUs do not support bfloat16". With ``dtype: auto`` engines fall
    back to float16 on such GPUs, so only an explicit bfloat16 is an error. T4 (7.5) and
    V100 (7.0) are the common cases. AMD Instinct cards are not judged: they have no CUDA compute
    capability, and every catalogued one (CDNA 2 and later) computes in bfloat16.

    Fix: set ``model.dtype: float16`` (or ``auto``), or use an Ampere or newer GPU.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/platforms/cuda.py ;
    compute capabilities: https://developer.nvidia.com/cuda-gpus
    """

    id = "HW001"
    name = "hardware.dtype"
    severity = Severity.ERROR
    evidence = (refusal(_VLLM_BF16 + "#L509-L514", note="check_if_supports_dtype raises on bfloat16 below 8.0."),)
    summary = "dtype not supported by the GPU (bfloat16 needs compute capability 8.0+)"
    sources = (_VLLM_BF16, CUDA_GPUS_URL)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            cc = _cc(host)
            if cc is None or deployment.spec.model.dtype != "bfloat16" or cc >= (8, 0):
                continue
            gpu = resolve.host_gpus(host).model
            assert gpu is not None
            yield self.report(
                deployment.document,
                f"bfloat16 needs compute capability 8.0; {host.name}'s {gpu.display_name} has {_text(cc)}",
                ("model", "dtype"),
                hint="set model.dtype: float16, or place it on an Ampere or newer GPU",
            )


def _method(known: resolve.Resolved) -> str | None:
    """The quantization the engine must run: the spec's explicit one, else (``auto``) the checkpoint's.

    A checkpoint's method is judged only where the spec names none and the engine's profile
    maps it (``fp8``, ``awq``, ``nvfp4``, ``mxfp4`` ...) or the release has a method of that name
    (ModelOpt FP8: ``modelopt``); formats neither names pass.
    A ``.gguf`` file is a GGUF checkpoint: ``auto`` means gguf there (vLLM detects it the same way,
    ``check_gguf_file``; llama.cpp and Ollama load nothing else).
    """
    chosen = known.deployment.spec.model.quantization
    if chosen not in (None, "auto"):
        return chosen
    if str(known.deployment.spec.model.source).endswith(".gguf"):
        return "gguf"
    facts = known.model.facts
    stored = facts.quant_method if facts else None
    if stored is None or known.engine.quantization_entry(known.release, stored) is None:
        return None
    return stored


class QuantizationNeedsNewerGpu(Rule):
    """The quantization method's kernels must run on the GPU, for this engine.

    Each engine declares a minimum compute capability per method: vLLM's
    ``QuantizationConfig.get_min_capability()`` (AWQ 7.5, FP8 8.0 through Marlin
    weight-only kernels, GPTQ 6.0 in 0.11.0), SGLang's the same way, TensorRT-LLM's
    support matrix (FP8 needs Ada/Hopper 8.9+, NVFP4 Blackwell 10.0+). The engine refuses
    to start: "The quantization method X is not supported for the current GPU. Minimum
    capability: N. Current capability: M." AMD Instinct cards are not judged: the minimums are
    CUDA capabilities, and an engine's ROCm platform decides its methods by its own list.

    Fix: pick a method the GPU supports (the hint lists the minimum), or a newer GPU.

    Source: https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/__init__.py ;
    https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/docs/source/reference/support-matrix.md
    """

    id = "HW002"
    name = "hardware.quantization"
    severity = Severity.ERROR
    evidence = (
        refusal(
            "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/__init__.py#L261-L266",
            note="verify_quantization refuses below get_min_capability().",
        ),
    )
    summary = "quantization not supported by the GPU for this engine"
    sources = (
        "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/config/__init__.py",
        "https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/docs/source/reference/support-matrix.md",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            cc = _cc(host)
            known = resolve.resolved(deployment)
            method = _method(known)
            release = known.release
            if cc is None or method is None or release is None:
                continue
            supported, minimum = known.engine.quantization_support(release, method)
            if not supported or minimum is None or cc >= minimum:
                continue
            yield self.report(
                deployment.document,
                f"{method} on {deployment.spec.engine.name} {release.version} needs compute capability "
                f"{_text(minimum)}; {host.name}'s GPU has {_text(cc)}",
                ("model", "quantization"),
                hint=f"use a quantization that runs on {_text(cc)} or a GPU with {_text(minimum)}+",
            )


class FormatNotSupported(Rule):
    """The engine must be able to load the model's quantization or file format.

    TGI has no GGUF support (its Quantization enum has no gguf; GGUF is only served by the
    separate llama.cpp backend image); llama.cpp loads GGUF only and Ollama pulls GGUF
    models by ``name:tag`` (or ``hf.co/<repo>``), which no other engine can load; TensorRT-LLM
    takes quantization from ModelOpt checkpoints and has no GGUF; the newest vLLM release
    catalogued dropped GGUF. A ``.gguf`` model file is a GGUF checkpoint (``quantization`` unset or
    ``auto`` reads it so); another method named for it is an error. A Hugging Face
    repository for llama.cpp (``--hf-repo``, which picks a GGUF file of the repo) without
    ``quantization: gguf`` is an error where servespec knows the checkpoint and it is not GGUF
    (its facts: a safetensors ``config.json``), and a warning where it knows nothing of the repo:
    whether it holds a GGUF file is not known, so refusing it would be a guess.

    ``model.quantization`` takes servespec's names (each engine's profile maps them) or any
    method the release itself accepts: its catalog's ``quantization_methods``, the release's
    ``--quantization`` choices (vLLM ``QUANTIZATION_METHODS`` in
    vllm/model_executor/layers/quantization/__init__.py, SGLang's the same in
    srt/layers/quantization/__init__.py); a name that is neither is refused by the engine's
    argument parser. Formats the engine reads from the checkpoint (``int4``, ``w4a16``, ``w8a8``
    of compressed-tensors, ``auto_round``) need one of their loading methods in the release; a
    release without one is a warning (its checkpoint detection is not a refusal at a source line).
    On an engine whose catalog lists no methods (TensorRT-LLM, XInference, OpenLLM), a name
    servespec has no mapping for is a warning too; GGUF-only engines refuse every other format.

    Fix: pick an engine that loads the format, or a checkpoint in a format the engine loads.

    Source: https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs ;
    engine catalogs under src/servespec/engines/<name>/releases/
    """

    id = "HW003"
    name = "hardware.format"
    severity = Severity.ERROR
    evidence = (
        refusal(
            "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs#L407",
            note="The release's quantization choices (clap value_enum, argparse choices) do not hold the method.",
        ),
    )
    summary = "quantization or model format not supported by the engine"
    sources = (
        "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/launcher/src/main.rs",
        "https://github.com/vllm-project/vllm/blob/v0.12.0/vllm/model_executor/layers/quantization/__init__.py",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            known = resolve.resolved(deployment)
            yield from self._source_format(known)
            spec = deployment.spec
            release = known.release
            method = _method(known)
            gguf_file = spec.model.source.endswith(".gguf")
            if gguf_file and method != "gguf":
                yield self.report(
                    deployment.document,
                    f"the model is a .gguf file but quantization is {method}",
                    ("model", "quantization"),
                    hint="set model.quantization: gguf (or auto)",
                )
            if method is None or release is None:
                continue
            supported, _ = known.engine.quantization_support(release, method)
            if not supported:
                title = known.profile.title
                loads = ", ".join(sorted(known.profile.quantization)) or "none"
                own = ", ".join(sorted(release.facts.quantization_methods))
                also = f"; or one of the release's own methods: {own}" if own else ""
                entry = known.profile.quantization.get(method)
                if isinstance(entry, CheckpointQuantization) and entry.methods:
                    # A format the engine detects from the checkpoint: the release's method list lacking
                    # its loaders is no refusal seen at a source line, so it is a warning.
                    yield self.report(
                        deployment.document,
                        f"{title} {release.version} has none of {', '.join(entry.methods)} among its quantization "
                        f"methods: it may not load {method} checkpoints",
                        ("model", "quantization"),
                        hint=f"use a release that has {entry.methods[0]}, or choose another engine",
                        severity=Severity.WARNING,
                    )
                    continue
                if own or known.profile.model_format != "hf" or method in known.profile.quantization:
                    # The release's own method list (its --quantization choices) lacks it, or the engine
                    # loads GGUF files or library tags only: a refusal.
                    yield self.report(
                        deployment.document,
                        f"{title} {release.version} cannot load {method} models: it is not one of the release's "
                        "quantization methods",
                        ("model", "quantization"),
                        hint=f"{title} loads: {loads}{also}; or choose another engine",
                    )
                    continue
                yield self.report(
                    deployment.document,
                    f"{title} {release.version}: {method} is none of servespec's names for its quantizations and "
                    "the release's catalog lists no methods to check it against: it may not load",
                    ("model", "quantization"),
                    hint=f"servespec knows {title} loads: {loads}",
                    severity=Severity.WARNING,
                )

    def _source_format(self, known: resolve.Resolved) -> Iterator[Finding]:
        deployment = known.deployment
        spec = deployment.spec
        source = str(spec.model.source)
        profile = known.profile
        ollama_tag = ":" in source and "/" not in source and not source.startswith((".", "~"))
        if profile.model_format == "gguf" and _method(known) is None and not source.endswith(".gguf"):
            # A set quantization or a .gguf path is judged by the checks below. A Hub repository is fetched
            # with --hf-repo, which takes a GGUF repo: one servespec knows (its facts) is judged by them; of
            # one it does not know, whether it holds a GGUF file is not known here.
            facts = known.model.facts
            if facts is not None and facts.file_type is not None:
                return  # a GGUF checkpoint
            hub = not is_local_path(source) and facts is None
            yield self.report(
                deployment.document,
                f"{profile.title} loads GGUF models only"
                + (f": servespec cannot tell whether {quoted(source)} holds a GGUF file" if hub else ""),
                ("model", "source"),
                hint="set model.quantization: gguf for a GGUF repo"
                if hub
                else "point model.source at a .gguf file and set quantization: gguf",
                severity=Severity.WARNING if hub else None,
            )
        elif profile.model_format == "tag" and not _ollama_source(source, ollama_tag):
            yield self.report(
                deployment.document,
                f"{profile.title} pulls models by name:tag from its library or hf.co/<repo> GGUF repos, "
                f"or builds them FROM a local .gguf file, not {quoted(source)}",
                ("model", "source"),
                hint="use an Ollama tag such as qwen2.5:7b, hf.co/<org>/<repo>-GGUF, or an absolute path to a .gguf",
            )
        elif profile.model_format != "tag" and ollama_tag:
            yield self.report(
                deployment.document,
                f"{quoted(source)} is an Ollama tag; {profile.title} loads Hugging Face repos or paths",
                ("model", "source"),
                hint="use the model's Hugging Face repo id, or engine ollama",
            )


def _ollama_source(source: str, tag: bool) -> bool:
    """What an Ollama Modelfile's ``FROM`` loads: a ``name:tag``, an ``hf.co/`` repo, or a local GGUF file.

    ``FROM /path/model.gguf`` imports the file (docs/import.mdx, "Importing a GGUF based model":
    https://github.com/ollama/ollama/blob/v0.32.15/docs/import.mdx); the renderer mounts its
    folder read-only at the same path and writes that ``FROM`` line.
    """
    return (
        tag or source.startswith("hf.co/") or "/" not in source or (is_local_path(source) and source.endswith(".gguf"))
    )


class EngineNeedsNewerGpu(Rule):
    """The engine's kernels must be built for the host's GPU.

    vLLM requires compute capability 7.0 or higher (installation docs); TGI's official
    image compiles its kernels for 8.0, 8.6 and 9.0 only (``TORCH_CUDA_ARCH_LIST``);
    TensorRT-LLM supports Ampere and newer (support matrix); llama.cpp's CUDA 12 builds
    and Ollama start at 5.0. These are CUDA minimums: AMD Instinct cards are not judged by them.

    Fix: use an engine that supports the GPU (llama.cpp, Ollama, vLLM for Volta/Turing),
    or a newer GPU.

    Source: https://docs.vllm.ai/en/v0.11.0/getting_started/installation/gpu.html ;
    https://github.com/huggingface/text-generation-inference/blob/v3.3.7/Dockerfile ;
    https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/docs/source/reference/support-matrix.md
    """

    id = "HW004"
    name = "hardware.engine-kernels"
    severity = Severity.ERROR
    evidence = (
        refusal(
            "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/Dockerfile",
            "https://docs.vllm.ai/en/v0.11.0/getting_started/installation/gpu.html",
            note="Kernels not built for the GPU fail to launch (no kernel image).",
        ),
    )
    summary = "the engine's kernels need a newer GPU than the host has"
    sources = (
        "https://docs.vllm.ai/en/v0.11.0/getting_started/installation/gpu.html",
        "https://github.com/huggingface/text-generation-inference/blob/v3.3.7/Dockerfile",
        "https://github.com/NVIDIA/TensorRT-LLM/blob/v1.2.1/docs/source/reference/support-matrix.md",
    )

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            cc = _cc(host)
            prof = resolve.resolved(deployment).profile
            stated = prof.min_compute_capability
            if cc is None or stated is None or prof.min_capability is None or cc >= prof.min_capability:
                continue
            yield self.report(
                deployment.document,
                f"{prof.title} needs compute capability {_text(prof.min_capability)}; "
                f"{host.name}'s GPU has {_text(cc)}",
                ("engine", "name"),
                hint=f"{stated.text} ({stated.source})",
            )


class DriverTooOld(Rule):
    """The host's NVIDIA driver must run the CUDA version the engine's image is built with.

    Since CUDA 11, an application built with CUDA X.y runs on any driver of that major
    family's minimum (minor version compatibility): CUDA 11.x needs ≥ 450.80.02, 12.x
    ≥ 525, 13.x ≥ 580. The image's CUDA version comes from the release's catalog (its
    Dockerfile or wheel); custom images are not checked, nor AMD hosts (ROCm has no CUDA driver).

    Fix: upgrade the host's driver, or pin an engine release built for an older CUDA.

    Source: https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
    """

    id = "HW005"
    name = "hardware.driver"
    severity = Severity.ERROR
    evidence = (refusal(CUDA_COMPAT_URL, note="The CUDA runtime refuses a driver below its family's minimum."),)
    summary = "host driver too old for the image's CUDA version"
    sources = (CUDA_COMPAT_URL,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            known = resolve.resolved(deployment)
            release = known.release
            driver = host.hardware.driver_version if host.hardware else None
            gpus = resolve.host_gpus(host)
            if release is None or driver is None or not gpus.count:
                continue
            if gpus.model is not None and gpus.model.vendor != "nvidia":
                continue  # an AMD host's driver_version is amdgpu's: CUDA's minor-version rule does not apply
            engine = deployment.spec.engine
            policy = image_policy(known.engine, engine.version, engine.image, release)
            cuda, minimum, source = policy.cuda, policy.min_driver, policy.cuda_source
            have = tuple(int(part) for part in driver.split("."))
            if cuda is None or minimum is None or have >= minimum:
                continue  # a custom image's CUDA version is unknown
            document, path = host.hardware_path("driver_version")
            yield self.report(
                document or deployment.document,
                f"{deployment.name}: the {release.engine} {release.version} image uses CUDA "
                f"{cuda[0]}.{cuda[1]}, which needs driver ≥ {minimum[0]}; {host.name} has {driver}",
                path if document else ("engine", "version"),
                hint=f"upgrade the driver to {minimum[0]} or newer (CUDA version from {source})",
            )
