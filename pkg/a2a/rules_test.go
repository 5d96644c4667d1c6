package a2a

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseMeta(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		md      map[string]any
		want    Meta
		wantErr string
	}{
		{name: "nothing is an ask at no depth", md: nil, want: Meta{Verb: VerbAsk}},
		{name: "all keys", md: map[string]any{
			KeyVerb: "delegate", KeySocialDepth: float64(2), KeyCaller: "platform-sre",
			KeyDiscussionID: "d1", KeyTraceID: "t1", KeyCallerRunID: "r1", "other/key": 1,
		}, want: Meta{Verb: VerbDelegate, Depth: 2, HasDepth: true, Caller: "platform-sre", DiscussionID: "d1", TraceID: "t1", CallerRunID: "r1"}},
		{name: "depth as string", md: map[string]any{KeySocialDepth: "3"}, want: Meta{Verb: VerbAsk, Depth: 3, HasDepth: true}},
		{name: "depth as json.Number", md: map[string]any{KeySocialDepth: json.Number("4")}, want: Meta{Verb: VerbAsk, Depth: 4, HasDepth: true}},
		{name: "verb case and space", md: map[string]any{KeyVerb: " Notify "}, want: Meta{Verb: VerbNotify}},
		{name: "caller cleaned", md: map[string]any{KeyCaller: "sol\u202e\x1b[31m"}, want: Meta{Verb: VerbAsk, Caller: "sol[31m"}},
		{name: "unknown verb", md: map[string]any{KeyVerb: "order"}, wantErr: `unknown kubecrew/verb "order"`},
		{name: "verb not a string", md: map[string]any{KeyVerb: 1.0}, wantErr: "kubecrew/verb must be a string"},
		{name: "negative depth", md: map[string]any{KeySocialDepth: -1.0}, wantErr: "non-negative whole number"},
		{name: "fractional depth", md: map[string]any{KeySocialDepth: 1.5}, wantErr: "non-negative whole number"},
		{name: "depth not a number", md: map[string]any{KeySocialDepth: "deep"}, wantErr: "non-negative whole number"},
		{name: "depth an object", md: map[string]any{KeySocialDepth: map[string]any{}}, wantErr: "non-negative whole number"},
		{name: "caller not a string", md: map[string]any{KeyCaller: 7.0}, wantErr: "kubecrew/caller must be a string"},
		{name: "budget", md: map[string]any{KeyBudgetMS: 530000.0}, want: Meta{Verb: VerbAsk, BudgetMS: 530000}},
		{name: "budget as string", md: map[string]any{KeyBudgetMS: "1500"}, want: Meta{Verb: VerbAsk, BudgetMS: 1500}},
		{name: "negative budget", md: map[string]any{KeyBudgetMS: -5.0}, wantErr: "kubecrew/budget_ms must be a non-negative whole number"},
		{name: "budget over a day", md: map[string]any{KeyBudgetMS: 9e9}, wantErr: "kubecrew/budget_ms must be a non-negative whole number up to 86400000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMeta(tt.md)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseMeta() error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ParseMeta() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMetaRoundTrip(t *testing.T) {
	t.Parallel()
	m := Meta{Verb: VerbDelegate, Depth: 0, HasDepth: true, Caller: "platform-sre", DiscussionID: "d", TraceID: "t", CallerRunID: "r", BudgetMS: 42000}
	raw, err := json.Marshal(m.Map())
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	if err := json.Unmarshal(raw, &md); err != nil {
		t.Fatal(err)
	}
	got, err := ParseMeta(md)
	if err != nil {
		t.Fatal(err)
	}
	if got != m {
		t.Fatalf("round trip = %+v, want %+v (wire %s)", got, m, raw)
	}
}

func TestDepthRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		meta      Meta
		max       int
		wantDepth int
		refused   string
	}{
		{name: "person or external client", meta: Meta{}, max: 5, wantDepth: 0},
		{name: "agent at depth 4", meta: Meta{Caller: "sol", Depth: 4, HasDepth: true}, max: 5, wantDepth: 4},
		{name: "agent at depth 5", meta: Meta{Caller: "sol", Depth: 5, HasDepth: true}, max: 5, wantDepth: 5, refused: "social depth 5 reaches MAX_SOCIAL_DEPTH 5"},
		{name: "external client claiming depth 7", meta: Meta{Depth: 7, HasDepth: true}, max: 5, wantDepth: 7, refused: "social depth 7"},
		{name: "agent without depth fails closed", meta: Meta{Caller: "platform-sre"}, max: 5, wantDepth: 5, refused: `"platform-sre" carries no kubecrew/social_depth`},
		{name: "unset limit is the default, not unlimited", meta: Meta{Caller: "sol", Depth: 5, HasDepth: true}, max: 0, wantDepth: 5, refused: "MAX_SOCIAL_DEPTH 5"},
		{name: "lower limit", meta: Meta{Caller: "sol", Depth: 2, HasDepth: true}, max: 2, wantDepth: 2, refused: "MAX_SOCIAL_DEPTH 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := CheckReceive(tt.meta, tt.max)
			if d != tt.wantDepth {
				t.Errorf("depth = %d, want %d", d, tt.wantDepth)
			}
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *RefusalError
			if !errors.As(err, &re) || re.Rule != "depth" || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.refused) {
				t.Fatalf("error = %v, want a depth refusal containing %q", err, tt.refused)
			}
		})
	}
}

func TestCheckSendRefusesBeforeTheLimit(t *testing.T) {
	t.Parallel()
	for runDepth := 0; runDepth < 8; runDepth++ {
		err := CheckSend(OutgoingDepth(runDepth), 5)
		if wantRefused := runDepth+1 >= 5; (err != nil) != wantRefused {
			t.Errorf("run at depth %d: CheckSend error = %v, want refused %v", runDepth, err, wantRefused)
		}
	}
	err := CheckSend(5, 5)
	if !strings.Contains(err.Error(), "would be at social depth 5 and MAX_SOCIAL_DEPTH is 5") {
		t.Errorf("message = %q", err)
	}
}

func TestCycleError(t *testing.T) {
	t.Parallel()
	err := CycleError("platform-sre", "d-1", "run-9")
	var re *RefusalError
	if !errors.As(err, &re) || re.Rule != "cycle" || !strings.Contains(err.Error(), "discussion d-1 (run run-9)") {
		t.Fatalf("CycleError = %v", err)
	}
}

func TestPeers(t *testing.T) {
	t.Parallel()
	peers, err := NewPeers(map[string]string{"sol": "http://127.0.0.1:9001/"}, DefaultPeerTemplate, "fleet", "platform-sre")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in, wantSlug, wantURL, wantErr string
	}{
		{name: "static map by persona name", in: "sol", wantSlug: "k8s-engineer", wantURL: "http://127.0.0.1:9001/invoke"},
		{name: "static map by slug, any case", in: " K8S-Engineer ", wantSlug: "k8s-engineer", wantURL: "http://127.0.0.1:9001/invoke"},
		{name: "template", in: "vera", wantSlug: "code-reviewer", wantURL: "http://agent-code-reviewer.fleet.svc:8000/invoke"},
		{name: "unknown lists the valid ones", in: "bob", wantErr: `unknown agent "bob"; valid agent_slug values: platform-sre (noor), k8s-engineer (sol)`},
		{name: "a URL is not a name", in: "http://evil.example/invoke", wantErr: "unknown agent"},
		{name: "self", in: "noor", wantErr: "platform-sre is you"},
		{name: "empty", in: "", wantErr: "unknown agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := peers.Resolve(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Slug != tt.wantSlug || p.InvokeURL() != tt.wantURL {
				t.Fatalf("Resolve(%q) = %s %s, want %s %s", tt.in, p.Slug, p.InvokeURL(), tt.wantSlug, tt.wantURL)
			}
		})
	}
}

func TestNewPeersRejectsBadSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		static    map[string]string
		template  string
		namespace string
		wantErr   string
	}{
		{name: "unknown agent", static: map[string]string{"bob": "http://x"}, wantErr: `unknown agent "bob"`},
		{name: "not a URL", static: map[string]string{"sol": "x:y"}, wantErr: "not an http(s) URL"},
		{name: "query", static: map[string]string{"sol": "http://x/?a=1"}, wantErr: "query"},
		{name: "template without slug", template: "http://agents.svc:8000", wantErr: "must contain {slug}"},
		{name: "namespace missing", template: DefaultPeerTemplate, wantErr: "AGENT_NAMESPACE is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewPeers(tt.static, tt.template, tt.namespace, "platform-sre")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewPeers error = %v, want %q", err, tt.wantErr)
			}
		})
	}
	// No template and no static entry: the agent is unreachable, said clearly.
	p, err := NewPeers(nil, "", "", "platform-sre")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resolve("sol"); err == nil || !strings.Contains(err.Error(), "peers are off (it is not in AGENT_PEERS and PEER_URL_TEMPLATE is none)") {
		t.Fatalf("Resolve without addresses: %v", err)
	}
}
