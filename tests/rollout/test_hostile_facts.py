"""A compromised host answers every module run with ``ansible_facts`` naming servespec's variables (issue 20 item 1).

The host's own Python is changed (a ``.pth`` hook, as root on a compromised host could): every
module, servespec's and Ansible's, returns facts that rename the controller files the role reads
(the bundle, the secrets file, the archives), widen the work folder and turn a rollback into a
new revision. With fact injection on, the controller read those files and sent them. Now nothing
outside the run's work folder reaches the host, on apply and on rollback, and both still succeed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from servespec import rollout
from servespec.spec.fleet import load_fleet
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import standin_spec, write_inventory

pytestmark = pytest.mark.slow
NAME = "facts"

HOOK = """
import json, os, sys

FACTS = json.load(open("/etc/servespec-hostile-facts.json"))


class _Wrap:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec) if hasattr(self.loader, "create_module") else None

    def exec_module(self, module):
        self.loader.exec_module(module)
        real = module.AnsibleModule.exit_json

        def exit_json(self, **result):
            result["ansible_facts"] = dict(result.get("ansible_facts") or {}, **FACTS)
            real(self, **result)

        module.AnsibleModule.exit_json = exit_json


class _Hook:
    def find_spec(self, name, path=None, target=None):
        if name != "ansible.module_utils.basic":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                spec.loader = _Wrap(spec.loader)
                return spec
        return None


sys.meta_path.insert(0, _Hook())
"""


def _site(host: RemoteHost) -> str:
    return host.sh("python3 -c 'import site; print(site.getsitepackages()[0])'").strip()


@pytest.fixture
def hostile(tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path) -> Iterator[tuple[RemoteHost, Path]]:
    """One host whose Python makes every module return the facts; the controller's stand-in secrets."""
    images.standin_image()
    host = clean_hosts[0]
    stolen = tmp_path / "controller"
    stolen.mkdir()
    (stolen / "id_ed25519").write_text(json.dumps({"stolen-key.txt": "CANARY-KEY"}))
    (stolen / "secret").write_text("CANARY-SECRET\n")
    facts = {
        key: str(stolen / ("secret" if key == "servespec_secrets" else "id_ed25519"))
        for key in (
            "servespec_staging",
            "servespec_secrets",
            "servespec_image_archive",
            "servespec_weights_archive",
            "servespec_proxy_image_archive",
        )
    }
    facts |= {
        "servespec_files": {"staging": facts["servespec_staging"], "secrets": facts["servespec_secrets"]},
        "servespec_controller_files": {host.name: {"staging": facts["servespec_staging"]}},
        "servespec_work": "/",
        "servespec_existing_revision": 0,
    }
    site = _site(host)
    host.sh(f"mkdir -p {site} /srv/models && touch /srv/models/demo.gguf")
    host.sh(f"cat > /etc/servespec-hostile-facts.json <<'EOF'\n{json.dumps(facts)}\nEOF")
    host.sh(f"cat > {site}/servespec_hostile.py <<'EOF'\n{HOOK}\nEOF")
    host.sh(f"echo 'import servespec_hostile' > {site}/zz_servespec_hostile.pth")
    yield host, stolen
    host.sh(f"rm -f {site}/zz_servespec_hostile.pth {site}/servespec_hostile.py /etc/servespec-hostile-facts.json")


def _canaries(host: RemoteHost) -> str:
    return host.sh(
        "grep -rl CANARY /var/lib/servespec /etc/servespec /tmp /root 2>/dev/null || true", check=False
    ).strip()


def test_facts_naming_servespec_variables_change_nothing(
    hostile: tuple[RemoteHost, Path], tmp_path: Path, ssh_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, _ = hostile
    write_inventory(tmp_path / "inventory.yaml", [(host.name, host.address)], ssh_key)
    spec = standin_spec(tmp_path / "spec.yaml", NAME, [host.name], images.archive("servespec-standin:latest"))
    monkeypatch.setenv("E2E_KEY", "facts-secret-value")
    monkeypatch.chdir(tmp_path)
    options = rollout.ApplyOptions(standin_image="servespec-standin:latest")

    _, outcomes = rollout.apply(load_fleet([spec]), options, tmp_path / "work1")
    assert [o.result for o in outcomes] == ["ok"], outcomes
    assert _canaries(host) == ""
    secrets = host.sh(f"cat /var/lib/servespec/{NAME}/revisions/1/secrets.env")
    assert "facts-secret-value" in secrets and "CANARY" not in secrets

    spec.write_text(spec.read_text().replace("env: {}", "env: {SECOND: '2'}"))
    _, outcomes = rollout.apply(load_fleet([spec]), options, tmp_path / "work2")
    assert [o.result for o in outcomes] == ["ok"], outcomes

    rows = rollout.rollback(load_fleet([spec]), 1, options)
    assert [r.result for r in rows] == ["ok"], rows
    assert rollout.status(load_fleet([spec]))[0].revision == 1
    assert _canaries(host) == ""
    assert host.sh(f"ls /var/lib/servespec/{NAME}/revisions").split() == ["1", "2"]
