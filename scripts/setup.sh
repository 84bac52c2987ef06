#!/usr/bin/env bash
# Shared set-up for scripts/demo and scripts/test on a fresh Debian machine: system
# packages (apt), a virtualenv in .venv, and servespec with its extras. Idempotent and
# quick when nothing changed. Sourced, not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SERVESPEC_VENV:-$ROOT/.venv}"
EXTRAS="${SERVESPEC_EXTRAS:-dev,rollout}"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$HOME/.cache/servespec/pip}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]} with apt" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

python_ok() { command -v python3 >/dev/null && python3 -c 'import sys, venv, ensurepip; assert sys.version_info >= (3, 11)' 2>/dev/null; }
if ! python_ok; then
  apt_install python3 python3-venv python3-pip
fi

stamp="$VENV/.servespec-installed"
want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: creating $VENV with servespec[$EXTRAS]" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -e "$ROOT[$EXTRAS]"
  echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"

# A Docker engine for the rollout (the demo applies to this machine; the tests start test
# hosts). Debian's docker.io; dockerd is started here when none answers (no systemd needed).
ensure_docker() {
  apt_install docker.io debootstrap iptables openssh-client
  if ! docker info >/dev/null 2>&1; then
    echo "setup: starting dockerd" >&2
    mkdir -p "${SERVESPEC_CACHE:-$HOME/.cache/servespec}"
    as_root sh -c "nohup dockerd >'${SERVESPEC_CACHE:-$HOME/.cache/servespec}/dockerd.log' 2>&1 &"
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { echo "setup: dockerd did not start; see ${SERVESPEC_CACHE:-$HOME/.cache/servespec}/dockerd.log" >&2; exit 1; }
  fi
}

# promtool (Debian's prometheus package) for the test that checks `deploy render --monitoring`'s
# scrape configuration (tests/metrics/test_monitoring.py); the package's own service is not started.
ensure_promtool() {
  command -v promtool >/dev/null 2>&1 || apt_install prometheus
}
