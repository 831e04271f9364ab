#!/usr/bin/env bash
# Start a real test cluster: etcd + kube-apiserver + kwok (fake kubelet).
# With TESTENV_REAL=1 (used by testenv/node-up.sh): no kwok; the apiserver listens on the
# instance's veth address with the ServiceAccount and webhook admission plugins on, and
# kube-controller-manager runs; node-up.sh then adds a real kubelet.
#
# Binaries come from testenv/build.sh (run it first; it is a no-op when cached).
# Prints `export ...` lines on stdout; everything else goes to stderr, so
#   eval "$(testenv/up.sh)"
# works. See testenv/README.md for the environment variables.
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

TESTENV_NAME="${TESTENV_NAME:-default}"
[[ "$TESTENV_NAME" =~ ^[a-z0-9][a-z0-9-]*$ ]] || testenv_die "TESTENV_NAME must match [a-z0-9][a-z0-9-]*"
if [[ "$TESTENV_NAME" == default ]]; then
  _off=0
  _dir_default=/tmp/mesh-doctor-testenv
  _prefix_default=/registry
else
  # Deterministic per-name port offset (1..99) so several named instances can run.
  _off=$(( $(printf '%s' "$TESTENV_NAME" | cksum | cut -d' ' -f1) % 99 + 1 ))
  _dir_default=/tmp/mesh-doctor-testenv-$TESTENV_NAME
  _prefix_default=/registry-$TESTENV_NAME
fi
TESTENV_PORT_OFFSET="${TESTENV_PORT_OFFSET:-$_off}"
TESTENV_DIR="${TESTENV_DIR:-$_dir_default}"
TESTENV_ETCD_DIR="${TESTENV_ETCD_DIR:-/tmp/mesh-doctor-testenv-etcd}"
TESTENV_ETCD_PREFIX="${TESTENV_ETCD_PREFIX:-$_prefix_default}"
TESTENV_APISERVER_PORT="${TESTENV_APISERVER_PORT:-$((16443 + TESTENV_PORT_OFFSET))}"
TESTENV_KWOK_PORT="${TESTENV_KWOK_PORT:-$((10250 + TESTENV_PORT_OFFSET))}"
# etcd is shared by all instances (distinct --etcd-prefix), so its ports have no offset.
TESTENV_ETCD_CLIENT_PORT="${TESTENV_ETCD_CLIENT_PORT:-12379}"
TESTENV_ETCD_PEER_PORT="${TESTENV_ETCD_PEER_PORT:-12380}"
TESTENV_NODE_NAME="${TESTENV_NODE_NAME:-kwok-node-0}"
TESTENV_READY_TIMEOUT="${TESTENV_READY_TIMEOUT:-120}"
# Set TESTENV_KWOK_STAGE_CRD=1 to load stages as Stage CRs (editable at run time)
# instead of from kwok's --config file.
TESTENV_KWOK_STAGE_CRD="${TESTENV_KWOK_STAGE_CRD:-0}"
# Set TESTENV_KCM=1 to also run kube-controller-manager (build it with build.sh --kcm):
# namespace deletion, default ServiceAccounts, EndpointSlices, Deployments -> Pods, GC.
TESTENV_KCM="${TESTENV_KCM:-0}"
TESTENV_REAL="${TESTENV_REAL:-0}"
if [[ "$TESTENV_REAL" == 1 ]]; then
  testenv_real_net "$TESTENV_PORT_OFFSET"
  TESTENV_KCM=1
  TESTENV_APISERVER_IP="${TESTENV_APISERVER_IP:-$REAL_HOST_IP}"
  TESTENV_SERVICE_CIDR="${TESTENV_SERVICE_CIDR:-$REAL_SERVICE_CIDR}"
  TESTENV_KUBERNETES_SVC_IP="$REAL_KUBERNETES_SVC_IP"
  TESTENV_NODE_NAME="${TESTENV_NODE_NAME_REAL:-$REAL_NODE_NAME}"
else
  TESTENV_APISERVER_IP="${TESTENV_APISERVER_IP:-127.0.0.1}"
  TESTENV_SERVICE_CIDR="${TESTENV_SERVICE_CIDR:-10.96.0.0/16}"
  TESTENV_KUBERNETES_SVC_IP=10.96.0.1
fi

D="$TESTENV_DIR"
E="$TESTENV_ETCD_DIR"
# Serialize up.sh/down.sh calls for the same instance (e.g. parallel test processes).
exec 9>"$D.lock"
flock -w 300 9 || testenv_die "timed out waiting for the lock $D.lock"
API_URL="https://$TESTENV_APISERVER_IP:$TESTENV_APISERVER_PORT"
ETCD_URL="http://127.0.0.1:$TESTENV_ETCD_CLIENT_PORT"

if [[ -n "${KUBECTL:-}" ]]; then :
elif [[ -x "$KUBECTL_BIN" ]]; then KUBECTL="$KUBECTL_BIN"
elif command -v kubectl >/dev/null 2>&1; then KUBECTL="$(command -v kubectl)"
else testenv_die "no kubectl: run testenv/build.sh (builds $KUBECTL_BIN) or set KUBECTL"
fi

for b in "$ETCD_BIN" "$KUBE_APISERVER_BIN" "$KWOK_BIN"; do
  [[ -x "$b" ]] || testenv_die "missing $b: run testenv/build.sh first"
done
command -v openssl >/dev/null || testenv_die "openssl is required"
command -v curl >/dev/null || testenv_die "curl is required"

print_env() {
  cat <<EOF
export KUBECONFIG=$D/kubeconfig
export TESTENV_NAME=$TESTENV_NAME
export TESTENV_DIR=$D
export TESTENV_KUBECONFIG_VIEWER=$D/kubeconfig-viewer
export TESTENV_APISERVER_URL=$API_URL
export TESTENV_KWOK_PORT=$TESTENV_KWOK_PORT
export TESTENV_NODE_NAME=$TESTENV_NODE_NAME
export TESTENV_KUBECTL=$KUBECTL
export TESTENV_REAL=$TESTENV_REAL
EOF
}

pid_alive() { # $1 = pid file
  [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

port_busy() { # $1 = port
  grep -q . <<<"$(ss -Htln "sport = :$1" 2>/dev/null)"
}

admin_curl() {
  curl -fsS --max-time 5 --cacert "$D/pki/ca.crt" -H "Authorization: Bearer $(cat "$D/admin.token")" "$@"
}

apiserver_ready() {
  [[ -f "$D/admin.token" ]] && admin_curl "$API_URL/readyz" >/dev/null 2>&1
}

etcd_healthy() {
  grep -q '"health":"true"' <<<"$(curl -fsS --max-time 3 "$ETCD_URL/health" 2>/dev/null)"
}

wait_for() { # $1 = description, $2 = timeout seconds, $3 = pid file (or ""), rest = command
  local what="$1" timeout="$2" pidf="$3"; shift 3
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    if [[ -n "$pidf" ]] && ! pid_alive "$pidf"; then
      testenv_die "$what: process exited; see ${pidf%.pid}.log"
    fi
    (( SECONDS < deadline )) || testenv_die "$what: not ready after ${timeout}s"
    sleep 0.5
  done
}

start_bg() { # $1 = pid file, $2 = log file, rest = command
  local pidf="$1" logf="$2"; shift 2
  setsid "$@" </dev/null >>"$logf" 2>&1 9>&- &
  echo $! >"$pidf"
}

kc() { "$KUBECTL" --kubeconfig "$D/kubeconfig" "$@"; }

# ---------------------------------------------------------------- already up?
node_ready() {
  [[ "$(kc get node "$TESTENV_NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}
if pid_alive "$D/kube-apiserver.pid" && { [[ "$TESTENV_REAL" == 1 ]] || pid_alive "$D/kwok.pid"; } && apiserver_ready \
   && { [[ "$TESTENV_KCM" != 1 ]] || pid_alive "$D/kube-controller-manager.pid"; }; then
  if [[ "$TESTENV_REAL" == 1 ]] || node_ready; then
    testenv_log "testenv '$TESTENV_NAME' is already up ($API_URL, state in $D)"
    print_env
    exit 0
  fi
  # e.g. etcd was restarted underneath: its data is gone, so restart this instance.
  testenv_log "testenv '$TESTENV_NAME' runs but node $TESTENV_NODE_NAME is not Ready: restarting it"
fi
# Leftovers of a half-started instance: stop them (only our own pids).
for p in kwok kube-controller-manager kube-apiserver; do
  if pid_alive "$D/$p.pid"; then
    testenv_log "stopping stale $p (pid $(cat "$D/$p.pid"))"
    pid="$(cat "$D/$p.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -f "$D/$p.pid"
done

_ports=("$TESTENV_APISERVER_PORT")
[[ "$TESTENV_REAL" == 1 ]] || _ports+=("$TESTENV_KWOK_PORT")
for port in "${_ports[@]}"; do
  if port_busy "$port"; then testenv_die "port $port is already in use (set TESTENV_*_PORT)"; fi
done

mkdir -p "$E/users"
if [[ -s "$E/users/$TESTENV_NAME" ]] && [[ "$(cat "$E/users/$TESTENV_NAME")" != "$D" ]] \
   && pid_alive "$(cat "$E/users/$TESTENV_NAME")/kube-apiserver.pid"; then
  testenv_die "instance name '$TESTENV_NAME' (etcd prefix) is in use by $(cat "$E/users/$TESTENV_NAME"); set TESTENV_NAME for a second cluster"
fi
mkdir -p "$D/pki" "$E"
testenv_log "instance '$TESTENV_NAME': state $D, apiserver $API_URL, kwok :$TESTENV_KWOK_PORT, etcd $ETCD_URL prefix $TESTENV_ETCD_PREFIX"

# ---------------------------------------------------------------- pki, tokens
if [[ ! -f "$D/pki/apiserver.crt" ]]; then
  testenv_log "generating certificates"
  (
    cd "$D/pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=mesh-doctor-testenv-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
      -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:%s,IP:%s\nextendedKeyUsage=serverAuth\n' \
      "$TESTENV_KUBERNETES_SVC_IP" "$TESTENV_APISERVER_IP" >san.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile san.ext -out apiserver.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
fi
if [[ ! -f "$D/pki/kubelet-client.crt" ]]; then
  (
    cd "$D/pki"
    # client cert the apiserver shows to kubelets (real mode), group system:masters
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
      -keyout kubelet-client.key -out kubelet-client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in kubelet-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out kubelet-client.crt 2>/dev/null
  )
fi
if [[ ! -f "$D/admin.token" ]]; then
  openssl rand -hex 24 >"$D/admin.token"
  openssl rand -hex 24 >"$D/viewer.token"
fi
ADMIN_TOKEN="$(cat "$D/admin.token")"
VIEWER_TOKEN="$(cat "$D/viewer.token")"
# token,user,uid,"group1,group2"
{
  printf '%s,admin,admin-uid,"system:masters"\n' "$ADMIN_TOKEN"
  printf '%s,viewer,viewer-uid,"mesh-doctor:viewers"\n' "$VIEWER_TOKEN"
} >"$D/tokens.csv"
chmod 600 "$D/tokens.csv" "$D/admin.token" "$D/viewer.token"

cat >"$D/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
EOF

write_kubeconfig() { # $1 = file, $2 = user, $3 = token
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: $API_URL
    certificate-authority: $D/pki/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: testenv
  context:
    cluster: testenv
    user: $2
    namespace: default
current-context: testenv
EOF
  chmod 600 "$1"
}
write_kubeconfig "$D/kubeconfig" admin "$ADMIN_TOKEN"
write_kubeconfig "$D/kubeconfig-viewer" viewer "$VIEWER_TOKEN"

# ---------------------------------------------------------------- etcd (shared)
if etcd_healthy; then
  testenv_log "etcd: reusing the one on $ETCD_URL"
else
  if pid_alive "$E/etcd.pid"; then
    testenv_die "etcd pid $(cat "$E/etcd.pid") is alive but $ETCD_URL/health is not healthy; see $E/etcd.log"
  fi
  for port in "$TESTENV_ETCD_CLIENT_PORT" "$TESTENV_ETCD_PEER_PORT"; do
    if port_busy "$port"; then testenv_die "etcd port $port is in use by something else"; fi
  done
  testenv_log "etcd: starting ($ETCD_BIN)"
  start_bg "$E/etcd.pid" "$E/etcd.log" "$ETCD_BIN" \
    --name testenv \
    --data-dir "$E/data" \
    --listen-client-urls "$ETCD_URL" \
    --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls "http://127.0.0.1:$TESTENV_ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$TESTENV_ETCD_PEER_PORT" \
    --initial-cluster "testenv=http://127.0.0.1:$TESTENV_ETCD_PEER_PORT" \
    --listen-metrics-urls "" \
    --unsafe-no-fsync \
    --quota-backend-bytes 2147483648
  wait_for etcd 30 "$E/etcd.pid" etcd_healthy
fi
mkdir -p "$E/users"
echo "$D" >"$E/users/$TESTENV_NAME"

# ---------------------------------------------------------------- kube-apiserver
if [[ "$TESTENV_REAL" == 1 ]]; then
  # The default admission plugins (ServiceAccount, MutatingAdmissionWebhook,
  # ValidatingAdmissionWebhook, ...) and the lease endpoint reconciler, so that the
  # `kubernetes` Service has endpoints that pods reach through kube-proxy.
  admission_flags=(--endpoint-reconciler-type lease)
else
  admission_flags=(--disable-admission-plugins ServiceAccount,MutatingAdmissionWebhook,ValidatingAdmissionWebhook
    --endpoint-reconciler-type none)
fi
testenv_log "kube-apiserver: starting ($KUBE_APISERVER_BIN)"
start_bg "$D/kube-apiserver.pid" "$D/kube-apiserver.log" "$KUBE_APISERVER_BIN" \
  --etcd-servers "$ETCD_URL" \
  --etcd-prefix "$TESTENV_ETCD_PREFIX" \
  --bind-address "$TESTENV_APISERVER_IP" \
  --advertise-address "$TESTENV_APISERVER_IP" \
  --secure-port "$TESTENV_APISERVER_PORT" \
  --cert-dir "$D/pki" \
  --tls-cert-file "$D/pki/apiserver.crt" \
  --tls-private-key-file "$D/pki/apiserver.key" \
  --token-auth-file "$D/tokens.csv" \
  --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$D/pki/sa.pub" \
  --service-account-signing-key-file "$D/pki/sa.key" \
  --service-cluster-ip-range "$TESTENV_SERVICE_CIDR" \
  --allow-privileged=true \
  "${admission_flags[@]}" \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --kubelet-client-certificate "$D/pki/kubelet-client.crt" \
  --kubelet-client-key "$D/pki/kubelet-client.key" \
  --audit-policy-file "$D/audit-policy.yaml" \
  --audit-log-path "$D/audit.log" \
  --audit-log-maxsize 100 \
  --audit-log-maxbackup 1 \
  --profiling=false
wait_for kube-apiserver "$TESTENV_READY_TIMEOUT" "$D/kube-apiserver.pid" apiserver_ready
testenv_log "kube-apiserver: ready"

# ---------------------------------------------------------------- RBAC for the viewer
# The viewer user gets the rules of the built-in "view" ClusterRole (namespaced reads incl.
# pods/log; no secrets, no pods/exec|attach|portforward) plus cluster-scoped and Istio/Gateway
# reads. It is bound to system:aggregate-to-view, which holds view's rules: "view" itself is
# an aggregated role and stays empty without kube-controller-manager.
# Not `resources: ["*"]`: that also matches pods/portforward, and kubectl >=1.31 port-forwards
# over a WebSocket GET, which `get` on pods/portforward allows.
kc apply -f - >/dev/null <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: mesh-doctor-testenv-readonly
rules:
- apiGroups: [""]
  resources: [nodes, namespaces, persistentvolumes, componentstatuses]
  verbs: [get, list, watch]
- apiGroups:
  - admissionregistration.k8s.io
  - apiextensions.k8s.io
  - apiregistration.k8s.io
  - rbac.authorization.k8s.io
  - storage.k8s.io
  - discovery.k8s.io
  - coordination.k8s.io
  - networking.istio.io
  - security.istio.io
  - telemetry.istio.io
  - extensions.istio.io
  - gateway.networking.k8s.io
  - kwok.x-k8s.io
  resources: ["*"]
  verbs: [get, list, watch]
- nonResourceURLs: ["*"]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: mesh-doctor-testenv-viewer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: mesh-doctor-testenv-readonly
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: viewer
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: mesh-doctor-testenv-viewer-view
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:aggregate-to-view
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: viewer
EOF

# ---------------------------------------------------------------- kube-controller-manager (optional)
if [[ "$TESTENV_KCM" == 1 ]]; then
  [[ -x "$KUBE_CONTROLLER_MANAGER_BIN" ]] || testenv_die "TESTENV_KCM=1 but $KUBE_CONTROLLER_MANAGER_BIN is missing: run testenv/build.sh --kcm"
  kcm_controllers='*,-node-lifecycle-controller,-node-ipam-controller,-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller,-persistentvolume-attach-detach-controller'
  # a real kubelet registers its node tainted not-ready: the node lifecycle controller lifts it
  [[ "$TESTENV_REAL" == 1 ]] && kcm_controllers="${kcm_controllers/,-node-lifecycle-controller/}"
  testenv_log "kube-controller-manager: starting ($KUBE_CONTROLLER_MANAGER_BIN)"
  # No serving port (--secure-port 0); node lifecycle/IPAM off so kwok nodes are never tainted or evicted.
  start_bg "$D/kube-controller-manager.pid" "$D/kube-controller-manager.log" "$KUBE_CONTROLLER_MANAGER_BIN" \
    --kubeconfig "$D/kubeconfig" \
    --secure-port 0 \
    --leader-elect=false \
    --use-service-account-credentials=false \
    --service-account-private-key-file "$D/pki/sa.key" \
    --root-ca-file "$D/pki/ca.crt" \
    --service-cluster-ip-range "$TESTENV_SERVICE_CIDR" \
    --controllers "$kcm_controllers"
  default_sa() { kc -n default get serviceaccount default >/dev/null 2>&1; }
  wait_for "kube-controller-manager (default ServiceAccount)" 60 "$D/kube-controller-manager.pid" default_sa
  testenv_log "kube-controller-manager: running"
fi

if [[ "$TESTENV_REAL" == 1 ]]; then
  testenv_log "control plane of '$TESTENV_NAME' is up (real mode: the node comes from node-up.sh)"
  print_env
  exit 0
fi

# ---------------------------------------------------------------- kwok
KWOK_SRC="$(testenv_modcache_dir sigs.k8s.io/kwok "$KWOK_VERSION")"
if [[ ! -d "$KWOK_SRC/kustomize" ]]; then
  # The module source is needed for the CRDs and stages; download it if the cache lost it.
  (cd "$TESTENV_SRC/gomod/kwok" && go mod download sigs.k8s.io/kwok) || true
fi
[[ -d "$KWOK_SRC/kustomize" ]] || testenv_die "kwok module source not found at $KWOK_SRC"

crds=(portforwards clusterportforwards logs clusterlogs)
[[ "$TESTENV_KWOK_STAGE_CRD" == 1 ]] && crds+=(stages)
for c in "${crds[@]}"; do
  kc apply --server-side --force-conflicts -f "$KWOK_SRC/kustomize/crd/bases/kwok.x-k8s.io_$c.yaml" >/dev/null
done
for c in "${crds[@]}"; do
  kc wait --for condition=Established --timeout 60s "crd/$c.kwok.x-k8s.io" >/dev/null
done

stage_files=(
  "$KWOK_SRC/kustomize/stage/node/fast/node-initialize.yaml"
  "$KWOK_SRC/kustomize/stage/node/heartbeat/node-heartbeat.yaml"
  "$KWOK_SRC/kustomize/stage/pod/fast/pod-ready.yaml"
  "$KWOK_SRC/kustomize/stage/pod/fast/pod-complete.yaml"
  "$KWOK_SRC/kustomize/stage/pod/fast/pod-delete.yaml"
)
for f in "$TESTENV_SRC"/stages/*.yaml; do
  [[ -e "$f" ]] && stage_files+=("$f")
done

# The upstream pod-ready stage, changed to leave pods labelled mesh-doctor.test/sidecar
# to the testenv/stages/*.yaml stages (needed by stages whose result is still Pending).
pod_ready_stage() {
  awk '{ print }
       /^    matchExpressions:$/ && !done {
         print "    - key: '"'"'.metadata.labels[\"mesh-doctor.test/sidecar\"]'"'"'"
         print "      operator: '"'"'DoesNotExist'"'"'"
         done = 1
       }' "$KWOK_SRC/kustomize/stage/pod/fast/pod-ready.yaml"
}
if [[ "${TESTENV_KWOK_PATCH_POD_READY:-1}" == 1 ]]; then
  mkdir -p "$D/stages"
  pod_ready_stage >"$D/stages/pod-ready.yaml"
  grep -q 'mesh-doctor.test/sidecar' "$D/stages/pod-ready.yaml" || testenv_die "could not patch the pod-ready stage"
  stage_files[2]="$D/stages/pod-ready.yaml"
fi

{
  echo "apiVersion: config.kwok.x-k8s.io/v1alpha1"
  echo "kind: KwokConfiguration"
  # kwok does not apply its defaults to a config file's options: set them here.
  cat <<'OPTS'
options:
  enableDebuggingHandlers: true
  enableProfilingHandler: false
  enableContentionProfiling: false
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
OPTS
  if [[ "$TESTENV_KWOK_STAGE_CRD" == 1 ]]; then
    echo "  enableCRDs: [Stage, PortForward, ClusterPortForward, Logs, ClusterLogs]"
  else
    echo "  enableCRDs: [PortForward, ClusterPortForward, Logs, ClusterLogs]"
    for f in "${stage_files[@]}"; do echo "---"; cat "$f"; done
  fi
} >"$D/kwok.yaml"
if [[ "$TESTENV_KWOK_STAGE_CRD" == 1 ]]; then
  for f in "${stage_files[@]}"; do kc apply -f "$f" >/dev/null; done
fi

testenv_log "kwok: starting ($KWOK_BIN)"
start_bg "$D/kwok.pid" "$D/kwok.log" "$KWOK_BIN" \
  --kubeconfig "$D/kubeconfig" \
  --config "$D/kwok.yaml" \
  --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --node-ip 127.0.0.1 \
  --node-name localhost \
  --node-port "$TESTENV_KWOK_PORT" \
  --server-address "127.0.0.1:$TESTENV_KWOK_PORT" \
  --cidr 10.244.0.0/16

# ---------------------------------------------------------------- node
kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $TESTENV_NODE_NAME
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: $TESTENV_NODE_NAME
    type: kwok
spec: {}
EOF
wait_for "node $TESTENV_NODE_NAME Ready" 60 "$D/kwok.pid" node_ready
testenv_log "node $TESTENV_NODE_NAME is Ready; testenv '$TESTENV_NAME' is up"
print_env
