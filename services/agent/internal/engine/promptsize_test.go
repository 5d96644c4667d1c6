package engine_test

import (
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/agents"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// MaxPromptChars bounds Noor's system prompt, the one every sweep, alert
// and pulse tick pays for before any content (docs/MANUAL.md, "Model cost");
// the others' sizes are logged.
const MaxPromptChars = 8000

// Noor's system prompt stays under MaxPromptChars in every run type, with
// a realistic context: an alert with its finding, a pulse tick (PULSE.md
// included), a peer's delegation, and a memory note.
func TestSystemPromptSize(t *testing.T) {
	finding := `{"severity":"critical","kind":"Deployment","namespace":"kubecrew-fixtures","name":"oomkill","container":"app","reason":"OOMKilled","detail":"OOMKilled 293 times in 26h, exit 137, limit 32Mi"}`
	inputs := map[string]engine.PromptInput{
		api.WorkflowAlert: {Context: map[string]string{"namespace": "shop", "alertname": "KubePodCrashLooping", "finding": finding,
			"alert": `{"status":"firing","labels":{"alertname":"KubePodCrashLooping","namespace":"shop","deployment":"api","container":"app"}}`}},
		api.WorkflowPulseTask:   {Context: map[string]string{"pulse_task": "c0-1a2b3c4d", "cadence": "continuous", "pulse_trigger": "timer"}},
		api.WorkflowA2ADelegate: {Context: map[string]string{"finding": finding}},
		api.WorkflowManual:      {Context: map[string]string{"namespace": "shop"}},
	}
	for _, info := range persona.All {
		p, err := persona.Load(agents.FS, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		for wf, in := range inputs {
			in.WorkflowType, in.Now, in.MemoryMax = wf, time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), 4000
			in.Memory = "- shop/api OOM-killed on 2026-11-28 and 2026-11-30: delegated both times\n"
			if n := len(engine.BuildPrompt(p, in)); n > MaxPromptChars && info.Slug == persona.SlugNoor {
				t.Errorf("%s's system prompt in a %s run is %d characters, over %d", info.Name, wf, n, MaxPromptChars)
			} else {
				t.Logf("%s %s: %d", info.Name, wf, n)
			}
		}
	}
}
