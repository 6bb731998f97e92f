#!/usr/bin/env bash
# Installs what the project needs on a fresh machine: Debian packages (when root) and the npm packages.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
# promtool checks and unit-tests the alert rules (deploy/monitoring/).
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
# The cluster stage (scripts/cluster/): a node's runtime, and a static busybox for its workload image.
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
# The multi-arch image (scripts/image/multiarch.sh): arm64 code caches trained under qemu-user, arm64 stripping,
# and skopeo to copy the OCI layout as a release would.
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
command -v aarch64-linux-gnu-strip >/dev/null 2>&1 || need+=(binutils-aarch64-linux-gnu)
command -v skopeo >/dev/null 2>&1 || need+=(skopeo)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "setup: not root, cannot install Debian packages: ${need[*]} (tests that need them are skipped)" >&2
  fi
fi

# npm ci only when the lock file changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The arm64 Node (npm) and Debian's arm64 libraries, cached outside the repository (needs root for dpkg).
if [ "$(id -u)" = 0 ]; then
  bash scripts/image/arm64-deps.sh || echo "setup: could not fetch the arm64 Node or libraries: the multi-arch image tests are skipped" >&2
fi
