#!/usr/bin/env bash
# Build what the single-node test cluster needs beyond the control plane, into caches outside the repo:
# kubelet, kube-controller-manager and kube-scheduler (by scripts/control-plane/build.sh, same module
# graph and cache as kube-apiserver) and the Multus thin plugin from its Go module. Only the first run
# compiles; later runs return at once.
#
# Usage: scripts/cluster/build.sh
# Prints two lines on stdout: the Kubernetes binary directory, then the Multus binary directory.
#
# Env: HEREABOUTS_CACHE, HEREABOUTS_K8S_VERSION (see control-plane/build.sh), HEREABOUTS_MULTUS_VERSION,
#      GOFLAGS (appended, e.g. -p=1 on a shared machine).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The github.com path is refused by the module proxy; the gopkg.in path is what Multus publishes.
MULTUS_MODULE=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
MULTUS_VERSION=${HEREABOUTS_MULTUS_VERSION:-v4.2.2}
CACHE=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
MBIN=$CACHE/multus-$MULTUS_VERSION

log() { printf 'cluster/build.sh: %s\n' "$*" >&2; }

k8s_bin=$(HEREABOUTS_BUILD_NODE=1 "$here/../control-plane/build.sh")

if [[ ! -x $MBIN/multus ]]; then
  mkdir -p "$MBIN"
  exec 9>"$MBIN/.lock"
  flock 9
  if [[ ! -x $MBIN/multus ]]; then
    start=$(date +%s)
    log "building the Multus thin plugin $MULTUS_VERSION"
    export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=mod -buildvcs=false ${GOFLAGS:-}"
    command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
    src=$MBIN/src
    mkdir -p "$src"
    cd "$src"
    printf 'module hereabouts.local/multus-build\ngo 1.23\nrequire %s %s\n' "$MULTUS_MODULE" "$MULTUS_VERSION" >go.mod
    : >go.sum
    go get "$MULTUS_MODULE/cmd/multus@$MULTUS_VERSION" >&2
    ldflags="-s -w -X $MULTUS_MODULE/pkg/multus.version=$MULTUS_VERSION"
    go build -trimpath -ldflags "$ldflags" -o multus.new "$MULTUS_MODULE/cmd/multus" >&2
    mv multus.new "$MBIN/multus"
    log "multus done in $(($(date +%s) - start))s"
  fi
fi

echo "$k8s_bin"
echo "$MBIN"
