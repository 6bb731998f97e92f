#!/usr/bin/env bash
# Stop the control plane started by start.sh <dir> and remove <dir> (KEEP=1 keeps it, e.g. to read
# the logs). Safe to run twice, or on a directory whose processes already died.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 <dir>" >&2; exit 2; }
log() { printf 'stop.sh: %s\n' "$*" >&2; }
[[ -d $1 ]] || exit 0
dir=$(cd "$1" && pwd)

# Without KEEP the state is thrown away, so SIGKILL at once (etcd is crash-safe; a graceful
# kube-apiserver + etcd shutdown costs ~5s per run). With KEEP=1, shut down cleanly first.
sig=KILL
[[ ${KEEP:-0} == 1 ]] && sig=TERM

# Alive and not a zombie (a container's pid 1 may be slow to reap, or not reap at all).
running() { [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) =~ ^[^ZX] ]]; }

# Kill only what the pid file names and only if it still is that process (command line mentions
# <dir>): a recycled pid must never take down an unrelated process.
stop_one() {
  local name=$1 pidf=$dir/$1.pid pid i
  [[ -f $pidf ]] || return 0
  pid=$(<"$pidf")
  if [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$dir/"; then
    kill -"$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do # up to 10s for a clean shutdown
      running "$pid" || break
      sleep 0.1
    done
    if running "$pid"; then
      log "$name ($pid) still running after SIG$sig; killing"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -f "$pidf"
}

# apiserver first, so it does not spend its last seconds retrying a vanished etcd.
stop_one kube-apiserver
stop_one etcd

if [[ ${KEEP:-0} != 1 ]]; then
  if [[ -f $dir/.hereabouts-control-plane ]]; then
    rm -rf "$dir"
  else
    log "$dir has no .hereabouts-control-plane marker; not removing it"
  fi
fi
