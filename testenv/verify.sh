#!/usr/bin/env bash
# Smoke test of a running testenv (start it with testenv/up.sh first).
# Checks: pod goes Running on the kwok node; PortForward CR + kubectl port-forward
# reach a local TCP server; Logs CR serves `kubectl logs` and `--previous`;
# the sidecar stages in testenv/stages/ produce the custom statuses; pod status
# can be patched through the status subresource; viewer RBAC is read-only.
# Exits non-zero on the first failure. Uses namespace mdt-verify-<random>.
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

TESTENV_NAME="${TESTENV_NAME:-default}"
if [[ "$TESTENV_NAME" == default ]]; then _dir=/tmp/mesh-doctor-testenv; else _dir=/tmp/mesh-doctor-testenv-$TESTENV_NAME; fi
D="${TESTENV_DIR:-$_dir}"
[[ -f "$D/kubeconfig" ]] || testenv_die "no $D/kubeconfig: run testenv/up.sh"
if [[ -z "${KUBECTL:-}" ]]; then
  if [[ -x "$KUBECTL_BIN" ]]; then KUBECTL="$KUBECTL_BIN"; else KUBECTL="$(command -v kubectl)"; fi
fi
NODE="${TESTENV_NODE_NAME:-kwok-node-0}"
NS="mdt-verify-$RANDOM"
kc() { "$KUBECTL" --kubeconfig "$D/kubeconfig" "$@"; }
kv() { "$KUBECTL" --kubeconfig "$D/kubeconfig-viewer" "$@"; }

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  kc -n "$NS" delete pods --all --wait=false >/dev/null 2>&1 || true
  kc delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

pass() { printf 'PASS %s\n' "$*"; PASSED=$((PASSED + 1)); }
fail() { printf 'FAIL %s\n' "$*"; exit 1; }
PASSED=0

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_jsonpath() { # $1 = pod, $2 = jsonpath, $3 = expected, $4 = timeout
  local deadline=$((SECONDS + ${4:-30})) got=""
  while (( SECONDS < deadline )); do
    got="$(kc -n "$NS" get pod "$1" -o "jsonpath=$2" 2>/dev/null || true)"
    [[ "$got" == "$3" ]] && return 0
    sleep 0.5
  done
  echo "  $1 $2: got '$got', want '$3'" >&2
  return 1
}

pod() { # $1 = name, $2 = extra labels yaml (indented 4), $3 = extra annotations yaml
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $NS
  labels:
    app: $1
${2:-}
  annotations:
    verify: "1"
${3:-}
spec:
  nodeName: $NODE
  initContainers:
  - name: istio-init
    image: istio/proxyv2:1.30.3
  containers:
  - name: app
    image: nginx:1.27
  - name: istio-proxy
    image: istio/proxyv2:1.30.3
EOF
}

kc create namespace "$NS" >/dev/null

# 1. plain pod goes Running and Ready
pod plain | kc apply -f - >/dev/null
wait_jsonpath plain '{.status.phase}' Running && wait_jsonpath plain '{.status.conditions[?(@.type=="Ready")].status}' True \
  && pass "pod on $NODE goes Running/Ready" || fail "plain pod not Running"

# 2. PortForward CR -> local http server, through kubectl port-forward
target="$(free_port)"
mkdir -p "$WORK/www" && echo "hello-from-target" >"$WORK/www/index.html"
(cd "$WORK/www" && exec python3 -m http.server "$target" --bind 127.0.0.1 >/dev/null 2>&1) &
PIDS+=($!)
kc apply -f - >/dev/null <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: PortForward
metadata:
  name: plain
  namespace: $NS
spec:
  forwards:
  - ports: [15000]
    target:
      address: 127.0.0.1
      port: $target
EOF
local_port="$(free_port)"
sleep 1
kc -n "$NS" port-forward pod/plain "$local_port:15000" >"$WORK/pf.log" 2>&1 &
PIDS+=($!)
ok=0
for _ in $(seq 1 40); do
  if grep -q hello-from-target <<<"$(curl -fsS --max-time 2 "http://127.0.0.1:$local_port/" 2>/dev/null)"; then ok=1; break; fi
  sleep 0.5
done
[[ $ok == 1 ]] && pass "kubectl port-forward pod/plain $local_port:15000 reaches 127.0.0.1:$target" \
  || { cat "$WORK/pf.log"; fail "port-forward"; }

# 3. Logs CR: current and previous logs of istio-proxy
printf '2016-10-06T00:00:00Z stdout F current line 1\n2016-10-06T00:00:01Z stderr F current line 2\n' >"$WORK/proxy.log"
printf '2016-10-05T00:00:00Z stdout F previous line 1\n' >"$WORK/proxy.prev.log"
printf '2016-10-06T00:00:00Z stdout F app says hi\n' >"$WORK/app.log"
kc apply -f - >/dev/null <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Logs
metadata:
  name: plain
  namespace: $NS
spec:
  logs:
  - containers: [istio-proxy]
    logsFile: $WORK/proxy.log
    previousLogsFile: $WORK/proxy.prev.log
  - containers: [app]
    logsFile: $WORK/app.log
EOF
sleep 1
got="$(kc -n "$NS" logs plain -c istio-proxy 2>&1 || true)"
[[ "$got" == $'current line 1\ncurrent line 2' ]] && pass "kubectl logs -c istio-proxy" || fail "logs: got '$got'"
got="$(kc -n "$NS" logs plain -c istio-proxy --previous 2>&1 || true)"
[[ "$got" == "previous line 1" ]] && pass "kubectl logs --previous -c istio-proxy" || fail "logs --previous: got '$got'"
got="$(kc -n "$NS" logs plain -c app 2>&1 || true)"
[[ "$got" == "app says hi" ]] && pass "kubectl logs -c app" || fail "logs app: got '$got'"

# 4. stages: crashloop, not-ready, waiting
pod crash '    mesh-doctor.test/sidecar: crashloop' '    mesh-doctor.test/restart-count: "5"
    mesh-doctor.test/exit-code: "137"' | kc apply -f - >/dev/null
wait_jsonpath crash '{.status.containerStatuses[?(@.name=="istio-proxy")].state.waiting.reason}' CrashLoopBackOff \
  && wait_jsonpath crash '{.status.containerStatuses[?(@.name=="istio-proxy")].restartCount}' 5 \
  && wait_jsonpath crash '{.status.containerStatuses[?(@.name=="istio-proxy")].lastState.terminated.exitCode}' 137 \
  && wait_jsonpath crash '{.status.phase}' Running \
  && wait_jsonpath crash '{.status.conditions[?(@.type=="Ready")].status}' False \
  && wait_jsonpath crash '{.status.containerStatuses[?(@.name=="app")].ready}' true \
  && pass "stage sidecar-crashloop" || fail "crashloop stage"

pod notready '    mesh-doctor.test/sidecar: not-ready' | kc apply -f - >/dev/null
wait_jsonpath notready '{.status.phase}' Running \
  && wait_jsonpath notready '{.status.containerStatuses[?(@.name=="istio-proxy")].ready}' false \
  && [[ -n "$(kc -n "$NS" get pod notready -o 'jsonpath={.status.containerStatuses[?(@.name=="istio-proxy")].state.running.startedAt}')" ]] \
  && wait_jsonpath notready '{.status.conditions[?(@.type=="Ready")].status}' False \
  && pass "stage sidecar-not-ready" || fail "not-ready stage"

pod waiting '    mesh-doctor.test/sidecar: waiting' '    mesh-doctor.test/waiting-reason: ImagePullBackOff' | kc apply -f - >/dev/null
wait_jsonpath waiting '{.status.containerStatuses[?(@.name=="istio-proxy")].state.waiting.reason}' ImagePullBackOff \
  && sleep 2 \
  && wait_jsonpath waiting '{.status.phase}' Pending \
  && wait_jsonpath waiting '{.status.conditions[?(@.type=="Ready")].status}' False \
  && pass "stage sidecar-waiting (stays Pending)" || fail "waiting stage"

# 5. status subresource patch (for statuses no stage produces)
kc -n "$NS" patch pod plain --subresource=status --type=merge \
  -p '{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Patched"}]}}' >/dev/null
sleep 2
wait_jsonpath plain '{.status.conditions[?(@.type=="Ready")].reason}' Patched \
  && pass "kubectl patch --subresource=status sticks" || fail "status patch"

# 6. viewer is read-only
kv -n "$NS" get pods >/dev/null && pass "viewer can list pods" || fail "viewer list"
if kv -n "$NS" delete pod plain --wait=false >/dev/null 2>&1; then fail "viewer could delete"; else pass "viewer cannot delete pods"; fi
# (`can-i get pods/x` means the pod named x: subresources need --subresource)
[[ "$(kv auth can-i create pods --subresource=portforward -n "$NS" 2>/dev/null || true)" == no ]] && pass "viewer cannot create pods/portforward" || fail "viewer can-i create portforward"
[[ "$(kv auth can-i get pods --subresource=portforward -n "$NS" 2>/dev/null || true)" == no ]] && pass "viewer cannot get pods/portforward (websocket port-forward)" || fail "viewer can-i get portforward"
[[ "$(kv auth can-i get pods --subresource=log -n "$NS" 2>/dev/null || true)" == yes ]] && pass "viewer can get pods/log" || fail "viewer can-i get log"
vp="$(free_port)"
timeout 6 "$KUBECTL" --kubeconfig "$D/kubeconfig-viewer" -n "$NS" port-forward pod/plain "$vp:15000" >"$WORK/vpf.log" 2>&1 &
vpf=$!
sleep 2
if curl -fsS --max-time 2 "http://127.0.0.1:$vp/" >/dev/null 2>&1; then fail "viewer could port-forward"; fi
wait "$vpf" 2>/dev/null || true
grep -q 'forbidden' "$WORK/vpf.log" && pass "viewer kubectl port-forward is forbidden" || { cat "$WORK/vpf.log"; fail "viewer port-forward not forbidden"; }
kv -n "$NS" logs plain -c istio-proxy >/dev/null && pass "viewer can read logs" || fail "viewer logs"
if kv -n "$NS" get secrets >/dev/null 2>&1; then fail "viewer can read secrets"; else pass "viewer cannot read secrets"; fi
kv get nodes >/dev/null && kv get crd >/dev/null && pass "viewer can list nodes and CRDs" || fail "viewer cluster reads"

# 7. audit log is written
[[ -s "$D/audit.log" ]] && grep -q '"level":"Metadata"' "$D/audit.log" && pass "audit log at $D/audit.log" || fail "audit log"

printf '%d passed, 0 failed\n' "$PASSED"
