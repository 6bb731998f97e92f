#!/usr/bin/env bash
# Builds what `npm run bench:peer` compares against and measures with, into a cache outside the repo (like
# scripts/control-plane/build.sh does for kube-apiserver); only the first run compiles.
#   - upstream Whereabouts' CNI plugin, from its published Go module (github.com/k8snetworkplumbingwg/whereabouts,
#     package cmd), at HEREABOUTS_WHEREABOUTS_VERSION (default v0.9.4);
#   - scripts/bench/rusage (ours): runs one command and reports its wall and CPU time from wait4's rusage.
# Prints two lines on stdout: the whereabouts binary, then the rusage binary (everything else goes to stderr).
set -euo pipefail

VERSION=${HEREABOUTS_WHEREABOUTS_VERSION:-v0.9.4}
CACHE=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf 'build-tools.sh: %s\n' "$*" >&2; }

export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -buildvcs=false"
command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null 2>&1 || { log "no Go toolchain (needed to build Whereabouts $VERSION)"; exit 1; }

wb=$CACHE/whereabouts-$VERSION
mkdir -p "$wb"
exec 9>"$wb/.lock"
flock 9
if [[ ! -x $wb/whereabouts ]]; then
  log "building Whereabouts $VERSION from its Go module (first run; takes a few minutes)"
  mkdir -p "$wb/src"
  cd "$wb/src"
  # The wrapper module lives in the cache, never in the repo. Whereabouts' own replace directive does not apply to
  # a dependency, so it is repeated here.
  wmod=$(go mod download -json "github.com/k8snetworkplumbingwg/whereabouts@$VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
  [[ -f $wmod ]] || { log "cannot download github.com/k8snetworkplumbingwg/whereabouts@$VERSION"; exit 1; }
  {
    echo "module hereabouts.local/whereabouts-build"
    grep -E '^go ' "$wmod"
    echo "require github.com/k8snetworkplumbingwg/whereabouts $VERSION"
    grep -E '^replace ' "$wmod" || true
  } >go.mod
  : >go.sum
  go get "github.com/k8snetworkplumbingwg/whereabouts/cmd@$VERSION" >&2
  go build -ldflags='-s -w' -o "$wb/whereabouts.tmp" github.com/k8snetworkplumbingwg/whereabouts/cmd >&2
  mv "$wb/whereabouts.tmp" "$wb/whereabouts"
fi

tools=$CACHE/bench-tools
mkdir -p "$tools/rusage"
if [[ ! -x $tools/rusage/rusage || $here/rusage/main.go -nt $tools/rusage/rusage ]]; then
  cp "$here/rusage/main.go" "$tools/rusage/main.go"
  (cd "$tools/rusage" && { [[ -f go.mod ]] || go mod init hereabouts.local/rusage >/dev/null 2>&1; } && go build -o rusage.tmp . && mv rusage.tmp rusage) >&2
fi
echo "$wb/whereabouts"
echo "$tools/rusage/rusage"
