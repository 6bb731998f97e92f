#!/usr/bin/env bash
# Start a real, loopback-only Kubernetes control plane (etcd + kube-apiserver) in <dir> for
# integration tests, install deploy/crds and Cluster API's IPAddressClaim, IPAddress and Cluster CRDs
# (scripts/tools/capi-crds.sh) and wait until they are Established.
#
# Usage: scripts/control-plane/start.sh <dir>      (stop with scripts/control-plane/stop.sh <dir>)
# Writes <dir>/kubeconfig, <dir>/env (shell-sourceable), <dir>/*.log.
#
# Env:
#   HEREABOUTS_AUDIT_LOG=<path>   enable API audit logging (Metadata level, one JSON line per request)
#   HEREABOUTS_START_TIMEOUT=60   seconds to wait for each component
#   HEREABOUTS_ETCD=<path>        etcd binary (default: etcd on PATH, else one built by build.sh)
#   HEREABOUTS_CP_EMULATED_VERSION=1.31  kube-apiserver --emulated-version: behave as that older minor
#                                 (1.31..1.33 for the 1.33 build), e.g. to test what a 1.31 cluster accepts
# For a whole cluster (scripts/cluster/start.sh), which the integration tests do not need:
#   HEREABOUTS_CP_ADDRESS=<ip>    bind and advertise kube-apiserver on <ip> (default 127.0.0.1)
#   HEREABOUTS_CP_PORT=<port>     its secure port (default: a free one)
#   HEREABOUTS_CP_SERVICE_CIDR    --service-cluster-ip-range (default 10.96.0.0/16)
#   HEREABOUTS_CP_TOKENS=<file>   more lines for the static token file (token,user,uid,"groups")
#   HEREABOUTS_CP_CLUSTER=1       admission as in a real cluster: ServiceAccount and NodeRestriction on,
#                                 priority and fairness on, the kubernetes Endpoints reconciled
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 <dir>" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$1"
dir=$(cd "$1" && pwd)
timeout=${HEREABOUTS_START_TIMEOUT:-60}
t0=$(date +%s.%N)

log() { printf 'start.sh: %s\n' "$*" >&2; }
for tool in curl openssl flock; do
  command -v "$tool" >/dev/null || { log "missing required tool: $tool"; exit 1; }
done

# Alive and not a zombie.
alive() { [[ -n ${1:-} && $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) =~ ^[^ZX] ]]; }

# Idempotent: a healthy control plane already running in <dir> is reused as is.
if [[ -f $dir/env ]]; then
  # shellcheck disable=SC1091
  . "$dir/env"
  if alive "${ETCD_PID:-}" && alive "${APISERVER_PID:-}" &&
    curl -fsS --max-time 5 --cacert "$dir/ca.crt" -H "Authorization: Bearer $APISERVER_TOKEN" \
      "$APISERVER_URL/readyz" >/dev/null 2>&1; then
    log "already running in $dir ($APISERVER_URL)"
    exit 0
  fi
  log "stale control plane in $dir; cleaning it up first"
  KEEP=1 "$here/stop.sh" "$dir"
fi
# Start from an empty directory so no old etcd data or certificates leak into this run; but never
# wipe a directory that is not ours (a mistyped argument must not cost anyone their files).
if [[ -n $(ls -A "$dir") && ! -f $dir/.hereabouts-control-plane ]]; then
  log "$dir is not empty and not a hereabouts control-plane dir; refusing to use it"
  exit 1
fi
find "$dir" -mindepth 1 -delete
touch "$dir/.hereabouts-control-plane"

bin=$("$here/build.sh")
kubectl=$bin/kubectl
etcd_bin=${HEREABOUTS_ETCD:-$(command -v etcd || echo "$bin/etcd")}
[[ -x $etcd_bin ]] || { log "no etcd binary (install etcd-server or run HEREABOUTS_BUILD_ETCD=1 $here/build.sh)"; exit 1; }

# On any failure: show why, and do not leave half a control plane running.
started=()
cleanup() {
  rc=$?
  if [[ $rc -ne 0 ]]; then
    log "FAILED (exit $rc); log tails follow (full logs in $dir)"
    for f in "$dir"/*.log; do
      [[ -f $f ]] || continue
      echo "----- $f" >&2
      tail -n 25 "$f" >&2
    done
    for pid in "${started[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  fi
}
trap cleanup EXIT

# Free port in 20000-32767: below Linux's ephemeral range, so outgoing connections never hold it.
# Checked at start time; the small race with other processes is covered by the retry loop below.
taken=" "
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12768))
    [[ $taken == *" $p "* ]] && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    taken+="$p "
    echo "$p"
    return
  done
}

# wait_for <name> <pid> <cmd...>: poll cmd until it succeeds, the process dies or time runs out.
wait_for() {
  local name=$1 pid=$2 deadline=$(($(date +%s) + timeout))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ! alive "$pid"; then
      log "$name exited during start-up"
      return 1
    fi
    if (($(date +%s) >= deadline)); then
      log "$name not ready after ${timeout}s"
      return 1
    fi
    sleep 0.2
  done
}

port_clash() { grep -qi 'address already in use' "$1" 2>/dev/null; }

# --- certificates: a throw-away CA, an apiserver serving cert, a service-account key pair.
# EC P-256 keys: generated in milliseconds, accepted by kube-apiserver everywhere.
(
  cd "$dir"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 3650 -subj "/CN=hereabouts-test-ca" 2>/dev/null
  openssl req "${ec[@]}" -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
  san="IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  [[ -n ${HEREABOUTS_CP_ADDRESS:-} ]] && san+=",IP:$HEREABOUTS_CP_ADDRESS"
  printf '%s\n' "subjectAltName=$san" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >apiserver.ext
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
    -extfile apiserver.ext -out apiserver.crt 2>/dev/null
  openssl ecparam -name prime256v1 -genkey -noout -out sa.key
  openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
  rm -f apiserver.csr apiserver.ext ca.srl
)
token=$(openssl rand -hex 24)
# Static token for an admin in system:masters (bypasses RBAC); ServiceAccount tokens from the
# TokenRequest API (kubectl create token) give RBAC-limited identities for RBAC tests.
echo "$token,hereabouts-admin,hereabouts-admin,system:masters" >"$dir/tokens.csv"
[[ -n ${HEREABOUTS_CP_TOKENS:-} ]] && cat "$HEREABOUTS_CP_TOKENS" >>"$dir/tokens.csv"
chmod 600 "$dir"/*.key "$dir/tokens.csv"

# --- etcd (Debian's 3.4 by default), loopback only.
for attempt in 1 2 3; do
  etcd_port=$(free_port)
  etcd_peer_port=$(free_port)
  setsid "$etcd_bin" --name hereabouts --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "hereabouts=http://127.0.0.1:$etcd_peer_port" \
    --logger zap --log-outputs stderr --log-level warn \
    </dev/null >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  started+=("$etcd_pid")
  echo "$etcd_pid" >"$dir/etcd.pid"
  if wait_for etcd "$etcd_pid" curl -fsS --max-time 2 "http://127.0.0.1:$etcd_port/health"; then
    break
  fi
  if port_clash "$dir/etcd.log" && ((attempt < 3)); then
    log "etcd port taken, retrying with other ports"
    kill -9 "$etcd_pid" 2>/dev/null || true
    rm -rf "$dir/etcd"
    continue
  fi
  exit 1
done
t_etcd=$(date +%s.%N)

# --- kube-apiserver
api_address=${HEREABOUTS_CP_ADDRESS:-127.0.0.1}
# shellcheck disable=SC2054 # commas inside flag values are intended
apiserver_args=(
  --etcd-servers="http://127.0.0.1:$etcd_port"
  --bind-address="$api_address" --advertise-address="$api_address"
  --tls-cert-file="$dir/apiserver.crt" --tls-private-key-file="$dir/apiserver.key"
  --client-ca-file="$dir/ca.crt"
  --cert-dir="$dir/certs"
  --token-auth-file="$dir/tokens.csv"
  --authorization-mode=Node,RBAC
  --service-account-issuer=https://kubernetes.default.svc.cluster.local
  --service-account-key-file="$dir/sa.pub" --service-account-signing-key-file="$dir/sa.key"
  --service-cluster-ip-range="${HEREABOUTS_CP_SERVICE_CIDR:-10.96.0.0/16}"
  --profiling=false
)
if [[ ${HEREABOUTS_CP_CLUSTER:-0} == 1 ]]; then
  apiserver_args+=(--enable-admission-plugins=NodeRestriction)
else
  apiserver_args+=(
    # No controller-manager runs: ServiceAccount admission would reject pods for lack of the
    # "default" ServiceAccount that only the controller creates.
    --disable-admission-plugins=ServiceAccount
    # A single test client needs no fairness queuing; skipping it makes start-up faster.
    --enable-priority-and-fairness=false
    # No periodic writes to the kubernetes Endpoints: keeps audit logs to what the tests do.
    --endpoint-reconciler-type=none
  )
fi
[[ -n ${HEREABOUTS_CP_EMULATED_VERSION:-} ]] && apiserver_args+=(--emulated-version="$HEREABOUTS_CP_EMULATED_VERSION")
if [[ -n ${HEREABOUTS_AUDIT_LOG:-} ]]; then
  mkdir -p "$(dirname "$HEREABOUTS_AUDIT_LOG")"
  # Metadata level for every request, one event per request (only the ResponseComplete stage).
  cat >"$dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
EOF
  apiserver_args+=(--audit-policy-file="$dir/audit-policy.yaml" --audit-log-path="$HEREABOUTS_AUDIT_LOG"
    --audit-log-format=json --audit-log-mode=blocking)
fi

for attempt in 1 2 3; do
  api_port=${HEREABOUTS_CP_PORT:-$(free_port)}
  setsid "$bin/kube-apiserver" "${apiserver_args[@]}" --secure-port="$api_port" \
    </dev/null >"$dir/kube-apiserver.log" 2>&1 &
  api_pid=$!
  started+=("$api_pid")
  echo "$api_pid" >"$dir/kube-apiserver.pid"
  url=https://$api_address:$api_port
  if wait_for kube-apiserver "$api_pid" \
    curl -fsS --max-time 2 --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" "$url/readyz"; then
    break
  fi
  if port_clash "$dir/kube-apiserver.log" && ((attempt < 3)); then
    log "kube-apiserver port taken, retrying with another port"
    kill -9 "$api_pid" 2>/dev/null || true
    continue
  fi
  exit 1
done
t_api=$(date +%s.%N)

cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: hereabouts-test
    cluster:
      server: $url
      certificate-authority-data: $(base64 -w0 <"$dir/ca.crt")
users:
  - name: hereabouts-admin
    user:
      token: $token
contexts:
  - name: hereabouts-test
    context:
      cluster: hereabouts-test
      user: hereabouts-admin
      namespace: kube-system
current-context: hereabouts-test
EOF
chmod 600 "$dir/kubeconfig"

cat >"$dir/env" <<EOF
export CONTROL_PLANE_DIR='$dir'
export KUBECONFIG='$dir/kubeconfig'
export KUBECACHEDIR='$dir/kube-cache'
export KUBECTL='$kubectl'
export APISERVER_URL='$url'
export APISERVER_PORT=$api_port
export APISERVER_TOKEN='$token'
export APISERVER_CA='$dir/ca.crt'
export APISERVER_PID=$api_pid
export ETCD_URL='http://127.0.0.1:$etcd_port'
export ETCD_PORT=$etcd_port
export ETCD_PEER_PORT=$etcd_peer_port
export ETCD_PID=$etcd_pid
export HEREABOUTS_AUDIT_LOG='${HEREABOUTS_AUDIT_LOG:-}'
EOF

k() { KUBECONFIG=$dir/kubeconfig KUBECACHEDIR=$dir/kube-cache "$kubectl" --request-timeout=30s "$@"; }
# kube-system is created by the apiserver itself; make sure anyway (tests write pools there).
k get namespace kube-system >/dev/null 2>&1 || k create namespace kube-system >/dev/null
k apply -f "$repo/deploy/crds/" >"$dir/crds.log" 2>&1 ||
  { cat "$dir/crds.log" >&2; exit 1; }
# Poll instead of `kubectl wait`: right after the create a CRD has no status.conditions yet,
# and this kubectl's wait then fails at once ("status.conditions accessor error") instead of waiting.
crds_established() { # <dir of CRD manifests>
  local want got
  want=$(k apply --dry-run=client -f "$1" -o name 2>>"$dir/crds.log" | sort) || return 1
  got=$(k get crd -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Established")].status}{"\n"}{end}' 2>>"$dir/crds.log" |
    awk '$2 == "True" {print "customresourcedefinition.apiextensions.k8s.io/" $1}' | sort)
  [ -n "$want" ] && [ -z "$(comm -23 <(echo "$want") <(echo "$got"))" ]
}
wait_established() { # <dir of CRD manifests>
  local deadline=$(( $(date +%s) + timeout ))
  until crds_established "$1"; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "CRDs of $1 not Established within ${timeout}s" >>"$dir/crds.log"; cat "$dir/crds.log" >&2; exit 1; }
    sleep 0.1
  done
}
wait_established "$repo/deploy/crds/"
t_crd=$(date +%s.%N)

# Cluster API's IPAM CRDs (IPAddressClaim, IPAddress) and its Cluster, as the published sigs.k8s.io/cluster-api
# module ships them (scripts/tools/capi-crds.sh: fetched once with the go command, cached outside the repo): the
# claims tests need them, so no Go toolchain and no cached copy is a failure, not a skip. Server-side apply, as for
# any large CRD: client-side apply would store a last-applied copy of each in an annotation (140 KB of compact JSON
# for the Cluster CRD, whose YAML is 240 KB; under the 256 KiB limit, but to no use here).
capi_crds=$("$repo/scripts/tools/capi-crds.sh") ||
  { log "scripts/tools/capi-crds.sh failed: no Cluster API CRDs (the IPAddressClaim tests need them)"; exit 1; }
echo "--- Cluster API CRDs ($capi_crds)" >>"$dir/crds.log"
k apply --server-side -f "$capi_crds" >>"$dir/crds.log" 2>&1 ||
  { cat "$dir/crds.log" >&2; exit 1; }
wait_established "$capi_crds"
t_capi=$(date +%s.%N)

rss() { awk '/^VmRSS/ {print int($2/1024)}' "/proc/$1/status" 2>/dev/null || echo "?"; }
secs() { awk "BEGIN{printf \"%.1f\", $2 - $1}"; }
log "ready: $url in $(secs "$t0" "$t_capi")s (etcd $(secs "$t0" "$t_etcd")s, apiserver" \
  "$(secs "$t_etcd" "$t_api")s, CRDs $(secs "$t_api" "$t_crd")s, Cluster API CRDs $(secs "$t_crd" "$t_capi")s);" \
  "RSS etcd $(rss "$etcd_pid") MiB," \
  "kube-apiserver $(rss "$api_pid") MiB"
log "use: . $dir/env"
