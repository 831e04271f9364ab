#!/usr/bin/env bash
# Runs every test: builds (or reuses) the real test cluster's binaries and a real Envoy, starts the
# cluster, runs the offline tests and the end-to-end tests against it, and stops it again.
# Binaries are cached in ${MESH_DOCTOR_CACHE:-~/.cache/mesh-doctor}; a second run reuses them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Debian packages the tests use: bash-completion (kubectl's bash completion needs it, for the
# `kubectl mesh-doctor <TAB>` test) and runc (the release binary in an empty root filesystem).
packages=()
[[ -f /usr/share/bash-completion/bash_completion ]] || packages+=(bash-completion)
command -v runc >/dev/null || packages+=(runc)
if [[ ${#packages[@]} -gt 0 ]]; then
  echo "== installing ${packages[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi

echo "== building or reusing the test cluster binaries (etcd, kube-apiserver, kwok, kubectl, envoy, istiod, krew, the real node's)" >&2
# --node: kube-controller-manager, kubelet, kube-scheduler, kube-proxy, CoreDNS, pilot-discovery,
# pilot-agent and istioctl too (istiod for the proxy-status tests, the real node for e2e_real_*);
# ~50 min cold on 2 cores, cached after. --krew: krew, for the release test (~1 min cold).
testenv/build.sh --node --krew

# shellcheck source=../testenv/env.sh
source testenv/env.sh
export MESH_DOCTOR_ENVOY="$ENVOY_BIN"
export TESTENV_DIR="${TESTENV_DIR:-/tmp/mesh-doctor-testenv}"

echo "== formatting and lints" >&2
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings

echo "== starting the test cluster" >&2
testenv/down.sh >/dev/null 2>&1 || true
testenv/up.sh
REAL_NAME="${MESH_DOCTOR_REAL_NAME:-realnode}"
trap 'env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node-down.sh >/dev/null 2>&1 || true; env -u TESTENV_DIR TESTENV_NAME=second testenv/down.sh >/dev/null 2>&1 || true; testenv/down.sh || true' EXIT
export MESH_DOCTOR_TESTENV="$TESTENV_DIR"
# A second cluster (the same binaries, another port and --etcd-prefix) for the multi-cluster tests.
env -u TESTENV_DIR TESTENV_NAME=second testenv/down.sh >/dev/null 2>&1 || true
MESH_DOCTOR_TESTENV_SECOND="$(env -u TESTENV_DIR TESTENV_NAME=second testenv/up.sh | sed -n 's/^export TESTENV_DIR=//p')"
export MESH_DOCTOR_TESTENV_SECOND
# A real istiod (local process) for e2e_proxy_status; down.sh in the trap stops it too.
eval "$(testenv/istiod-up.sh)"

echo "== starting the real node (kubelet on containerd + runc, kube-proxy, CoreDNS) and Istio on it" >&2
# Images are built into ~/.cache/mesh-doctor/images (cached); istioctl installs Istio from them.
env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node-down.sh >/dev/null 2>&1 || true
MESH_DOCTOR_TESTENV_REAL="$(env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node-up.sh | sed -n 's/^export TESTENV_DIR=//p')"
export MESH_DOCTOR_TESTENV_REAL
env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node/istio-up.sh >/dev/null

echo "== all tests, end-to-end ones included (every test binary runs, failures are summed up at the end)" >&2
cargo test --no-fail-fast --all-targets -- --include-ignored

echo "== the release archive: static binary in an empty root filesystem (runc), installed by krew" >&2
scripts/release-test.sh
