#!/usr/bin/env bash
# bench.sh — the benchmarks whose figures go into the issue notes.
set -euo pipefail
cd "$(dirname "$0")/.."
run() { echo "== $1 ($2)"; (cd "$1" && go test -run '^$' -bench "$2" -benchtime "${3:-10x}" -count 1 ./... 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' ) }
run pkg 'BenchmarkClusterProblems$' 5x
# five times the cluster (3,000 namespaces, ~35,000 objects; loading takes minutes): BENCH_5X=1
if [ "${BENCH_5X:-}" = 1 ]; then run pkg 'BenchmarkClusterProblems5x$' 3x; fi
run services/agent 'BenchmarkStartToReady' 20x
# one alert triage in model mode (eval.Competent on the fixtures): model calls and estimated prompt tokens
run services/agent 'BenchmarkTriage' 5x
run services/core 'BenchmarkWebhook' 2000x
# the dashboard's overview with 10,000 decisions (target: under 50 ms a render)
run services/core 'BenchmarkOverview' 30x
run pkg 'BenchmarkPruneMillionDecisions' 50x
run services/core 'BenchmarkBusyQueueSoak' 300x
run pkg 'BenchmarkPermitRestart' 2000x
