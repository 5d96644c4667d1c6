package app_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/llm/llmtest"
)

// report_finding and delegate_task's finding are one schema: a model sees
// the same fields, types, enums and required ones. The descriptions are
// report_finding's only (every call pays for each copy; docs/MANUAL.md, "Model
// cost").
func TestOneFindingSchema(t *testing.T) {
	a := start(t, modelEnv(llmtest.NewServer(t), "noor"))
	_, body := do(t, "GET", a.url+"/info", "")
	var info struct {
		Tools []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	var report, delegated json.RawMessage
	for _, tl := range info.Tools {
		switch tl.Name {
		case "report_finding":
			report = tl.Parameters
		case "delegate_task":
			var p struct {
				Properties struct {
					Finding json.RawMessage `json:"finding"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(tl.Parameters, &p); err != nil {
				t.Fatal(err)
			}
			delegated = p.Properties.Finding
		}
	}
	strip := func(raw json.RawMessage) string {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		delete(m, "description")
		props, _ := m["properties"].(map[string]any)
		for _, p := range props {
			delete(p.(map[string]any), "description")
		}
		if len(props) < 10 {
			t.Fatalf("finding schema has %d properties: %s", len(props), raw)
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	if report == nil || delegated == nil || strip(report) != strip(delegated) {
		var r, d bytes.Buffer
		_ = json.Indent(&r, report, "", " ")
		_ = json.Indent(&d, delegated, "", " ")
		t.Errorf("report_finding:\n%s\ndelegate_task.finding:\n%s", r.String(), d.String())
	}
}
