"""ENG008: spec fields a host-native engine (no container: LM Studio's daemon) cannot honour."""

from __future__ import annotations

from collections.abc import Iterator

from servespec import hostpaths
from servespec.engines.native import injects_code
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule, contract, policy
from servespec.spec.fleet import DeploymentDoc, Fleet

_LMS_SOURCE = "https://github.com/lmstudio-ai/lms/blob/07b7252d6de26a3a58c1bb80ed7e75a2b17f5eb6/src/subcommands/load.ts"


class HostNativeField(Rule):
    """A host-native engine runs no container, so the container fields of the spec mean nothing there.

    LM Studio's headless daemon (``llmster``) has no official image: it is installed by
    LM Studio's installer and started by its ``lms`` CLI, which servespec runs from a systemd
    unit (``docs/engines/lmstudio.md``). Reported, because they would be silently ignored:

    - ``engine.image`` and ``engine.image_archive``: there is no image to pull or load;
    - ``engine.command``: the unit runs the ``lms`` commands servespec renders;
    - ``engine.entrypoint`` other than one absolute path to the engine's own executable (its base
      name ``lms``): the unit runs as a dedicated user with the host's GPUs, and nothing else may run there;
    - ``engine.env`` variables that choose the code a process loads (``LD_PRELOAD``,
      ``LD_LIBRARY_PATH``, any ``LD_*``/``DYLD_*``, ``NODE_OPTIONS``, ``NODE_*``, ``PYTHONPATH``,
      ``PYTHON*``, ``PATH``, ``HOME``, ``BASH_ENV``, ``PERL5LIB``, ``GCONV_PATH``, ``OPENSSL_CONF``,
      ``XDG_*_HOME``, ...: ``servespec.engines.native``): a container's environment stays in its
      container, a host-native unit's reaches the host, so these would run any program there.
      Security policy (docs/security.md: a spec runs only the engine it names on a host); the
      renderer refuses them too;
    - ``engine.secret_env``: the unit has no secrets env file (its environment is written into the
      unit file, which is no place for a secret);
    - ``rollout.strategy: auto``: its surge starts a second container beside the running one; a host-native
      unit is one systemd service per host, restarted in place;
    - ``resources.gpu_ids`` (a warning): LM Studio picks the GPUs; nothing renders the choice;
    - ``model.revision`` (a warning): ``lms load KEY`` loads the downloaded model with that key,
      with no revision to pin (src/subcommands/load.ts);
    - a ``model.source`` that is a host path (``/srv/m.gguf``): ``lms load`` takes a model key of
      LM Studio's own models folder (``lms ls``), not a file; ``lms import`` one first.

    Fix: remove the field; name the model by its LM Studio key; or choose a container engine
    (llama.cpp serves the same GGUF files).

    Source: https://github.com/lmstudio-ai/lms/blob/07b7252d6de26a3a58c1bb80ed7e75a2b17f5eb6/src/subcommands/load.ts ;
    https://github.com/lmstudio-ai/lms/blob/07b7252d6de26a3a58c1bb80ed7e75a2b17f5eb6/src/subcommands/daemon/up.ts
    """

    id = "ENG008"
    name = "engine.host-native-field"
    severity = Severity.ERROR
    evidence = (
        policy("container--host", note="Environment that chooses the code a host-native unit loads."),
        contract("11-deployment", note="Fields a host-native unit cannot render (no image, no command)."),
    )
    summary = "a field a host-native engine (no container, LM Studio) cannot honour"
    hint = ""
    sources = (_LMS_SOURCE,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment in fleet.deployments:
            profile = resolve.resolved(deployment).profile
            if profile.image is not None:
                continue
            spec, title = deployment.spec, profile.title
            for field in ("image", "image_archive", "command"):
                if getattr(spec.engine, field) is not None:
                    yield self.report(
                        deployment.document,
                        f"{title} runs no container: engine.{field} is not used",
                        ("engine", field),
                        hint=f"remove engine.{field}",
                    )
            yield from self._unit(deployment, title)
            if spec.model.revision is not None:
                yield self.report(
                    deployment.document,
                    f"{title} loads a downloaded model by its key: model.revision cannot be pinned",
                    ("model", "revision"),
                    hint="remove model.revision (lms get downloads the revision LM Studio offers)",
                    severity=Severity.WARNING,
                )
            if spec.rollout.strategy == "auto":
                yield self.report(
                    deployment.document,
                    f"{title} runs one systemd unit per host, restarted in place: rollout.strategy auto cannot surge",
                    ("rollout", "strategy"),
                    hint="use rollout.strategy rolling or recreate",
                )
            if spec.resources.gpu_ids != "auto":
                yield self.report(
                    deployment.document,
                    f"{title} chooses its GPUs itself: resources.gpu_ids is not rendered",
                    ("resources", "gpu_ids"),
                    hint="remove resources.gpu_ids (engine.env CUDA_VISIBLE_DEVICES reaches the unit's lms commands)",
                    severity=Severity.WARNING,
                )
            if hostpaths.is_local_path(str(spec.model.source)):
                yield self.report(
                    deployment.document,
                    f"{title} loads a model by its key in LM Studio's models folder (lms load KEY), not a host path",
                    ("model", "source"),
                    hint="lms import the file on the host, then name the key lms ls lists (or use engine llama.cpp)",
                )

    def _unit(self, deployment: DeploymentDoc, title: str) -> Iterator[Finding]:
        """What the unit runs: one absolute path to the engine's own executable, no code-loading variables."""
        spec = deployment.spec
        name = resolve.resolved(deployment).engine.native_executable or ""
        entrypoint = spec.engine.entrypoint
        if entrypoint and (
            len(entrypoint) != 1
            or not str(entrypoint[0]).startswith("/")
            or str(entrypoint[0]).rsplit("/", 1)[-1] != name
        ):
            yield self.report(
                deployment.document,
                f"{title}: engine.entrypoint names the {name} executable, one absolute path ending in /{name}",
                ("engine", "entrypoint"),
                hint=f"engine.entrypoint: [/absolute/path/to/{name}], or remove it for the default",
            )
        for variable in spec.engine.secret_env:
            yield self.report(
                deployment.document,
                f"{title}'s unit reads no secrets env file: engine.secret_env.{variable} would not reach it",
                ("engine", "secret_env", variable),
                hint="remove engine.secret_env (or choose a container engine)",
            )
        for variable in spec.engine.env:
            if injects_code(variable):
                yield self.report(
                    deployment.document,
                    f"{title} runs on the host itself: engine.env.{variable} would choose the code its unit loads",
                    ("engine", "env", variable),
                    hint=f"remove engine.env.{variable}",
                )
