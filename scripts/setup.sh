#!/usr/bin/env bash
# Installs what one purpose needs on a fresh machine, and nothing else: its Debian packages (as root; apt-get update
# first, and only when something is missing) and the npm packages (npm ci only when package-lock.json changed since
# the last install). Idempotent, and quick when everything is there.
#
# Usage: scripts/setup.sh [--debian|--npm] [demo|test|cluster|image ...]     (no purpose: all four)
#   --debian, --npm  only that half (scripts/demo.sh runs them side by side); default both.
#   demo     `npm run demo`: as root, iproute2, containernetworking-plugins and iputils-ping (only as root does the
#            demo run Debian's bridge plugin in network namespaces and ping across it); nothing from Debian otherwise.
#   test     scripts/test.sh's main stages: the demo's packages (e2e), etcd-server, openssl and curl (control plane),
#            prometheus (promtool checks the alert rules), binutils (the build strips the executable; readelf),
#            file, util-linux.
#   cluster  the cluster stage (scripts/cluster/): containerd, runc, busybox-static (the workload image), util-linux
#            (nsenter, unshare), iptables, iproute2, gcc and libc6-dev (the pause image is a static C program).
#   image    the multi-arch image (scripts/image/multiarch.sh, test/build/): qemu-user-static (arm64 code caches
#            trained under qemu-user), binutils-aarch64-linux-gnu (arm64 stripping), skopeo, binutils, and the arm64
#            Node and Debian's arm64 libraries (scripts/image/arm64-deps.sh, cached outside the repository; as root).
set -euo pipefail
cd "$(dirname "$0")/.."

debian=true npm=true
case ${1-} in
  --debian) npm=false && shift ;;
  --npm) debian=false && shift ;;
esac
purposes=("$@")
((${#purposes[@]})) || purposes=(demo test cluster image)
root=false
[ "$(id -u)" = 0 ] && root=true

need=()
# want <package> <check...>: the package is needed unless the check passes.
want() {
  local pkg=$1
  shift
  "$@" >/dev/null 2>&1 && return 0
  [[ " ${need[*]-} " == *" $pkg "* ]] || need+=("$pkg")
}
has() { command -v "$1"; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
# Debian's CNI plugins in network namespaces of our own, and a ping across them.
netns_tools() {
  want iproute2 has ip
  want containernetworking-plugins test -x /usr/lib/cni/bridge
  want iputils-ping has ping
}

arm64=false
for purpose in "${purposes[@]}"; do
  case $purpose in
    demo)
      if $root; then netns_tools; fi
      ;;
    test)
      netns_tools
      want etcd-server has etcd
      want openssl has openssl
      want curl has curl
      want prometheus has promtool
      want binutils has strip
      want file has file
      want util-linux has unshare
      ;;
    cluster)
      want containerd has containerd
      want runc has runc
      want busybox-static test -x /bin/busybox
      want util-linux has nsenter
      want iptables has iptables
      want iproute2 has ip
      want gcc has gcc
      want libc6-dev installed libc6-dev
      ;;
    image)
      want qemu-user-static has qemu-aarch64-static
      want binutils-aarch64-linux-gnu has aarch64-linux-gnu-strip
      want skopeo has skopeo
      want binutils has readelf
      arm64=true
      ;;
    *)
      echo "usage: $0 [--debian|--npm] [demo|test|cluster|image ...]" >&2
      exit 2
      ;;
  esac
done

if $debian && ((${#need[@]})); then
  if $root; then
    echo "setup (${purposes[*]}): installing Debian packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "setup (${purposes[*]}): not root, cannot install Debian packages: ${need[*]} (tests that need them are skipped)" >&2
  fi
fi

# npm ci only when the lock file changed since the last install.
if $npm && { [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The arm64 Node (npm) and Debian's arm64 libraries, cached outside the repository (needs root for dpkg).
if $debian && $arm64 && $root; then
  bash scripts/image/arm64-deps.sh || echo "setup: could not fetch the arm64 Node or libraries: the multi-arch image tests are skipped" >&2
fi
