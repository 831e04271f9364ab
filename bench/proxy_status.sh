#!/usr/bin/env bash
# Benchmark: wall time and peak memory of `proxy-status` on 1,000 and 10,000 proxies, from a
# syncz answer of a real istiod scaled up (bench/gen_syncz.py) and the matching pods (+2% sidecar
# pods no istiod knows), read with --syncz-file/--pods-file so no cluster is needed: it measures
# parsing, merging and rendering, not the network. Writes the numbers into docs/performance.md
# between the proxy-status markers, beside the reference: Python's json.load of the same two files.
# MESH_DOCTOR_BASELINE_BIN: another build (e.g. main's) measured on the same input in the same run,
# MESH_DOCTOR_BASELINE_NAME: what the text calls it (default: its path).
# Usage: bench/proxy_status.sh [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-3}"
dir="${BENCH_DIR:-target/bench-syncz}"
target="${CARGO_TARGET_DIR:-target}"
# MESH_DOCTOR_BIN: a release binary already built (e.g. scripts/release-archive.sh's static one).
if [[ -n "${MESH_DOCTOR_BIN:-}" ]]; then
  bin=$MESH_DOCTOR_BIN
else
  cargo build --release --quiet
  bin="$target/release/kubectl-mesh_doctor"
fi
mkdir -p "$dir"
timefile="$dir/time.txt"

# median wall time, median CPU time (user+sys) and max peak RSS (KiB) of RUNS runs of:
# "$@" >/dev/null
measure() {
  local walls=() cpus=() best_rss="" wall user sys rss
  for _ in $(seq "$runs"); do
    /usr/bin/time -o "$timefile" -f '%e %U %S %M' "$@" >/dev/null 2>&1 || true
    read -r wall user sys rss < <(tail -n 1 "$timefile")
    walls+=("$wall")
    cpus+=("$(awk "BEGIN{printf \"%.2f\", $user + $sys}")")
    if [[ -z "$best_rss" ]] || (( rss > best_rss )); then best_rss=$rss; fi
  done
  echo "$(median "${walls[@]}") $(median "${cpus[@]}") $best_rss"
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{m=int((NR+1)/2); if (NR%2) print v[m]; else printf "%.2f\n", (v[m]+v[m+1])/2}'
}

# one table row: | proxies | what | wall | CPU | RSS |
row() {
  local n=$1 label=$2 wall cpu rss
  shift 2
  read -r wall cpu rss < <(measure "$@")
  echo "$n proxies, $label: ${wall}s, CPU ${cpu}s, peak RSS $((rss / 1024)) MiB" >&2
  rows+="| $(printf "%'d" "$n") | $label | ${wall} s | ${cpu} s | $((rss / 1024)) MiB |"$'\n'
}

load_start=$(cut -d' ' -f1 /proc/loadavg)
rows=""
for n in 1000 10000; do
  python3 bench/gen_syncz.py "$n" "$dir"
  syncz="$dir/syncz-$n.json" pods="$dir/pods-$n.json"
  ssize=$(du -h "$syncz" | cut -f1) psize=$(du -h "$pods" | cut -f1)
  lines=$("$bin" proxy-status --syncz-file "$syncz" --pods-file "$pods" 2>/dev/null | wc -l || true)
  for variant in "text:-o text" "text --types:-o text --types" "json:-o json" "yaml:-o yaml" "text, syncz only:-o text"; do
    label=${variant%%:*} flags=${variant#*:}
    extra=(--pods-file "$pods")
    [[ "$label" == "text, syncz only" ]] && extra=()
    # shellcheck disable=SC2086
    row "$n" "$label" "$bin" proxy-status --syncz-file "$syncz" "${extra[@]}" $flags
    if [[ -n "${MESH_DOCTOR_BASELINE_BIN:-}" ]]; then
      # shellcheck disable=SC2086
      row "$n" "$label (baseline build)" "$MESH_DOCTOR_BASELINE_BIN" proxy-status --syncz-file "$syncz" "${extra[@]}" $flags
    fi
  done
  row "$n" "reference: Python json.load of both files" python3 -c \
    'import json, sys; [json.load(open(p)) for p in sys.argv[1:]]' "$syncz" "$pods"
  rows+="|  | (syncz $ssize, pods $psize, $((lines - 1)) table rows) |  |  |  |"$'\n'
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
load_end=$(cut -d' ' -f1 /proc/loadavg)
report=$(cat <<MD
<!-- proxy-status-bench:start -->
| proxies | output | wall time (median) | CPU time, user+sys (median) | peak RSS (max of runs) |
|---|---|---|---|---|
${rows}
Measured $(date -u +%Y-%m-%d) with \`bench/proxy_status.sh\` ($runs runs each) on $(nproc) cores ($cpu),
release build, output to /dev/null; load average $load_start at the start, $load_end at the end${MESH_DOCTOR_BASELINE_BIN:+; the baseline build is ${MESH_DOCTOR_BASELINE_NAME:-\`$MESH_DOCTOR_BASELINE_BIN\`}}. Input: the syncz answer of a real istiod
(\`tests/fixtures/syncz/\`) scaled up by \`bench/gen_syncz.py\`: per 100 proxies 97 SYNCED, 2 STALE,
1 ERROR, one pod each plus 2% crash-looping sidecar pods no istiod knows, read with
\`--syncz-file\`/\`--pods-file\` (parsing, merging and rendering; no network).
<!-- proxy-status-bench:end -->
MD
)
python3 - "$report" <<'PY'
import re, sys
path = 'docs/performance.md'
text = open(path).read()
new = sys.argv[1]
pattern = r'<!-- proxy-status-bench:start -->.*?<!-- proxy-status-bench:end -->'
if re.search(pattern, text, flags=re.S):
    text = re.sub(pattern, lambda m: new, text, flags=re.S)
else:
    text = text.rstrip('\n') + '\n\n## `proxy-status`\n\n' + new + '\n'
open(path, 'w').write(text)
PY
