#!/usr/bin/env bash
# Tear down what scripts/cluster/start.sh <dir> made: kubelet, every process of the node's mount namespace
# (containerd, shims, containers), the control plane, the cgroups, bridges (pod veths and network
# namespaces go with their processes), the FORWARD rules, the address on lo, kubelet's chains, the host
# dirs it created, the sysctls kubelet and the bridge plugin changed; then <dir> (KEEP=1 keeps it for its
# logs). Safe to repeat.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <dir>" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -d $1 ]] || exit 0
dir=$(cd "$1" && pwd)
[[ -f $dir/.hereabouts-cluster ]] || { echo "cluster/stop.sh: $dir is not a cluster dir" >&2; exit 1; }
API_IP=10.233.0.1
OWNER=/run/hereabouts-cluster

running() { [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) =~ ^[^ZX] ]]; }
# kill_pidfile <name>: only the process the pid file names, and only while its command line mentions <dir>.
kill_pidfile() {
  local f=$dir/$1.pid pid i
  [[ -f $f ]] || return 0
  pid=$(<"$f")
  if [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$dir/"; then
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do running "$pid" || break; sleep 0.1; done
  fi
  rm -f "$f"
}

# The node's mount namespace, identified through containerd before it goes.
mntns=
if [[ -f $dir/containerd.pid ]]; then
  mntns=$(readlink "/proc/$(<"$dir/containerd.pid")/ns/mnt" 2>/dev/null || true)
fi
kill_pidfile kubelet
# The containers: every process in kubelet's cgroup tree (they have mount namespaces of their own, and outlive their
# shims), killed until none is left.
for ((round = 0; round < 50; round++)); do
  mapfile -t pids < <(find /sys/fs/cgroup/pids/hereabouts-cluster -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
  ((${#pids[@]})) || break
  kill -KILL "${pids[@]}" 2>/dev/null || true
  sleep 0.2
done
kill_pidfile containerd
# Shims and containers: every process left in that namespace (the host's own namespace is never it).
if [[ -n $mntns && $mntns != "$(readlink /proc/1/ns/mnt)" ]]; then
  for ((round = 0; round < 20; round++)); do
    pids=()
    for p in /proc/[0-9]*; do
      [[ $(readlink "$p/ns/mnt" 2>/dev/null) == "$mntns" ]] && pids+=("${p#/proc/}")
    done
    ((${#pids[@]})) || break
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 0.2
  done
fi
kill_pidfile kube-scheduler
kill_pidfile kube-controller-manager
[[ -d $dir/cp ]] && KEEP=1 "$here/../control-plane/stop.sh" "$dir/cp" || true

# kubelet's cgroups (cgroupRoot), deepest first, in every hierarchy.
for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
  [[ -d $h/hereabouts-cluster ]] || continue
  find "$h/hereabouts-cluster" -depth -type d -exec rmdir {} \; 2>/dev/null || true
done

for br in $(cat "$dir/bridges" 2>/dev/null); do
  while iptables -D FORWARD -i "$br" ! -o "$br" -m comment --comment hereabouts-cluster -j DROP 2>/dev/null; do :; done
  while iptables -D FORWARD -o "$br" ! -i "$br" -m comment --comment hereabouts-cluster -j DROP 2>/dev/null; do :; done
  ip link del "$br" 2>/dev/null || true
done
rm -f "$dir/bridges"
ip addr del "$API_IP/32" dev lo 2>/dev/null || true
# kubelet's chains (canaries, KUBE-FIREWALL and the jumps to it), only when none existed before the cluster started.
if [[ -f $dir/kube-chains.before && $(<"$dir/kube-chains.before") == 0 ]]; then
  for t in mangle nat filter; do
    iptables-save -t "$t" 2>/dev/null | sed -n 's/^-A \([A-Z]*\) \(.*-j KUBE-.*\)$/\1 \2/p' | grep -v '^KUBE-' |
      while read -r chain rule; do eval "iptables -t $t -D $chain $rule" 2>/dev/null || true; done || true
    for c in $(iptables-save -t "$t" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p'); do
      iptables -t "$t" -F "$c" 2>/dev/null || true
      iptables -t "$t" -X "$c" 2>/dev/null || true
    done
  done
fi
if [[ -f $dir/sysctl.saved ]]; then
  read -r panic oops overcommit <"$dir/sysctl.saved"
  sysctl -q -w kernel.panic="$panic" kernel.panic_on_oops="$oops" vm.overcommit_memory="$overcommit" || true
  rm -f "$dir/sysctl.saved"
fi
# Forwarding as the machine had it before the node's bridge plugin turned it on (interfaces gone since are skipped).
if [[ -f $dir/forwarding.saved ]]; then
  while read -r f v; do
    if [[ -e /proc/sys/$f && $(<"/proc/sys/$f") != "$v" ]]; then echo "$v" >"/proc/sys/$f" || true; fi
  done <"$dir/forwarding.saved"
  rm -f "$dir/forwarding.saved"
fi
if [[ -f $dir/created-dirs ]]; then
  while read -r d; do rmdir "$d" 2>/dev/null || true; done <"$dir/created-dirs"
  rm -f "$dir/created-dirs"
fi
[[ -f $OWNER && $(<"$OWNER") == "$dir" ]] && rm -f "$OWNER"
rm -f "$dir/env"
if [[ ${KEEP:-0} != 1 ]]; then
  # Container rootfs mounts died with the namespace; what is left are plain files.
  rm -rf "$dir"
fi
