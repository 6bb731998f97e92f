#!/usr/bin/env bash
# Build Helm from the helm.sh/helm/v3 Go module (no release-binary downloads) into
# ~/.cache/hereabouts/helm-<version>/helm and print its path (first run: a long, low-priority build).
# Env: HEREABOUTS_HELM_VERSION (default below), HEREABOUTS_CACHE.
set -euo pipefail
version=${HEREABOUTS_HELM_VERSION:-v3.19.5}
command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
cache=${HEREABOUTS_CACHE:-$HOME/.cache/hereabouts}
if [[ ! -x $cache/helm-$version/helm ]]; then
  # As Helm's Makefile does: its own version, and the Kubernetes version of its client-go as the default
  # capabilities (otherwise `helm template` and `helm lint` assume Kubernetes 1.20).
  gomod=$(GOFLAGS= GOTOOLCHAIN=local go mod download -json "helm.sh/helm/v3@$version" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
  minor=$(sed -n 's#^\s*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$gomod")
  [[ -n $minor ]] || { echo "helm.sh: cannot find k8s.io/client-go in $gomod" >&2; exit 1; }
  flags="-X helm.sh/helm/v3/internal/version.version=$version"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    flags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
  done
  export EXTRA_LDFLAGS=$flags
fi
exec "$(dirname "$0")/build-go-tool.sh" helm helm.sh/helm/v3 "$version" helm.sh/helm/v3/cmd/helm
