#!/usr/bin/env bash
# test.sh - the core's tests against a real Alertmanager (and Postgres, when
# reachable): installs Alertmanager if needed, then runs the integration
# tests of services/core. With CI=true a missing Alertmanager or Postgres
# fails instead of skipping.
#
#   hack/alertmanager/test.sh            # integration tests
#   hack/alertmanager/test.sh -bench     # plus the webhook benchmarks
set -euo pipefail
cd "$(dirname "$0")/../.."
hack/alertmanager/install.sh >/dev/null
cd services/core
go test -count=1 -run 'TestRealAlertmanager|TestTwoReplicasOnePostgres|TestStorm' -v ./internal/app/ 2>&1 |
	grep -E '^(=== RUN|--- |\s+storm_test|ok|FAIL|PASS|panic)'
if [[ ${1:-} == -bench ]]; then
	go test -run '^$' -bench 'BenchmarkWebhook' -benchtime 10000x ./internal/app/ | grep -E '^(Benchmark|ok|FAIL)'
fi
