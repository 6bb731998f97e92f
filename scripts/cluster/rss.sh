#!/usr/bin/env bash
# Resident memory of the cluster started in <dir>: the control plane, kube-controller-manager, kube-scheduler and
# every process of the node's mount namespace (containerd, kubelet, shims, pods). Prints one line per part and the sum.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <dir>" >&2; exit 2; }
dir=$(cd "$1" && pwd)
rss() { awk '/^VmRSS/ {s += $2} END {print int(s / 1024)}' "$@" 2>/dev/null || echo 0; }
total=0
for name in cp/etcd cp/kube-apiserver kube-controller-manager kube-scheduler; do
  pid=$(cat "$dir/$name.pid" 2>/dev/null || true)
  [[ -n $pid ]] || continue
  mib=$(rss "/proc/$pid/status")
  printf '%-24s %5d MiB\n' "${name#cp/}" "$mib"
  total=$((total + mib))
done
mntns=$(readlink "/proc/$(<"$dir/containerd.pid")/ns/mnt")
files=()
for p in /proc/[0-9]*; do [[ $(readlink "$p/ns/mnt" 2>/dev/null) == "$mntns" ]] && files+=("$p/status"); done
# Containers have mount namespaces of their own: they are found in kubelet's cgroup tree.
for pid in $(find /sys/fs/cgroup/pids/hereabouts-cluster -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u); do
  files+=("/proc/$pid/status")
done
mib=$(rss "${files[@]}")
printf '%-24s %5d MiB (%d processes)\n' "node (containerd, kubelet, pods)" "$mib" "${#files[@]}"
echo "total $((total + mib)) MiB"
