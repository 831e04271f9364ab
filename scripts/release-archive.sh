#!/usr/bin/env bash
# Builds the Linux x86_64 release archive into dist/ and a krew manifest for it.
#
# The binary is linked statically (glibc, `-C target-feature=+crt-static` on the gnu target) so
# that it runs on any x86_64 Linux distribution, old or new, glibc or musl, and in an empty
# container: it resolves host names itself (/etc/hosts, then DNS), without glibc's NSS.
#
# The archive holds: kubectl-mesh_doctor, kubectl_complete-mesh_doctor (kubectl's plugin
# completion), LICENSE, README.md, docs/rbac.yaml, completions/ (bash, zsh, fish, powershell)
# and man/man1/ (one page per command).
#
# Writes dist/kubectl-mesh-doctor-vVERSION-x86_64-linux-static.tar.gz, and
# dist/krew-manifest.yaml: krew-manifest.yaml with this archive's sha256. Then:
#   kubectl krew install --manifest=dist/krew-manifest.yaml --archive=dist/kubectl-mesh-doctor-v0.1.0-x86_64-linux-static.tar.gz
#
# Other platforms are built by .github/workflows/release.yml on hosted runners.
# Usage: scripts/release-archive.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="v$(awk -F'"' '/^version =/{print $2; exit}' Cargo.toml)"
target=x86_64-unknown-linux-gnu
name="kubectl-mesh-doctor-$version-x86_64-linux-static"

# The target directory of its own: RUSTFLAGS differ from the development builds', and sharing
# target/ would rebuild everything each time one or the other runs.
RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build --release --locked --target "$target" --target-dir target/static
bin="target/static/$target/release/kubectl-mesh_doctor"

# Static, truly: no interpreter, no needed shared library.
# (grep reads a here-string: `readelf | grep -q` under pipefail fails when grep stops early)
if grep -q 'INTERP' <<<"$(readelf -l "$bin")" || grep -q 'NEEDED' <<<"$(readelf -d "$bin")"; then
  echo "error: $bin is not statically linked" >&2
  readelf -d "$bin" >&2 || true
  exit 1
fi

stage="dist/stage/$name"
rm -rf dist/stage
mkdir -p "$stage/docs" "$stage/completions" "$stage/man/man1"
cp "$bin" LICENSE README.md "$stage/"
cp docs/rbac.yaml "$stage/docs/"
"$bin" completion kubectl > "$stage/kubectl_complete-mesh_doctor"
chmod 755 "$stage/kubectl_complete-mesh_doctor" "$stage/kubectl-mesh_doctor"
"$bin" completion bash > "$stage/completions/kubectl-mesh_doctor.bash"
"$bin" completion zsh > "$stage/completions/_kubectl-mesh_doctor"
"$bin" completion fish > "$stage/completions/kubectl-mesh_doctor.fish"
"$bin" completion powershell > "$stage/completions/kubectl-mesh_doctor.ps1"
"$bin" __man "$stage/man/man1"

archive="dist/$name.tar.gz"
# Reproducible: sorted names, fixed owner and time.
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00Z' \
  -cf - . | gzip -n > "$archive"
rm -rf dist/stage
sum=$(sha256sum "$archive" | cut -d' ' -f1)

# The manifest for this archive: the repository's, with this archive's uri and sha256.
python3 - "$name.tar.gz" "$sum" "$version" <<'PY'
import re, sys
archive, digest, version = sys.argv[1:]
text = open('krew-manifest.yaml').read()
text = re.sub(r'(uri: \S*/)kubectl-mesh-doctor-v[^/\s]*-x86_64-linux-static\.tar\.gz',
              lambda m: m.group(1) + archive, text)
text = re.sub(r'sha256: "[0-9a-f]{64}"', f'sha256: "{digest}"', text)
if digest not in text or archive not in text:
    sys.exit('krew-manifest.yaml has no linux/amd64 entry for ' + archive)
open('dist/krew-manifest.yaml', 'w').write(text)
PY
echo "$archive $sum"
