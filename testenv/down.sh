#!/usr/bin/env bash
# Stop a test cluster started by testenv/up.sh (same TESTENV_NAME / TESTENV_DIR).
# Stops kwok, kube-apiserver (and istiod/envoy if started by istiod-up.sh) by PID,
# deletes this instance's keys from the shared etcd, and stops etcd when no other
# instance uses it. The state dir is removed unless KEEP=1.
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

TESTENV_NAME="${TESTENV_NAME:-default}"
if [[ "$TESTENV_NAME" == default ]]; then
  _dir_default=/tmp/mesh-doctor-testenv
  _prefix_default=/registry
else
  _dir_default=/tmp/mesh-doctor-testenv-$TESTENV_NAME
  _prefix_default=/registry-$TESTENV_NAME
fi
TESTENV_DIR="${TESTENV_DIR:-$_dir_default}"
TESTENV_ETCD_DIR="${TESTENV_ETCD_DIR:-/tmp/mesh-doctor-testenv-etcd}"
TESTENV_ETCD_PREFIX="${TESTENV_ETCD_PREFIX:-$_prefix_default}"
TESTENV_ETCD_CLIENT_PORT="${TESTENV_ETCD_CLIENT_PORT:-12379}"
KEEP="${KEEP:-0}"
D="$TESTENV_DIR"
E="$TESTENV_ETCD_DIR"
# Serialize up.sh/down.sh calls for the same instance (e.g. parallel test processes).
exec 9>"$D.lock"
flock -w 300 9 || testenv_die "timed out waiting for the lock $D.lock"

stop_pid() { # $1 = name, $2 = pid file
  local name="$1" pidf="$2" pid
  [[ -s "$pidf" ]] || return 0
  pid="$(cat "$pidf")"
  if kill -0 "$pid" 2>/dev/null; then
    testenv_log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      testenv_log "$name did not exit after 10s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidf"
}

if [[ -d "$D" ]]; then
  for f in "$D"/envoy-*.pid; do
    if [[ -e "$f" ]]; then stop_pid "$(basename "$f" .pid)" "$f"; fi
  done
  stop_pid pilot-discovery "$D/pilot-discovery.pid"
  stop_pid kwok "$D/kwok.pid"
  stop_pid kube-controller-manager "$D/kube-controller-manager.pid"
  stop_pid kube-apiserver "$D/kube-apiserver.pid"
else
  testenv_log "no state dir $D"
fi

rm -f "$E/users/$TESTENV_NAME"
if [[ "$KEEP" != 1 ]] && [[ -s "$E/etcd.pid" ]] && kill -0 "$(cat "$E/etcd.pid")" 2>/dev/null; then
  # Drop this instance's keys so a later instance with the same prefix starts empty.
  key="$(printf '%s/' "$TESTENV_ETCD_PREFIX" | base64 -w0)"
  end="$(printf '%s0' "$TESTENV_ETCD_PREFIX" | base64 -w0)" # '0' is '/' + 1
  curl -fsS --max-time 5 -X POST "http://127.0.0.1:$TESTENV_ETCD_CLIENT_PORT/v3/kv/deleterange" \
    -d "{\"key\":\"$key\",\"range_end\":\"$end\"}" >/dev/null 2>&1 \
    || testenv_log "could not delete etcd prefix $TESTENV_ETCD_PREFIX (ignored)"
fi

others=0
if [[ -d "$E/users" ]]; then
  for u in "$E/users"/*; do
    [[ -e "$u" ]] || continue
    # An instance counts only while its apiserver is alive.
    ud="$(cat "$u")"
    if [[ -s "$ud/kube-apiserver.pid" ]] && kill -0 "$(cat "$ud/kube-apiserver.pid")" 2>/dev/null; then
      others=$((others + 1))
    else
      rm -f "$u"
    fi
  done
fi
if [[ $others -eq 0 ]]; then
  stop_pid etcd "$E/etcd.pid"
  if [[ "$KEEP" != 1 ]]; then rm -rf "$E"; fi
else
  testenv_log "etcd left running: $others other instance(s) use it"
fi

if [[ "$KEEP" != 1 ]]; then
  rm -rf "$D"
  testenv_log "removed $D"
else
  testenv_log "kept $D"
fi
