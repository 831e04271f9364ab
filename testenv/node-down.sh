#!/usr/bin/env bash
# Stop a real-node test cluster started by node-up.sh (same TESTENV_NAME): the pods'
# containers (through this node's containerd), their shims, kubelet, kube-proxy, CoreDNS,
# containerd, kube-scheduler, by PID file or by this node's containerd socket; then the
# mounts under the state dir, the node's cgroups, its network namespace and veth, and
# finally the control plane (down.sh). KEEP=1 keeps the state dir.
set -uo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

TESTENV_NAME="${TESTENV_NAME:-default}"
if [[ "$TESTENV_NAME" == default ]]; then
  _off=0; _dir=/tmp/mesh-doctor-testenv
else
  _off=$(( $(printf '%s' "$TESTENV_NAME" | cksum | cut -d' ' -f1) % 99 + 1 ))
  _dir=/tmp/mesh-doctor-testenv-$TESTENV_NAME
fi
TESTENV_PORT_OFFSET="${TESTENV_PORT_OFFSET:-$_off}"
D="${TESTENV_DIR:-$_dir}"
export TESTENV_NAME TESTENV_PORT_OFFSET TESTENV_DIR="$D"
testenv_real_net "$TESTENV_PORT_OFFSET"
CTR_SOCK="$D/containerd/containerd.sock"

stop_pidfile() { # $1 = name; SIGTERM, then SIGKILL after 10 s
  local f="$D/$1.pid" pid
  [[ -s "$f" ]] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null
    testenv_log "stopped $1 (pid $pid)"
  fi
  rm -f "$f"
}

# kubelet first, so it does not restart what we stop next
stop_pidfile kubelet

# The pods' processes: every task of this containerd, then its shims (found by the
# containerd socket on their command line, so other nodes' shims are left alone).
if [[ -S "$CTR_SOCK" ]]; then
  for t in $(ctr --address "$CTR_SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr --address "$CTR_SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1
  done
  sleep 1
fi
for p in /proc/[0-9]*; do
  cmd="$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" || continue
  if [[ "$cmd" == *containerd-shim* && "$cmd" == *"-address $CTR_SOCK "* ]]; then
    pid="${p#/proc/}"
    # the shim's children (the containers) are already killed above; kill any left
    for c in $(cat "$p"/task/*/children 2>/dev/null); do kill -9 "$c" 2>/dev/null; done
    kill -9 "$pid" 2>/dev/null && testenv_log "stopped containerd-shim (pid $pid)"
  fi
done

for p in kube-proxy coredns containerd kube-scheduler; do stop_pidfile "$p"; done

# Mounts under the state dir (overlay rootfs, pod netns, kubelet volumes), deepest first.
if [[ -d "$D" ]]; then
  awk -v d="$D/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || testenv_log "could not unmount $m"
  done
fi

# cgroups (cgroupRoot /$REAL_CGROUP), deepest first; only empty ones can go.
for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
  [[ -d "$h$REAL_CGROUP" ]] || continue
  find "$h$REAL_CGROUP" -depth -type d -exec rmdir {} \; 2>/dev/null
  [[ -d "$h$REAL_CGROUP" ]] && testenv_log "cgroup $h$REAL_CGROUP not removed (processes left?)"
done

# network: the netns holds eth0 (the veth's peer) and cni0; deleting it removes the veth
# and the host routes through it.
if [[ -e "/var/run/netns/$REAL_NETNS" ]]; then
  ip netns del "$REAL_NETNS" && testenv_log "deleted netns $REAL_NETNS"
fi
ip link del "$REAL_VETH_HOST" 2>/dev/null

# the host's kernel settings the kubelet changed, once no other real node runs
SYSCTL_SAVE=/tmp/mesh-doctor-node-sysctl.orig
if [[ -s "$SYSCTL_SAVE" ]]; then
  others=0
  for k in /tmp/mesh-doctor-testenv*/kubelet.pid; do
    [[ -s "$k" ]] && kill -0 "$(cat "$k")" 2>/dev/null && others=1
  done
  if [[ $others == 0 ]]; then
    while IFS=' =' read -r key value; do
      [[ -n "$key" ]] && sysctl -qw "$key=$value" 2>/dev/null
    done <"$SYSCTL_SAVE"
    rm -f "$SYSCTL_SAVE"
  fi
fi

# never rm -rf through a mount that would not go away
if [[ -d "$D" ]] && awk -v d="$D/" 'index($5, d) == 1 {found=1} END {exit !found}' /proc/self/mountinfo; then
  testenv_log "mounts are left under $D: keeping it (KEEP=1)"
  export KEEP=1
fi

# control plane (kube-controller-manager, kube-apiserver, etcd keys) and the state dir
"$TESTENV_SRC/down.sh"
