#!/usr/bin/env bash
# Build kube-apiserver and kubectl from the published k8s.io/kubernetes Go module (no fakes, no
# downloads of release binaries) into a per-version cache outside the repo. Only the first run
# compiles; later runs find the binaries and return at once.
#
# Usage: scripts/control-plane/build.sh
# Prints the binary directory on stdout (everything else goes to stderr), so callers can do
#   bin=$(scripts/control-plane/build.sh)
#
# Env:
#   HEREABOUTS_CACHE        cache root (default $HOME/.cache/hereabouts)
#   HEREABOUTS_K8S_VERSION  k8s.io/kubernetes version (default below)
#   HEREABOUTS_BUILD_ETCD=1 also build etcd from go.etcd.io/etcd/server/v3 (done automatically when
#                           no etcd is on PATH); HEREABOUTS_ETCD_VERSION picks its version.
#   HEREABOUTS_BUILD_NODE=1 also build kubelet, kube-controller-manager and kube-scheduler (for the
#                           single-node cluster of scripts/cluster/), in the same go build and cache.
#   GOFLAGS                 appended to the script's own (e.g. GOFLAGS=-p=1 on a shared machine).
set -euo pipefail

# 1.33 is the newest line that Debian bookworm's etcd 3.4 can serve.
K8S_VERSION=${HEREABOUTS_K8S_VERSION:-v1.33.13}
# Same etcd minor as the etcd client that k8s 1.33 is built against.
ETCD_VERSION=${HEREABOUTS_ETCD_VERSION:-v3.5.21}
CACHE=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
BIN=$CACHE/k8s-$K8S_VERSION

log() { printf 'build.sh: %s\n' "$*" >&2; }

need_etcd=0
if [[ ${HEREABOUTS_BUILD_ETCD:-0} == 1 ]] || ! command -v etcd >/dev/null 2>&1; then need_etcd=1; fi

cmds=(kube-apiserver kubectl)
[[ ${HEREABOUTS_BUILD_NODE:-0} == 1 ]] && cmds+=(kubelet kube-controller-manager kube-scheduler)

# The commands not yet in the cache.
missing() {
  local c
  for c in "${cmds[@]}"; do [[ -x $BIN/$c ]] || echo "$c"; done
}

built() {
  [[ -z $(missing) ]] || return 1
  [[ $need_etcd == 0 || -x $BIN/etcd ]]
}

# Fast path without taking the lock: binaries are only ever moved into place complete.
if built; then echo "$BIN"; exit 0; fi

mkdir -p "$BIN"
# Serialise concurrent callers (parallel test runners): the loser waits, then sees the result.
exec 9>"$BIN/.lock"
if ! flock -n 9; then
  log "another build of $K8S_VERSION is running; waiting for it"
  flock 9
fi
if built; then echo "$BIN"; exit 0; fi

export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -buildvcs=false ${GOFLAGS:-}"
command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
start=$(date +%s)

# The wrapper module lives in the cache, never in the repo.
src=$BIN/src
mkdir -p "$src"
cd "$src"

mapfile -t todo < <(missing)
if ((${#todo[@]})); then
  log "building ${todo[*]} $K8S_VERSION (first run; takes a while)"
  # kubernetes' go.mod requires its staging modules (k8s.io/api, ...) at v0.0.0 and points them at
  # ./staging with replace directives, which do not apply to a dependency. Replace each one with
  # the published module of the matching v0.Y.Z.
  kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
  [[ -f $kmod ]] || { log "cannot download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
  staging_version=v0.${K8S_VERSION#v1.}
  {
    echo "module hereabouts.local/k8s-build"
    # Keep kubernetes' go and godebug lines: the main module's decide the GODEBUG defaults.
    grep -E '^(go|godebug) ' "$kmod"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo "replace ("
    sed -n 's#^\s*\(k8s\.io/[^ ]*\) v0\.0\.0$#\t\1 => \1 '"$staging_version"'#p' "$kmod"
    echo ")"
  } >go.mod
  : >go.sum
  pkgs=("${todo[@]/#/k8s.io/kubernetes/cmd/}")
  # Resolve the rest of the graph and fill go.sum (stays inside the cache dir). The explicit
  # @version matters: a bare package path would make go get upgrade kubernetes to @latest.
  go get "${pkgs[@]/%/@$K8S_VERSION}" >&2
  # Version stamps as hack/lib/version.sh sets them, so /version and skew checks are truthful.
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  mkdir -p out
  go build -trimpath -ldflags "$ldflags" -o out/ "${pkgs[@]}" >&2
  # Move into place only when complete, so the fast path never sees a half-written binary.
  for c in "${todo[@]}"; do mv "out/$c" "$BIN/"; done
fi

if [[ $need_etcd == 1 && ! -x $BIN/etcd ]]; then
  log "building etcd $ETCD_VERSION from go.etcd.io/etcd/server/v3"
  esrc=$BIN/etcd-src
  mkdir -p "$esrc"
  cd "$esrc"
  printf 'module hereabouts.local/etcd-build\ngo 1.23\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >go.mod
  : >go.sum
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
  go build -trimpath -ldflags "-s -w" -o etcd.new go.etcd.io/etcd/server/v3 >&2
  mv etcd.new "$BIN/etcd"
fi

log "done in $(($(date +%s) - start))s: $BIN"
echo "$BIN"
