#!/usr/bin/env bash
# Copies the Cluster API CRDs the IPAM tests need (IPAddressClaim, IPAddress, and Cluster, which a claim names in
# spec.clusterName) from the published Go module sigs.k8s.io/cluster-api (core/config/crd/bases/, as the project
# generates and ships them) into ~/.cache/hereabouts/capi-<version>/crds/ and prints that directory. Only the first
# run needs the go command; later runs find the copies and return at once.
# Env: HEREABOUTS_CAPI_VERSION (default below), HEREABOUTS_CACHE.
set -euo pipefail
# v1.14.2: the newest Cluster API release the Go module proxy serves. Its API is v1beta2 (the storage version since
# v1.11; the older versions are still served, with no conversion in these bases, so they read the same objects).
version=${HEREABOUTS_CAPI_VERSION:-v1.14.2}
files=(ipam.cluster.x-k8s.io_ipaddressclaims.yaml ipam.cluster.x-k8s.io_ipaddresses.yaml cluster.x-k8s.io_clusters.yaml)
cache=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
out=$cache/capi-$version/crds

log() { printf 'capi-crds.sh: %s\n' "$*" >&2; }

have_all() {
  local f
  for f in "${files[@]}"; do [[ -s $1/$f ]] || return 1; done
}
if have_all "$out"; then echo "$out"; exit 0; fi

command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null 2>&1 || { log "no Go toolchain (needed once, for sigs.k8s.io/cluster-api@$version)"; exit 1; }
mkdir -p "$cache/capi-$version"
# Outside any module (the download needs none), so no go.mod or go.work around the caller's directory applies.
# -json reports a failed download in its "Error" field on stdout, not on stderr.
json=$(cd "$cache/capi-$version" &&
  GOFLAGS= GOWORK=off GOTOOLCHAIN=local go mod download -json "sigs.k8s.io/cluster-api@$version") ||
  { log "go mod download sigs.k8s.io/cluster-api@$version failed: $(sed -n 's/^\s*"Error": //p' <<<"$json")"; exit 1; }
dir=$(sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p' <<<"$json")
bases=$dir/core/config/crd/bases
have_all "$bases" || { log "sigs.k8s.io/cluster-api@$version: missing ${files[*]} in $bases"; exit 1; }
# Copy into a private directory, then rename: concurrent callers (test files starting their own control planes) see
# either no directory or a complete one. The module cache's files are read-only; the copies need not be.
tmp=$(mktemp -d "$cache/capi-$version/crds.XXXXXX")
chmod 755 "$tmp"
for f in "${files[@]}"; do install -m 644 "$bases/$f" "$tmp/$f"; done
[[ -e $out ]] && ! have_all "$out" && rm -rf "$out" # a copy someone left incomplete
if ! mv -T "$tmp" "$out" 2>/dev/null; then
  rm -rf "$tmp"
  have_all "$out" || { log "cannot create $out"; exit 1; }
fi
echo "$out"
