package a2aserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// FuzzInvoke: whatever body reaches POST /invoke, the agent answers 200,
// 400 or 413 — never a 5xx, never a panic — and a JSON answer is a
// JSON-RPC 2.0 response (a result or an error with a code).
func FuzzInvoke(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tasks/get","params":{"id":"nope"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"a":1}}],"metadata":{"kubecrew/verb":"delegate"}}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `{"jsonrpc":"1.0"}`, `null`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	nodes := startFleet(f, fleetOpts{}, map[string]engine.Playbook{"sol": engine.PlaybookFunc(echo)})
	h := nodes["k8s-engineer"].svc.InvokeHandler()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/invoke", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			return
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("answer to %q is not a JSON-RPC object: %v: %s", body, err, rec.Body)
		}
		if resp.JSONRPC != "2.0" || (resp.Error == nil) == (resp.Result == nil) || (resp.Error != nil && resp.Error.Code == 0) {
			t.Fatalf("answer to %q is not a JSON-RPC 2.0 response: %s", body, rec.Body)
		}
	})
}
