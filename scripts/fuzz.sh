#!/usr/bin/env bash
# Runs mesh-doctor's fuzz targets (fuzz/, cargo-fuzz + libFuzzer on the nightly toolchain), one at
# a time, each for SECONDS, on one core. Fails on a crash, an out-of-memory (over RSS_MB) or a
# hang (an input that takes over TIMEOUT seconds). Seeds come from tests/fixtures.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default: 300 seconds, every target
#
# Installs what it needs: the nightly toolchain (rustup) and cargo-fuzz (cargo install).
# FUZZ_NO_BUILD=1 runs the targets as last built (`cargo +nightly fuzz build` in fuzz/), without
# the rebuild `cargo fuzz run` does after every source change.
# Results, per target: fuzz/out/<target>.log; crashing inputs in fuzz/artifacts/<target>/.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-300}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(manifest_loader bootstrap_validator admin_parsers syncz_parser kube_protobuf log_matcher duration_parser)
fi
rss_mb=${RSS_MB:-2048}
timeout_s=${TIMEOUT:-10}

if ! grep -q '^nightly' <<<"$(rustup toolchain list)"; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

seed() {
  local target=$1 dir=$root/fuzz/corpus/$1
  mkdir -p "$dir"
  local files=()
  case $target in
    manifest_loader)
      mapfile -t files < <(find tests/fixtures -maxdepth 2 \( -name '*.yaml' -o -name '*.yml' \) -type f; find examples -name '*.yaml' -type f) ;;
    bootstrap_validator)
      mapfile -t files < <(find tests/fixtures/envoy/bootstraps -type f) ;;
    admin_parsers)
      mapfile -t files < <(find tests/fixtures/envoy -maxdepth 1 \( -name '*.json' -o -name '*ready*.txt' -o -name '*stats*.txt' \) -type f) ;;
    syncz_parser)
      mapfile -t files < <(find tests/fixtures/syncz -type f) ;;
    kube_protobuf)
      mapfile -t files < <(find tests/fixtures/kube-protobuf -name '*.pb' -type f) ;;
    log_matcher)
      mapfile -t files < <(find tests/fixtures/envoy -maxdepth 1 -name '*stderr*.txt' -type f) ;;
    duration_parser)
      for d in 0 5 1.5 500ms 30s 1m30s 2h 24h 1h2m3.5s 250us 10ns; do
        printf '%s' "$d" > "$dir/seed-$d"
      done ;;
    *) echo "unknown target $target" >&2; exit 64 ;;
  esac
  for f in "${files[@]}"; do
    cp "$f" "$dir/seed-$(echo "$f" | tr '/' '_')"
  done
}

mkdir -p fuzz/out
failed=()
for target in "${targets[@]}"; do
  seed "$target"
  mkdir -p "fuzz/artifacts/$target"
  echo "== $target: ${seconds}s, one job, rss limit ${rss_mb} MB, timeout ${timeout_s}s per input"
  log=$root/fuzz/out/$target.log
  rc=0
  # -jobs=1: one fuzzing process (libFuzzer writes its output to fuzz-0.log in the cwd).
  flags=(-jobs=1 -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout="$timeout_s"
         -print_final_stats=1 -artifact_prefix="$root/fuzz/artifacts/$target/")
  if [ "${FUZZ_NO_BUILD:-}" = 1 ]; then
    # The targets as last built (cargo fuzz build), without rebuilding them first.
    (cd fuzz/out && "$root/fuzz/target/x86_64-unknown-linux-gnu/release/$target" \
        "$root/fuzz/corpus/$target" "${flags[@]}" >"$log.driver" 2>&1) || rc=$?
  else
    (cd fuzz/out && cargo +nightly fuzz run --fuzz-dir "$root/fuzz" "$target" \
        "$root/fuzz/corpus/$target" -- "${flags[@]}" >"$log.driver" 2>&1) || rc=$?
  fi
  if [ -f fuzz/out/fuzz-0.log ]; then
    mv fuzz/out/fuzz-0.log "$log"
  else
    mv "$log.driver" "$log"
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  crashes=$(find "fuzz/artifacts/$target" -type f | wc -l)
  echo "   exit $rc, executions ${execs:-?}, artifacts $crashes, corpus $(find "fuzz/corpus/$target" -type f | wc -l) inputs"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed+=("$target")
    grep -E 'ERROR|SUMMARY|panicked|Test unit written' "$log" | head -20 || true
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "all ${#targets[@]} target(s) ran ${seconds}s without a crash, OOM or timeout"
