package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

func TestBuiltinToolsOverTheWire(t *testing.T) {
	r := newRig(t, rigOpts{},
		llmtest.ToolCalls(
			llmtest.Call{ID: "s1", Name: "load_skill", Args: `{"name":"health-sweep"}`},
			llmtest.Call{ID: "s2", Name: "load_skill", Args: `{"name":"kubectl-magic"}`},
			llmtest.Call{ID: "w1", Name: "memory_write", Args: `{"path":"/memories/memory.md","content":"shop is noisy\n"}`},
			llmtest.Call{ID: "w2", Name: "memory_write", Args: `{"path":"/memories/../../etc/passwd.md","content":"x"}`},
			llmtest.Call{ID: "w3", Name: "memory_write", Args: `{"path":"/memories/memory.md","content":"on mondays\n","append":true}`},
			llmtest.Call{ID: "r1", Name: "memory_read", Args: `{"path":"/memories/memory.md"}`},
			llmtest.Call{ID: "r2", Name: "memory_read", Args: `{}`},
			llmtest.Call{ID: "f1", Name: "report_finding", Args: `{"severity":"urgent","kind":"Pod","namespace":"a","name":"b","reason":"X","detail":"","remediation":"","remediable":false}`},
		),
		llmtest.Text("done"), noSynthesis, noSynthesis,
		// second run: MEMORY reaches the prompt
		llmtest.Text("second"), noSynthesis, noSynthesis,
	)
	// A pulse run is autonomous: memory.write is allowed there.
	r.run(t, api.RunRequest{Task: "remember", WorkflowType: api.WorkflowPulseTask})
	got := map[string]string{}
	for _, m := range r.llm.Requests()[1].Request.Messages {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Content
		}
	}
	for id, want := range map[string]string{
		"s1": "---", "s2": "ERROR: no skill \"kubectl-magic\"; your skills are: delegation-protocol, health-sweep, report-format",
		"w1": "wrote /memories/memory.md", "w2": "ERROR: invalid input: memory path", "w3": "wrote /memories/memory.md (25 chars)",
		"r1": "shop is noisy\non mondays\n", "r2": "/memories/memory.md (25 chars", "f1": "ERROR: severity \"urgent\"",
	} {
		if !strings.Contains(got[id], want) && !strings.HasPrefix(got[id], want) {
			t.Errorf("%s answered %q, want %q", id, got[id], want)
		}
	}
	if strings.Contains(got["s1"], "ERROR") || len(got["s1"]) < 100 {
		t.Errorf("load_skill returned %q", got["s1"])
	}
	r.run(t, api.RunRequest{Task: "again"})
	sys := r.llm.Requests()[4].Request.Messages[0].Content
	if !strings.Contains(sys, "# Memory (/memories/memory.md)\nshop is noisy\non mondays") {
		t.Errorf("MEMORY.md did not reach the next prompt")
	}
	files, _ := r.store.ListMemory(context.Background(), "platform-sre")
	if len(files) != 1 {
		t.Errorf("memory files = %+v", files)
	}
}
