#!/usr/bin/env bash
# A real single-node Kubernetes cluster for the cluster test stage: etcd + kube-apiserver (via
# scripts/control-plane/start.sh), kube-controller-manager, kube-scheduler, containerd (Debian's 1.6, runc)
# and kubelet, with Multus (thin plugin) as the node's CNI. containerd and kubelet run in a mount namespace
# of their own, where /etc/cni/net.d, /opt/cni/bin, /var/lib/cni, /run/netns, /run/containerd and the pod
# log dirs are <dir>/host/...: what the hereabouts DaemonSet installs never mixes with the host's files.
#
# Usage: scripts/cluster/start.sh <dir>     (stop with scripts/cluster/stop.sh <dir>; one cluster per machine)
# Writes <dir>/env (KUBECONFIG, KUBECTL, CTR, NODE_NAME, HOST_ROOT, ...) and <dir>/*.log.
#
# Nothing leaves the machine: the kubernetes Service ClusterIP (10.233.0.1) is an address on lo and
# kube-apiserver listens on it at :443 (in-cluster clients need no kube-proxy, no NAT); FORWARD drops anything
# routed from or to the cluster's bridges, and stop.sh puts back the forwarding sysctls the bridge plugin turns
# on. Machine quirks handled here: runc cannot lower oom_score_adj (restrict_oom_score_adj), no dummy driver (an
# empty bridge is the macvlan master), bridge MACs are pinned (a bridge otherwise takes its lowest port MAC and pods
# lose their gateway's ARP entry), a veth port gives it carrier, kubelet's kernel sysctls are put back once the node
# is Ready.
#
# Env: HEREABOUTS_CLUSTER_TIMEOUT (seconds to wait for the node to be Ready, default 120).
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 <dir>" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
[[ $(id -u) == 0 ]] || { echo "cluster/start.sh: needs root" >&2; exit 1; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
timeout=${HEREABOUTS_CLUSTER_TIMEOUT:-120}
t0=$(date +%s.%N)
log() { printf 'cluster/start.sh: %s\n' "$*" >&2; }
secs() { awk "BEGIN{printf \"%.1f\", $2 - $1}"; }

# Fixed names: one cluster per machine (the apiserver address and the bridges are global).
API_IP=10.233.0.1
SERVICE_CIDR=10.233.0.0/24
POD_CIDR=10.234.0.0/24 POD_GW=10.234.0.1
NODE_NAME=hereabouts-node
BRIDGES="hbc-cni0 hbc-mvl0 hbc-br1" # default network, macvlan master, bridge NAD
OWNER=/run/hereabouts-cluster

# The node's runtime and tools (Debian packages; a quick no-op when they are there).
bash "$repo/scripts/setup.sh" cluster >&2
for tool in containerd runc ctr unshare nsenter iptables ip flock; do
  command -v "$tool" >/dev/null || { log "missing required tool: $tool (scripts/setup.sh cluster installs it)"; exit 1; }
done
if [[ -f $OWNER ]] && [[ $(<"$OWNER") != "$dir" ]] && [[ -d $(<"$OWNER") ]]; then
  log "another cluster runs from $(<"$OWNER"); stop it first (scripts/cluster/stop.sh $(<"$OWNER"))"
  exit 1
fi
if [[ -f $dir/env ]]; then
  log "stale cluster in $dir; stopping it first"
  "$here/stop.sh" "$dir"
  mkdir -p "$dir"
fi
if [[ -n $(ls -A "$dir") && ! -f $dir/.hereabouts-cluster ]]; then
  log "$dir is not empty and not a hereabouts cluster dir; refusing to use it"
  exit 1
fi
touch "$dir/.hereabouts-cluster"
echo "$dir" >"$OWNER"

# On failure: the logs, and everything torn down again.
trap 'rc=$?; if [[ $rc -ne 0 ]]; then log "FAILED (exit $rc)"; for f in "$dir"/*.log; do echo "----- $f" >&2; tail -n 20 "$f" >&2; done; KEEP=1 "$here/stop.sh" "$dir" || true; fi' EXIT

mapfile -t bins < <("$here/build.sh")
((${#bins[@]} == 2)) || { log "scripts/cluster/build.sh failed"; exit 1; }
k8s_bin=${bins[0]} multus_bin=${bins[1]}
HEREABOUTS_IMAGE=ghcr.io/hereabouts/hereabouts:0.1.0 "$repo/scripts/image/build.sh" "$dir/images" >"$dir/images.list"
t_build=$(date +%s.%N)

# --- host state to put back: sysctls kubelet writes, host dirs the binds need.
sysctl -n kernel.panic kernel.panic_on_oops vm.overcommit_memory | paste -sd' ' >"$dir/sysctl.saved"
# The default network's bridge plugin (isGateway) turns IPv4 forwarding on in the machine's namespace, and with it
# every interface's: stop.sh writes back each switch as it was (all and default first, which rewrite the others).
(cd /proc/sys && for fam in ipv4 ipv6; do
  [[ $fam != ipv4 ]] || echo "net/ipv4/ip_forward $(<net/ipv4/ip_forward)"
  [[ -d net/$fam/conf ]] || continue
  for f in net/$fam/conf/all/forwarding net/$fam/conf/default/forwarding net/$fam/conf/*/forwarding; do
    [[ ! -e $f ]] || echo "$f $(<"$f")"
  done
done | awk '!seen[$1]++') >"$dir/forwarding.saved"
: >"$dir/created-dirs"
for d in etc/cni/net.d opt/cni/bin var/lib/cni run/netns run/containerd var/log var/log/containers var/log/pods run/hereabouts var/lib/hereabouts; do
  p=/$d
  while [[ ! -e $p ]]; do echo "$p" >>"$dir/created-dirs"; p=$(dirname "$p"); done
  mkdir -p "/$d"
done
iptables-save -t filter | grep -c '^:KUBE-' >"$dir/kube-chains.before" || true

# kubelet's cgroupRoot must exist in every hierarchy; a new cpuset cgroup starts with no cpus or mems.
for h in /sys/fs/cgroup/*/; do
  [[ -d $h/hereabouts-cluster ]] && continue
  mkdir "$h/hereabouts-cluster"
  if [[ -f $h/cpuset.cpus ]]; then
    cat "$h/cpuset.cpus" >"$h/hereabouts-cluster/cpuset.cpus"
    cat "$h/cpuset.mems" >"$h/hereabouts-cluster/cpuset.mems"
  fi
done

# --- host network: the apiserver address on lo, pinned-MAC bridges, FORWARD dropped on them.
ip addr add "$API_IP/32" dev lo
i=0
for br in $BRIDGES; do
  i=$((i + 1))
  ip link add "$br" type bridge
  ip link set "$br" address "02:68:62:63:00:0$i" # locally administered; pinned, so ports never change it
  ip link set "$br" up
  iptables -I FORWARD -i "$br" ! -o "$br" -m comment --comment hereabouts-cluster -j DROP
  iptables -I FORWARD -o "$br" ! -i "$br" -m comment --comment hereabouts-cluster -j DROP
done
# An empty bridge has no carrier, and macvlan links on it stay down: one veth port (both ends up, nothing behind
# them) gives it carrier. The bridge's MAC is pinned, so the port does not change it.
ip link add hbc-mvl0p type veth peer name hbc-mvl0q
ip link set hbc-mvl0p master hbc-mvl0
ip link set hbc-mvl0p up
ip link set hbc-mvl0q up
echo "$BRIDGES hbc-mvl0p" >"$dir/bridges"

# --- control plane: static tokens for the components, the apiserver on the Service ClusterIP.
tok() { openssl rand -hex 24; }
node_token=$(tok) kcm_token=$(tok) sched_token=$(tok) multus_token=$(tok)
{
  echo "$node_token,system:node:$NODE_NAME,node,system:nodes"
  echo "$kcm_token,system:kube-controller-manager,kcm,system:masters"
  echo "$sched_token,system:kube-scheduler,scheduler,system:masters"
  echo "$multus_token,multus,multus,system:masters"
} >"$dir/tokens.csv"
chmod 600 "$dir/tokens.csv"
HEREABOUTS_CP_ADDRESS=$API_IP HEREABOUTS_CP_PORT=443 HEREABOUTS_CP_SERVICE_CIDR=$SERVICE_CIDR \
  HEREABOUTS_CP_TOKENS=$dir/tokens.csv HEREABOUTS_CP_CLUSTER=1 "$repo/scripts/control-plane/start.sh" "$dir/cp"
t_cp=$(date +%s.%N)
cp_env=$(. "$dir/cp/env" && echo "$APISERVER_URL")
ca=$dir/cp/ca.crt

kubeconfig() { # kubeconfig <file> <token>
  cat >"$1" <<EOC
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$cp_env", certificate-authority-data: "$(base64 -w0 <"$ca")"}}]
users: [{name: u, user: {token: "$2"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
EOC
  chmod 600 "$1"
}
mkdir -p "$dir/kubelet" "$dir/containerd"
kubeconfig "$dir/kubelet/kubeconfig" "$node_token"
kubeconfig "$dir/kcm.kubeconfig" "$kcm_token"
kubeconfig "$dir/scheduler.kubeconfig" "$sched_token"

setsid "$k8s_bin/kube-controller-manager" --kubeconfig="$dir/kcm.kubeconfig" \
  --service-account-private-key-file="$dir/cp/sa.key" --root-ca-file="$ca" --use-service-account-credentials \
  --leader-elect=false --bind-address=127.0.0.1 --secure-port=0 --profiling=false \
  --cluster-signing-cert-file="$ca" --cluster-signing-key-file="$dir/cp/ca.key" \
  </dev/null >"$dir/kube-controller-manager.log" 2>&1 &
echo $! >"$dir/kube-controller-manager.pid"
setsid "$k8s_bin/kube-scheduler" --kubeconfig="$dir/scheduler.kubeconfig" --leader-elect=false \
  --bind-address=127.0.0.1 --secure-port=0 --profiling=false </dev/null >"$dir/kube-scheduler.log" 2>&1 &
echo $! >"$dir/kube-scheduler.pid"

# --- node: containerd + kubelet configuration.
cat >"$dir/containerd/config.toml" <<EOC
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$dir/containerd/containerd.sock"
[ttrpc]
  address = "$dir/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$(sed -n 1p "$dir/images.list")"
  # No process may lower oom_score_adj here; runc otherwise fails ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
EOC

cat >"$dir/kubelet/config.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$dir/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /hereabouts-cluster
address: 127.0.0.1
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: "$ca"}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
podLogsDir: /var/log/pods
resolvConf: /etc/resolv.conf
# The disk is shared: no evictions or image GC because of other tenants' files.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
fileCheckFrequency: 5s
EOC

# --- CNI: Multus thin plugin; its default network is a bridge whose gateway address (on the host)
# routes to the apiserver on lo.
mkdir -p "$dir/host/etc/cni/net.d/multus.d"
kubeconfig "$dir/host/etc/cni/net.d/multus.d/multus.kubeconfig" "$multus_token"
cat >"$dir/host/etc/cni/net.d/00-multus.conf" <<EOC
{
  "cniVersion": "0.3.1",
  "name": "multus-cni-network",
  "type": "multus",
  "kubeconfig": "/etc/cni/net.d/multus.d/multus.kubeconfig",
  "delegates": [{
    "cniVersion": "0.3.1",
    "name": "cluster",
    "type": "bridge",
    "bridge": "hbc-cni0",
    "isGateway": true,
    "ipMasq": false,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$POD_GW"}]],
             "routes": [{"dst": "$SERVICE_CIDR"}]}
  }]
}
EOC

NODE_NAME=$NODE_NAME NODE_IP=$API_IP unshare --mount --propagation private \
  bash "$here/node.sh" "$dir" "$k8s_bin" "$multus_bin"

cat >"$dir/env" <<EOC
export CLUSTER_DIR='$dir'
export KUBECONFIG='$dir/cp/kubeconfig'
export KUBECACHEDIR='$dir/cp/kube-cache'
export KUBECTL='$k8s_bin/kubectl'
export CTR="ctr --address $dir/containerd/containerd.sock -n k8s.io"
export NODE_NAME='$NODE_NAME'
export HOST_ROOT='$dir/host'
export API_IP='$API_IP'
export CONTAINERD_PID=$(<"$dir/containerd.pid")
export KUBELET_PID=$(<"$dir/kubelet.pid")
EOC
k() { KUBECONFIG=$dir/cp/kubeconfig KUBECACHEDIR=$dir/cp/kube-cache "$k8s_bin/kubectl" --request-timeout=30s "$@"; }
until k wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s >/dev/null 2>&1; do
  # Counted from the control plane's start, not the script's: a first run's builds (Multus, kubelet) take minutes.
  if (($(date +%s) - ${t_cp%.*} > timeout)); then log "node not Ready ${timeout}s after the control plane started"; exit 1; fi
  sleep 1
done
# kubelet sets these once at start; they are the machine's, not ours.
read -r panic oops overcommit <"$dir/sysctl.saved"
sysctl -q -w kernel.panic="$panic" kernel.panic_on_oops="$oops" vm.overcommit_memory="$overcommit"
t_ready=$(date +%s.%N)
log "node $NODE_NAME Ready in $(secs "$t0" "$t_ready")s (build+images $(secs "$t0" "$t_build")s," \
  "control plane $(secs "$t_build" "$t_cp")s, node $(secs "$t_cp" "$t_ready")s); use: . $dir/env"
