#!/usr/bin/env bash
# Builds the release archive for this machine's platform (binary + LICENSE + README.md) into
# dist/, prints its sha256, and writes that sha256 into krew-manifest.yaml for the platform.
# Usage: scripts/release-archive.sh [TARGET]   (default: x86_64-unknown-linux-gnu host build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="v$(awk -F'"' '/^version =/{print $2; exit}' Cargo.toml)"
target="${1:-}"
if [[ -n "$target" ]]; then
  cargo build --release --target "$target"
  bin="target/$target/release/kubectl-mesh_doctor"
else
  cargo build --release
  bin="target/release/kubectl-mesh_doctor"
  target="x86_64-unknown-linux-musl"
fi
mkdir -p dist/stage
cp "$bin" LICENSE README.md dist/stage/
archive="dist/kubectl-mesh-doctor-$version-$target.tar.gz"
tar -C dist/stage -czf "$archive" kubectl-mesh_doctor LICENSE README.md
rm -rf dist/stage
sum=$(sha256sum "$archive" | cut -d' ' -f1)
echo "$archive $sum"
# Replace the sha256 on the line after this archive's uri.
python3 - "$archive" "$sum" <<'PY'
import sys, re
archive, digest = sys.argv[1].split('/')[-1], sys.argv[2]
lines = open('krew-manifest.yaml').read().split('\n')
for i, line in enumerate(lines):
    if line.strip().startswith('uri:') and line.strip().endswith(archive):
        lines[i + 1] = re.sub(r'"[0-9a-f]{64}"', f'"{digest}"', lines[i + 1])
open('krew-manifest.yaml', 'w').write('\n'.join(lines))
PY
