package persona_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/pulse"
)

// The canonical tool names (brief: "the only ones that exist"). The lead's
// registry test checks the same property against the real registry; this
// table keeps the persona files honest without importing the tools.
var (
	builtinTools = []string{
		"load_skill", "report_finding", "memory_read", "memory_write",
		"ask_agent", "notify_agent", "delegate_task",
	}
	toolUniverse = append(slices.Clone(builtinTools),
		"cluster_problems", "k8s_get_resources", "k8s_describe", "k8s_get_events",
		"k8s_get_pod_logs", "k8s_get_yaml", "k8s_api_resources", "k8s_nodes",
		"k8s_rollout",
		"bump_workload_memory", "list_agent_prs", "get_pr", "review_pr", "merge_if_trivial",
		"read_repo_file", "list_repo_files", "search_repo", "review_deploy_path", "review_api_design",
		"post_report",
	)
)

type shipped struct {
	name, slug   string
	tools        string // AGENT_TOOLS exactly
	maxIter      string
	pulseEnabled string
	interval     string
	color        string
	display      string
	skills       []string       // must all be present
	pulse        map[string]int // tasks per cadence
}

var shippedPersonas = []shipped{
	{
		name: "noor", slug: "platform-sre",
		tools:   "cluster_problems,k8s_get_resources,k8s_describe,k8s_get_events,k8s_get_pod_logs,k8s_get_yaml,k8s_api_resources,k8s_nodes,post_report",
		maxIter: "20", pulseEnabled: "true", interval: "45m", color: "0x5865F2", display: "Noor",
		skills: []string{"health-sweep", "delegation-protocol", "report-format"},
		pulse:  map[string]int{"continuous": 1, "daily": 2, "weekly": 1}, // daily: the trend review and the morning digest
	},
	{
		name: "sol", slug: "k8s-engineer",
		tools:   "k8s_get_resources,k8s_describe,k8s_get_events,k8s_get_pod_logs,k8s_rollout,bump_workload_memory",
		maxIter: "15", pulseEnabled: "false", interval: "6h", color: "0xF1C40F", display: "Sol",
		skills: []string{"sre-remediation", "troubleshooting-protocol", "k8s-playbooks", "response-format"},
		pulse:  map[string]int{"weekly": 1},
	},
	{
		name: "vera", slug: "code-reviewer",
		tools:   "list_agent_prs,get_pr,review_pr,merge_if_trivial,read_repo_file",
		maxIter: "15", pulseEnabled: "true", interval: "30m", color: "0x9B59B6", display: "Vera",
		skills: []string{"pr-review-protocol"},
		pulse:  map[string]int{"continuous": 1, "weekly": 1},
	},
	{
		name: "dax", slug: "cicd-engineer",
		tools:   "review_deploy_path,read_repo_file,list_repo_files,search_repo,k8s_get_yaml,k8s_get_events",
		maxIter: "15", pulseEnabled: "false", interval: "6h", color: "0x2ECC71", display: "Dax",
		skills: []string{"image-tag-hygiene", "gitops-deploy-path"},
		pulse:  map[string]int{"weekly": 2},
	},
	{
		name: "ada", slug: "backend-architect",
		tools:   "review_api_design,read_repo_file,list_repo_files,search_repo",
		maxIter: "15", pulseEnabled: "false", interval: "6h", color: "0xE91E63", display: "Ada",
		skills: []string{"api-design-review", "service-boundaries"},
		pulse:  map[string]int{"weekly": 2},
	},
}

func TestShippedPersonasLoad(t *testing.T) {
	t.Parallel()
	if len(shippedPersonas) != len(persona.All) {
		t.Fatalf("test table has %d personas, persona.All %d", len(shippedPersonas), len(persona.All))
	}
	for i, want := range shippedPersonas {
		t.Run(want.name, func(t *testing.T) {
			t.Parallel()
			if persona.All[i].Name != want.name {
				t.Fatalf("persona.All[%d] = %s, want %s", i, persona.All[i].Name, want.name)
			}
			p, err := persona.Load(agents.FS, want.name)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			bySlug, err := persona.Load(agents.FS, want.slug)
			if err != nil || bySlug.AgentsMD != p.AgentsMD || bySlug.Slug != want.slug {
				t.Fatalf("Load by slug %q: %v", want.slug, err)
			}
			if len(p.Warnings) > 0 {
				t.Errorf("shipped files give warnings: %q", p.Warnings)
			}

			settings := map[string]string{
				"AGENT_TOOLS": want.tools, "AGENT_MAX_ITERATIONS": want.maxIter, "AGENT_TEMPERATURE": "0",
				"PULSE_ENABLED": want.pulseEnabled, "PULSE_INTERVAL": want.interval,
				"REPORT_COLOR": want.color, "AGENT_DISPLAY_NAME": want.display,
			}
			for k, v := range settings {
				if e, ok := p.Setting(k); !ok || e.Value != v {
					t.Errorf("agent.env %s = %q (set: %v), want %q", k, e.Value, ok, v)
				}
			}
			for _, tool := range p.DeclaredTools() {
				if !slices.Contains(toolUniverse, tool) {
					t.Errorf("agent.env AGENT_TOOLS names %q, which is not a canonical tool", tool)
				}
				if slices.Contains(builtinTools, tool) {
					t.Errorf("agent.env AGENT_TOOLS lists built-in %q; built-ins are added by the binary", tool)
				}
			}

			for _, s := range want.skills {
				if _, ok := p.Skill(s); !ok {
					t.Errorf("missing skill %s", s)
				}
			}

			got := map[string]int{}
			for _, task := range p.Pulse {
				got[string(task.Cadence)]++
			}
			for _, c := range pulse.Cadences {
				if got[string(c)] != want.pulse[string(c)] {
					t.Errorf("PULSE.md has %d %s tasks, want %d", got[string(c)], c, want.pulse[string(c)])
				}
			}

			if n := strings.Count(strings.TrimRight(p.AgentsMD, "\n"), "\n") + 1; n > 150 {
				t.Errorf("AGENTS.md is %d lines; keep it under ~150 (it is in every prompt)", n)
			}
			if !strings.Contains(p.AgentsMD, "You do NOT have") {
				t.Errorf("AGENTS.md does not say what the persona does NOT have")
			}
		})
	}
}

// Every manual lists the persona's whole tool list: built-ins and AGENT_TOOLS.
func TestManualMentionsEveryOwnTool(t *testing.T) {
	t.Parallel()
	for _, info := range persona.All {
		p, err := persona.Load(agents.FS, info.Name)
		if err != nil {
			t.Fatalf("Load %s: %v", info.Name, err)
		}
		own := append(slices.Clone(builtinTools), p.DeclaredTools()...)
		mentioned := persona.MentionedTools(p.AgentsMD, own)
		for _, tool := range own {
			if !slices.Contains(mentioned, tool) {
				t.Errorf("%s/AGENTS.md never mentions its own tool %s", info.Name, tool)
			}
		}
	}
}

// No persona file names a tool the persona does not have: a manual that
// describes tools an agent lacks teaches it to attempt work that will be
// refused (docs/ARCHITECTURE.md, "Invariants": tool lists, not
// instructions, decide what a persona can do).
func TestNoFileNamesAToolThePersonaLacks(t *testing.T) {
	t.Parallel()
	for _, info := range persona.All {
		p, err := persona.Load(agents.FS, info.Name)
		if err != nil {
			t.Fatalf("Load %s: %v", info.Name, err)
		}
		own := append(slices.Clone(builtinTools), p.DeclaredTools()...)
		docs := p.Documents()
		if len(docs) < 4 {
			t.Errorf("%s: only %d documents checked", info.Name, len(docs))
		}
		for _, d := range docs {
			for _, tool := range persona.MentionedTools(d.Text, toolUniverse) {
				if !slices.Contains(own, tool) {
					t.Errorf("%s names %s, which %s does not have", d.Path, tool, info.Name)
				}
			}
		}
	}
}

// The delegation address is the literal slug, and the actor knows the fleet
// is off limits: the two rules the manuals must carry (docs/ARCHITECTURE.md,
// "Invariants").
func TestManualsCarryTheHardRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		persona string
		must    []string
	}{
		{"noor", []string{"`k8s-engineer`", "cluster_problems", "app.kubernetes.io/part-of=kubecrew", "FailedScheduling"}},
		{"sol", []string{"app.kubernetes.io/part-of=kubecrew", "ONE action", "re-judge", "Reason Error", "liveness"}},
		{"vera", []string{"truncated", "2×", "own PR", "merge_if_trivial", "substantive body"}},
	}
	for _, tc := range tests {
		p, err := persona.Load(agents.FS, tc.persona)
		if err != nil {
			t.Fatal(err)
		}
		all := ""
		for _, d := range p.Documents() {
			all += d.Text + "\n"
		}
		for _, m := range tc.must {
			if !strings.Contains(strings.ToLower(all), strings.ToLower(m)) {
				t.Errorf("%s's files never say %q", tc.persona, m)
			}
		}
	}
}
