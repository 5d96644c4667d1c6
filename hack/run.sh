#!/usr/bin/env bash
# run.sh — `make run`: the whole kubecrew loop on this machine.
#
# With no KUBECONFIG: a throwaway Kubernetes cluster (hack/testenv.sh "sim" tier: real etcd,
# kube-apiserver, controller-manager and scheduler, kwok fake nodes; the first run builds them, ~10 min,
# cached in ~/.cache/k8s-testenv; KUBECREW_SANDBOX_TIER=plain = API server + static fixtures), six broken
# workloads and a healthy one as real Deployments → ReplicaSets → pods, a local GitOps repository, the core on :8080 and the five agents on :8001-8005,
# then one real incident (OOMKill alert → core → Noor → Sol's PR → Vera's review → merge) printed as a
# timeline. The fleet then stays up for curl, with a random AUTH_TOKEN it prints (export KUBECREW_TOKEN=…;
# your own when AUTH_TOKEN is set); Ctrl-C stops everything this started.
# With KUBECONFIG set: the fleet against that cluster, read-only (KUBECREW_ALLOW_ACTIONS=1 opts in).
#
#   hack/run.sh [-headless] [-core-port N] [-agent-port N] [-timeout D]   (see bin/sandbox -h)
#
# The work is done by services/agent/internal/sandbox (its flags: cmd/sandbox, built here into bin/sandbox); this script adds
# a last-resort cleanup of anything it recorded in RUN/pids should the program itself be killed.
# Env: KUBECREW_RUN_DIR (default: a new /tmp/kubecrew-run.*), KUBECREW_BIN (default bin/), LLM_BASE_URL (+ LLM_API_KEY,
# AGENT_MODEL) for a model instead of the deterministic playbooks.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${KUBECREW_BIN:-$ROOT/bin}
GO=${GO:-go}
log() { echo "[kubecrew] $*"; }

for b in agent core; do
  [[ -x $BIN/$b ]] || { log "bin/$b missing: run \`make build\` (or \`make run\`, which builds first)"; exit 2; }
done
# The Makefile's build target may build it already; go build is a cache hit then.
(cd services/agent && "$GO" build -trimpath -o "$BIN/sandbox" ./cmd/sandbox)

RUN=${KUBECREW_RUN_DIR:-$(mktemp -d /tmp/kubecrew-run.XXXXXX)}
mkdir -p "$RUN"

cleanup() {
  # The program stops everything itself; this only catches what a SIGKILL of it would leave.
  local left=()
  if [[ -f $RUN/pids ]]; then
    while read -r name pid; do
      [[ -n ${pid:-} ]] && kill -0 "$pid" 2>/dev/null && left+=("$name:$pid")
    done < "$RUN/pids"
  fi
  [[ -d $RUN/cluster ]] && ls "$RUN"/cluster/*.pid >/dev/null 2>&1 && bash hack/testenv.sh stop "$RUN/cluster" || true
  if [[ ${#left[@]} -gt 0 ]]; then
    log "cleaning up processes left behind: ${left[*]}"
    for np in "${left[@]}"; do kill -TERM -- "-${np#*:}" 2>/dev/null || kill -TERM "${np#*:}" 2>/dev/null || true; done
    sleep 2
    for np in "${left[@]}"; do kill -KILL -- "-${np#*:}" 2>/dev/null || kill -KILL "${np#*:}" 2>/dev/null || true; done
  fi
}
trap cleanup EXIT

# Ctrl-C in a terminal reaches bin/sandbox directly (same process group); it stops the fleet in
# order and exits, then cleanup runs here. A SIGTERM sent to this script alone is passed on.
"$BIN/sandbox" -bin "$BIN" -dir "$RUN" "$@" &
spid=$!
trap ':' INT
trap 'kill -TERM "$spid" 2>/dev/null || true' TERM
rc=0
while :; do
  wait "$spid" && rc=0 || rc=$?
  kill -0 "$spid" 2>/dev/null || break
done
# a wait cut short by a trap returns >128; the program's own status is still there to collect
if (( rc > 128 )); then wait "$spid" 2>/dev/null && rc=0 || rc=$?; fi
exit $rc
