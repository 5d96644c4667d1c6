#!/usr/bin/env bash
# checkdeps.sh — fail when a dependency is required at different versions by
# different modules of the workspace (k8s.io/*, go-openai, pgx, zap, …), and
# when a module does not build on its own (GOWORK=off).
set -euo pipefail
cd "$(dirname "$0")/.."
mods=$(sed -n 's/^\s*\.\/\(.*\)$/\1/p' go.work | tr -d '\t ' )
# manifests/ is a module outside go.work (nothing imports it; it brings Helm
# and go-containerregistry for its tests and tools): held to the same versions.
mods="$mods manifests"
declare -A seen
fail=0
for m in $mods; do
  while read -r path ver; do
    [[ -z $path ]] && continue
    if [[ -n ${seen[$path]:-} && ${seen[$path]%% *} != "$ver" ]]; then
      echo "checkdeps: $path is $ver in $m/go.mod but ${seen[$path]}" >&2
      fail=1
    else
      seen[$path]="$ver (in $m/go.mod)"
    fi
  done < <(awk '
    /^require \(/ {inreq=1; next}
    inreq && /^\)/ {inreq=0; next}
    inreq {print $1, $2; next}
    /^require [^(]/ {print $2, $3}
  ' "$m/go.mod" | grep -v '^github.com/kubecrew/kubecrew/')
done
if [[ ${1:-} == --build ]]; then
  for m in $mods; do
    (cd "$m" && GOWORK=off go build ./... ) || { echo "checkdeps: $m does not build with GOWORK=off" >&2; fail=1; }
  done
fi
[[ $fail == 0 ]] && echo "checkdeps: shared dependencies aligned across: $(echo $mods)"
exit $fail
