#!/usr/bin/env bash
# Tests the release archive as a user gets it:
#   1. scripts/release-archive.sh builds it (static binary, completions, man pages, rbac.yaml);
#   2. its binary runs with runc in an empty root filesystem that holds only the binary, a
#      kubeconfig and /etc/hosts, and reads the test cluster by a host name from that
#      /etc/hosts (no libc, no NSS, no CA bundle, no shell in there);
#   3. the real krew (built by testenv/build.sh --krew) installs it from dist/krew-manifest.yaml
#      and the archive, exactly as README.md says, and `kubectl mesh-doctor` then runs.
# Needs a running test cluster: MESH_DOCTOR_TESTENV=<its state dir> (scripts/test-all.sh sets it).
# Installs the Debian packages it uses (testenv/packages.sh) when they are missing. Prints "N passed, M failed".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
# shellcheck source=../testenv/env.sh
source testenv/env.sh

testenv_dir="${MESH_DOCTOR_TESTENV:?set MESH_DOCTOR_TESTENV to a running test cluster (testenv/up.sh)}"
kubeconfig="$testenv_dir/kubeconfig"
[[ -f "$kubeconfig" ]] || { echo "error: no kubeconfig in $testenv_dir" >&2; exit 1; }

passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }

testenv/packages.sh # runc, file, binutils (readelf), bash-completion
testenv/build.sh --only krew,kubectl >&2

echo "== building the release archive" >&2
out="$(scripts/release-archive.sh)"
archive="${out%% *}"
echo "$out" >&2
manifest=dist/krew-manifest.yaml

work="$(mktemp -d /tmp/mesh-doctor-release-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# ------------------------------------------------------------------ the archive
mkdir -p "$work/unpacked"
tar -C "$work/unpacked" -xzf "$archive"
for f in kubectl-mesh_doctor kubectl_complete-mesh_doctor LICENSE README.md docs/rbac.yaml \
  completions/kubectl-mesh_doctor.bash completions/_kubectl-mesh_doctor \
  completions/kubectl-mesh_doctor.fish completions/kubectl-mesh_doctor.ps1 \
  man/man1/kubectl-mesh_doctor.1 man/man1/kubectl-mesh_doctor-analyze.1; do
  if [[ -e "$work/unpacked/$f" ]]; then ok "archive holds $f"; else bad "archive lacks $f"; fi
done
kind="$(file "$work/unpacked/kubectl-mesh_doctor")"
if [[ "$kind" == *"static-pie linked"* || "$kind" == *"statically linked"* ]]; then
  ok "binary is statically linked"
else
  bad "binary is not statically linked: $kind"
fi

# ------------------------------------------------------------------ runc, empty root filesystem
# The cluster is reached as kubernetes.default.svc (a name on the API server's certificate) that
# only the container's /etc/hosts knows; the CA is embedded in the kubeconfig.
bundle="$work/bundle"
rootfs="$bundle/rootfs"
mkdir -p "$rootfs/etc"
cp "$work/unpacked/kubectl-mesh_doctor" "$rootfs/"
printf '127.0.0.1 kubernetes.default.svc\n' >"$rootfs/etc/hosts"
"$KUBECTL_BIN" --kubeconfig "$kubeconfig" config view --raw --flatten --minify \
  | sed -E 's#server: https://127\.0\.0\.1:#server: https://kubernetes.default.svc:#' >"$rootfs/kubeconfig"
grep -q 'server: https://kubernetes.default.svc:' "$rootfs/kubeconfig" \
  || { bad "kubeconfig server not rewritten"; }
(cd "$bundle" && runc spec)
# Host network (the test cluster listens on 127.0.0.1), read-only root, no terminal.
python3 - "$bundle/config.json" <<'PY'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["process"]["terminal"] = False
spec["process"]["env"] = ["PATH=/"]
spec["root"]["readonly"] = True
spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
json.dump(spec, open(path, "w"), indent=2)
PY
in_container() { # $@ = arguments of kubectl-mesh_doctor
  python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
path, args = sys.argv[1], sys.argv[2:]
spec = json.load(open(path))
spec["process"]["args"] = ["/kubectl-mesh_doctor", "--kubeconfig", "/kubeconfig"] + args
json.dump(spec, open(path, "w"), indent=2)
PY
  local rc=0
  runc run --bundle "$bundle" "mesh-doctor-release-$$" >"$work/stdout" 2>"$work/stderr" </dev/null || rc=$?
  runc delete --force "mesh-doctor-release-$$" >/dev/null 2>&1 || true
  return $rc
}
ls_root="$(cd "$rootfs" && find . | sort | tr '\n' ' ')"
echo "container root filesystem: $ls_root" >&2

rc=0; in_container version || rc=$?
if [[ $rc == 0 ]] && grep -q 'client version' "$work/stdout" && grep -qi 'control plane\|istiod\|no istiod' "$work/stdout"; then
  ok "version reads the cluster from an empty root filesystem"
else
  bad "version in runc: exit $rc; stdout: $(cat "$work/stdout"); stderr: $(cat "$work/stderr")"
fi
rc=0; in_container analyze -A --no-probe || rc=$?
if [[ $rc == 0 || $rc == 79 ]]; then
  ok "analyze -A reads the cluster from an empty root filesystem (exit $rc)"
else
  bad "analyze in runc: exit $rc; stderr: $(cat "$work/stderr")"
fi
# A name that is nowhere: a clear error and exit 69, no crash.
sed -i 's#kubernetes.default.svc#nowhere.invalid#' "$rootfs/kubeconfig"
rc=0; in_container version || rc=$?
if [[ $rc == 69 ]] && grep -q 'cannot resolve nowhere.invalid' "$work/stderr"; then
  ok "an unresolvable API server name is exit 69 with the reason"
else
  bad "unresolvable name: exit $rc; stderr: $(cat "$work/stderr")"
fi

# ------------------------------------------------------------------ krew
export KREW_ROOT="$work/krew" KREW_NO_UPGRADE_CHECK=1 HOME="$work/home"
mkdir -p "$work/bin" "$HOME"
ln -s "$KUBECTL_BIN" "$work/bin/kubectl"
ln -s "$KREW_BIN" "$work/bin/kubectl-krew"
export PATH="$KREW_ROOT/bin:$work/bin:/usr/bin:/bin"
# README.md's install lines, as written there.
grep -q "kubectl krew install --manifest=$manifest --archive=$archive" "$root/README.md" \
  && ok "README.md's krew line is the one tested" || bad "README.md's krew line differs from the tested one"
if kubectl krew install --manifest="$manifest" --archive="$archive" >"$work/krew.log" 2>&1; then
  ok "krew installs the archive from the manifest"
else
  bad "krew install: $(cat "$work/krew.log")"
fi
version="$(awk -F'"' '/^version =/{print $2; exit}' Cargo.toml)"
client="$(kubectl mesh-doctor version --client 2>&1 || true)"
if [[ "$client" == "client version: $version" ]]; then
  ok "kubectl mesh-doctor runs after the krew install"
else
  bad "kubectl mesh-doctor version --client: $client"
fi
rc=0; kubectl mesh-doctor --kubeconfig "$kubeconfig" analyze -A --no-probe >/dev/null 2>"$work/stderr" || rc=$?
if [[ $rc == 0 || $rc == 79 ]]; then ok "the krew-installed plugin reads the cluster (exit $rc)"; else bad "krew plugin analyze: exit $rc: $(cat "$work/stderr")"; fi
store="$KREW_ROOT/store/mesh-doctor/v$version"
if [[ -f "$store/docs/rbac.yaml" && -x "$store/kubectl_complete-mesh_doctor" ]]; then
  ok "krew keeps docs/rbac.yaml and kubectl_complete-mesh_doctor"
else
  bad "krew store lacks rbac.yaml or the completion script: $(ls -R "$store" 2>&1 | head -20)"
fi
# kubectl's plugin completion through the installed script (kubectl 1.26+).
ln -s "$store/kubectl_complete-mesh_doctor" "$KREW_ROOT/bin/kubectl_complete-mesh_doctor"
offered="$(kubectl __complete mesh-doctor "" 2>/dev/null || true)"
if grep -qx 'analyze' <<<"$offered"; then
  ok "kubectl __complete mesh-doctor offers the commands"
else
  bad "kubectl __complete mesh-doctor: $offered"
fi

echo "release: $passed passed, $failed failed"
[[ $failed == 0 ]]
