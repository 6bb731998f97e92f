#!/usr/bin/env bash
# Prints the directory of the Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule, ...), taken from its
# published Go module github.com/prometheus-operator/prometheus-operator (example/prometheus-operator-crd/) in the
# Go module cache. The tests apply ServiceMonitor's and PrometheusRule's to the test API server, so the chart's
# monitoring objects are validated against the real schemas.
# Env: HEREABOUTS_PROMETHEUS_OPERATOR_VERSION (default below).
set -euo pipefail
version=${HEREABOUTS_PROMETHEUS_OPERATOR_VERSION:-v0.85.0}
command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin
dir=$(GOFLAGS= GOTOOLCHAIN=local go mod download -json "github.com/prometheus-operator/prometheus-operator@$version" |
  sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
crds=$dir/example/prometheus-operator-crd
[[ -f $crds/monitoring.coreos.com_servicemonitors.yaml ]] || { echo "prometheus-operator-crds.sh: no CRDs in $dir" >&2; exit 1; }
echo "$crds"
