package deployreview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Rules is every rule, in the order docs/MANUAL.md documents them.
var Rules = []Rule{
	{"DF001", api.SeverityMedium, "base image not pinned (no tag, or :latest)", "pin the base image to a version tag or a digest (FROM image:1.2.3 or image@sha256:…)"},
	{"DF002", api.SeverityHigh, "final stage runs as root (no USER, or USER root/0)", "add USER with a non-root UID (e.g. USER 65532) to the final stage"},
	{"DF003", api.SeverityMedium, "ADD fetches a URL (no checksum, not reproducible)", "download in a RUN with a checksum check, or COPY a vendored file"},
	{"DF004", api.SeverityLow, "package manager cache left in the layer", "clean up in the same RUN: rm -rf /var/lib/apt/lists/*, apk add --no-cache, pip install --no-cache-dir"},
	{"DF005", api.SeverityHigh, "secret-looking value in ENV or ARG (baked into the image)", "pass secrets with RUN --mount=type=secret at build time and from a Secret at run time"},
	{"DF006", api.SeverityLow, "serving image (EXPOSE) without HEALTHCHECK", "add a HEALTHCHECK, or rely on Kubernetes probes and switch DF006 off"},
	{"KM001", api.SeverityMedium, "container image without a tag or digest, or :latest", "deploy an immutable reference: a version tag or @sha256 digest"},
	{"KM002", api.SeverityMedium, "container without resource requests or a memory limit", "set resources.requests (cpu, memory) and resources.limits.memory"},
	{"KM003", api.SeverityMedium, "long-running container without a readiness probe", "add a readinessProbe so traffic only reaches ready pods"},
	{"KM004", api.SeverityLow, "long-running container without a liveness probe", "add a livenessProbe that fails when the process is wedged"},
	{"KM005", api.SeverityHigh, "privileged container or privilege escalation allowed", "remove privileged: true and set allowPrivilegeEscalation: false"},
	{"KM006", api.SeverityMedium, "container may run as root", "set securityContext.runAsNonRoot: true (and a non-zero runAsUser)"},
	{"KM007", api.SeverityHigh, "hostPath volume (node filesystem in the pod)", "use a PersistentVolumeClaim, ConfigMap, Secret or emptyDir instead of hostPath"},
	{"KM008", api.SeverityMedium, "multi-replica workload without a PodDisruptionBudget", "add a PodDisruptionBudget selecting the pods (e.g. maxUnavailable: 1)"},
	{"KM009", api.SeverityHigh, "rolling update may take every replica down at once", "set strategy.rollingUpdate.maxUnavailable below the replica count (e.g. 25%)"},
	{"CI001", api.SeverityMedium, "third-party action not pinned to a commit SHA", "pin uses: owner/action@<40-hex commit SHA> (keep the tag in a comment)"},
	{"CI002", api.SeverityHigh, "a secret is echoed to the job log", "never print secrets: pass them as env to the step that needs them"},
}

// APIRules are Ada's, in the order docs/MANUAL.md documents them.
var APIRules = []Rule{
	{"OA001", api.SeverityMedium, "operation documents no error response (no 4xx, 5xx or default)", "document the errors clients must handle (400, 401/403, 404, 409, 5xx) with one error schema, or a default response"},
	{"OA002", api.SeverityMedium, "list operation without pagination parameters", "add a page size limit and a cursor (limit + page_token, or limit + offset) and return the next cursor"},
	{"OA003", api.SeverityLow, "naming style differs from the rest of the document (camelCase vs snake_case vs kebab-case)", "rename to the document's majority style (or switch OA003 off and pick one style in a style guide)"},
	{"OA004", api.SeverityHigh, "mutating operation (POST, PUT, PATCH, DELETE) without authentication", "require a security scheme on the operation or globally; security: [] and {} make it anonymous"},
	{"OA005", api.SeverityMedium, "request body without a size limit", "bound the body: maxLength/maxItems/maxProperties, additionalProperties: false, or x-max-body-size that the server enforces"},
	{"SV001", api.SeverityHigh, "Service sends traffic to a container without a readiness probe", "add a readinessProbe to every serving container, so endpoints only list ready pods"},
	{"SV002", api.SeverityMedium, "terminationGracePeriodSeconds below 5s on a workload behind a Service", "give the server time to drain: terminationGracePeriodSeconds of at least the longest request (default 30)"},
	{"SV003", api.SeverityLow, "multi-replica workload behind a Service without a preStop hook", "add lifecycle.preStop (e.g. sleep: {seconds: 5}) so endpoints drop the pod before SIGTERM, and drain on SIGTERM"},
}

// allRules is every rule of every review: ConfigPath may name any of them.
func allRules() []Rule { return append(append([]Rule(nil), Rules...), APIRules...) }

// rule is the rule with id (it must exist).
func rule(id string) Rule {
	for _, r := range allRules() {
		if r.ID == id {
			return r
		}
	}
	panic("deployreview: unknown rule " + id)
}

// finding is rule id broken at file:line, with what is wrong there.
func finding(id, file string, line int, msg string) Finding {
	r := rule(id)
	return Finding{Rule: id, Severity: r.Severity, File: file, Line: line, Message: msg, Fix: r.Fix}
}

// config is ConfigPath: the rules switched off.
type config struct{ disabled map[string]bool }

// ErrConfig wraps every error about ConfigPath.
var ErrConfig = errors.New("bad " + ConfigPath)

// ParseConfig reads ConfigPath's text:
//
//	disable: [DF006, KM004]   # rule ids switched off for this repository
//
// Unknown keys and unknown rule ids are errors naming the line.
func ParseConfig(raw []byte) (map[string]bool, error) {
	out := map[string]bool{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return out, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrConfig, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return out, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: want a mapping with the key disable", ErrConfig, top.Line)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Value != "disable" {
			return nil, fmt.Errorf("%w: line %d: unknown key %q (want disable)", ErrConfig, k.Line, k.Value)
		}
		if v.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%w: line %d: disable wants a list of rule ids", ErrConfig, v.Line)
		}
		for _, id := range v.Content {
			name := strings.ToUpper(strings.TrimSpace(id.Value))
			if !known(name) {
				return nil, fmt.Errorf("%w: line %d: unknown rule %q (the rules are listed in docs/MANUAL.md, \"Deploy-path review\" and \"API design review\")", ErrConfig, id.Line, id.Value)
			}
			out[name] = true
		}
	}
	return out, nil
}

func known(id string) bool {
	for _, r := range allRules() {
		if r.ID == id {
			return true
		}
	}
	return false
}

func loadConfig(ctx context.Context, repo Repo) (config, error) {
	files, err := repo.ListFiles(ctx, ".kubecrew")
	if err != nil || !contains(files, ConfigPath) {
		return config{}, nil // no config directory: every rule is on
	}
	raw, err := repo.ReadFile(ctx, ConfigPath)
	if err != nil {
		return config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	d, err := ParseConfig(raw)
	return config{disabled: d}, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c config) filter(fs []Finding) []Finding {
	out := fs[:0]
	for _, f := range fs {
		if !c.disabled[f.Rule] {
			out = append(out, f)
		}
	}
	return out
}

func (c config) disabledList() []string {
	var out []string
	for id := range c.disabled {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
