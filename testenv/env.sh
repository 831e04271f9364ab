# shellcheck shell=bash
# Shared settings for the mesh-doctor test environment. Sourced by build.sh,
# up.sh, down.sh and istiod-up.sh; not meant to be run directly.
# Versions here must match testenv/gomod/*/go.mod (build.sh checks this).

# A named test env's state directory (/tmp/mesh-doctor-testenv-NAME, as up.sh makes it) given
# without TESTENV_NAME (the e2e tests pass only TESTENV_DIR): that env's name, so the scripts use
# the ports it was started with, not the default env's (whose istiod they would replace).
if [[ -z "${TESTENV_NAME:-}" && "${TESTENV_DIR:-}" == /tmp/mesh-doctor-testenv-?* ]]; then
  TESTENV_NAME="${TESTENV_DIR#/tmp/mesh-doctor-testenv-}"
fi

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
# The Gateway API release whose standard CRDs istiod-up.sh applies (a dependency of istio,
# pinned in gomod/istio/go.mod, fetched into GOMODCACHE by build.sh).
GATEWAY_API_VERSION="v1.6.0"
COREDNS_VERSION="v1.15.0"
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
PILOT_AGENT_BIN="$TESTENV_BIN/pilot-agent-$ISTIO_VERSION"
# real node (node-up.sh)
KUBELET_BIN="$TESTENV_BIN/kubelet-$KUBE_VERSION"
KUBE_SCHEDULER_BIN="$TESTENV_BIN/kube-scheduler-$KUBE_VERSION"
KUBE_PROXY_BIN="$TESTENV_BIN/kube-proxy-$KUBE_VERSION"
COREDNS_BIN="$TESTENV_BIN/coredns-$COREDNS_VERSION"
# locally built images (tarballs for `ctr image import`)
TESTENV_IMAGES="$MESH_DOCTOR_CACHE/images"
# Registry part of the image names. Nothing listens there: a missing image fails to pull
# at once (connection refused) and the pod shows ErrImagePull / ImagePullBackOff.
TESTENV_IMAGE_HUB="localhost/mesh-doctor"
PAUSE_VERSION="1.0"
APP_VERSION="1.0"
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

# Addresses of a real-node instance (node-up.sh), from its port offset K (0..99):
# veth host side REAL_HOST_IP (the apiserver listens there), node side REAL_NODE_IP (kubelet,
# CoreDNS), pod CIDR 10.244.K.0/24, service CIDR 10.96.K.0/24, all in namespaces we create.
testenv_real_net() { # $1 = port offset
  local k="$1"
  REAL_NETNS="mdnode-$TESTENV_NAME"
  REAL_VETH_HOST="mdv-$TESTENV_NAME"
  REAL_HOST_IP="10.201.$k.1"
  REAL_NODE_IP="10.201.$k.2"
  REAL_POD_CIDR="10.244.$k.0/24"
  REAL_SERVICE_CIDR="10.96.$k.0/24"
  REAL_KUBERNETES_SVC_IP="10.96.$k.1"
  REAL_DNS_IP="$REAL_NODE_IP"
  REAL_NODE_NAME="$TESTENV_NAME-node"
  REAL_CGROUP="mesh-doctor-$TESTENV_NAME"
}
