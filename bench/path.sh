#!/usr/bin/env bash
# Benchmark: `path` on the benchmark cluster of bench/live.sh (1,000 namespaces, bench/gen_manifests.py's
# objects applied), without the probe, against the lists it needs made raw and in parallel
# (`kubectl get --raw`, no decoding): every namespace's Namespaces, Services and Istio config,
# the client namespace's Pods, workloads and NetworkPolicies, istio-system's ConfigMaps, and the
# target's EndpointSlices. With OLD_BIN set, that binary is measured in the same run. Writes the
# medians into docs/performance.md between the path-bench markers.
#
#   bench/live.sh /tmp/mesh-doctor-testenv-bench 1      # once: puts the objects on the cluster
#   bench/path.sh /tmp/mesh-doctor-testenv-bench [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
state="${1:?usage: bench/path.sh TESTENV_STATE_DIR [RUNS]}"
runs="${2:-5}"
export KUBECONFIG="$state/kubeconfig"
cache="${MESH_DOCTOR_CACHE:-$HOME/.cache/mesh-doctor}"
kubectl=$(ls "$cache"/bin/kubectl-v* | sort -V | tail -n 1)
bin="${NEW_BIN:-target/release/kubectl-mesh_doctor}"
[[ -n "${NEW_BIN:-}" ]] || cargo build --release --quiet
"$kubectl" get namespace team-0999 >/dev/null 2>&1 || { echo "the benchmark objects are not on the cluster: run bench/live.sh first" >&2; exit 1; }
ns=team-0001
client=$("$kubectl" -n "$ns" get pods -o jsonpath='{.items[0].metadata.name}')
target="svc-3.$ns"
timefile=$(mktemp)
trap 'rm -f "$timefile"' EXIT

# The Istio kinds the cluster serves, as `path` lists them (every namespace).
istio_paths=$("$kubectl" api-resources --no-headers -o name 2>/dev/null \
  | grep -E '\.(networking|security|telemetry|extensions)\.istio\.io$|\.gateway\.networking\.k8s\.io$' \
  | while read -r r; do
      plural=${r%%.*}; group=${r#*.}
      version=$("$kubectl" api-resources --no-headers --api-group="$group" 2>/dev/null | awk -v p="$plural" '$1==p {print $3}' | head -n 1 | cut -d/ -f2)
      echo "/apis/$group/$version/$plural"
    done)

raw_lists() {
  local p
  for p in /api/v1/namespaces /api/v1/services "/api/v1/namespaces/$ns/pods" \
      "/apis/apps/v1/namespaces/$ns/deployments" "/apis/apps/v1/namespaces/$ns/statefulsets" \
      "/apis/apps/v1/namespaces/$ns/daemonsets" "/apis/batch/v1/namespaces/$ns/cronjobs" \
      "/apis/networking.k8s.io/v1/namespaces/$ns/networkpolicies" /api/v1/namespaces/istio-system/configmaps \
      "/apis/discovery.k8s.io/v1/namespaces/$ns/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dsvc-3" \
      $istio_paths; do
    "$kubectl" get --raw "$p" >/dev/null &
  done
  wait
}

# median wall time, median CPU time (user+sys) and max peak RSS (KiB) of RUNS runs of: "$@"
measure() {
  local walls=() cpus=() rss_max=0 wall user sys rss
  for _ in $(seq "$runs"); do
    /usr/bin/time -o "$timefile" -f '%e %U %S %M' "$@" >/dev/null 2>&1 || true
    read -r wall user sys rss <<<"$(tail -n 1 "$timefile")"
    walls+=("$wall"); cpus+=("$(awk "BEGIN{print $user + $sys}")")
    (( rss > rss_max )) && rss_max=$rss
  done
  local mw mc
  mw=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  mc=$(printf '%s\n' "${cpus[@]}" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  echo "$mw $mc $rss_max"
}
export -f raw_lists
export kubectl ns istio_paths

load_start=$(cut -d' ' -f1 /proc/loadavg)
read -r new_wall new_cpu new_rss <<<"$(measure "$bin" path "$client" "$target" -n "$ns" --no-probe -o json)"
read -r raw_wall raw_cpu _ <<<"$(measure bash -c raw_lists)"
old_row=""
if [[ -n "${OLD_BIN:-}" ]]; then
  read -r old_wall old_cpu old_rss <<<"$(measure "$OLD_BIN" path "$client" "$target" -n "$ns" --no-probe -o json)"
  old_row=$'\n'"| the same, before the narrower read (every namespace's Pods, workloads and Events) | $runs | ${old_wall} s | ${old_cpu} s | $((old_rss / 1024)) MiB |"
fi
load_end=$(cut -d' ' -f1 /proc/loadavg)
pods=$("$kubectl" get pods -A --no-headers | wc -l)
nss=$("$kubectl" get namespaces --no-headers | wc -l)
report=$(cat <<MD
<!-- path-bench:start -->
| command | runs | median wall time | median CPU time (user+sys) | peak RSS (max of runs) |
|---|---|---|---|---|
| \`kubectl mesh-doctor path $client $target -n $ns --no-probe -o json\` | $runs | ${new_wall} s | ${new_cpu} s | $((new_rss / 1024)) MiB |${old_row}
| the lists it needs, raw and in parallel (\`kubectl get --raw\`, no decoding) | $runs | ${raw_wall} s | ${raw_cpu} s | — |

Measured $(date -u +%Y-%m-%d) with \`bench/path.sh\` on $(nproc) cores, release build, against the
local test cluster holding the objects of \`bench/gen_manifests.py\` ($nss namespaces, $pods pods).
Load average $load_start at the start, $load_end at the end (the machine is shared with other builds).
The probe (a port-forward to each Envoy, bounded by \`--probe-timeout\`) comes on top.
<!-- path-bench:end -->
MD
)
echo "$report"
python3 - "$report" <<'PY'
import re, sys
path = "docs/performance.md"
text = open(path).read()
new = sys.argv[1]
pattern = re.compile(r"<!-- path-bench:start -->.*?<!-- path-bench:end -->", re.S)
text = pattern.sub(lambda _: new, text) if pattern.search(text) else text.rstrip("\n") + "\n\n## `path` on a cluster\n\n" + new + "\n"
open(path, "w").write(text)
PY
