# shellcheck shell=bash
# Shared settings for the mesh-doctor test environment. Sourced by build.sh,
# up.sh, down.sh and istiod-up.sh; not meant to be run directly.
# Versions here must match testenv/gomod/*/go.mod (build.sh checks this).

TESTENV_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

KUBE_VERSION="v1.34.4"
ETCD_VERSION="v3.6.16"
KWOK_VERSION="v0.8.0"
ENVOY_VERSION="1.40.0"
# istio.io/istio has no semver tags; the proxy here serves only a few master pseudo-versions
# (the 1.30.3 one, v0.0.0-20260713165634-56df41f63e51, answers 403 "not available").
# eed52ebb66ad (2026-08-27) is master with VERSION file 1.31, i.e. 1.31-dev.
ISTIO_VERSION="1.31.0-dev-eed52ebb"
ISTIO_PSEUDO_VERSION="v0.0.0-20260827124520-eed52ebb66ad"
# krew, the kubectl plugin manager, for the release test (scripts/release-test.sh).
KREW_VERSION="v0.4.3"

MESH_DOCTOR_CACHE="${MESH_DOCTOR_CACHE:-$HOME/.cache/mesh-doctor}"
TESTENV_BIN="$MESH_DOCTOR_CACHE/bin"

ETCD_BIN="$TESTENV_BIN/etcd-$ETCD_VERSION"
KUBE_APISERVER_BIN="$TESTENV_BIN/kube-apiserver-$KUBE_VERSION"
KUBECTL_BIN="$TESTENV_BIN/kubectl-$KUBE_VERSION"
KUBE_CONTROLLER_MANAGER_BIN="$TESTENV_BIN/kube-controller-manager-$KUBE_VERSION"
KWOK_BIN="$TESTENV_BIN/kwok-$KWOK_VERSION"
ENVOY_VENV="$MESH_DOCTOR_CACHE/envoy-venv-$ENVOY_VERSION"
# Symlink to the real (static) envoy binary inside the venv (not the python shim).
ENVOY_BIN="$TESTENV_BIN/envoy-$ENVOY_VERSION"
PILOT_DISCOVERY_BIN="$TESTENV_BIN/pilot-discovery-$ISTIO_VERSION"
ISTIOCTL_BIN="$TESTENV_BIN/istioctl-$ISTIO_VERSION"
KREW_BIN="$TESTENV_BIN/krew-$KREW_VERSION"

testenv_log() { printf '[testenv] %s\n' "$*" >&2; }
testenv_die() { printf '[testenv] ERROR: %s\n' "$*" >&2; exit 1; }

# Directory of a module in GOMODCACHE (read-only source tree).
testenv_modcache_dir() { # $1=module path, $2=version
  local modcache
  modcache="${GOMODCACHE:-}"
  if [[ -z "$modcache" ]]; then
    if command -v go >/dev/null 2>&1; then modcache="$(go env GOMODCACHE)"; else modcache="$HOME/go/pkg/mod"; fi
  fi
  printf '%s/%s@%s\n' "$modcache" "$1" "$2"
}
