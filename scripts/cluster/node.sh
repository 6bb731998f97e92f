#!/usr/bin/env bash
# Runs inside the cluster's private mount namespace (scripts/cluster/start.sh starts it with
# `unshare --mount --propagation private`): binds the node's CNI, netns and containerd paths to
# <dir>/host/..., starts containerd, imports the images, starts kubelet, and returns. The namespace
# lives as long as containerd, kubelet and their shims do; stop.sh ends them by pid.
#
# Usage (from start.sh only): node.sh <dir> <k8s-bin> <multus-bin>
set -euo pipefail
dir=$1 k8s_bin=$2 multus_bin=$3
log() { printf 'cluster/node.sh: %s\n' "$*" >&2; }
alive() { [[ -n ${1:-} && $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) =~ ^[^ZX] ]]; }

# Private copies of every host path the runtime, Multus or the DaemonSet's hostPath volumes touch.
# The mount points themselves are made on the host if missing (start.sh recorded which, stop.sh
# removes them).
for d in etc/cni/net.d opt/cni/bin var/lib/cni run/netns run/containerd var/log var/log/containers var/log/pods run/hereabouts var/lib/hereabouts; do
  mkdir -p "$dir/host/$d"
  mount --bind "$dir/host/$d" "/$d"
done

# CNI plugins: Debian's reference plugins and the Multus thin plugin. hereabouts comes from the DaemonSet.
for p in /usr/lib/cni/*; do ln -sf "$p" "/opt/cni/bin/$(basename "$p")"; done
cp "$multus_bin/multus" /opt/cni/bin/multus

setsid containerd --config "$dir/containerd/config.toml" </dev/null >"$dir/containerd.log" 2>&1 &
echo $! >"$dir/containerd.pid"
sock=$dir/containerd/containerd.sock
for ((i = 0; i < 300; i++)); do
  ctr --address "$sock" version >/dev/null 2>&1 && break
  alive "$(<"$dir/containerd.pid")" || { log "containerd exited"; tail -20 "$dir/containerd.log" >&2; exit 1; }
  sleep 0.2
done
for img in "$dir"/images/*.tar; do
  ctr --address "$sock" -n k8s.io images import "$img" >>"$dir/images.log" 2>&1 ||
    { log "import of $img failed"; cat "$dir/images.log" >&2; exit 1; }
done

setsid "$k8s_bin/kubelet" --config="$dir/kubelet/config.yaml" --kubeconfig="$dir/kubelet/kubeconfig" \
  --root-dir="$dir/kubelet/root" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
  </dev/null >"$dir/kubelet.log" 2>&1 &
echo $! >"$dir/kubelet.pid"
