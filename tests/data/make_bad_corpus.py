"""Write the hostile-input corpus under tests/data/bad/ (run from anywhere; output is deterministic).

Every file must make `deploy validate` exit 1 or 2 with located findings and no traceback.
The 10 MB file is made by the test itself, not committed.

The "hostile checkout" section (:func:`hostile_checkout`) is built at test time in a
temporary folder instead: symlinks to files outside the checkout, file names with line
breaks, escapes and bidi characters, and FIFOs cannot be committed (or should not be).
"""

from __future__ import annotations

import os
from pathlib import Path

OUT = Path(__file__).parent / "bad"

VALID = """apiVersion: servespec/v1
kind: Deployment
metadata:
  name: demo
model:
  source: Qwen/Qwen2.5-0.5B-Instruct
  max_model_len: 4096
engine:
  name: vllm
  version: "0.11.0"
resources:
  tensor_parallel: 1
placement:
  hosts: [localhost]
serving:
  port: 8000
rollout:
  health_timeout: 15m
"""

INVENTORY = """apiVersion: servespec/v1
kind: Inventory
hosts:
  gpu-01:
    address: 10.0.0.1
    hardware:
      gpus: {model: NVIDIA L4, count: 1}
"""


def replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    return "\n".join(lines) + "\n"


TEXT_CASES: dict[str, str] = {
    "syntax-unclosed-flow.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: demo\n",
    "syntax-bad-indent.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata:\n  name: demo\n   labels: {}\n",
    "syntax-unclosed-quote.yaml": 'apiVersion: "servespec/v1\nkind: Deployment\n',
    "syntax-colon-in-plain.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata: name: demo\n",
    "tabs-indent.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata:\n\tname: demo\n",
    "duplicate-key-top.yaml": VALID + "serving:\n  port: 9000\n",
    "duplicate-key-nested.yaml": replace(
        VALID, "  max_model_len: 4096\n", "  max_model_len: 4096\n  max_model_len: 8192\n"
    ),
    "duplicate-key-inventory-host.yaml": INVENTORY + "  gpu-01:\n    address: 10.0.0.2\n",
    "alias-bomb.yaml": alias_bomb(),
    "merge-key.yaml": "base: &b {port: 8000}\nserving:\n  <<: *b\n",
    "tag-python-object.yaml": 'apiVersion: servespec/v1\nkind: !!python/object/apply:os.system ["echo pwned"]\n',
    "tag-python-name.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata: !!python/name:os.system\n",
    "tag-custom.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata: !Ref other\n",
    "tag-binary.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata: !!binary aGVsbG8=\n",
    "empty.yaml": "",
    "comments-only.yaml": "# nothing here\n# at all\n",
    "document-markers-only.yaml": "---\n...\n---\n",
    "null-document.yaml": "~\n",
    "top-level-list.yaml": "- apiVersion: servespec/v1\n- kind: Deployment\n",
    "top-level-scalar.yaml": "just a string\n",
    "deep-nesting-flow.yaml": "a: " + "[" * 2000 + "]" * 2000 + "\n",
    "deep-nesting-block.yaml": "".join("  " * i + f"k{i}:\n" for i in range(60)) + "  " * 60 + "v: 1\n",
    "missing-apiversion.yaml": VALID.replace("apiVersion: servespec/v1\n", ""),
    "wrong-apiversion.yaml": VALID.replace("servespec/v1", "servespec/v2"),
    "wrong-kind.yaml": VALID.replace("kind: Deployment", "kind: Deploymnt"),
    "missing-kind.yaml": VALID.replace("kind: Deployment\n", ""),
    "missing-metadata.yaml": replace(VALID, "metadata:\n  name: demo\n", ""),
    "missing-model-source.yaml": replace(VALID, "  source: Qwen/Qwen2.5-0.5B-Instruct\n", ""),
    "missing-engine-version.yaml": replace(VALID, '  version: "0.11.0"\n', ""),
    "unknown-top-key.yaml": VALID + "replicas: 3\n",
    "unknown-metadata-key.yaml": replace(VALID, "  name: demo\n", "  name: demo\n  namespace: prod\n"),
    "unknown-model-key.yaml": replace(VALID, "  max_model_len: 4096\n", "  max_model_length: 4096\n"),
    "unknown-engine-key.yaml": replace(VALID, "  name: vllm\n", "  name: vllm\n  flags: [--foo]\n"),
    "unknown-resources-key.yaml": replace(VALID, "  tensor_parallel: 1\n", "  tensor_paralel: 1\n"),
    "unknown-placement-key.yaml": replace(VALID, "  hosts: [localhost]\n", "  host: [localhost]\n"),
    "unknown-serving-key.yaml": replace(VALID, "  port: 8000\n", "  port: 8000\n  tls: true\n"),
    "unknown-rollout-key.yaml": replace(VALID, "  health_timeout: 15m\n", "  health_timeout: 15m\n  canary: 1\n"),
    "unknown-inventory-host-key.yaml": INVENTORY + "    adress: 10.0.0.9\n",
    "unknown-hardware-key.yaml": INVENTORY + "      gpu_count: 1\n",
    "wrong-type-metadata-name.yaml": replace(VALID, "  name: demo\n", "  name: 12345\n"),
    "wrong-type-metadata-name-pattern.yaml": replace(VALID, "  name: demo\n", "  name: Qwen_Chat\n"),
    "wrong-type-model-scalar.yaml": replace(
        VALID, "model:\n  source: Qwen/Qwen2.5-0.5B-Instruct\n  max_model_len: 4096\n", "model: qwen\n"
    ),
    "wrong-type-dtype.yaml": replace(VALID, "  max_model_len: 4096\n", "  max_model_len: 4096\n  dtype: bf16\n"),
    "wrong-type-max-model-len.yaml": replace(VALID, "max_model_len: 4096", "max_model_len: 4k"),
    "wrong-type-engine-name.yaml": replace(VALID, "name: vllm", "name: vllm-openai"),
    "wrong-type-engine-version-float.yaml": replace(VALID, 'version: "0.11.0"', "version: 0.11"),
    "wrong-type-options-list.yaml": replace(VALID, '  version: "0.11.0"\n', '  version: "0.11.0"\n  options: [a, b]\n'),
    "wrong-type-extra-args-string.yaml": replace(
        VALID, '  version: "0.11.0"\n', '  version: "0.11.0"\n  extra_args: --enforce-eager\n'
    ),
    "wrong-type-tp-string.yaml": replace(VALID, "tensor_parallel: 1", "tensor_parallel: two"),
    "wrong-type-tp-zero.yaml": replace(VALID, "tensor_parallel: 1", "tensor_parallel: 0"),
    "wrong-type-gpu-ids.yaml": replace(VALID, "  tensor_parallel: 1\n", "  tensor_parallel: 1\n  gpu_ids: first\n"),
    "wrong-type-gpu-ids-duplicate.yaml": replace(
        VALID, "  tensor_parallel: 1\n", "  tensor_parallel: 2\n  gpu_ids: [0, 0]\n"
    ),
    "wrong-type-numa.yaml": replace(VALID, "  tensor_parallel: 1\n", "  tensor_parallel: 1\n  numa: -1\n"),
    "wrong-type-hosts-scalar.yaml": replace(VALID, "hosts: [localhost]", "hosts: localhost"),
    "wrong-type-port-range.yaml": replace(VALID, "port: 8000", "port: 70000"),
    "wrong-type-port-string.yaml": replace(VALID, "port: 8000", "port: http"),
    "wrong-type-health-timeout.yaml": replace(VALID, "health_timeout: 15m", "health_timeout: soon"),
    "wrong-type-strategy.yaml": replace(
        VALID, "  health_timeout: 15m\n", "  health_timeout: 15m\n  strategy: blue-green\n"
    ),
    "wrong-type-inventory-count.yaml": INVENTORY.replace("count: 1", "count: -2"),
    "wrong-type-inventory-acs.yaml": INVENTORY + "      pcie_acs: maybe\n",
    "wrong-type-inventory-hosts-list.yaml": "apiVersion: servespec/v1\nkind: Inventory\nhosts: [gpu-01, gpu-02]\n",
    "inline-secret.yaml": replace(VALID, "  port: 8000\n", "  port: 8000\n  api_key: sk-live-0123456789abcdef\n"),
    "multi-doc-second-bad.yaml": VALID
    + "---\n"
    + replace(VALID, "name: demo", "name: demo-two").replace("port: 8000", "port: [8000]"),
    "multi-doc-syntax-in-third.yaml": INVENTORY + "---\n" + VALID + "---\nkind: [\n",
    "control-character.yaml": (
        'apiVersion: servespec/v1\nkind: Deployment\nmetadata:\n  name: "de\x07mo"\n  x: de\x07mo\n'
    ),
    "lone-surrogate.yaml": 'apiVersion: servespec/v1\nkind: Deployment\nmetadata:\n  name: "\\ud800"\n',
    "huge-integer.yaml": replace(VALID, "port: 8000", "port: " + "9" * 400),
    "complex-key.yaml": "apiVersion: servespec/v1\nkind: Deployment\n? [a, b]\n: 1\n",
    "crlf-unknown-key.yaml": (VALID + "replicas: 2\n").replace("\n", "\r\n"),
    "suppress-malformed.yaml": VALID + "suppress: [SEC003]\n",
}

BYTE_CASES: dict[str, bytes] = {
    "binary-nul.yaml": b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00",
    "latin1.yaml": "apiVersion: servespec/v1\nkind: Deployment\nmetadata:\n  name: caf\xe9\n".encode("latin-1"),
    "utf16-without-bom.yaml": "apiVersion: servespec/v1\n".encode("utf-16-le"),
    "truncated-utf8.yaml": b"apiVersion: servespec/v1\nkind: \xe2\x82",
    "gzip.yaml": bytes.fromhex("1f8b0800000000000003cb48cdc9c9e70200207ac3f206000000"),
}


HOSTILE_SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: demo}}
inventory: {inventory}
model: {{source: acme/in-house-7b, max_model_len: 4096{config}}}
engine: {{name: vllm, version: "0.11.0"}}
"""
HOSTILE_INVENTORY = """apiVersion: servespec/v1
kind: Inventory
defaults: {defaults}
hosts:
  a: {host}
"""
PAYLOAD = "{{ lookup('pipe', 'id') }}"
NAMES = {
    "file-name-newline": "x\nTRUST_REMOTE_CODE=true.yaml",
    "file-name-ansi": "\x1b]0;pwned\x07\x1b[2Jred.yaml",
    "file-name-bidi": "spec\u202eLMAY.yaml",
    "file-name-line-separator": "spec\u2028x.yaml",
}


def _spec(inventory: str = "inv.yaml", config: str = "") -> str:
    return HOSTILE_SPEC.format(inventory=inventory, config=f", config: {config}" if config else "")


def _inventory(defaults: str = "{}", host: str = "{address: 10.0.0.1}") -> str:
    return HOSTILE_INVENTORY.format(defaults=defaults, host=host)


def _case(root: Path, name: str, files: dict[str, str]) -> Path:
    checkout = root / name
    (checkout / ".git").mkdir(parents=True)
    for relative, text in files.items():
        target = checkout / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return checkout


def hostile_checkout(root: Path, canary: str) -> dict[str, list[str]]:
    """Build one checkout per hostile case under ``root``; return each case's `deploy validate` arguments.

    ``root/outside/`` holds files with ``canary`` in them that no output may ever show.
    """
    outside = root / "outside"
    outside.mkdir()
    (outside / "token").write_text(f"hf_{canary}0123456789abcdefghij\n")
    (outside / "shadow").write_text(f"root:$6${canary}$hash:19000:0:99999:7:::\n")
    (outside / "inventory.yaml").write_text(_inventory(host=f"{{ssh_port: {canary}, {canary}: 1}}"))
    (outside / "config.json").write_text(f'{{"{canary}": "{canary}", "num_hidden_layers": "{canary}"}}')
    (outside / "dir").mkdir()
    (outside / "dir" / "spec.yaml").write_text(_inventory(host=f"{{address: 10.0.0.1, ssh_port: {canary}}}"))
    cases: dict[str, list[str]] = {}
    base = {"spec.yaml": _spec(), "inv.yaml": _inventory()}

    def add(name: str, files: dict[str, str], links: dict[str, Path] | None = None, arg: str = "spec.yaml") -> Path:
        checkout = _case(root, name, {**base, **files})
        for link, target in (links or {}).items():
            (checkout / link).unlink(missing_ok=True)
            (checkout / link).symlink_to(target)
        cases[name] = [str(checkout / arg) if arg else str(checkout)]
        return checkout

    add("symlink-facts-out", {"inv.yaml": _inventory(host="{facts: facts.json}")}, {"facts.json": outside / "shadow"})
    add("symlink-inventory-out", {}, {"inv.yaml": outside / "inventory.yaml"})
    add("symlink-config-out", {"spec.yaml": _spec(config="config.json")}, {"config.json": outside / "config.json"})
    add("absolute-inventory", {"spec.yaml": _spec(inventory=str(outside / "inventory.yaml"))})
    add("absolute-config", {"spec.yaml": _spec(config=str(outside / "config.json"))})
    add("dotdot-facts", {"inv.yaml": _inventory(host="{facts: ../outside/token}")})
    add("dotdot-config", {"spec.yaml": _spec(config="../outside/config.json")})
    add("symlinks-in-named-dir", {}, {"leak.yaml": outside / "inventory.yaml", "linked": outside / "dir"}, arg="")
    add("named-dir-symlink-out", {}, {"specs": outside / "dir"}, arg="specs")
    add("named-file-symlink-out", {}, {"leak.yaml": outside / "inventory.yaml"}, arg="leak.yaml")
    add("named-root-symlink", {}, {"everything": Path("/")}, arg="everything")
    zero = os.path.relpath("/dev/zero", root / "dev-zero-config")
    add("dev-zero-config", {"spec.yaml": _spec(config=zero)})
    cases["dev-zero-config"][:0] = ["--root", "/"]
    fifo = add("fifo-config", {"spec.yaml": _spec(config="pipe.json")})
    os.mkfifo(fifo / "pipe.json")
    for field, host, defaults in (
        ("address", f'{{address: "{PAYLOAD}"}}', "{}"),
        ("ssh-user", f'{{address: 10.0.0.1, ssh_user: "{PAYLOAD}"}}', "{}"),
        ("defaults-ssh-user", "{address: 10.0.0.1}", f'{{ssh_user: "{PAYLOAD}"}}'),
        ("ssh-key", "{address: 10.0.0.1}", f'{{ssh_key: "{PAYLOAD}"}}'),
        ("address-option", "{address: -oProxyCommand=id}", "{}"),
    ):
        add(f"inventory-payload-{field}", {"inv.yaml": _inventory(defaults, host)})
    for name, file_name in NAMES.items():
        checkout = _case(root, name, {"inv.yaml": _inventory()})
        (checkout / file_name).write_text(_spec())
        cases[name] = [str(checkout)]
        cases[f"{name}-named"] = [str(checkout / file_name)]
    return cases


def main() -> None:
    """Write every case, removing files no longer in the corpus."""
    OUT.mkdir(exist_ok=True)
    expected = set(TEXT_CASES) | set(BYTE_CASES)
    for stale in OUT.glob("*.yaml"):
        if stale.name not in expected:
            stale.unlink()
    for name, text in TEXT_CASES.items():
        (OUT / name).write_bytes(text.encode("utf-8", "surrogatepass"))
    for name, data in BYTE_CASES.items():
        (OUT / name).write_bytes(data)
    print(f"wrote {len(expected)} files to {OUT}")


if __name__ == "__main__":
    main()
