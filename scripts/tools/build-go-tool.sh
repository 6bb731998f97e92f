#!/usr/bin/env bash
# Build a Go command from its published module into a per-version cache outside the repo
# (~/.cache/hereabouts/<name>-<version>/). Only the first run compiles; later runs find the
# binary and return at once. The build runs at the lowest priority, one package at a time:
# the machine is shared.
#
# Usage: scripts/tools/build-go-tool.sh <name> <module> <version> <package>
# Prints the binary path on stdout (everything else goes to stderr).
set -euo pipefail

name=$1 module=$2 version=$3 pkg=$4
CACHE=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
dir=$CACHE/$name-$version
bin=$dir/$name

log() { printf 'build-go-tool.sh: %s\n' "$*" >&2; }

# Fast path without the lock: the binary is only ever moved into place complete.
if [[ -x $bin ]]; then echo "$bin"; exit 0; fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
if ! flock -n 9; then
  log "another build of $name $version is running; waiting for it"
  flock 9
fi
if [[ -x $bin ]]; then echo "$bin"; exit 0; fi

export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -buildvcs=false -p=1"
command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
start=$(date +%s)

# The wrapper module lives in the cache, never in the repo.
src=$dir/src
mkdir -p "$src"
cd "$src"
printf 'module hereabouts.local/%s-build\ngo 1.24\nrequire %s %s\n' "$name" "$module" "$version" >go.mod
: >go.sum
log "building $pkg@$version (first run; takes a while)"
# The explicit @version matters: a bare package path would let go get pick @latest.
nice -n 19 go get "$pkg@$version" >&2
nice -n 19 go build -trimpath -ldflags "-s -w ${EXTRA_LDFLAGS:-}" -o "$name.new" "$pkg" >&2
mv "$name.new" "$bin"
log "done in $(($(date +%s) - start))s: $bin"
echo "$bin"
