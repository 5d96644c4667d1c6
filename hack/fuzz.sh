#!/usr/bin/env bash
# fuzz.sh — run every fuzz target for FUZZTIME each (default 2000x: the CI
# budget, 2,000 executions per target; `FUZZTIME=10m make fuzz` for a
# campaign). The CI budget is a count, not a duration: Go 1.26's fuzzing
# coordinator can report a spurious "context deadline exceeded" failure
# when a duration -fuzztime ends while a worker is mid-execution under CPU
# load (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
# A crasher fails the run and is written by Go under the
# package's testdata/fuzz/<Target>/: commit it as a seed with the fix.
# Targets marked heavy link client-go or the whole agent: building them
# with fuzz instrumentation takes minutes on a cold cache, so CI (CI=true)
# runs only their seed corpora, as the ordinary tests do; FUZZ_HEAVY=1
# includes them.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-2000x}
HEAVY=${FUZZ_HEAVY:-$([[ "${CI:-}" == "true" ]] && echo 0 || echo 1)}
log() { echo "[fuzz] $*" >&2; }

# module  package  target  [heavy]
targets=(
  "pkg ./redact FuzzString"
  "pkg ./redact FuzzURL"
  "pkg ./redact FuzzJSON"
  "pkg ./httpauth FuzzBearerToken"
  "pkg ./safetext FuzzClean"
  "pkg ./pulse FuzzParse heavy"
  "pkg ./persona FuzzParseSkill"
  "pkg ./persona FuzzParseEnv"
  "pkg ./gitops FuzzBumpMemory"
  "pkg ./gitops FuzzBumpMemoryPositions"
  "pkg ./gitops FuzzTrivialMergeCheck"
  "pkg ./gitops FuzzMergeTarget"
  "pkg ./gitops FuzzPathTemplates"
  "pkg ./deployreview FuzzReview"
  "pkg ./deployreview FuzzReviewAPI"
  "services/core ./internal/webhook FuzzDecode"
  "services/core ./internal/route FuzzParse"
  "pkg ./llm FuzzRetryAfter"
  "services/agent ./internal/a2aserver FuzzInvoke heavy"
  "services/agent ./internal/engine FuzzSplitThink heavy"
  "services/agent ./internal/engine FuzzCutMiddle heavy"
  "services/agent ./internal/engine FuzzParseReport heavy"
  "services/agent ./internal/mcpclient FuzzParseServers"
)

status=0
t0=$(date +%s)
for t in "${targets[@]}"; do
  read -r mod pkg target weight <<<"$t"
  if [[ "${weight:-}" == "heavy" && "$HEAVY" != "1" ]]; then
    log "$mod $pkg $target: seeds only (heavy build; FUZZ_HEAVY=1 fuzzes it)"
    continue
  fi
  log "$mod $pkg $target ($FUZZTIME)"
  (cd "$mod" && go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel 1) >/tmp/kubecrew-fuzz.$$.log 2>&1 || {
    status=1
    tail -20 /tmp/kubecrew-fuzz.$$.log >&2
  }
done
rm -f /tmp/kubecrew-fuzz.$$.log
log "${#targets[@]} targets, $FUZZTIME each, done in $(( $(date +%s) - t0 ))s (status $status)"
exit $status
