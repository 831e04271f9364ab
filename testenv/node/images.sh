#!/usr/bin/env bash
# Build (or reuse) the images of the real test node, as tarballs for `ctr image import`,
# in $MESH_DOCTOR_CACHE/images/<name>-<tag>.tar. No registry is involved: each image is
# one layer made from files on this machine (mkimage.py).
#
#   $TESTENV_IMAGE_HUB/pause:$PAUSE_VERSION      pause.c, built with gcc -static
#   $TESTENV_IMAGE_HUB/app:$APP_VERSION          Debian busybox-static (httpd on :8080, sh, wget, nslookup)
#   $TESTENV_IMAGE_HUB/proxyv2:$ISTIO_VERSION    pilot-agent + Envoy $ENVOY_VERSION + Istio's bootstrap
#                                                template + iptables (for istio-init) + the glibc they need
#   $TESTENV_IMAGE_HUB/pilot:$ISTIO_VERSION      pilot-discovery
#
# An existing tarball is never rebuilt: delete it to force a rebuild.
#
# Usage: testenv/node/images.sh [--only NAME[,NAME...]]   (NAME: pause app proxyv2 pilot)
# MESH_DOCTOR_CACHE=DIR builds into another cache (tests build the small images into an empty one).
set -euo pipefail

only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) only="${2:?--only needs NAME[,NAME...]}"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "images.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
selected() { [[ -z "$only" || ",$only," == *",$1,"* ]]; }

# shellcheck source=testenv/env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"
HERE="$TESTENV_SRC/node"
mkdir -p "$TESTENV_IMAGES"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# copy_with_libs ROOTFS FILE...: the files and the shared libraries they load (ldd)
copy_with_libs() {
  local root="$1" f lib; shift
  for f in "$@"; do
    install -D -m 0755 "$(readlink -f "$f")" "$root$f"
    while read -r lib; do
      [[ -n "$lib" && -e "$lib" ]] || continue
      [[ -e "$root$lib" ]] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
    done < <(ldd "$f" 2>/dev/null | awk '/=>/ {print $3} /^\t\/lib/ {print $1}')
  done
}

base_files() { # ROOTFS: passwd/group with root, istio-proxy (1337) and nobody; /tmp
  local root="$1"
  mkdir -p "$root/etc" "$root/tmp" "$root/var/run" "$root/proc" "$root/dev" "$root/sys"
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nistio-proxy:x:1337:1337:istio-proxy:/home/istio-proxy:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
  printf 'root:x:0:\nistio-proxy:x:1337:\nnogroup:x:65534:\n' >"$root/etc/group"
}

image() { # NAME TAG BUILD_FUNCTION MKIMAGE_ARGS...
  local name="$1" tag="$2" fn="$3"; shift 3
  local out="$TESTENV_IMAGES/$name-$tag.tar"
  if [[ -s "$out" ]]; then
    testenv_log "image $name:$tag: cached ($out)"
    return 0
  fi
  local start=$SECONDS root="$WORK/$name"
  rm -rf "$root"; mkdir -p "$root"
  "$fn" "$root"
  python3 "$HERE/mkimage.py" --name "$TESTENV_IMAGE_HUB/$name:$tag" --rootfs "$root" --out "$out" "$@" >/dev/null
  testenv_log "image $name:$tag: built in $((SECONDS - start))s ($(du -h "$out" | cut -f1)) -> $out"
}

build_pause() {
  gcc -static -Os -s -o "$1/pause" "$HERE/pause.c"
}

build_app() {
  local root="$1" a
  base_files "$root"
  "$TESTENV_SRC/packages.sh" --check busybox-static \
    || testenv_die "/bin/busybox is missing or not the static build: run testenv/packages.sh (it installs busybox-static)"
  install -D -m 0755 /bin/busybox "$root/bin/busybox"
  for a in $(/bin/busybox --list); do
    [[ "$a" == busybox ]] || ln -sf busybox "$root/bin/$a"
  done
  mkdir -p "$root/www"
  echo "mesh-doctor test app" >"$root/www/index.html"
}

ISTIO_SRC="$(testenv_modcache_dir istio.io/istio "$ISTIO_PSEUDO_VERSION")"
build_proxyv2() {
  local root="$1" t
  base_files "$root"
  [[ -x "$PILOT_AGENT_BIN" ]] || testenv_die "missing $PILOT_AGENT_BIN: run testenv/build.sh --node"
  [[ -x "$ENVOY_BIN" ]] || testenv_die "missing $ENVOY_BIN: run testenv/build.sh"
  install -D -m 0755 "$PILOT_AGENT_BIN" "$root/usr/local/bin/pilot-agent"
  install -D -m 0755 "$(readlink -f "$ENVOY_BIN")" "$root/usr/local/bin/envoy"
  copy_with_libs "$root" "$(readlink -f "$ENVOY_BIN")"
  rm -f "$root$(readlink -f "$ENVOY_BIN")"
  install -D -m 0644 "$ISTIO_SRC/tools/packaging/common/envoy_bootstrap.json" \
    "$root/var/lib/istio/envoy/envoy_bootstrap_tmpl.json"
  # istio-init (pilot-agent istio-iptables) runs iptables-restore/-save, nft or legacy
  copy_with_libs "$root" /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi
  for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf xtables-nft-multi "$root/usr/sbin/$t"
    ln -sf xtables-nft-multi "$root/usr/sbin/${t/tables/tables-nft}"
    ln -sf xtables-legacy-multi "$root/usr/sbin/${t/tables/tables-legacy}"
  done
  mkdir -p "$root/usr/lib/x86_64-linux-gnu"
  cp -a /usr/lib/x86_64-linux-gnu/xtables "$root/usr/lib/x86_64-linux-gnu/"
  copy_with_libs "$root" /usr/lib/x86_64-linux-gnu/xtables/*.so
  mkdir -p "$root/etc/istio/proxy" "$root/var/lib/istio/data"
  chown -R 1337:1337 "$root/etc/istio" "$root/var/lib/istio"
}

build_pilot() {
  local root="$1"
  base_files "$root"
  [[ -x "$PILOT_DISCOVERY_BIN" ]] || testenv_die "missing $PILOT_DISCOVERY_BIN: run testenv/build.sh --istio"
  install -D -m 0755 "$PILOT_DISCOVERY_BIN" "$root/usr/local/bin/pilot-discovery"
}

if selected pause; then
  image pause "$PAUSE_VERSION" build_pause --entrypoint '["/pause"]' --user 65535:65535
fi
if selected app; then
  image app "$APP_VERSION" build_app --entrypoint '["/bin/httpd", "-f", "-v", "-p", "8080", "-h", "/www"]'
fi
if selected proxyv2; then
  image proxyv2 "$ISTIO_VERSION" build_proxyv2 --entrypoint '["/usr/local/bin/pilot-agent"]' \
    --env "ISTIO_META_ISTIO_PROXY_SHA=envoy-$ENVOY_VERSION" --env "ISTIO_META_ISTIO_VERSION=$ISTIO_VERSION"
fi
if selected pilot; then
  image pilot "$ISTIO_VERSION" build_pilot --entrypoint '["/usr/local/bin/pilot-discovery"]' --user 1337:1337
fi
