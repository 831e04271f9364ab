#!/usr/bin/env bash
# Smoke test of istiod + a real Envoy sidecar on a running testenv.
#   testenv/build.sh --istio && testenv/up.sh && testenv/verify-istio.sh
# Starts istiod (istiod-up.sh) if needed, creates a pod + Service, runs a real
# Envoy for the pod (envoy-sidecar.sh) and checks that /debug/syncz lists the
# proxy with CDS/LDS acked, that Envoy is LIVE, and that kubectl port-forward
# pod/X :15000 reaches the Envoy admin.
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

TESTENV_NAME="${TESTENV_NAME:-default}"
if [[ "$TESTENV_NAME" == default ]]; then _dir=/tmp/mesh-doctor-testenv; else _dir=/tmp/mesh-doctor-testenv-$TESTENV_NAME; fi
D="${TESTENV_DIR:-$_dir}"
if [[ -z "${KUBECTL:-}" ]]; then
  if [[ -x "$KUBECTL_BIN" ]]; then KUBECTL="$KUBECTL_BIN"; else KUBECTL="$(command -v kubectl)"; fi
fi
kc() { "$KUBECTL" --kubeconfig "$D/kubeconfig" "$@"; }
NS="mdt-istio-$RANDOM"
POD=web-1
PF_PID=""
cleanup() {
  [[ -n "$PF_PID" ]] && kill "$PF_PID" 2>/dev/null
  "$TESTENV_SRC/envoy-sidecar.sh" --stop "$NS" "$POD" >/dev/null 2>&1 || true
  kc -n "$NS" delete pods --all --wait=false >/dev/null 2>&1 || true
  kc delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT
PASSED=0
pass() { printf 'PASS %s\n' "$*"; PASSED=$((PASSED + 1)); }
fail() { printf 'FAIL %s\n' "$*"; exit 1; }

eval "$("$TESTENV_SRC/istiod-up.sh")"
curl -fsS "$ISTIOD_HTTP_URL/debug/syncz" >/dev/null && pass "istiod /debug/syncz answers ($ISTIOD_HTTP_URL)" || fail "syncz"

kc create namespace "$NS" >/dev/null
kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $POD, namespace: $NS, labels: {app: web, version: v1}}
spec:
  nodeName: ${TESTENV_NODE_NAME:-kwok-node-0}
  containers:
  - {name: web, image: nginx, ports: [{containerPort: 8080, name: http}]}
  - {name: istio-proxy, image: istio/proxyv2:1.30.3}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: $NS}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
EOF
admin="$(ENVOY_XDS_ADDRESS="$ISTIOD_XDS_ADDRESS" "$TESTENV_SRC/envoy-sidecar.sh" "$NS" "$POD" 2>/dev/null | sed -n 's/^ENVOY_ADMIN=//p')"
[[ -n "$admin" ]] && pass "envoy started, admin $admin" || fail "envoy start"

synced=0
for _ in $(seq 1 60); do
  if curl -fsS "$ISTIOD_HTTP_URL/debug/syncz" | python3 -c '
import json, sys
want = sys.argv[1]
for p in json.load(sys.stdin):
    if p.get("proxy") == want and p.get("cluster_acked") and p.get("listener_acked") \
       and not any("lastError" in r for r in p.get("resources", {}).values()):
        sys.exit(0)
sys.exit(1)' "$POD.$NS"; then synced=1; break; fi
  sleep 0.5
done
[[ $synced == 1 ]] && pass "syncz lists $POD.$NS with CDS+LDS acked, no NACK" || { curl -sS "$ISTIOD_HTTP_URL/debug/syncz"; fail "syncz"; }

state=""
for _ in $(seq 1 20); do
  state="$(curl -fsS "http://$admin/server_info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')"
  [[ "$state" == LIVE ]] && break
  sleep 0.5
done
[[ "$state" == LIVE ]] && pass "envoy state LIVE" || fail "envoy state $state"

lp="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
kc -n "$NS" port-forward "pod/$POD" "$lp:15000" >/dev/null 2>&1 &
PF_PID=$!
ok=0
for _ in $(seq 1 40); do
  if grep -q '"state"' <<<"$(curl -fsS --max-time 2 "http://127.0.0.1:$lp/server_info" 2>/dev/null)"; then ok=1; break; fi
  sleep 0.5
done
[[ $ok == 1 ]] && pass "kubectl port-forward pod/$POD $lp:15000 reaches the envoy admin" || fail "port-forward to envoy"
grep -qF "outbound|80||web.$NS.svc.cluster.local" <<<"$(curl -fsS "http://127.0.0.1:$lp/config_dump")" \
  && pass "config_dump via port-forward has outbound|80||web.$NS.svc.cluster.local" || fail "config_dump"

printf '%d passed, 0 failed\n' "$PASSED"
