#!/usr/bin/env bash
# Start a test cluster with a REAL node: etcd + kube-apiserver (admission plugins on,
# ServiceAccount tokens signed) + kube-controller-manager + kube-scheduler on the host, and
# containerd + runc + CNI bridge + kubelet + kube-proxy + CoreDNS inside a network namespace
# of their own (`mdnode-$TESTENV_NAME`), joined to the host by a veth pair.
#
# Needs root. Installs the Debian packages it needs when they are missing, builds the
# binaries (testenv/build.sh --node, cached) and the images (testenv/node/images.sh,
# cached), and imports the images into this node's containerd.
#
# Prints `export ...` lines on stdout (eval "$(testenv/node-up.sh)"); progress on stderr.
# Stop it with testenv/node-down.sh (same TESTENV_NAME). See testenv/README.md, "Real node".
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

TESTENV_NAME="${TESTENV_NAME:-default}"
[[ "$TESTENV_NAME" =~ ^[a-z0-9][a-z0-9-]{0,9}$ ]] || testenv_die "TESTENV_NAME must match [a-z0-9][a-z0-9-]{0,9} (it names network devices)"
if [[ "$TESTENV_NAME" == default ]]; then
  _off=0; _dir=/tmp/mesh-doctor-testenv
else
  _off=$(( $(printf '%s' "$TESTENV_NAME" | cksum | cut -d' ' -f1) % 99 + 1 ))
  _dir=/tmp/mesh-doctor-testenv-$TESTENV_NAME
fi
TESTENV_PORT_OFFSET="${TESTENV_PORT_OFFSET:-$_off}"
D="${TESTENV_DIR:-$_dir}"
export TESTENV_NAME TESTENV_PORT_OFFSET TESTENV_DIR="$D"
testenv_real_net "$TESTENV_PORT_OFFSET"
NODE_READY_TIMEOUT="${NODE_READY_TIMEOUT:-120}"

[[ "$(id -u)" == 0 ]] || testenv_die "node-up.sh needs root (network namespaces, containerd, kubelet)"

# ---------------------------------------------------------------- packages
# containerd, runc, the CNI plugins, iptables, conntrack, static busybox, gcc, ...: one list
"$TESTENV_SRC/packages.sh"

# ---------------------------------------------------------------- binaries, images
"$TESTENV_SRC/build.sh" --node >&2
"$TESTENV_SRC/node/images.sh" >&2

KUBECTL="${KUBECTL:-$KUBECTL_BIN}"
kc() { "$KUBECTL" --kubeconfig "$D/kubeconfig" "$@"; }
pid_alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
in_node() { nsenter --net="/var/run/netns/$REAL_NETNS" "$@"; }
start_bg() { # $1 = pid file, $2 = log file, rest = command
  local pidf="$1" logf="$2"; shift 2
  setsid "$@" </dev/null >>"$logf" 2>&1 9>&- &
  echo $! >"$pidf"
}
start_in_node() { # like start_bg, inside the node's network namespace
  local pidf="$1" logf="$2"; shift 2
  setsid nsenter --net="/var/run/netns/$REAL_NETNS" "$@" </dev/null >>"$logf" 2>&1 9>&- &
  echo $! >"$pidf"
}
wait_for() { # $1 = description, $2 = timeout, $3 = pid file or "", rest = command
  local what="$1" timeout="$2" pidf="$3"; shift 3
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    if [[ -n "$pidf" ]] && ! pid_alive "$pidf"; then testenv_die "$what: process exited; see ${pidf%.pid}.log"; fi
    (( SECONDS < deadline )) || testenv_die "$what: not ready after ${timeout}s"
    sleep 0.5
  done
}
node_ready() {
  [[ "$(kc get node "$REAL_NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}
CTR_SOCK="$D/containerd/containerd.sock"
ctr_k8s() { ctr --address "$CTR_SOCK" -n k8s.io "$@"; }

print_env() {
  TESTENV_REAL=1 "$TESTENV_SRC/up.sh" 2>/dev/null
  cat <<EOF
export TESTENV_NODE_NETNS=$REAL_NETNS
export TESTENV_NODE_IP=$REAL_NODE_IP
export TESTENV_CONTAINERD_SOCK=$CTR_SOCK
export TESTENV_IMAGE_HUB=$TESTENV_IMAGE_HUB
export TESTENV_IMAGE_TAG=$ISTIO_VERSION
EOF
}

all_up() {
  local p
  for p in kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy coredns; do
    pid_alive "$D/$p.pid" || return 1
  done
  node_ready
}
if [[ -d "$D" ]] && all_up; then
  testenv_log "real node '$REAL_NODE_NAME' of '$TESTENV_NAME' is already up"
  print_env
  exit 0
fi
# A half-started node: take it down first (only what this instance started).
if [[ -d "$D" ]] && { [[ -e "/var/run/netns/$REAL_NETNS" ]] || pid_alive "$D/kubelet.pid" || pid_alive "$D/containerd.pid"; }; then
  testenv_log "stopping the leftovers of '$TESTENV_NAME' first"
  "$TESTENV_SRC/node-down.sh" >&2
fi
mkdir -p "$D"

# ---------------------------------------------------------------- network
# host: $REAL_VETH_HOST $REAL_HOST_IP/24 <-> netns $REAL_NETNS: eth0 $REAL_NODE_IP/24, cni0 bridge
# for pods ($REAL_POD_CIDR). The host routes the pod and service CIDRs to the node, so the
# apiserver reaches webhooks (istiod) by ClusterIP and pod IPs directly.
testenv_log "network: netns $REAL_NETNS, $REAL_VETH_HOST $REAL_HOST_IP <-> eth0 $REAL_NODE_IP, pods $REAL_POD_CIDR, services $REAL_SERVICE_CIDR"
ip netns add "$REAL_NETNS"
ip link add "$REAL_VETH_HOST" type veth peer name eth0 netns "$REAL_NETNS"
ip addr add "$REAL_HOST_IP/24" dev "$REAL_VETH_HOST"
ip link set "$REAL_VETH_HOST" up
in_node ip link set lo up
in_node ip addr add "$REAL_NODE_IP/24" dev eth0
in_node ip link set eth0 up
in_node ip route add default via "$REAL_HOST_IP"
ip route add "$REAL_POD_CIDR" via "$REAL_NODE_IP"
ip route add "$REAL_SERVICE_CIDR" via "$REAL_NODE_IP"
in_node sysctl -qw net.ipv4.ip_forward=1
in_node sysctl -qw net.ipv4.conf.all.route_localnet=1
# bridged pod-to-pod traffic through iptables (Service hairpin); per network namespace
in_node sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null \
  || testenv_log "warning: net.bridge.bridge-nf-call-iptables not settable in $REAL_NETNS"

# ---------------------------------------------------------------- control plane
testenv_log "control plane (up.sh, TESTENV_REAL=1)"
TESTENV_REAL=1 "$TESTENV_SRC/up.sh" >"$D/up.env"

# The kubelet sets vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1 (it has no
# setting to leave them alone but to fail on them): keep the host's values for node-down.sh.
SYSCTL_SAVE=/tmp/mesh-doctor-node-sysctl.orig
if [[ ! -s "$SYSCTL_SAVE" ]]; then
  sysctl vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops >"$SYSCTL_SAVE" 2>/dev/null || true
fi

# ---------------------------------------------------------------- cgroups
# Pods go under /$REAL_CGROUP in every cgroup v1 hierarchy (kubelet cgroupRoot), so
# node-down.sh can remove exactly what this node made.
if [[ -d /sys/fs/cgroup/memory ]]; then
  for h in /sys/fs/cgroup/*/; do
    [[ -f "$h/cgroup.procs" ]] || continue
    mkdir -p "$h$REAL_CGROUP"
    if [[ -f "$h/cpuset.cpus" ]]; then
      cat "$h/cpuset.cpus" >"$h$REAL_CGROUP/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$REAL_CGROUP/cpuset.mems"
    fi
  done
else
  mkdir -p "/sys/fs/cgroup/$REAL_CGROUP"
fi

# ---------------------------------------------------------------- containerd + CNI
mkdir -p "$D/containerd/root" "$D/containerd/state" "$D/cni/net.d" "$D/cni/ipam"
cat >"$D/cni/net.d/10-mesh-doctor.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "mesh-doctor-$TESTENV_NAME",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$REAL_POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$D/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
cat >"$D/containerd/config.toml" <<EOF
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[debug]
  address = "$CTR_SOCK.debug"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$TESTENV_IMAGE_HUB/pause:$PAUSE_VERSION"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  restrict_oom_score_adj = true
  enable_unprivileged_ports = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
EOF
testenv_log "containerd: starting ($(containerd --version | awk '{print $3}'))"
start_in_node "$D/containerd.pid" "$D/containerd.log" containerd --config "$D/containerd/config.toml"
ctr_up() { ctr --address "$CTR_SOCK" version >/dev/null 2>&1; }
wait_for containerd 30 "$D/containerd.pid" ctr_up
for img in "$TESTENV_IMAGES"/*.tar; do
  ctr_k8s image import --no-unpack=false "$img" >/dev/null 2>&1 || ctr_k8s image import "$img" >/dev/null
done
testenv_log "containerd: images imported: $(ctr_k8s image ls -q | grep -c "$TESTENV_IMAGE_HUB") from $TESTENV_IMAGES"

# ---------------------------------------------------------------- kubelet
mkdir -p "$D/kubelet" "$D/pod-logs"
: >"$D/kubelet/resolv.conf"
cat >"$D/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $REAL_NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $D/pki/ca.crt}
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
cgroupRoot: /$REAL_CGROUP
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$CTR_SOCK
clusterDomain: cluster.local
clusterDNS: [$REAL_DNS_IP]
resolvConf: $D/kubelet/resolv.conf
podLogsDir: $D/pod-logs
maxPods: 60
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
evictionPressureTransitionPeriod: 10s
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
fileCheckFrequency: 10s
protectKernelDefaults: false
rotateCertificates: false
serverTLSBootstrap: false
localStorageCapacityIsolation: true
EOF
testenv_log "kubelet: starting ($KUBELET_BIN), node $REAL_NODE_NAME at $REAL_NODE_IP"
start_in_node "$D/kubelet.pid" "$D/kubelet.log" "$KUBELET_BIN" \
  --config "$D/kubelet/config.yaml" \
  --kubeconfig "$D/kubeconfig" \
  --root-dir "$D/kubelet" \
  --cert-dir "$D/kubelet/pki" \
  --hostname-override "$REAL_NODE_NAME" \
  --node-ip "$REAL_NODE_IP" \
  --node-labels "mesh-doctor.test/node=real"

# ---------------------------------------------------------------- kube-proxy
cat >"$D/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $D/kubeconfig}
mode: iptables
clusterCIDR: $REAL_POD_CIDR
hostnameOverride: $REAL_NODE_NAME
bindAddress: $REAL_NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
testenv_log "kube-proxy: starting ($KUBE_PROXY_BIN, iptables)"
start_in_node "$D/kube-proxy.pid" "$D/kube-proxy.log" "$KUBE_PROXY_BIN" --config "$D/kube-proxy.yaml"

# ---------------------------------------------------------------- CoreDNS
# A process in the node's namespace on $REAL_DNS_IP:53 (the kubelet's clusterDNS).
cat >"$D/Corefile" <<EOF
.:53 {
    bind $REAL_DNS_IP 127.0.0.1
    errors
    health 127.0.0.1:18080
    ready 127.0.0.1:18181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $D/kubeconfig testenv
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
EOF
testenv_log "coredns: starting ($COREDNS_BIN) on $REAL_DNS_IP:53"
start_in_node "$D/coredns.pid" "$D/coredns.log" "$COREDNS_BIN" -conf "$D/Corefile"

# ---------------------------------------------------------------- kube-scheduler
testenv_log "kube-scheduler: starting ($KUBE_SCHEDULER_BIN)"
start_bg "$D/kube-scheduler.pid" "$D/kube-scheduler.log" "$KUBE_SCHEDULER_BIN" \
  --kubeconfig "$D/kubeconfig" \
  --authentication-kubeconfig "$D/kubeconfig" \
  --authorization-kubeconfig "$D/kubeconfig" \
  --secure-port 0 \
  --leader-elect=false

wait_for "node $REAL_NODE_NAME Ready" "$NODE_READY_TIMEOUT" "$D/kubelet.pid" node_ready
dns_ready() { in_node curl -fsS --max-time 2 http://127.0.0.1:18181/ready >/dev/null 2>&1; }
wait_for "coredns ready" 60 "$D/coredns.pid" dns_ready
testenv_log "real node $REAL_NODE_NAME is Ready; testenv '$TESTENV_NAME' is up"
print_env
