#!/usr/bin/env bash
# The hostile pass (docs/MANUAL.md, "Hostile pass"): every route of the core and
# the agent × credential variants, bad bodies, slow clients, planted
# credentials, a storm over 1 MiB and a Postgres outage, on the memory
# store and on Postgres. `make test` runs the same tests once; this runs
# the matrices HOSTILE_ROUNDS times (default 5), requires Postgres (CI=true:
# a missing database breaks the pass instead of skipping it), and prints a
# tally. Exits non-zero when anything broke.
set -uo pipefail
cd "$(dirname "$0")/.."

export HOSTILE_ROUNDS="${HOSTILE_ROUNDS:-5}"
export CI="${CI:-true}"
RUN='^Test(Hostile|Planted|SlowClients|CoreSlowClients|StormOverOneMiB|AuthEveryRoute|BodyReadOnlyAfterAuth|WebhookRejectsBadBodies|TwoReplicasThroughAPostgresOutage)'

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
for m in services/core services/agent; do
  echo "hostile: $m (HOSTILE_ROUNDS=$HOSTILE_ROUNDS)" >&2
  (cd "$m" && go test -count=1 -timeout 15m -json -run "$RUN" ./internal/app) >>"$out" || status=1
done

# go test -json: one event per line; a test's (or subtest's) end is an
# event with "Action":"pass"|"fail"|"skip" and a "Test" field.
awk -v status="$status" '
  /"Test":"/ && /"Action":"(pass|fail|skip)"/ {
    match($0, /"Action":"[a-z]+"/); action = substr($0, RSTART + 10, RLENGTH - 11)
    match($0, /"Test":"[^"]*"/); test = substr($0, RSTART + 8, RLENGTH - 9)
    n[action]++
    if (test !~ /\//) top[action]++
    if (action == "fail") failed[test] = 1
    if (action == "skip") skipped[test] = 1
  }
  /"Action":"fail"/ && !/"Test":"/ { pkgfail++ }
  END {
    for (t in failed) { leaf = 1; for (u in failed) if (index(u, t "/") == 1) leaf = 0; if (leaf) print "  broken:  " t }
    for (t in skipped) print "  skipped: " t
    printf "hostile pass: %d cases run (%d tests), %d passed, %d broken, %d skipped\n",
      n["pass"] + n["fail"] + n["skip"], top["pass"] + top["fail"] + top["skip"], n["pass"] + 0, n["fail"] + 0, n["skip"] + 0
    if (n["fail"] + n["skip"] + pkgfail > 0 || status != 0) exit 1
  }' "$out"
