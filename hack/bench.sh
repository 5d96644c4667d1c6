#!/usr/bin/env bash
# bench.sh — the benchmarks whose figures go into the issue notes.
set -euo pipefail
cd "$(dirname "$0")/.."
run() { echo "== $1 ($2)"; (cd "$1" && go test -run '^$' -bench "$2" -benchtime "${3:-10x}" -count 1 ./... 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' ) }

# The core beside Alertmanager (docs/MANUAL.md, "Benchmark: the core beside
# Alertmanager"): one load generator against Alertmanager and the core on
# memory and on Postgres, interleaved, at 1 and 10 alerts per POST.
# `hack/bench.sh side-by-side` runs only this; LOADGEN_ARGS adds flags
# (e.g. "-rounds 5 -posts 4000").
side_by_side() {
	echo "== the core beside Alertmanager (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
	mkdir -p bin
	(cd services/core && go build -trimpath -o ../../bin/core . && go build -trimpath -o ../../bin/loadgen ./cmd/loadgen)
	am=$(hack/alertmanager/install.sh)
	# shellcheck disable=SC2086 # LOADGEN_ARGS is split into flags on purpose
	bin/loadgen -compare -core bin/core -alertmanager "$am" \
		-database-url "${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}" ${LOADGEN_ARGS:-}
	echo "(load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
}
side_by_side
if [ "${1:-}" = side-by-side ]; then exit 0; fi
run pkg 'BenchmarkClusterProblems$' 5x
# five times the cluster (3,000 namespaces, ~35,000 objects; loading takes minutes): BENCH_5X=1
if [ "${BENCH_5X:-}" = 1 ]; then run pkg 'BenchmarkClusterProblems5x$' 3x; fi
# twenty times (~25,000 pods, ~71,000 Warning events; loading takes ~10 minutes): BENCH_20X=1;
# KUBECREW_AGENT_BIN=<agent binary> adds the peak RSS of `agent scan` on each cluster
if [ "${BENCH_20X:-}" = 1 ]; then
	echo "== pkg (BenchmarkClusterProblems20x$)"
	(cd pkg && go test -run '^$' -bench 'BenchmarkClusterProblems20x$' -benchtime 1x -count 1 -timeout 60m ./kube 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)')
fi
run services/agent 'BenchmarkStartToReady' 20x
# one alert triage in model mode (eval.Competent on the fixtures): model calls and estimated prompt tokens
run services/agent 'BenchmarkTriage' 5x
# the webhook handler in process: webhooks/s, latency and CPU per alert (BenchmarkWebhookLoadgen: the
# loadgen's bodies of 1 and 10 alerts); decoding alone (BenchmarkDecode)
run services/core 'BenchmarkWebhook' 2000x
run services/core 'BenchmarkDecode|BenchmarkAlertChecks' 20000x
# the dashboard's overview with 10,000 decisions (target: under 50 ms a render)
run services/core 'BenchmarkOverview' 30x
# the alerts firing over 100,000 decisions of 2,000 alerts (the overview's read on each store)
run pkg 'BenchmarkListFiring' 20x
run pkg 'BenchmarkPruneMillionDecisions' 50x
run services/core 'BenchmarkBusyQueueSoak' 300x
run pkg 'BenchmarkPermitRestart' 2000x
# start time of the agent and core run from the engine-less image's unpacked layers (ms/boot to /health 200);
# manifests/ is outside go.work
echo "== manifests (BenchmarkBootFromImage)"
(cd manifests && GOWORK=off go test -run '^$' -bench 'BenchmarkBootFromImage' -benchtime 10x -count 1 . 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)')
