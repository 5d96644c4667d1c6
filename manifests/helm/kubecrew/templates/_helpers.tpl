{{/*
The fleet's five personas in order: slug → persona name and what it does.
The names are fixed (docs/ARCHITECTURE.md): agents find each other at
agent-{slug}.{namespace}.svc:8000, and the RBAC and admission policy name them.
*/}}
{{- define "kubecrew.personas" -}}
platform-sre: {persona: noor, about: "Noor detects: sweeps, alert triage, delegates one remediable finding. Read-only."}
k8s-engineer: {persona: sol, about: "Sol acts: rollout restart and memory-bump PRs. The only agent with a cluster write (RBAC: patch deployments)."}
code-reviewer: {persona: vera, about: "Vera reviews agent PRs; merges only trivial diffs."}
cicd-engineer: {persona: dax, about: "Dax advises on CI/CD and the deploy path. Off by default: scale to 1 to use."}
backend-architect: {persona: ada, about: "Ada advises on backend and API design. Off by default: scale to 1 to use."}
{{- end -}}

{{/* The fleet order of the slugs (Helm ranges over maps sorted by key). */}}
{{- define "kubecrew.slugs" -}}
[platform-sre, k8s-engineer, code-reviewer, cicd-engineer, backend-architect]
{{- end -}}

{{/* The enabled personas' slugs, in fleet order, as a YAML list. */}}
{{- define "kubecrew.enabledSlugs" -}}
{{- $out := list -}}
{{- range (include "kubecrew.slugs" . | fromYamlArray) -}}
{{- $p := index $.Values.agents.personas . -}}
{{- if $p.enabled -}}{{- $out = append $out . -}}{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
Labels on every object. part-of=kubecrew matters: Sol refuses to act on
workloads carrying it, and the admission policy refuses him too.
*/}}
{{- define "kubecrew.labels" -}}
app.kubernetes.io/part-of: kubecrew
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kubecrew.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/*
One env entry from a Secret key. Args: name (the variable), ref
({secretName, key}), root, required (bool). Keys are named like the variable
unless ref.key says otherwise.
*/}}
{{- define "kubecrew.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef: {name: {{ .ref.secretName | default .root.Values.secretName }}, key: {{ .ref.key | default .name }}, optional: {{ not .required }}}
{{- end -}}

{{/* The pod security context every pod runs with (PodSecurity restricted). */}}
{{- define "kubecrew.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "kubecrew.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: {drop: [ALL]}
{{- end -}}

{{/*
Probes. A pod with limits.cpu 100m needed 44 s to import its code, liveness
found nothing listening and killed it 65 times. So: startupProbe first (up to
2 s × 30 = 60 s to boot; ~100 ms measured), and no CPU limit.
*/}}
{{- define "kubecrew.probes" -}}
startupProbe:
  httpGet: {path: /health, port: http}
  periodSeconds: 2
  failureThreshold: 30
  timeoutSeconds: 2
livenessProbe:
  httpGet: {path: /health, port: http}
  periodSeconds: 10
  failureThreshold: 3
  timeoutSeconds: 3
readinessProbe:
  httpGet: {path: /ready, port: http}
  periodSeconds: 5
  failureThreshold: 2
  timeoutSeconds: {{ .readinessTimeout }}
{{- end -}}

{{- define "kubecrew.routes" -}}
{{- if .Values.core.routes -}}
{{ .Values.core.routes }}
{{- else -}}
{{ .Files.Get "files/routes.yaml" }}
{{- end -}}
{{- end -}}
