#!/bin/sh
# Start a systemd test host: the controller's SSH key and host keys, then systemd as PID 1.
set -eu
printf '%s\n' "${SERVESPEC_TEST_PUBKEY:-}" > /root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
ssh-keygen -A >/dev/null 2>&1
exec /sbin/init
