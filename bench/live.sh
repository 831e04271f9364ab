#!/usr/bin/env bash
# Benchmark: live `analyze -A` against `istioctl analyze -A` on the same test cluster, one run
# after the other, with the objects of bench/gen_manifests.py applied (1,000 namespaces, 10,000
# pods, 5,000 Services, 2,000 VirtualServices, 2,000 DestinationRules, 200 Gateways, 500
# ServiceEntries, 200 Sidecars, 1,000 AuthorizationPolicies, 200 HTTPRoutes). Writes the numbers
# into docs/performance.md between the live-bench markers.
#
# Needs a test cluster with Istio's CRDs:
#   TESTENV_NAME=bench testenv/up.sh && TESTENV_NAME=bench testenv/istiod-up.sh
#   bench/live.sh /tmp/mesh-doctor-testenv-bench [RUNS]
# The Gateway API CRDs (for the HTTPRoutes) are applied from the Go module cache when found.
# Applying the objects takes minutes; a second run on the same cluster skips it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
state="${1:?usage: bench/live.sh TESTENV_STATE_DIR [RUNS]}"
runs="${2:-3}"
export KUBECONFIG="$state/kubeconfig"
cache="${MESH_DOCTOR_CACHE:-$HOME/.cache/mesh-doctor}"
kubectl=$(ls "$cache"/bin/kubectl-v* | sort -V | tail -n 1)
istioctl=$(ls "$cache"/bin/istioctl-* | sort -V | tail -n 1)
dir="${BENCH_DIR:-target/bench-manifests}"
python3 bench/gen_manifests.py "$dir"
# MESH_DOCTOR_BIN: a release binary already built.
if [[ -n "${MESH_DOCTOR_BIN:-}" ]]; then
  bin=$MESH_DOCTOR_BIN
  mkdir -p target
else
  cargo build --release --quiet
  bin=target/release/kubectl-mesh_doctor
fi
timefile=target/bench-live-time.txt

if ! "$kubectl" get namespace team-0999 >/dev/null 2>&1; then
  gwapi=$(ls -d "$(go env GOMODCACHE 2>/dev/null)"/sigs.k8s.io/gateway-api@*/config/crd/standard 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$gwapi" ]]; then
    "$kubectl" apply --server-side -f "$gwapi" >/dev/null
    "$kubectl" wait --for condition=Established --timeout 60s crd httproutes.gateway.networking.k8s.io >/dev/null
  fi
  echo "applying $(du -sh "$dir" | cut -f1) of manifests (minutes)..." >&2
  for f in "$dir"/part-*.yaml; do
    # Namespaces first (every file holds its namespaces' objects after them).
    "$kubectl" apply --server-side -f "$f" >/dev/null 2>&1 || "$kubectl" apply --server-side -f "$f" >/dev/null
  done
fi
objects=$("$kubectl" get pods,services,virtualservices,destinationrules,gateways.networking.istio.io,serviceentries,sidecars,authorizationpolicies -A --no-headers 2>/dev/null | wc -l)

# Every timed run starts after a pause: the API server collects the garbage of a run (tens of
# MB of JSON for the raw lists) for a fraction of a second after it, and the run after it, on
# the same two cores, would pay for it (0.6-0.9 s instead of 0.5 in back-to-back rounds).
pause="${BENCH_PAUSE:-1}"

# One run of "$@": its wall time to the millisecond (the process's whole life, start and exit
# included), its CPU time (user+sys) and its peak RSS (KiB).
run_once() {
  local start end user sys rss
  sleep "$pause"
  start=$EPOCHREALTIME
  /usr/bin/time -o "$timefile" -f '%U %S %M' "$@" >/dev/null 2>&1 || true
  end=$EPOCHREALTIME
  read -r user sys rss <<<"$(tail -n 1 "$timefile")"
  echo "$(awk "BEGIN{printf \"%.3f\", $end - $start}") $(awk "BEGIN{print $user + $sys}") $rss"
}

# The smaller of two numbers (the first when the second is empty).
smaller() { if [[ -z "$2" ]] || awk "BEGIN{exit !($1 < $2)}"; then echo "$1"; else echo "$2"; fi; }

# best wall time, best CPU time (user+sys) and max peak RSS (KiB) of RUNS runs of: "$@"
measure() {
  local best_wall="" best_cpu="" best_rss=0 wall cpu rss
  for _ in $(seq "$runs"); do
    read -r wall cpu rss <<<"$(run_once "$@")"
    echo "  $1: ${wall}s wall, ${cpu}s CPU, ${rss} KiB" >&2
    best_wall=$(smaller "$wall" "$best_wall")
    best_cpu=$(smaller "$cpu" "$best_cpu")
    if (( rss > best_rss )); then best_rss=$rss; fi
  done
  echo "$best_wall $best_cpu $best_rss"
}

# The lists mesh-doctor makes, from its own trace (its client logs every request's URL):
# the reference fetches the same paths raw.
paths=target/bench-live-paths.txt
MESH_DOCTOR_LOG="mesh_doctor::source::cluster=trace" "$bin" analyze -A -o json 2>&1 >/dev/null \
  | sed 's/\x1b\[[0-9;]*m//g' | grep -o 'url=[^ ]*' | sed -E 's|^url=https?://[^/]+||; s|\?.*$||' \
  | awk -F/ '($2 == "api" && NF >= 4) || ($2 == "apis" && NF >= 5)' | sort -u >"$paths" || true  # analyze exits 79: findings
# One run of bench/raw_lists.py MODE...: wall time, requests, bytes.
raw_once() {
  local wall requests bytes
  sleep "$pause"
  read -r wall requests bytes <<<"$(python3 bench/raw_lists.py "$KUBECONFIG" "$paths" "$@")"
  echo "  raw $*: ${wall}s, $requests requests, $bytes bytes" >&2
  echo "$wall $requests $bytes"
}

# best wall time of RUNS runs of bench/raw_lists.py MODE...
raw() {
  local best="" wall requests bytes
  for _ in $(seq "$runs"); do
    read -r wall requests bytes <<<"$(raw_once "$@")"
    best=$(smaller "$wall" "$best")
  done
  echo "$best $requests $bytes"
}

load_start=$(cut -d' ' -f1 /proc/loadavg)
# mesh-doctor and the raw JSON lists it is compared with take turns, one run of each per round,
# so that both meet the API server in the same state (its garbage collector slows one run in
# two or three, whichever it is). The order turns too, from one round to the next: the run after
# a raw JSON list (tens of MB of garbage on the server) is the slow one, and no contestant should
# always be it.
ours_wall="" ours_cpu="" ours_rss=0 raw_whole="" raw_pages=""
ours_walls=() raw_walls=()
ours_turn() {
  read -r wall cpu rss <<<"$(run_once "$bin" analyze -A -o json)"
  echo "  $bin: ${wall}s wall, ${cpu}s CPU, ${rss} KiB" >&2
  ours_walls+=("$wall")
  ours_wall=$(smaller "$wall" "$ours_wall")
  ours_cpu=$(smaller "$cpu" "$ours_cpu")
  if (( rss > ours_rss )); then ours_rss=$rss; fi
}
whole_turn() {
  read -r wall whole_requests raw_bytes <<<"$(raw_once whole)"
  raw_walls+=("$wall")
  raw_whole=$(smaller "$wall" "$raw_whole")
}
pages_turn() {
  read -r wall pages_requests _ <<<"$(raw_once pages 5000)"
  raw_walls+=("$wall")
  raw_pages=$(smaller "$wall" "$raw_pages")
}
turns=(ours_turn whole_turn pages_turn)
for round in $(seq 0 $((runs - 1))); do
  for i in 0 1 2; do
    "${turns[$(((round + i) % 3))]}"
  done
done
# The median of some numbers.
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END{print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ours_median=$(median "${ours_walls[@]}")
raw_median=$(median "${raw_walls[@]}")
# Right after mesh-doctor's runs, before istioctl's leave the server busy.
# The request timeline of one run (-vv): from the first request to the last page listed.
"$bin" analyze -A -o json -vv 2>&1 >/dev/null | sed 's/\x1b\[[0-9;]*m//g' >target/bench-live-timeline.txt || true
spans=$(python3 - target/bench-live-timeline.txt <<'PY'
import sys, re, datetime
stamps, ran = [], []
for line in open(sys.argv[1]):
    m = re.match(r"(\d{4}-\d\d-\d\dT[\d:.]+)Z", line)
    if m and ("reading cluster" in line or "listed a page" in line):
        stamps.append(datetime.datetime.fromisoformat(m.group(1)[:26]))
    if m and "ran an analyzer" in line:
        ran.append(datetime.datetime.fromisoformat(m.group(1)[:26]))
reads = f"{(max(stamps) - min(stamps)).total_seconds():.2f}" if stamps else "?"
analysis = f"{(max(ran) - max(stamps)).total_seconds():.2f}" if stamps and ran else "?"
print(reads, analysis)
PY
)
read -r read_span analysis_span <<<"$spans"
# The same, with the lists mesh-doctor asks for in protobuf (the built-in kinds but ConfigMaps
# and webhook configurations: src/source/cluster/requests.rs) asked for in protobuf.
export RAW_PROTOBUF
RAW_PROTOBUF=$(grep -xE '/api/v1/(namespaces/[^/]+/)?(pods|services|namespaces|nodes|events)|/apis/(apps/v1|batch/v1|discovery\.k8s\.io/v1|networking\.k8s\.io/v1|policy/v1)/.*' "$paths" | paste -sd, -)
read -r pb_whole _ pb_bytes <<<"$(raw whole)"
read -r pb_pages _ _ <<<"$(raw pages 5000)"
unset RAW_PROTOBUF
read -r theirs_wall theirs_cpu theirs_rss <<<"$(measure "$istioctl" analyze -A -o json)"
load_end=$(cut -d' ' -f1 /proc/loadavg)
n_paths=$(wc -l <"$paths")
# Against the faster of the two raw references (the stricter ratio).
raw_best=$(awk "BEGIN{print ($raw_whole < $raw_pages) ? $raw_whole : $raw_pages}")
ratio_raw=$(awk "BEGIN{printf \"%.2f\", $ours_wall / $raw_best}")
pb_best=$(awk "BEGIN{print ($pb_whole < $pb_pages) ? $pb_whole : $pb_pages}")
ratio_pb=$(awk "BEGIN{printf \"%.2f\", $ours_wall / $pb_best}")
ratio_median=$(awk "BEGIN{printf \"%.2f\", $ours_median / $raw_median}")
ours_findings=$("$bin" analyze -A -o json 2>/dev/null | grep -c '"code"' || true)
theirs_findings=$("$istioctl" analyze -A -o json 2>/dev/null | grep -c '"code"' || true)
ratio=$(awk "BEGIN{printf \"%.2f\", $ours_wall / $theirs_wall}")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
report=$(cat <<MD
<!-- live-bench:start -->
| command | runs | best wall time | best CPU time (user+sys) | peak RSS (max of runs) | findings |
|---|---|---|---|---|---|
| \`kubectl mesh-doctor analyze -A -o json\` | $runs | ${ours_wall} s | ${ours_cpu} s | $((ours_rss / 1024)) MiB | $ours_findings |
| \`istioctl analyze -A -o json\` ($(basename "$istioctl")) | $runs | ${theirs_wall} s | ${theirs_cpu} s | $((theirs_rss / 1024)) MiB | $theirs_findings |
| the same $n_paths lists as mesh-doctor's, raw and all in parallel, one request each (\`bench/raw_lists.py whole\`: $whole_requests requests, $((raw_bytes / 1048576)) MiB, no decoding) | $runs | ${raw_whole} s | | | |
| the same, in pages of 5,000 as mesh-doctor asks for them by default (\`bench/raw_lists.py pages 5000\`: $pages_requests requests) | $runs | ${raw_pages} s | | | |
| the same lists with the built-in kinds in protobuf, as mesh-doctor asks for them (\`RAW_PROTOBUF=... bench/raw_lists.py whole\`: $((pb_bytes / 1048576)) MiB) | $runs | ${pb_whole} s | | | |
| the same, in pages of 5,000 (\`RAW_PROTOBUF=... bench/raw_lists.py pages 5000\`) | $runs | ${pb_pages} s | | | |

mesh-doctor / raw parallel lists wall time (the faster of the two JSON rows): **$ratio_raw** (issue 28's target: 1.2);
median against median (mesh-doctor's $runs runs, ${ours_median} s; the $((2 * runs)) raw JSON runs of both rows, ${raw_median} s): **$ratio_median**;
against the faster of the two rows in mesh-doctor's own encodings: **$ratio_pb**. In one \`-vv\` run,
its reads took ${read_span} s from the first request to the last page, and the analysis ${analysis_span} s after it (the request timeline:
\`listed a page\` lines with the kind, page, items and milliseconds).

mesh-doctor / istioctl wall time: **$ratio**. Measured $(date -u +%Y-%m-%d) with \`bench/live.sh\` on
$(nproc) cores ($cpu), release build, against the local test cluster (etcd + kube-apiserver + kwok
on the same machine) holding the objects of \`bench/gen_manifests.py\` ($objects Pods, Services and
Istio objects listed by kubectl), mesh-doctor's runs taking turns with the raw JSON lists' (one of
each per round, the order turning from round to round), then the protobuf lists', then istioctl's, every run after a pause of ${pause} s (the
API server's garbage collection after a run would slow the next one). Load average
$load_start at the start, $load_end at the end (the machine is shared with other builds). The
findings differ in number because the two read different kinds (mesh-doctor reads Deployments as
the pods they create, istioctl runs analyzers mesh-doctor does not have yet).
<!-- live-bench:end -->
MD
)
python3 - "$report" <<'PY'
import sys, re
path = 'docs/performance.md'
text = open(path).read()
new = sys.argv[1]
if '<!-- live-bench:start -->' in text:
    text = re.sub(r'<!-- live-bench:start -->.*?<!-- live-bench:end -->', lambda m: new, text, flags=re.S)
else:
    text = text.replace('## `proxy-status`', '## `analyze -A` on a cluster, against `istioctl analyze -A`\n\n' + new + '\n\n## `proxy-status`', 1)
open(path, 'w').write(text)
PY
echo "mesh-doctor ${ours_wall}s, istioctl ${theirs_wall}s, ratio $ratio" >&2
