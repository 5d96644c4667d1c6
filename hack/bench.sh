#!/usr/bin/env bash
# bench.sh — the benchmarks whose figures go into the issue notes.
set -euo pipefail
cd "$(dirname "$0")/.."
run() { echo "== $1 ($2)"; (cd "$1" && go test -run '^$' -bench "$2" -benchtime "${3:-10x}" -count 1 ./... 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' ) }
run services/agent 'BenchmarkStartToReady' 20x
run services/core 'BenchmarkWebhook' 2000x
run pkg 'BenchmarkPruneMillionDecisions' 50x
