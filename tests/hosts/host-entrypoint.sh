#!/bin/sh
# Start a test host: cgroup controllers writable (no --privileged here), its own dockerd,
# the controller's SSH key, then sshd in the foreground.
set -eu
for controller in cpu cpuacct cpuset memory devices freezer blkio pids net_cls perf_event hugetlb net_prio; do
  [ -d "/sys/fs/cgroup/$controller" ] || continue
  umount "/sys/fs/cgroup/$controller" 2>/dev/null || true
  mount -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller" 2>/dev/null || true
done
printf '%s\n' "${SERVESPEC_TEST_PUBKEY:-}" > /root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
mkdir -p /run/sshd
ssh-keygen -A >/dev/null 2>&1
dockerd --cgroup-parent="/servespec-test-$(hostname)" >/var/log/dockerd.log 2>&1 &
exec /usr/sbin/sshd -D -e
