#!/usr/bin/env bash
# run.sh — the fleet on this machine: five agents on :8001-8005 and the core
# on :8080, in-memory store, deterministic mode unless LLM_BASE_URL is set,
# peers wired by AGENT_PEERS. One Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/bin
LOGDIR=${KUBECREW_LOG_DIR:-$(mktemp -d /tmp/kubecrew-run.XXXXXX)}
log() { echo "[kubecrew] $*"; }

personas=(noor sol vera dax ada)
slugs=(platform-sre k8s-engineer code-reviewer cicd-engineer backend-architect)
peers=""
for i in "${!slugs[@]}"; do peers+="${peers:+,}${slugs[$i]}=http://127.0.0.1:$((8001+i))"; done

pids=()
stop_all() {
  trap - INT TERM EXIT
  log "stopping ${#pids[@]} processes"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  log "stopped; logs kept in $LOGDIR"
}
trap stop_all INT TERM EXIT

for i in "${!personas[@]}"; do
  port=$((8001+i))
  AGENT_PERSONA=${personas[$i]} LISTEN_ADDR=127.0.0.1:$port AGENT_PEERS=$peers \
    "$BIN/agent" >"$LOGDIR/${personas[$i]}.log" 2>&1 &
  pids+=($!)
done
if [[ -x $BIN/core ]]; then
  LISTEN_ADDR=127.0.0.1:8080 AGENT_PEERS=$peers ALERT_COOLDOWN=30m AGENT_CALL_TIMEOUT=600s \
    "$BIN/core" >"$LOGDIR/core.log" 2>&1 &
  pids+=($!)
fi

wait_ready() { # url
  for _ in $(seq 1 100); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
for i in "${!personas[@]}"; do
  port=$((8001+i))
  if wait_ready "http://127.0.0.1:$port/health"; then
    log "${personas[$i]} (${slugs[$i]}) listening on http://127.0.0.1:$port"
  else
    log "${personas[$i]} did not start; its log:"; tail -5 "$LOGDIR/${personas[$i]}.log"; exit 1
  fi
done
if [[ -x $BIN/core ]]; then
  wait_ready http://127.0.0.1:8080/health && log "core listening on http://127.0.0.1:8080" || { log "core did not start:"; tail -5 "$LOGDIR/core.log"; exit 1; }
fi
log "logs: $LOGDIR"
log "try: curl -s localhost:8001/info | head; curl -s localhost:8001/run -d '{\"task\":\"sweep the cluster\"}'"
log "Ctrl-C stops everything"
wait -n "${pids[@]}" || true
log "a process exited"
