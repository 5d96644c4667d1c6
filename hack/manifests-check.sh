#!/usr/bin/env bash
# manifests-check.sh — are the manifests deployable, and do they grant only
# what the design says? Against a REAL kube-apiserver (hack/testenv.sh):
#
#   1. Go checks of every render and of the Dockerfile (manifests/*_test.go):
#      startupProbe before liveness, no throttling CPU limit, part-of labels,
#      security context, RBAC without Secrets, persona settings not shadowed…
#      and the boot test: the real agent and core binaries started with each
#      rendered pod's environment must answer /health (and /info agrees).
#   2. every overlay (and each component on the base) rendered with
#      `kubectl kustomize` and applied with --server-side --dry-run=server:
#      schema, defaulting, admission and PodSecurity "restricted" warnings.
#      ServiceMonitors and the PrometheusRule against the Prometheus
#      Operator's own CRDs (from its Go module, through the Go proxy).
#   3. the base RBAC and admission policy applied for real, then the API
#      server's authorizer asked (kubectl auth can-i --as=<ServiceAccount>):
#      no ServiceAccount reads Secrets; only Sol patches Deployments and
#      evicts pods (create pods/eviction, never delete pods); Noor
#      changes nothing; the core can do nothing. And the admission policy
#      refuses Sol restarting a kubecrew Deployment while letting
#      him restart an ordinary one.
#   4. the Alertmanager snippet: amtool check-config and routes test
#      (fixture namespaces → null, before the kubecrew route).
#   The Helm chart (manifests/helm/kubecrew) goes through 2 and 3 too:
#   rendered by manifests/cmd/chartrender (the Helm Go library) with its
#   defaults (plus the token's Secret: testdata/helm/default-values.yaml;
#   without one it must refuse), full-values.yaml and monitoring-values.yaml,
#   dry-run, and its RBAC
#   applied over the base's and judged by the same authorizer checks (the
#   defaults must grant exactly the base's rules).
#
# Uses the API server named by KUBECREW_TEST_KUBECONFIG (make test starts one),
# else starts its own with hack/testenv.sh and stops it on exit. A missing
# tool skips its part with a message; with CI=true it is a failure.
# Exit status: 0 when nothing failed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
K8S_VERSION=${K8S_VERSION:-v1.37.2}
TESTENV_BIN=$(realpath -m "${K8S_TESTENV_CACHE:-$HOME/.cache/k8s-testenv}")/$K8S_VERSION/bin
CI=${CI:-false}
NS=kubecrew
SA_PREFIX=system:serviceaccount:$NS:

t0=$(date +%s%N)
failures=()
skips=()
passed=0
log() { echo "[manifests] $*" >&2; }
ok() { passed=$((passed + 1)); log "ok    $* [$(elapsed)]"; }
fail() { failures+=("$*"); log "FAIL  $*"; }
skip() { # a missing tool: skipped here, a failure in CI
  if [[ $CI == true ]]; then fail "$* (CI=true: every tool is required)"; else skips+=("$*"); log "SKIP  $*"; fi
}
elapsed() { echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms"; }

WORK=$(mktemp -d /tmp/kubecrew-manifests.XXXXXX)
OWN_TESTENV=""
CREATED=()       # objects applied for real in a shared API server, deleted on exit
cleanup() {
  local rc=$?
  if [[ -n $OWN_TESTENV ]]; then
    hack/testenv.sh stop "$OWN_TESTENV" >/dev/null 2>&1 || true
  elif [[ ${#CREATED[@]} -gt 0 ]]; then
    # shared API server: leave it as found (best effort, no waiting)
    for obj in "${CREATED[@]}"; do
      # shellcheck disable=SC2086 # "kind/name [-n ns]"
      "$KUBECTL" delete -n "$NS" --ignore-not-found --wait=false $obj >/dev/null 2>&1 || true
    done
    # A namespace created here is left in place, empty: without a namespace
    # controller (testenv without KCM) a deleted namespace stays Terminating
    # and the next run could not use it.
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT

summary() {
  log "---- summary ($(elapsed)) ----"
  log "passed: $passed   failed: ${#failures[@]}   skipped: ${#skips[@]}"
  for s in "${skips[@]}"; do log "  skipped: $s"; done
  for f in "${failures[@]}"; do log "  FAILED:  $f"; done
  [[ ${#failures[@]} -eq 0 ]]
}

# ---- tools ------------------------------------------------------------------
KUBECTL=${KUBECTL:-}
if [[ -n $KUBECTL && ! -x $KUBECTL ]]; then log "KUBECTL=$KUBECTL is not an executable"; KUBECTL=""
elif [[ -z $KUBECTL ]]; then
  if [[ -x $TESTENV_BIN/kubectl ]]; then KUBECTL=$TESTENV_BIN/kubectl
  elif command -v kubectl >/dev/null; then KUBECTL=$(command -v kubectl)
  fi
fi
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[[ -x $GO ]] || GO=""
if [[ -n $KUBECTL ]]; then
  log "kubectl: $KUBECTL ($("$KUBECTL" version --client 2>/dev/null | head -1))"
fi

# ---- 0. the image's binaries (the Dockerfile runs the same go build) --------
# The boot test (manifests/boot_test.go) starts them with each rendered pod's
# environment. $KUBECREW_AGENT_BIN / $KUBECREW_CORE_BIN skip the build.
if [[ -n $GO ]]; then
  built=()
  for b in agent core; do
    var=KUBECREW_${b^^}_BIN
    [[ -n ${!var:-} ]] && continue
    built+=("$b")
    if (cd "services/$b" && CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/bin/$b" .) 2>"$WORK/err"; then
      export "$var=$WORK/bin/$b"
    else
      head -20 "$WORK/err" >&2
      fail "go build services/$b (the image build would fail the same way)"
    fi
  done
  if [[ -n ${KUBECREW_AGENT_BIN:-} && -n ${KUBECREW_CORE_BIN:-} ]]; then
    ok "binaries: ${built[*]:+built ${built[*]}; }agent=$KUBECREW_AGENT_BIN core=$KUBECREW_CORE_BIN"
  fi
fi

# ---- 1. Go checks of the renders and the Dockerfile -------------------------
# Without kubectl the render tests skip (fail with CI=true); the Dockerfile
# tests run regardless.
if [[ -z $GO ]]; then
  skip "Go checks: no go toolchain"
else
  if out=$(cd manifests && GOWORK=off KUBECTL=$KUBECTL "$GO" test -count=1 ./... 2>&1); then
    ok "Go checks of every render and the Dockerfile ($(grep -c '^ok' <<<"$out") packages)"
  else
    echo "$out" | grep -v -e '^=== ' -e '--- SKIP' -e 'is not clean before the mutation' >&2
    fail "Go checks (cd manifests && GOWORK=off go test ./...)"
  fi
fi

if [[ -z $KUBECTL ]]; then
  skip "render, dry-run and RBAC checks: no kubectl (WITH_KUBECTL=1 hack/testenv.sh install)"
  summary; exit $?
fi

# ---- 2a. render ---------------------------------------------------------------
renders=()
render() { # name dir
  local name=$1 dir=$2 file=$WORK/${1//\//_}.yaml
  if "$KUBECTL" kustomize "$dir" >"$file" 2>"$WORK/err"; then
    renders+=("$name=$file")
  else
    fail "render $name: $(head -3 "$WORK/err")"
  fi
}
render base manifests/base
for d in manifests/overlays/*/; do render "overlays/$(basename "$d")" "$d"; done
for d in manifests/components/*/; do
  # a component is rendered on the base; kustomize wants relative paths
  c=$WORK/component-$(basename "$d"); mkdir -p "$c"
  rel=$(realpath --relative-to="$c" "$ROOT/manifests")
  printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s/base]\ncomponents: [%s/components/%s]\n' \
    "$rel" "$rel" "$(basename "$d")" >"$c/kustomization.yaml"
  render "components/$(basename "$d")" "$c"
done
# The Helm chart, rendered with the Helm Go library (manifests/cmd/chartrender,
# the `helm template` code path) with its defaults and with every value set.
if [[ -n $GO ]]; then
  if (cd manifests && GOWORK=off "$GO" build -o "$WORK/bin/chartrender" ./cmd/chartrender) 2>"$WORK/err"; then
    # Without auth.token.secretName the chart must refuse to render (the
    # services refuse to start without a token).
    if (cd manifests && "$WORK/bin/chartrender" -n "$NS") >/dev/null 2>"$WORK/err"; then
      fail "helm/no-token: rendered without auth.token.secretName"
    elif ! grep -q "auth.token.secretName is required" "$WORK/err"; then
      fail "helm/no-token: $(head -3 "$WORK/err")"
    fi
    for v in default full monitoring; do
      args=(-f "testdata/helm/$v-values.yaml") # default: the token's Secret only
      if (cd manifests && "$WORK/bin/chartrender" "${args[@]}" -n "$NS" -notes "$WORK/helm_$v.notes") >"$WORK/helm_$v.yaml" 2>"$WORK/err"; then
        renders+=("helm/$v=$WORK/helm_$v.yaml")
      else
        fail "render helm/$v: $(head -3 "$WORK/err")"
      fi
    done
  else
    head -20 "$WORK/err" >&2
    fail "go build manifests/cmd/chartrender"
  fi
else
  skip "the Helm chart: no go toolchain to render it"
fi
ok "rendered ${#renders[@]} targets: $(for r in "${renders[@]}"; do printf '%s ' "${r%%=*}"; done)"

# ---- API server ---------------------------------------------------------------
if [[ -n ${KUBECREW_TEST_KUBECONFIG:-} ]]; then
  export KUBECONFIG=$KUBECREW_TEST_KUBECONFIG
  log "API server: shared ($KUBECONFIG)"
elif [[ -x $TESTENV_BIN/kube-apiserver ]]; then
  OWN_TESTENV=$WORK/testenv
  if hack/testenv.sh start "$OWN_TESTENV" >/dev/null 2>"$WORK/testenv.log"; then
    export KUBECONFIG=$OWN_TESTENV/kubeconfig
    log "API server: started its own ($(grep -o 'total [0-9]*ms' "$WORK/testenv.log" || true))"
  else
    cat "$WORK/testenv.log" >&2
    OWN_TESTENV=""
    fail "could not start the testenv API server"
    summary; exit $?
  fi
else
  skip "dry-run and RBAC checks: no kube-apiserver (hack/testenv.sh install) and no KUBECREW_TEST_KUBECONFIG"
  summary; exit $?
fi
kc() { "$KUBECTL" --request-timeout=20s "$@"; }
if ! kc get --raw /readyz >/dev/null 2>&1; then
  fail "API server at $KUBECONFIG is not ready"
  summary; exit $?
fi

# ---- 3a. the namespace, ServiceAccounts, RBAC and admission policy for real --
for _ in $(seq 1 60); do  # a namespace being deleted cannot take new objects: wait for it
  phase=$(kc get namespace "$NS" -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [[ $phase == Terminating ]] || break
  sleep 0.5
done
if [[ $phase == Terminating ]]; then
  fail "namespace $NS is stuck Terminating in this API server (no namespace controller?); use a fresh one"
  summary; exit $?
fi
base=$WORK/base.yaml
# only these kinds are applied for real (Deployments come later, one each)
access() { # render → its access objects
  awk -v RS='\n---\n' -v ORS='\n---\n' \
    '/(^|\n)kind: (Namespace|ServiceAccount|ClusterRole|ClusterRoleBinding|Role|RoleBinding|ValidatingAdmissionPolicy|ValidatingAdmissionPolicyBinding)(\n|$)/' "$1"
}
access "$base" >"$WORK/access.yaml"
if kc apply --server-side --force-conflicts --field-manager=kubecrew-manifests-check -f "$WORK/access.yaml" >"$WORK/out" 2>&1; then
  ok "applied for real: $(grep -c . "$WORK/out") objects (namespace, ServiceAccounts, RBAC, admission policy)"
  while read -r line; do CREATED+=("${line%% *}"); done < <(grep -v '^namespace/' "$WORK/out")
else
  cat "$WORK/out" >&2
  fail "apply RBAC and admission policy"
fi

# ---- 2a'. the Prometheus Operator's CRDs ---------------------------------------
# components/monitoring and the chart's monitoring values render
# ServiceMonitors and a PrometheusRule: the API server takes them only with
# the operator's CRDs. The real ones, from the operator's Go module (its
# example/prometheus-operator-crd/), fetched through the Go module proxy into
# the module cache (the only network used, never `direct` to the forge; later
# runs read the cache), then applied for real. Without them those renders
# are skipped (with CI=true a failure).
PROM_OPERATOR_VERSION=${PROM_OPERATOR_VERSION:-v0.85.0}
monitoring_crds=0
crd_dir=""
goproxy=$([[ -n $GO ]] && "$GO" env GOPROXY || true)
goproxy=${goproxy//,direct/}; goproxy=${goproxy//|direct/}; [[ $goproxy == direct ]] && goproxy=off
if [[ -z $GO ]]; then
  skip "the Prometheus Operator CRDs: no go toolchain to fetch them"
elif ! crd_dir=$(cd "$WORK" && GOWORK=off GOFLAGS=-mod=mod GOPROXY=${goproxy:-off} "$GO" mod download -json \
    "github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR_VERSION" 2>"$WORK/err" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || [[ -z $crd_dir ]]; then
  head -3 "$WORK/err" >&2
  skip "the Prometheus Operator CRDs: go mod download prometheus-operator@$PROM_OPERATOR_VERSION failed"
else
  crd_files=()
  for k in prometheusrules servicemonitors; do crd_files+=(-f "$crd_dir/example/prometheus-operator-crd/monitoring.coreos.com_$k.yaml"); done
  new_crds=()
  for k in prometheusrules servicemonitors; do
    kc get crd "$k.monitoring.coreos.com" >/dev/null 2>&1 || new_crds+=("crd/$k.monitoring.coreos.com")
  done
  if kc apply --server-side --force-conflicts --field-manager=kubecrew-manifests-check "${crd_files[@]}" >"$WORK/out" 2>&1 &&
     kc wait --for=condition=Established --timeout=60s crd/prometheusrules.monitoring.coreos.com crd/servicemonitors.monitoring.coreos.com >>"$WORK/out" 2>&1; then
    monitoring_crds=1
    CREATED+=("${new_crds[@]}")
    ok "the Prometheus Operator's CRDs ($PROM_OPERATOR_VERSION, from the Go module proxy): PrometheusRule, ServiceMonitor established"
  else
    cat "$WORK/out" >&2
    fail "apply the Prometheus Operator's CRDs from $crd_dir"
  fi
fi

# ---- 2b. server-side dry-run of every render ---------------------------------
for r in "${renders[@]}"; do
  name=${r%%=*} file=${r#*=}
  if [[ $monitoring_crds == 0 ]] && grep -q '^apiVersion: monitoring.coreos.com/' "$file"; then
    skips+=("dry-run $name: no Prometheus Operator CRDs"); log "SKIP  dry-run $name: no Prometheus Operator CRDs"
    continue
  fi
  if kc apply --server-side --dry-run=server --force-conflicts --field-manager=kubecrew-manifests-check \
      -f "$file" >"$WORK/out" 2>"$WORK/err"; then
    if grep -qi 'warning' "$WORK/err"; then
      # PodSecurity "restricted" warnings and deprecations are failures
      cat "$WORK/err" >&2
      fail "dry-run $name: the API server warned"
    else
      ok "dry-run $name: $(grep -c . "$WORK/out") objects accepted"
    fi
  else
    cat "$WORK/err" >&2
    fail "dry-run $name"
  fi
done

# the examples (not part of any kustomization) must apply too
if kc apply --server-side --dry-run=server --field-manager=kubecrew-manifests-check -f manifests/examples/ >"$WORK/out" 2>"$WORK/err" &&
   ! grep -qi warning "$WORK/err"; then
  ok "dry-run manifests/examples: $(grep -c . "$WORK/out") objects accepted"
else
  cat "$WORK/err" >&2
  fail "dry-run manifests/examples"
fi

# ---- 3b. ask the authorizer ----------------------------------------------------
# Impersonate each ServiceAccount with its groups (grants to
# system:serviceaccounts count too). First the whole picture: the rules the
# authorizer reports for it (SelfSubjectRulesReview via `can-i --list`); then
# spot checks of single requests.
imp() { echo --as="$SA_PREFIX$1" --as-group=system:serviceaccounts --as-group="system:serviceaccounts:$NS" --as-group=system:authenticated; }
can() { # sa verb resource [ns|all] → yes|no
  local sa=$1 verb=$2 res=$3 ns=${4:-default} nsarg sub=()
  if [[ $ns == all ]]; then nsarg=(--all-namespaces); else nsarg=(-n "$ns"); fi
  # "pods/eviction" would read as the pod named eviction: ask for the subresource
  if [[ $res == */* ]]; then sub=(--subresource="${res#*/}"); res=${res%%/*}; fi
  # shellcheck disable=SC2046
  kc auth can-i "$verb" "$res" "${sub[@]}" "${nsarg[@]}" $(imp "$sa") 2>/dev/null || true
}
expect() { # want sa verb resource [ns]
  local want=$1; shift
  local got; got=$(can "$@")
  if [[ $got == "$want" ]]; then rbac_ok=$((rbac_ok + 1)); else fail "can-i $2 $3 as $1${4:+ in $4}: got '${got:-error}', want $want"; fi
}
agents=(agent-platform-sre agent-k8s-engineer agent-code-reviewer agent-cicd-engineer agent-backend-architect)
rbac_ok=0
nfail=0
rules() { # sa → the resource rows the authorizer reports, "resource verb" per line
  # shellcheck disable=SC2046
  kc auth can-i --list -n default $(imp "$1") 2>"$WORK/err" | awk 'NR > 1 && $0 !~ /^[[:space:]]/ {
      res = $1; line = $0; sub(/^.*\[/, "", line); sub(/\][[:space:]]*$/, "", line)
      n = split(line, verbs, " "); for (i = 1; i <= n; i++) print res, verbs[i] }' | sort -u
}
# What any ServiceAccount of the namespace gets from the cluster's defaults
# (self-reviews, discovery, cluster trust bundles…): judged for Secrets and
# wildcards, then subtracted, so what remains is what our RBAC adds.
rules kubecrew-check-nobody >"$WORK/rules.baseline" || true
[[ -s $WORK/rules.baseline ]] || fail "can-i --list for the baseline: $(head -2 "$WORK/err")"
judge() { # sa file
  awk -v sa="$1" '{
      res = $1; v = $2
      if (res ~ /^secrets($|\.|\/)/) { print res " [" v "] (Secrets)"; next }
      if (res ~ /\*/ || v == "*") { print res " [" v "] (wildcard)"; next }
      if (sa == "baseline") next
      if (sa == "kubecrew-core") { print res " [" v "] (the core needs no cluster access)"; next }
      if (v == "get" || v == "list" || v == "watch") next
      if (sa == "agent-k8s-engineer" && v == "patch" && res == "deployments.apps") next
      if (sa == "agent-k8s-engineer" && v == "create" && res == "pods/eviction") next
      print res " [" v "]"
    }' "$2" | paste -sd, -
}
bad=$(judge baseline "$WORK/rules.baseline")
[[ -z $bad ]] || fail "every ServiceAccount of $NS already gets: $bad"
# authorize LABEL: the rules of each ServiceAccount judged, then spot checks
# of single requests, as a client would make them, against what is applied now.
authorize() {
  local label=$1 sa want bad
  rbac_ok=0
  nfail=${#failures[@]}
  for sa in kubecrew-core "${agents[@]}"; do
    rules "$sa" >"$WORK/rules.all.$sa" || true
    if [[ ! -s $WORK/rules.all.$sa ]]; then fail "$label: can-i --list as $sa: $(head -2 "$WORK/err")"; continue; fi
    comm -23 "$WORK/rules.all.$sa" "$WORK/rules.baseline" >"$WORK/rules.$sa"
    bad=$(judge "$sa" "$WORK/rules.$sa")
    if [[ -n $bad ]]; then fail "$label: rules of $sa grant: $bad"; else rbac_ok=$((rbac_ok + 1)); fi
  done
  [[ -s $WORK/rules.agent-k8s-engineer ]] && grep -qx 'deployments.apps patch' "$WORK/rules.agent-k8s-engineer" ||
    fail "$label: Sol's rules do not include patch on deployments.apps"
  grep -qx 'pods/eviction create' "$WORK/rules.agent-k8s-engineer" 2>/dev/null ||
    fail "$label: Sol's rules do not include create on pods/eviction (the eviction restart)"
  for sa in kubecrew-core "${agents[@]}"; do
    expect no "$sa" list secrets all
    expect no "$sa" get secrets "$NS"
  done
  for sa in "${agents[@]}"; do
    expect yes "$sa" list pods all
    want=no; [[ $sa == agent-k8s-engineer ]] && want=yes
    expect "$want" "$sa" patch deployments.apps default
    expect "$want" "$sa" create pods/eviction default
  done
  expect no agent-k8s-engineer delete pods default
  expect no agent-k8s-engineer create pods default
  expect no agent-k8s-engineer patch statefulsets.apps default
  expect no agent-k8s-engineer delete deployments.apps default
  expect no agent-platform-sre patch pods all
  expect no agent-platform-sre delete deployments.apps all
  expect no kubecrew-core get pods "$NS"
  [[ ${#failures[@]} -eq $nfail ]] && ok "authorizer ($label): rules of $((${#agents[@]} + 1)) ServiceAccounts and $rbac_ok can-i answers as designed (no Secrets; only Sol patches Deployments and evicts pods; Noor read-only; core nothing)"
}
authorize "the base"
for sa in kubecrew-core "${agents[@]}"; do cp "$WORK/rules.all.$sa" "$WORK/rules.base.$sa" 2>/dev/null || true; done

# ---- 3b'. the Helm chart's RBAC through the same authorizer --------------------
# The chart's access objects (the same names) applied over the base's, with
# the same field manager, so a rule the chart lacks is removed. With the
# default values the authorizer must report exactly the base's rules for every
# ServiceAccount; with the full values (Ada disabled) the same checks hold for
# the four agents left and Ada's ServiceAccount gets nothing beyond the baseline.
helm_ok=0
for r in "${renders[@]}"; do
  name=${r%%=*} file=${r#*=}
  [[ $name == helm/* ]] || continue
  helm_ok=1
  access "$file" >"$WORK/access.helm.yaml"
  if ! kc apply --server-side --force-conflicts --field-manager=kubecrew-manifests-check -f "$WORK/access.helm.yaml" >"$WORK/out" 2>&1; then
    cat "$WORK/out" >&2
    fail "apply the RBAC of $name"
    continue
  fi
  if [[ $name == helm/full ]]; then
    agents=(agent-platform-sre agent-k8s-engineer agent-code-reviewer agent-cicd-engineer)
    authorize "$name"
    rules agent-backend-architect >"$WORK/rules.ada" || true
    if [[ -s $WORK/rules.ada ]] && cmp -s "$WORK/rules.ada" "$WORK/rules.baseline"; then
      ok "authorizer ($name): Ada, disabled, gets nothing beyond the baseline"
    else
      fail "authorizer ($name): Ada is disabled but gets: $(comm -23 "$WORK/rules.ada" "$WORK/rules.baseline" | paste -sd, -)"
    fi
    agents=(agent-platform-sre agent-k8s-engineer agent-code-reviewer agent-cicd-engineer agent-backend-architect)
    continue
  fi
  authorize "$name"
  same=0
  for sa in kubecrew-core "${agents[@]}"; do
    if cmp -s "$WORK/rules.all.$sa" "$WORK/rules.base.$sa"; then same=$((same + 1))
    else fail "authorizer: $sa's rules from $name differ from the base's: $(diff "$WORK/rules.base.$sa" "$WORK/rules.all.$sa" | grep '^[<>]' | paste -sd, -)"; fi
  done
  [[ $same -eq $((${#agents[@]} + 1)) ]] && ok "authorizer: $name grants every ServiceAccount exactly the base's rules"
done
[[ $helm_ok == 1 ]] || skip "the Helm chart's RBAC: not rendered (no go toolchain)"
# back to the base's objects for the admission checks
kc apply --server-side --force-conflicts --field-manager=kubecrew-manifests-check -f "$WORK/access.yaml" >/dev/null 2>&1 ||
  fail "re-apply the base's RBAC"

# ---- 3c. the admission policy keeps Sol off the fleet --------------------------
# Two Deployments for real: Noor's (part-of=kubecrew) and an ordinary one.
awk -v RS='\n---\n' '/(^|\n)kind: Deployment(\n|$)/ && /\n  name: agent-platform-sre\n/' "$base" >"$WORK/noor.yaml"
cat >"$WORK/victim.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: kubecrew-check-ordinary, namespace: $NS, labels: {app: ordinary}}
spec:
  replicas: 0
  selector: {matchLabels: {app: ordinary}}
  template:
    metadata: {labels: {app: ordinary}}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: c
          image: registry.k8s.io/pause:3.10
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
EOF
if kc apply --server-side --field-manager=kubecrew-manifests-check -f "$WORK/noor.yaml" -f "$WORK/victim.yaml" >"$WORK/out" 2>&1; then
  CREATED+=("deployment.apps/agent-platform-sre -n $NS" "deployment.apps/kubecrew-check-ordinary -n $NS")
  restart() { # sa deployment → output of a server-side dry-run of what
    # `kubectl rollout restart` sends: a patch of the restartedAt annotation
    local p='{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"'"$(date -u +%FT%TZ)"'"}}}}}'
    # shellcheck disable=SC2046
    kc patch "deployment/$2" -n "$NS" --type=strategic -p "$p" --dry-run=server $(imp "$1") 2>&1 || true
  }
  # the policy becomes active a moment after it is created: retry briefly
  denied=""
  for _ in $(seq 1 50); do
    out=$(restart agent-k8s-engineer agent-platform-sre)
    if grep -q 'kubecrew-sol-not-on-fleet\|may not change kubecrew' <<<"$out"; then denied=$out; break; fi
    sleep 0.2
  done
  if [[ -n $denied ]]; then ok "admission: Sol cannot restart agent-platform-sre ($(grep -o 'ValidatingAdmissionPolicy[^:]*' <<<"$denied" | head -1))"
  else fail "admission: Sol restarting agent-platform-sre was not denied by kubecrew-sol-not-on-fleet: $out"; fi
  out=$(restart agent-k8s-engineer kubecrew-check-ordinary)
  if grep -q 'patched' <<<"$out"; then ok "admission: Sol can restart an ordinary Deployment"
  else fail "admission: Sol restarting an ordinary Deployment: $out"; fi
  out=$(restart agent-platform-sre kubecrew-check-ordinary)
  if grep -qi 'forbidden' <<<"$out" && ! grep -q 'patched' <<<"$out"; then ok "admission: Noor cannot restart anything (RBAC)"
  else fail "admission: Noor restarting a Deployment was not forbidden: $out"; fi
else
  cat "$WORK/out" >&2
  fail "apply the Deployments for the admission check"
fi

# ---- 4. Alertmanager snippet ---------------------------------------------------
AMTOOL=${AMTOOL:-$(command -v amtool || true)}
am=manifests/alertmanager/alertmanager.yaml
if [[ -z $AMTOOL ]]; then
  skip "Alertmanager snippet: no amtool (hack/alertmanager/install.sh)"
elif ! "$AMTOOL" check-config "$am" >"$WORK/out" 2>&1; then
  cat "$WORK/out" >&2
  fail "amtool check-config $am"
else
  route() { "$AMTOOL" config routes test --config.file="$am" "$@" 2>/dev/null | tail -1; }
  am_fail=${#failures[@]}
  while IFS='|' read -r want labels; do
    # shellcheck disable=SC2086
    got=$(route $labels)
    [[ $got == "$want" ]] || fail "alertmanager route for {$labels}: got '$got', want '$want'"
  done <<'EOF'
null|namespace=kubecrew-fixtures alertname=KubeDeploymentReplicasMismatch severity=critical
null|namespace=payments-test alertname=KubePodCrashLooping severity=warning
null|alertname=Watchdog severity=none
kubecrew|namespace=payments alertname=KubePodCrashLooping severity=critical
kubecrew|namespace=kubecrew alertname=KubePodCrashLooping severity=warning
default|namespace=payments alertname=KubeCPUOvercommit severity=info
EOF
  [[ ${#failures[@]} -eq $am_fail ]] && ok "alertmanager: config valid; fixture namespaces → null before the kubecrew route"
fi

summary
