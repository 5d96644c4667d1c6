package a2aserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

type rpcError struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Data    map[string]string `json:"data"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// post sends body to /invoke with plain net/http.
func post(t *testing.T, url, token string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/invoke", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func sendBody(text string, metadata map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": "req-1", "method": "message/send",
		"params": map[string]any{"message": map[string]any{
			"kind": "message", "messageId": "m-" + strings.ReplaceAll(text, " ", "-"), "role": "user",
			"parts": []any{map[string]any{"kind": "text", "text": text}}, "metadata": metadata,
		}},
	})
	return b
}

func TestRawJSONRPC(t *testing.T) {
	t.Parallel()
	const token = "raw-token"
	nodes := startFleet(t, fleetOpts{token: token}, map[string]engine.Playbook{"sol": engine.PlaybookFunc(echo)})
	sol := nodes["k8s-engineer"]

	tests := []struct {
		name       string
		token      string
		body       []byte
		wantStatus int
		wantCode   int
		wantText   string
	}{
		{name: "malformed JSON", token: token, body: []byte(`{"jsonrpc":"2.0","id":1,"method":`), wantStatus: 200, wantCode: -32700},
		{name: "not JSON at all", token: token, body: []byte(`restart everything`), wantStatus: 200, wantCode: -32700},
		{name: "unknown method", token: token, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`), wantStatus: 200, wantCode: -32601},
		{name: "wrong jsonrpc version", token: token, body: []byte(`{"jsonrpc":"1.0","id":1,"method":"message/send","params":{}}`), wantStatus: 200, wantCode: -32600},
		{name: "part without kind", token: token,
			body:       []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"text":"hi"}]}}}`),
			wantStatus: 200, wantCode: -32700, wantText: "unknown part kind"},
		{name: "no message", token: token, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`), wantStatus: 200, wantCode: -32602, wantText: "params.message is required"},
		{name: "empty parts", token: token,
			body:       []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m2","role":"user","parts":[]}}}`),
			wantStatus: 200, wantCode: -32602, wantText: "message has no parts"},
		{name: "bad verb", token: token, body: sendBody("hello", map[string]any{a2a.KeyVerb: "order"}), wantStatus: 200, wantCode: -32602, wantText: `unknown kubecrew/verb "order"`},
		{name: "oversized body", token: token, body: sendBody(strings.Repeat("x", 1<<20), nil), wantStatus: 413, wantCode: -32600, wantText: "larger than 1048576 bytes"},
		{name: "tasks/get unknown", token: token, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}`), wantStatus: 200, wantCode: -32001},
		{name: "tasks/cancel unknown", token: token, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"nope"}}`), wantStatus: 200, wantCode: -32001},
		{name: "push config", token: token, body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{"id":"x"}}`), wantStatus: 200, wantCode: -32003},
		{name: "missing token", token: "", body: sendBody("hello", nil), wantStatus: 401},
		{name: "wrong token", token: "guess", body: sendBody("hello", nil), wantStatus: 401},
	}
	// The group ends only when its parallel subtests have: the log checks
	// below need them done.
	t.Run("errors", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				status, hdr, body := post(t, sol.url, tt.token, tt.body)
				if status != tt.wantStatus {
					t.Fatalf("status = %d, want %d: %s", status, tt.wantStatus, body)
				}
				if status == 401 {
					if !strings.Contains(string(body), "bearer token") {
						t.Errorf("401 body = %s", body)
					}
					return
				}
				if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("content type = %q", ct)
				}
				var r rpcResponse
				if err := json.Unmarshal(body, &r); err != nil {
					t.Fatalf("not a JSON-RPC response: %v: %s", err, body)
				}
				if r.JSONRPC != "2.0" || r.Error == nil || r.Error.Code != tt.wantCode {
					t.Fatalf("response = %s, want error code %d", body, tt.wantCode)
				}
				if tt.wantText != "" && !strings.Contains(r.Error.Data["error"], tt.wantText) {
					t.Errorf("error data = %q, want %q", r.Error.Data["error"], tt.wantText)
				}
			})
		}
	})

	// A valid request with the token works, raw.
	status, _, body := post(t, sol.url, token, sendBody("hello raw", nil))
	var r rpcResponse
	if err := json.Unmarshal(body, &r); err != nil || status != 200 || r.Error != nil || r.ID != "req-1" {
		t.Fatalf("valid send: %d %s", status, body)
	}
	var task struct {
		Kind   string `json:"kind"`
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts []struct {
			Parts []map[string]any `json:"parts"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(r.Result, &task); err != nil {
		t.Fatal(err)
	}
	if task.Kind != "task" || task.Status.State != "completed" || len(task.Artifacts) != 1 {
		t.Fatalf("task = %s", r.Result)
	}
	for _, p := range task.Artifacts[0].Parts {
		if p["kind"] == nil {
			t.Errorf("a part without kind: %v", p)
		}
	}
	if task.Artifacts[0].Parts[0]["text"] != "echo: hello raw" {
		t.Errorf("answer = %v", task.Artifacts[0].Parts[0])
	}

	// The card stays open; the log needs the token; /invoke is POST only.
	for path, want := range map[string][2]int{"/.well-known/agent-card.json": {200, 200}, "/a2a/log": {401, 200}} {
		for i, tok := range []string{"", token} {
			req, _ := http.NewRequest(http.MethodGet, sol.url+path, nil)
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want[i] {
				t.Errorf("GET %s (token %q) = %d, want %d", path, tok, resp.StatusCode, want[i])
			}
		}
	}
	req, _ := http.NewRequest(http.MethodGet, sol.url+"/invoke", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /invoke = %d", resp.StatusCode)
	}

	// Rejected messages that reached the handler are in the log as refused;
	// no run was started for them.
	es := findEntry(sol.settled(t), a2a.DirectionReceived)
	var refused, completed int
	for _, e := range es {
		switch e.Outcome {
		case a2a.OutcomeRefused:
			refused++
			if e.CalleeRunID != "" || e.Error == "" || (strings.Contains(e.Error, "verb") && e.Text != "hello") {
				t.Errorf("refused entry = %+v", e)
			}
		case a2a.OutcomeCompleted:
			completed++
		}
	}
	if refused != 2 || completed != 1 { // empty parts, bad verb; one valid send
		t.Errorf("refused %d completed %d: %+v", refused, completed, es)
	}
}

func TestAuditLogPages(t *testing.T) {
	t.Parallel()
	nodes := startFleet(t, fleetOpts{}, map[string]engine.Playbook{"dax": engine.PlaybookFunc(echo)})
	dax := nodes["cicd-engineer"]
	for _, text := range []string{"one", "two", "three"} {
		if status, _, body := post(t, dax.url, "", sendBody(text, nil)); status != 200 || strings.Contains(string(body), `"error"`) {
			t.Fatalf("send %s: %d %s", text, status, body)
		}
	}
	dax.svc.Wait()
	get := func(q string) (int, a2a.AuditPage) {
		resp, err := http.Get(dax.url + "/a2a/log" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p a2a.AuditPage
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return resp.StatusCode, p
	}
	code, p1 := get("?limit=2")
	if code != 200 || len(p1.Items) != 2 || p1.NextCursor == "" {
		t.Fatalf("page 1 = %d %+v", code, p1)
	}
	code, p2 := get("?limit=2&cursor=" + p1.NextCursor)
	if code != 200 || len(p2.Items) != 1 || p2.NextCursor != "" {
		t.Fatalf("page 2 = %d %+v", code, p2)
	}
	seen := map[string]bool{}
	for _, it := range append(p1.Items, p2.Items...) {
		seen[it.Text] = true
		if it.Agent != "cicd-engineer" || it.Direction != "received" || it.Outcome != a2a.OutcomeCompleted || it.Answer != "echo: "+it.Text {
			t.Errorf("item = %+v", it)
		}
	}
	if len(seen) != 3 {
		t.Errorf("pages = %v", seen)
	}
	if p1.Items[0].Text != "three" {
		t.Errorf("newest first: got %q first", p1.Items[0].Text)
	}
	for _, q := range []string{"?limit=0", "?limit=x", "?limit=501", "?cursor=not-a-cursor"} {
		if code, _ := get(q); code != http.StatusBadRequest {
			t.Errorf("GET /a2a/log%s = %d, want 400", q, code)
		}
	}
}
