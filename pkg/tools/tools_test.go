package tools_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

type args struct {
	N    int    `json:"n"`
	Note string `json:"note,omitempty"`
}

func TestTruncateKeepsHeadAndTailOnRuneBoundaries(t *testing.T) {
	s := strings.Repeat("é", 50) + strings.Repeat("x", 100) + strings.Repeat("ü", 50) // 200 runes, 300 bytes
	out := tools.Truncate(s, 30)
	if !utf8.ValidString(out) {
		t.Fatal("cut inside a rune")
	}
	head, tail, ok := strings.Cut(out, "\n[... 170 characters truncated")
	if !ok {
		t.Fatalf("marker missing: %q", out)
	}
	if head != strings.Repeat("é", 20) {
		t.Errorf("head = %q, want 20 runes (2/3)", head)
	}
	if !strings.HasSuffix(tail, "\n"+strings.Repeat("ü", 10)) {
		t.Errorf("tail = %q, want the last 10 runes (1/3)", tail)
	}
	if tools.Truncate("short", 30) != "short" || tools.Truncate(s, 0) != s {
		t.Error("text within the budget (or no budget) must be unchanged")
	}
}

func TestCallNeverFails(t *testing.T) {
	set, err := tools.NewRegistry(
		tools.New("ok", "d", false, func(_ context.Context, a args) (string, error) { return strings.Repeat("y", a.N), nil }),
		tools.New("boom", "d", false, func(context.Context, args) (string, error) { panic("nil map") }),
		tools.New("fails", "d", false, func(context.Context, args) (string, error) { return "", errors.New("api said no") }),
		tools.New("write", "d", true, func(ctx context.Context, _ args) (string, error) {
			if err := tools.Check(ctx, "k8s.rollout.undo"); err != nil {
				return "", err
			}
			return "done", nil
		}),
	).Resolve([]string{"ok", "boom", "fails", "write", "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); strings.Join(got, ",") != "ok,boom,fails,write" {
		t.Errorf("resolve kept %v (duplicates must go, order must stay)", got)
	}
	interactive := tools.WithMode(context.Background(), tools.ModeInteractive)
	for _, tc := range []struct {
		ctx             context.Context
		name, args, out string
		outcome         string
	}{
		{interactive, "ok", `{"n":3}`, "yyy", tools.OutcomeOK},
		{interactive, "ok", `{"n":50}`, "yyyyyy\n[... 40 characters truncated", tools.OutcomeOK}, // budget 10: head 6, tail 4
		{interactive, "ok", `{"n":"3"}`, "ERROR: invalid arguments", tools.OutcomeError},
		{interactive, "ok", `{"n":3,"extra":1}`, `ERROR: invalid arguments: unknown field "extra"`, tools.OutcomeError},
		{interactive, "ok", `{"n":3} {}`, "ERROR: invalid arguments: trailing data", tools.OutcomeError},
		{interactive, "boom", `{}`, "ERROR: tool boom failed unexpectedly: nil map", tools.OutcomePanic},
		{interactive, "fails", ``, "ERROR: api said no", tools.OutcomeError},
		{interactive, "nope", `{}`, `ERROR: unknown tool "nope"; the tools you have are: ok, boom, fails, write`, tools.OutcomeUnknown},
		{interactive, "write", `{}`, "done", tools.OutcomeOK},
		// no mode in the context: autonomous, the gate fails closed
		{context.Background(), "write", `{}`, "ERROR: denied by safety gate: k8s.rollout.undo", tools.OutcomeDenied},
		{tools.WithMode(context.Background(), tools.ModeAutonomous), "write", `{}`, "ERROR: denied by safety gate", tools.OutcomeDenied},
	} {
		res := set.Call(tc.ctx, tc.name, []byte(tc.args), 10)
		out, outcome := res.Output, res.Outcome
		if !strings.HasPrefix(out, tc.out) || outcome != tc.outcome {
			t.Errorf("Call(%s, %s) = %q, %s; want prefix %q, %s", tc.name, tc.args, out, outcome, tc.out, tc.outcome)
		}
	}
}

func TestResolveRefusesUnknownTools(t *testing.T) {
	reg := tools.NewRegistry(tools.New("a", "d", false, func(context.Context, args) (string, error) { return "", nil }))
	_, err := reg.Resolve([]string{"a", " kubectl "})
	var ute *tools.UnknownToolError
	if !errors.As(err, &ute) || ute.Name != "kubectl" || !strings.Contains(err.Error(), "known: a") {
		t.Fatalf("err = %v", err)
	}
}

func TestNameGate(t *testing.T) {
	reg := tools.NewRegistry(
		tools.New("k8s_get_events", "d", false, func(context.Context, args) (string, error) { return "", nil }),
		tools.New("k8s_delete", "d", true, func(context.Context, args) (string, error) { return "", nil }),
	)
	set, _ := reg.Resolve(reg.Names())
	kept, removed := set.ForMode(tools.ModeAutonomous)
	if strings.Join(kept.Names(), ",") != "k8s_get_events" || strings.Join(removed, ",") != "k8s_delete" {
		t.Errorf("autonomous kept %v removed %v", kept.Names(), removed)
	}
	if all, removed := set.ForMode(tools.ModeInteractive); len(all) != 2 || removed != nil {
		t.Error("an interactive run keeps every tool")
	}
}

// reader is a tool the binary does not know by name (another MCP server's)
// that says whether it may join an autonomous run.
type reader struct {
	tools.Tool
	says, mutating bool
}

func (r reader) AutonomousReadOnly() bool { return r.says }
func (r reader) Mutating() bool           { return r.mutating }

// The name gate keeps an AutonomousReader only when it says yes AND is not
// mutating: a tool cannot talk its way past the gate while it mutates.
func TestNameGateAutonomousReaders(t *testing.T) {
	base := tools.New("x", "d", false, func(context.Context, args) (string, error) { return "", nil })
	for _, tc := range []struct {
		says, mutating, kept bool
	}{{true, false, true}, {false, false, false}, {true, true, false}, {false, true, false}} {
		set := tools.Set{reader{Tool: tools.Alias("ext_read", base), says: tc.says, mutating: tc.mutating}}
		kept, _ := set.ForMode(tools.ModeAutonomous)
		if (len(kept) == 1) != tc.kept {
			t.Errorf("says %v mutating %v: kept %v, want %v", tc.says, tc.mutating, kept.Names(), tc.kept)
		}
	}
}

func TestSchemaFromTheArgumentType(t *testing.T) {
	tl := tools.New("ok", "d", false, func(context.Context, args) (string, error) { return "", nil })
	s := string(tl.Parameters())
	for _, want := range []string{`"n":{"type":"integer"}`, `"required":["n"]`} {
		if !strings.Contains(s, want) {
			t.Errorf("schema %s lacks %s", s, want)
		}
	}
	// additionalProperties is left out (every call pays for it); the parser
	// still refuses what the schema does not name.
	if strings.Contains(s, "additionalProperties") {
		t.Errorf("schema %s still carries additionalProperties", s)
	}
	if _, err := tl.Run(context.Background(), []byte(`{"n":1,"extra":2}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// TestCallRedacts: every output, error text included, passes through the
// redactor before truncation, and the result counts what went.
func TestCallRedacts(t *testing.T) {
	leak := tools.New("leak", "", false, func(_ context.Context, a struct {
		Fail bool `json:"fail"`
	}) (string, error) {
		if a.Fail {
			return "", errors.New("dial postgres://app:Pl4ntedPass@db:5432: refused")
		}
		return strings.Repeat("x", 50) + " password=Pl4ntedPassword " + strings.Repeat("y", 50), nil
	})
	set := tools.Set{leak}
	res := set.Call(context.Background(), "leak", []byte(`{}`), 70)
	if strings.Contains(res.Output, "Pl4nted") || res.Redacted[redact.KindPair] != 1 {
		t.Fatalf("output %q, counts %v", res.Output, res.Redacted)
	}
	res = set.Call(context.Background(), "leak", []byte(`{"fail":true}`), 70)
	if strings.Contains(res.Output, "Pl4nted") || res.Outcome != tools.OutcomeError || res.Redacted[redact.KindURLUserinfo] != 1 {
		t.Fatalf("error %q (%s), counts %v", res.Output, res.Outcome, res.Redacted)
	}
}

func TestCheckTarget(t *testing.T) {
	auto := tools.WithNoTarget(tools.WithMode(context.Background(), tools.ModeAutonomous))
	scoped := tools.WithTarget(auto, tools.Target{Kind: "Deployment", Namespace: "shop", Name: "cart"})
	for _, tc := range []struct {
		name            string
		ctx             context.Context
		kind, ns, wname string
		ok              bool
	}{
		{"interactive: anything", tools.WithMode(context.Background(), tools.ModeInteractive), "deployments", "kube-system", "coredns", true},
		{"autonomous without a target: nothing", auto, "deployments", "shop", "cart", false},
		{"the target, resource spelling", scoped, "deployments", "shop", "cart", true},
		{"the target, kind spelling", scoped, "Deployment", "shop", "cart", true},
		{"another workload", scoped, "deployments", "shop", "checkout", false},
		{"another namespace", scoped, "deployments", "kubecrew", "cart", false},
		{"another kind", scoped, "statefulsets", "shop", "cart", false},
		{"not a run (no scope): unchecked", context.Background(), "deployments", "shop", "cart", true},
	} {
		err := tools.CheckTarget(tc.ctx, tc.kind, tc.ns, tc.wname)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, tools.ErrDenied)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
