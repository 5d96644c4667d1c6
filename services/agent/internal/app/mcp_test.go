package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// bearer adds a token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// mcpSession connects the SDK's client to an agent's POST /mcp.
func mcpSession(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "kubecrew-test-host", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// servedTool is a listed tool as the golden file pins it.
type servedTool struct {
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Annotations *mcp.ToolAnnotations `json:"annotations"`
	InputSchema any                  `json:"inputSchema"`
}

// Every persona serves its read-only tools over MCP, and only those: the
// list and the schemas a host sees are pinned in testdata/mcp_tools.json.
// With MCP_SERVE_MUTATING, Sol adds what an autonomous run may call.
func TestMCPServedToolsGolden(t *testing.T) {
	got := map[string][]servedTool{}
	var cases []string
	for _, p := range persona.All {
		cases = append(cases, p.Name)
	}
	cases = append(cases, "sol+mutating")
	for _, name := range cases {
		slug, mutating, _ := strings.Cut(name, "+")
		env := map[string]string{"AGENT_PERSONA": slug, "AUTH_TOKEN": "mcp-s3cret"}
		if mutating != "" {
			env["MCP_SERVE_MUTATING"] = "true"
		}
		a := start(t, env)
		cs, err := mcpSession(t, a.url, "mcp-s3cret")
		if err != nil {
			t.Fatalf("%s: connect: %v", name, err)
		}
		if init := cs.InitializeResult(); init == nil || init.ServerInfo.Name != "kubecrew-"+a.app.Config.Persona.Slug {
			t.Errorf("%s: server info %+v", name, init)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("%s: list: %v", name, err)
		}
		var list []servedTool
		for _, tl := range res.Tools {
			list = append(list, servedTool{tl.Name, tl.Description, tl.Annotations, tl.InputSchema})
			if mutating == "" && (tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
				t.Errorf("%s serves %s, which is not read-only", name, tl.Name)
			}
		}
		got[name] = list
		// /info says the same.
		_, body := do(t, "GET", a.url+"/info", "", "Authorization", "Bearer mcp-s3cret")
		var info struct {
			MCP struct {
				Served []string `json:"served"`
			} `json:"mcp"`
		}
		if err := json.Unmarshal(body, &info); err != nil {
			t.Fatal(err)
		}
		if len(info.MCP.Served) != len(list) {
			t.Errorf("%s: /info serves %v, the MCP list has %d", name, info.MCP.Served, len(list))
		}
	}
	raw, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "mcp_tools.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestMCPServedToolsGolden -update writes it)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(raw)) {
		t.Errorf("served tools differ from %s (go test -run TestMCPServedToolsGolden -update, then review the diff):\n%s", golden, raw)
	}
	// Nothing mutating without the setting; with it, Sol's restart and bump
	// are served (and still gated per call).
	for _, n := range []string{"k8s_rollout", "bump_workload_memory", "merge_if_trivial", "review_pr", "post_report"} {
		for _, p := range persona.All {
			for _, tl := range got[p.Name] {
				if tl.Name == n {
					t.Errorf("%s serves mutating %s without MCP_SERVE_MUTATING", p, n)
				}
			}
		}
	}
}

// /mcp is behind AUTH_TOKEN: no token or a wrong one is 401, the read-only
// token 403 (MCP is POST), both with a JSON error.
func TestMCPNeedsTheToken(t *testing.T) {
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "AUTH_TOKEN": "full-s3cret", "AUTH_READ_TOKEN": "read-s3cret"})
	for _, tc := range []struct {
		token string
		code  int
	}{{"", 401}, {"wrong", 401}, {"read-s3cret", 403}} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
		hdr := []string{"Accept", "application/json, text/event-stream"}
		if tc.token != "" {
			hdr = append(hdr, "Authorization", "Bearer "+tc.token)
		}
		code, resp := do(t, "POST", a.url+"/mcp", body, hdr...)
		var e struct {
			Error string `json:"error"`
		}
		if code != tc.code || json.Unmarshal(resp, &e) != nil || e.Error == "" {
			t.Errorf("token %q: %d %s, want %d with a JSON error", tc.token, code, resp, tc.code)
		}
		if _, err := mcpSession(t, a.url, tc.token); err == nil {
			t.Errorf("token %q: the SDK client connected", tc.token)
		}
	}
}

// A call over POST /mcp reads the real API server and answers redacted:
// the secrets planted in an event, an env value and a ConfigMap never
// reach the host.
func TestMCPHTTPCallsAreRedacted(t *testing.T) {
	env, ns := injectionCluster(t)
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig, "AUTH_TOKEN": "mcp-s3cret"})
	cs, err := mcpSession(t, a.url, "mcp-s3cret")
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"k8s_get_events", map[string]any{"namespace": ns}, "Readiness probe failed"},
		{"k8s_get_yaml", map[string]any{"kind": "deployments", "namespace": ns, "name": "payments"}, "DB_PASSWORD"},
		{"k8s_get_yaml", map[string]any{"kind": "configmaps", "namespace": ns, "name": "payments-config"}, "app.properties"},
		{"cluster_problems", map[string]any{"namespace": ns}, "OOMKilled"},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
		if err != nil {
			t.Fatalf("%s: %v", call.tool, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError || !strings.Contains(text, call.want) {
			t.Errorf("%s: isError %v, lacks %q:\n%s", call.tool, res.IsError, call.want, text)
		}
		for _, s := range plantedSecrets {
			if strings.Contains(text, s) {
				t.Errorf("%s answered the planted secret %q", call.tool, s)
			}
		}
	}
}
