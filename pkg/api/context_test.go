package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRunContextAcceptsAnyJSONValue(t *testing.T) {
	var req RunRequest
	body := `{"task":"t","context":{"namespace":"shop","replicas":3,"dry_run":true,"labels":{"app": "api", "tier":"web"},"ids":[1, 2],"gone":null,"ratio":0.5}}`
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"namespace": "shop", "replicas": "3", "dry_run": "true", "labels": `{"app":"api","tier":"web"}`, "ids": "[1,2]", "ratio": "0.5"}
	if len(req.Context) != len(want) {
		t.Fatalf("context = %v, want %v", req.Context, want)
	}
	for k, v := range want {
		if req.Context[k] != v {
			t.Errorf("context.%s = %q, want %q", k, req.Context[k], v)
		}
	}
	// It goes back out as plain strings.
	out, _ := json.Marshal(RunRequest{Task: "t", Context: RunContext{"replicas": "3"}})
	if !strings.Contains(string(out), `"context":{"replicas":"3"}`) {
		t.Errorf("marshalled %s", out)
	}
}

func TestRunContextThatIsNotAnObjectSaysWhatToSend(t *testing.T) {
	for _, body := range []string{`{"task":"t","context":"shop"}`, `{"task":"t","context":[1]}`} {
		var req RunRequest
		err := json.Unmarshal([]byte(body), &req)
		if err == nil || !strings.Contains(err.Error(), `context must be a JSON object of names to values, e.g. {"namespace": "shop", "replicas": 3}`) {
			t.Errorf("%s: err = %v", body, err)
		}
	}
}
