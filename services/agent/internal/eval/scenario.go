// Package eval grades the fleet end to end: each scenario (a YAML file
// under eval/scenarios, see docs/MANUAL.md section "Evaluating the fleet")
// sets up workloads on the sandbox cluster of `make run`, starts the core
// and the five agents afresh, fires one trigger (an Alertmanager alert to
// the core, a pulse tick, a POST /run, an A2A ask) and checks the outcome
// by machine. Safety is judged from outside the fleet only: the API
// server's audit log, the local forge's own record of pull requests,
// reviews and merges, a chat receiver, and every body the model server
// received.
package eval

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Modes the suite runs in.
const (
	ModeDeterministic = "deterministic" // AGENT_MODEL=none: the playbooks
	ModeCompetent     = "competent"     // the scripted sensible model, through the model path
	ModeReckless      = "reckless"      // the scripted reckless model: only safety is graded, and that it tried
	ModeModel         = "model"         // a real OpenAI-compatible endpoint (LLM_BASE_URL)
)

// Scenario is one eval case, read from one YAML file.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// KnownFailure maps a mode (or "all") to the reason the scenario fails
	// today (the open work it needs). A known failure that passes fails
	// the run, so the list stays true.
	KnownFailure map[string]string `yaml:"known_failure"`
	// Modes restricts the modes the scenario runs in (default: all).
	Modes   []string `yaml:"modes"`
	Timeout Duration `yaml:"timeout"` // whole scenario, trigger to quiet (default 2m)
	Budget  Duration `yaml:"budget"`  // each agent run, start to finish (default 90s)
	Setup   Setup    `yaml:"setup"`
	Trigger Trigger  `yaml:"trigger"`
	Expect  Expect   `yaml:"expect"`

	File string `yaml:"-"`
}

// Setup is what the scenario's namespace holds before the trigger.
type Setup struct {
	// Fixtures are Deployments of hack/fixtures/broken-workloads.yaml by
	// name, with the kwok stage label that plays their failure.
	Fixtures []string `yaml:"fixtures"`
	// Manifests are more objects (multi-document YAML) created in the
	// namespace; ${NAMESPACE}, ${CANARY} and ${NOW} are substituted.
	// Deployments among them join the GitOps repository too.
	Manifests string `yaml:"manifests"`
	// GitOps: the workloads' manifests are in the GitOps repository
	// (default true); false leaves the repository without them.
	GitOps *bool `yaml:"gitops"`
	// GitOpsFiles are more files of the GitOps repository (path →
	// content): Dockerfiles, CI workflows, other manifests to review.
	GitOpsFiles map[string]string `yaml:"gitops_files"`
	// Wait lists workload → reason cluster_problems must report before the
	// trigger fires ("" = reported healthy).
	Wait map[string]string `yaml:"wait"`
	// AfterWait are objects (multi-document YAML, substituted like
	// Manifests) server-side applied once Wait holds and every pod of the
	// namespace has been running for a whole second: a change made while
	// the workload already fails (a ConfigMap written after its pods
	// started).
	AfterWait string `yaml:"after_wait"`
	// Env is added to every agent's environment (e.g. MAX_SOCIAL_DEPTH).
	Env map[string]string `yaml:"env"`
	// PR is a pull request on the forge before the trigger, made by
	// replacing text in the workloads' manifest.
	PR *SetupPR `yaml:"pr"`
	// ModelFailsAfter: the scripted model answers 503 from its Nth chat
	// call on (0 = never): the model going down mid-investigation.
	ModelFailsAfter int `yaml:"model_fails_after"`
}

// SetupPR opens a PR on the GitOps repository: the manifest with each
// Replace applied (old → new, every occurrence).
type SetupPR struct {
	Title   string            `yaml:"title"`
	Body    string            `yaml:"body"`
	Author  string            `yaml:"author"` // default k8s-engineer
	Replace map[string]string `yaml:"replace"`
}

// Trigger is exactly one of its fields.
type Trigger struct {
	Alert *AlertTrigger `yaml:"alert"`
	Run   *RunTrigger   `yaml:"run"`
	Pulse *PulseTrigger `yaml:"pulse"`
	Ask   *AskTrigger   `yaml:"ask"`
}

// AlertTrigger is an Alertmanager webhook (version 4) to the core.
type AlertTrigger struct {
	Name        string            `yaml:"alertname"`
	Workload    string            `yaml:"workload"`
	Container   string            `yaml:"container"` // default app
	Severity    string            `yaml:"severity"`  // default critical
	Status      string            `yaml:"status"`    // firing (default) | resolved
	Repeat      int               `yaml:"repeat"`    // times the same alert is posted (default 1)
	Annotations map[string]string `yaml:"annotations"`
}

// RunTrigger is a POST /run to one agent.
type RunTrigger struct {
	Agent        string            `yaml:"agent"` // persona: noor, sol, …
	Task         string            `yaml:"task"`
	WorkflowType string            `yaml:"workflow_type"`
	Context      map[string]string `yaml:"context"`
	Caller       string            `yaml:"caller"`
	SocialDepth  int               `yaml:"social_depth"`
}

// PulseTrigger is a POST /pulse (one pulse tick) to one agent.
type PulseTrigger struct {
	Agent string `yaml:"agent"`
}

// AskTrigger is an A2A message/send to one agent.
type AskTrigger struct {
	Agent string `yaml:"agent"`
	Text  string `yaml:"text"`
}

// Expect is what must hold after the trigger; every field is optional.
// Safety is always judged, whatever Expect says.
type Expect struct {
	// Decisions are the core's decisions on the posted alerts, in order.
	Decisions []string `yaml:"decisions"`
	// Investigations is how many investigations the core recorded.
	Investigations *int `yaml:"investigations"`
	// Findings must each be reported by some run (owner and reason).
	Findings []FindingExpect `yaml:"findings"`
	// NoFindingsFor are workloads no run may report.
	NoFindingsFor []string `yaml:"no_findings_for"`
	// NoFindings: no run reports anything.
	NoFindings bool `yaml:"no_findings"`
	// DelegatedTo: the agent that received a delegation ("none": nobody).
	DelegatedTo string `yaml:"delegated_to"`
	// Acted are personas that must have run; Idle those that must not.
	Acted []string `yaml:"acted"`
	Idle  []string `yaml:"idle"`
	// PR: the pull requests on the forge.
	PR *PRExpect `yaml:"pr"`
	// Review: the code reviewer's last verdict on the PR.
	Review string `yaml:"review"`
	// Restarted: Deployments rollout-restarted (from the audit log); any
	// other restart fails the scenario.
	Restarted []string `yaml:"restarted"`
	// NeverRestarted: Deployments that must not be restarted in any mode
	// (what an injected instruction asks for); a safety expectation.
	NeverRestarted []string `yaml:"never_restarted"`
	// Answer: substrings of the trigger run's answer (case-insensitive).
	Answer []string `yaml:"answer_contains"`
	// Status of the trigger run (e.g. completed).
	Status string `yaml:"status"`
	// Refused: the trigger run must record a gate stopping an attempt.
	Refused bool `yaml:"refused"`
	// Fallback: some run fell back to its playbook (the model went down).
	Fallback bool `yaml:"fallback"`
}

// FindingExpect names a finding by owner and reason.
type FindingExpect struct {
	Kind   string `yaml:"kind"` // default Deployment
	Name   string `yaml:"name"`
	Reason string `yaml:"reason"`
}

// PRExpect is the forge's pull requests.
type PRExpect struct {
	Count int    `yaml:"count"`
	Plus  int    `yaml:"plus"`
	Minus int    `yaml:"minus"`
	State string `yaml:"state"` // merged | open | closed
}

// Duration is a time.Duration written as "90s".
type Duration time.Duration

// UnmarshalYAML parses "90s", "2m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 90s, 2m): %w", n.Line, n.Value, err)
	}
	*d = Duration(v)
	return nil
}

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	personaSet = map[string]bool{"noor": true, "sol": true, "vera": true, "dax": true, "ada": true}
	modeSet    = map[string]bool{ModeDeterministic: true, ModeCompetent: true, ModeReckless: true, ModeModel: true, "all": true}
)

// Load reads every *.yaml file of dir, sorted by name. A bad file is an
// error naming the file and line.
func Load(dir string) ([]Scenario, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no scenarios (*.yaml) in %s", dir)
	}
	sort.Strings(paths)
	var out []Scenario
	seen := map[string]string{}
	for _, p := range paths {
		s, err := LoadFile(p)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[s.Name]; ok {
			return nil, fmt.Errorf("%s: scenario name %q is taken by %s", p, s.Name, prev)
		}
		seen[s.Name] = p
		out = append(out, s)
	}
	return out, nil
}

// LoadFile reads and validates one scenario.
func LoadFile(path string) (Scenario, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, err
	}
	return Parse(path, raw)
}

// Parse decodes one scenario strictly (unknown fields are errors) and
// validates it; path names it in errors.
func Parse(path string, raw []byte) (Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	s.File = path
	if err := s.validate(); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (s *Scenario) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !nameRE.MatchString(s.Name) || len(s.Name) > 40 {
		bad("name %q: want lower-case letters, digits and '-', at most 40", s.Name)
	}
	for _, m := range s.Modes {
		if !modeSet[m] || m == "all" {
			bad("modes: unknown mode %q", m)
		}
	}
	for m, why := range s.KnownFailure {
		if !modeSet[m] {
			bad("known_failure: unknown mode %q", m)
		}
		if strings.TrimSpace(why) == "" {
			bad("known_failure[%s]: the reason is required", m)
		}
	}
	n := 0
	t := s.Trigger
	if t.Alert != nil {
		n++
		if t.Alert.Name == "" || t.Alert.Workload == "" {
			bad("trigger.alert: alertname and workload are required")
		}
		if st := t.Alert.Status; st != "" && st != "firing" && st != "resolved" {
			bad("trigger.alert.status %q: want firing or resolved", st)
		}
	}
	if t.Run != nil {
		n++
		if !personaSet[t.Run.Agent] || strings.TrimSpace(t.Run.Task) == "" {
			bad("trigger.run: agent (noor|sol|vera|dax|ada) and task are required")
		}
	}
	if t.Pulse != nil {
		n++
		if !personaSet[t.Pulse.Agent] {
			bad("trigger.pulse.agent %q: want noor|sol|vera|dax|ada", t.Pulse.Agent)
		}
	}
	if t.Ask != nil {
		n++
		if !personaSet[t.Ask.Agent] || strings.TrimSpace(t.Ask.Text) == "" {
			bad("trigger.ask: agent and text are required")
		}
	}
	if n != 1 {
		bad("trigger: want exactly one of alert, run, pulse, ask (got %d)", n)
	}
	for _, p := range append(append([]string{}, s.Expect.Acted...), s.Expect.Idle...) {
		if !personaSet[p] {
			bad("expect.acted/idle: unknown persona %q", p)
		}
	}
	if v := s.Expect.Review; v != "" && v != "approve" && v != "request_changes" && v != "comment" && v != "none" {
		bad("expect.review %q: want approve, request_changes, comment or none", v)
	}
	if p := s.Setup.PR; p != nil && (len(p.Replace) == 0 || !s.Setup.GitOpsOn()) {
		bad("setup.pr: needs replace (old: new) and the workloads in the GitOps repository")
	}
	if s.Timeout == 0 {
		s.Timeout = Duration(2 * time.Minute)
	}
	if s.Budget == 0 {
		s.Budget = Duration(90 * time.Second)
	}
	return errors.Join(errs...)
}

// RunsIn reports whether the scenario runs in mode.
func (s Scenario) RunsIn(mode string) bool {
	if len(s.Modes) == 0 {
		return true
	}
	for _, m := range s.Modes {
		if m == mode {
			return true
		}
	}
	return false
}

// Known is the known-failure reason in mode ("" = expected to pass).
// "all" does not reach the reckless mode: it grades safety alone, which
// no known failure may excuse unless named for it.
func (s Scenario) Known(mode string) string {
	if r := s.KnownFailure[mode]; r != "" || mode == ModeReckless {
		return r
	}
	return s.KnownFailure["all"]
}

// GitOpsOn reports whether the workloads go into the GitOps repository.
func (s Setup) GitOpsOn() bool { return s.GitOps == nil || *s.GitOps }
