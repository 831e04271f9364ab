#!/usr/bin/env bash
# Runs every test: builds (or reuses) the real test cluster's binaries and a real Envoy, starts the
# cluster, runs the offline tests and the end-to-end tests against it, and stops it again.
# Binaries are cached in ${MESH_DOCTOR_CACHE:-~/.cache/mesh-doctor}; a second run reuses them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Stage times, for the cold-run budget (testenv/README.md): each "== stage" line says how long
# the previous stage took; the summary at the end lists them all.
run_start=$SECONDS stage_start=$SECONDS stage_name="" stage_times=()
stage() {
  if [[ -n "$stage_name" ]]; then stage_times+=("$(printf '%5ds  %s' $((SECONDS - stage_start)) "$stage_name")"); fi
  stage_name="$1" stage_start=$SECONDS
  [[ -n "$1" ]] && echo "== [$((SECONDS - run_start))s] $1" >&2
  return 0
}
stage_summary() {
  stage ""
  echo "== stage times (total $((SECONDS - run_start))s):" >&2
  printf '   %s\n' "${stage_times[@]}" >&2
}

trap 'stage_summary' EXIT

# Every Debian package the tests use, with the check that it is the right variant: one list.
stage "preflight: Debian packages (testenv/packages.sh)"
testenv/packages.sh

stage "binaries: building or reusing the test cluster's (etcd, kube-apiserver, kwok, kubectl, envoy, istiod, krew, the real node's)"
# --node: kube-controller-manager, kubelet, kube-scheduler, kube-proxy, CoreDNS, pilot-discovery,
# pilot-agent and istioctl too (istiod for the proxy-status tests, the real node for e2e_real_*);
# ~50 min cold on 2 cores, cached after. --krew: krew, for the release test (~1 min cold).
testenv/build.sh --node --krew

# shellcheck source=../testenv/env.sh
source testenv/env.sh
export MESH_DOCTOR_ENVOY="$ENVOY_BIN"
export TESTENV_DIR="${TESTENV_DIR:-/tmp/mesh-doctor-testenv}"

stage "formatting and lints"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings

stage "clusters: the test cluster, a second one, a local istiod"
testenv/down.sh >/dev/null 2>&1 || true
testenv/up.sh
REAL_NAME="${MESH_DOCTOR_REAL_NAME:-realnode}"
trap 'stage_summary; env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node-down.sh >/dev/null 2>&1 || true; env -u TESTENV_DIR TESTENV_NAME=second testenv/down.sh >/dev/null 2>&1 || true; testenv/down.sh || true' EXIT
export MESH_DOCTOR_TESTENV="$TESTENV_DIR"
# A second cluster (the same binaries, another port and --etcd-prefix) for the multi-cluster tests.
env -u TESTENV_DIR TESTENV_NAME=second testenv/down.sh >/dev/null 2>&1 || true
MESH_DOCTOR_TESTENV_SECOND="$(env -u TESTENV_DIR TESTENV_NAME=second testenv/up.sh | sed -n 's/^export TESTENV_DIR=//p')"
export MESH_DOCTOR_TESTENV_SECOND
# A real istiod (local process) for e2e_proxy_status; down.sh in the trap stops it too.
eval "$(testenv/istiod-up.sh)"

stage "real node: kubelet on containerd + runc, kube-proxy, CoreDNS, and Istio on it (images built or reused)"
# Images are built into ~/.cache/mesh-doctor/images (cached); istioctl installs Istio from them.
env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node-down.sh >/dev/null 2>&1 || true
MESH_DOCTOR_TESTENV_REAL="$(env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node-up.sh | sed -n 's/^export TESTENV_DIR=//p')"
export MESH_DOCTOR_TESTENV_REAL
env -u TESTENV_DIR TESTENV_NAME="$REAL_NAME" testenv/node/istio-up.sh >/dev/null

stage "tests: building the test binaries (unit tests, tests/it)"
cargo test --all-targets --no-run --quiet
stage "tests: the doc tests (--all-targets leaves them out; among them the compile_fail ones: a message constructor given a wrong number of arguments does not compile)"
cargo test --doc --quiet
stage "tests: all of them, end-to-end ones included (unit tests, then tests/it: suites that use a cluster take turns; failures are summed up at the end)"
cargo test --no-fail-fast --all-targets -- --include-ignored

stage "release test: static binary in an empty root filesystem (runc), installed by krew"
scripts/release-test.sh
