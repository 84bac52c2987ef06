"""What reaches the bento's vLLM: the ``--arg KEY=VALUE`` pairs of one deployment, and what cannot.

Shared by the renderer (what to pass), the checks (ENG002/ENG003: what cannot be passed) and
the estimator (what vLLM runs with: the bento's defaults overridden by what is passed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from servespec.engines.base import Known
from servespec.engines.catalog import EngineRelease
from servespec.engines.openllm.bentos import Bento, bento_for, repository
from servespec.spec.fleet import DeploymentDoc

SET_BUILD_ARGS = "https://github.com/bentoml/BentoML/blob/v1.4.8/src/bentoml_cli/utils.py"
"""bentoml's ``--arg`` callback: ``item.split(",")``, then ``key=value`` each."""
USE_ARGUMENTS = "https://github.com/bentoml/BentoML/blob/v1.4.8/src/bentoml/_internal/utils/args.py"
"""``model(**arguments)``: a pydantic model with the default ``extra='ignore'`` drops unknown keys."""

SPEC_FIELDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("max_model_len", "model.max_model_len", ("model", "max_model_len")),
    ("tensor_parallel_size", "resources.tensor_parallel", ("resources", "tensor_parallel")),
    ("dtype", "model.dtype", ("model", "dtype")),
)


@dataclass(frozen=True)
class Problem:
    rule: Literal["ENG002", "ENG003"]
    path: tuple[str | int, ...]
    message: str
    hint: str


@dataclass
class Forwarded:
    bento: Bento | None
    arguments: dict[str, Any] = field(default_factory=dict)
    """Bento argument -> value, in the order rendered (spec fields first, then engine.options)."""
    problems: list[Problem] = field(default_factory=list)


def takes_arguments(release: EngineRelease | None) -> bool:
    """Whether ``openllm serve`` of the release has ``--arg`` (0.6.25 on)."""
    return release is not None and release.option("arg") is not None


def word(value: Any) -> str:
    """A value as bento argument text (pydantic's lax mode reads ``true``/``false`` and digits)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _spec_values(deployment: DeploymentDoc) -> list[tuple[str, str, tuple[str, ...], Any]]:
    spec = deployment.spec
    values = {
        "max_model_len": spec.model.max_model_len,
        "tensor_parallel_size": spec.resources.tensor_parallel,
        "dtype": None if spec.model.dtype == "auto" else spec.model.dtype,
    }
    return [(key, name, path, values[key]) for key, name, path in SPEC_FIELDS if values[key] is not None]


def forwarded(known: Known) -> Forwarded:
    """The chosen bento and the bento arguments the deployment renders, with what cannot be rendered."""
    deployment = known.deployment
    source = str(deployment.spec.model.source)
    bento = bento_for(source)
    out = Forwarded(bento)
    if bento is None:
        out.problems.append(
            Problem(
                "ENG003",
                ("model", "source"),
                f"no bento of {repository().short} serves {source!r}: `openllm serve` serves only its model "
                "repository's bentos (each names its Hugging Face model as openllm_model_id)",
                "use a model a bento serves (docs/engines/openllm.md lists where to look), or engine.name vllm",
            )
        )
        return out
    _spec_fields(known, bento, out)
    _options(known, bento, out)
    revision = deployment.spec.model.revision
    if revision and bento.revision and not bento.revision.startswith(str(revision)):
        out.problems.append(
            Problem(
                "ENG003",
                ("model", "revision"),
                f"bento {bento.tag} pins revision {bento.revision[:12]} of {bento.model_id}; OpenLLM cannot serve "
                "another one",
                f"set model.revision: {bento.revision} or remove it",
            )
        )
    return out


def _spec_fields(known: Known, bento: Bento, out: Forwarded) -> None:
    """Context length, tensor parallelism and dtype, where the bento declares them and the release passes them."""
    deployment = known.deployment
    release = known.release
    passes = takes_arguments(release)
    version = release.version if release else deployment.spec.engine.version
    for key, name, path, value in _spec_values(deployment):
        default = bento.default(key)
        if key == "tensor_parallel_size" and value == default:
            continue  # the bento's own value: nothing to pass
        if key not in bento.arguments:
            out.problems.append(
                Problem(
                    "ENG003",
                    path,
                    f"bento {bento.tag} takes no {key} argument, so {name} cannot reach its vLLM",
                    f"unset {name} (the bento's own value holds), or serve the model with engine.name vllm",
                )
            )
        elif passes:
            out.arguments[key] = value
        elif key == "tensor_parallel_size" and value == 1:  # set otherwise, or another field: ENG001's (no option)
            out.problems.append(
                Problem(
                    "ENG003",
                    path,
                    f"OpenLLM {version} has no --arg (added in 0.6.25): bento {bento.tag} runs vLLM with "
                    f"tensor_parallel_size {default}, not {value}",
                    f"set resources.tensor_parallel: {default}, or pin OpenLLM 0.6.25 or later",
                )
            )


def _options(known: Known, bento: Bento, out: Forwarded) -> None:
    """``engine.options`` bento arguments: declared by the bento, and one text word each."""
    passes = takes_arguments(known.release)
    spec_keys = set(known.profile.spec_options.values())
    for setting in known.settings:
        if setting.from_extra_args or not setting.valid or setting.option is None or setting.option.flag is not None:
            continue  # serve's own options (port, repo, ...) and unknown ones (ENG001) are not bento arguments
        if setting.key in spec_keys:
            continue  # a spec field's option set again: ENG003 says so, the spec field is rendered
        if setting.key not in bento.arguments:
            out.problems.append(
                Problem(
                    "ENG003",
                    setting.path,
                    f"bento {bento.tag} declares no argument {setting.key}: bentoml.use_arguments would drop it "
                    "without a word (its BentoArgs model ignores unknown keys)",
                    "remove it, or serve the model with engine.name vllm, which takes every vLLM option",
                )
            )
        elif isinstance(setting.value, dict | list) or "," in word(setting.value):
            out.problems.append(
                Problem(
                    "ENG002",
                    setting.path,
                    f"{setting.key} cannot be passed as `--arg {setting.key}=VALUE`: bentoml splits each --arg on ','"
                    " and reads text values (no mapping or list)",
                    "remove it: the bento's own value holds",
                )
            )
        elif passes:
            out.arguments[setting.key] = setting.value
