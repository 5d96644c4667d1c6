package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubecrew/kubecrew/pkg/tools"
)

type nsArgs struct {
	Namespace string `json:"namespace" description:"the namespace"`
}

// fakes: tools whose mechanism is trivial, so what is tested is the path
// around them (name gate, validation, execution gate, redaction, budget).
func fakeSet(long string) tools.Set {
	return tools.Set{
		tools.New("k8s_get_events", "events", false, func(_ context.Context, a nsArgs) (string, error) {
			return "events in " + a.Namespace + ": pod env DB_PASSWORD=s3cr3t; " + long, nil
		}),
		tools.New("k8s_describe", "describe", false, func(context.Context, nsArgs) (string, error) {
			return "", errors.New("deployments.apps \"x\" not found")
		}),
		tools.New("k8s_nodes", "nodes", false, func(context.Context, struct{}) (string, error) { panic("boom") }),
		// mutating, on the autonomous allowlist: its primitive asks the execution gate
		tools.New("k8s_rollout", "rollout", true, func(ctx context.Context, a nsArgs) (string, error) {
			if err := tools.Check(ctx, "k8s.rollout.undo"); err != nil {
				return "", err
			}
			return "undone", nil
		}),
		// mutating, not on the allowlist: the name gate removes it whatever MCP_SERVE_MUTATING says
		tools.New("kubectl_apply", "apply", true, func(context.Context, nsArgs) (string, error) { return "applied", nil }),
	}
}

func connect(t *testing.T, o Options) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := New(o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func names(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

func TestServedToolsAndAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutating bool
		want     []string
	}{
		{"read-only by default", false, []string{"k8s_describe", "k8s_get_events", "k8s_nodes"}},
		{"mutating only when enabled, only what an autonomous run may call", true, []string{"k8s_describe", "k8s_get_events", "k8s_nodes", "k8s_rollout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(t, connect(t, Options{Name: "kubecrew-test", Tools: fakeSet(""), AllowMutating: tc.mutating}))
			if len(got) != len(tc.want) {
				t.Fatalf("served %v, want %v", keys(got), tc.want)
			}
			for _, n := range tc.want {
				tl, ok := got[n]
				if !ok {
					t.Fatalf("%s not served: %v", n, keys(got))
				}
				mut := n == "k8s_rollout"
				if a := tl.Annotations; a == nil || a.ReadOnlyHint == mut || a.DestructiveHint == nil || *a.DestructiveHint != mut {
					t.Errorf("%s annotations = %+v, want readOnly=%v destructive=%v", n, a, !mut, mut)
				}
			}
			if _, ok := got["kubectl_apply"]; ok {
				t.Error("a tool off the autonomous allowlist was served")
			}
		})
	}
}

func keys(m map[string]*mcp.Tool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A call takes the run's path: strict arguments, errors and panics as
// ERROR text results, the execution gate, redaction, the output budget.
func TestCallsTakeTheGatedPath(t *testing.T) {
	cs := connect(t, Options{Name: "kubecrew-test", Tools: fakeSet(strings.Repeat("x", 5000)), AllowMutating: true, MaxChars: 1000})
	for _, tc := range []struct {
		tool    string
		args    any
		isError bool
		want    []string
		not     []string
	}{
		{"k8s_get_events", map[string]any{"namespace": "shop"}, false,
			[]string{"events in shop", "DB_PASSWORD=[REDACTED:secret-pair]", "characters truncated"}, []string{"s3cr3t"}},
		{"k8s_get_events", map[string]any{"namespace": "shop", "verb": "delete"}, true, []string{"ERROR: invalid arguments", "verb"}, nil},
		{"k8s_describe", map[string]any{"namespace": "shop"}, true, []string{`ERROR: deployments.apps "x" not found`}, nil},
		{"k8s_nodes", nil, true, []string{"ERROR: tool k8s_nodes failed unexpectedly: boom"}, nil},
		{"k8s_rollout", map[string]any{"namespace": "shop"}, true,
			[]string{"denied by safety gate: k8s.rollout.undo is not allowed in an autonomous run"}, []string{"undone"}},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError != tc.isError {
			t.Errorf("%s isError = %v, want %v: %s", tc.tool, res.IsError, tc.isError, text)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", tc.tool, text, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(text, w) {
				t.Errorf("%s: %q contains %q", tc.tool, text, w)
			}
		}
		if len([]rune(text)) > 1200 {
			t.Errorf("%s: %d characters past the budget", tc.tool, len(text))
		}
	}
	// A tool that is not served is a protocol error, not a call.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "kubectl_apply", Arguments: map[string]any{}}); err == nil ||
		!strings.Contains(err.Error(), "kubectl_apply") {
		t.Errorf("unserved tool: %v", err)
	}
}

// The schema a host sees is the one the model sees (tools.Tool.Parameters).
func TestSchemaIsTheToolsOwn(t *testing.T) {
	set := fakeSet("")
	got := names(t, connect(t, Options{Tools: set}))
	raw, err := json.Marshal(got["k8s_get_events"].InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(raw, &a)
	_ = json.Unmarshal(set[0].Parameters(), &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("schema %s, want %s", ja, jb)
	}
}
