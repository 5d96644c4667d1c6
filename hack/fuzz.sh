#!/usr/bin/env bash
# fuzz.sh — run every fuzz target for FUZZTIME each (default 3s: the CI
# budget, about 40 s of fuzzing in all; `FUZZTIME=10m make fuzz` for a
# campaign). A crasher fails the run and is written by Go under the
# package's testdata/fuzz/<Target>/: commit it as a seed with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-3s}
log() { echo "[fuzz] $*" >&2; }

# module  package  target
targets=(
  "pkg ./redact FuzzString"
  "pkg ./redact FuzzURL"
  "pkg ./redact FuzzJSON"
  "pkg ./httpauth FuzzBearerToken"
  "pkg ./safetext FuzzClean"
  "pkg ./pulse FuzzParse"
  "pkg ./persona FuzzParseSkill"
  "pkg ./persona FuzzParseEnv"
  "pkg ./gitops FuzzBumpMemory"
  "pkg ./gitops FuzzBumpMemoryPositions"
  "pkg ./gitops FuzzTrivialMergeCheck"
  "services/core ./internal/webhook FuzzDecode"
  "services/core ./internal/route FuzzParse"
  "services/agent ./internal/a2aserver FuzzInvoke"
)

status=0
t0=$(date +%s)
for t in "${targets[@]}"; do
  read -r mod pkg target <<<"$t"
  log "$mod $pkg $target ($FUZZTIME)"
  (cd "$mod" && go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -parallel 1) >/tmp/kubecrew-fuzz.$$.log 2>&1 || {
    status=1
    tail -20 /tmp/kubecrew-fuzz.$$.log >&2
  }
done
rm -f /tmp/kubecrew-fuzz.$$.log
log "${#targets[@]} targets, $FUZZTIME each, done in $(( $(date +%s) - t0 ))s (status $status)"
exit $status
