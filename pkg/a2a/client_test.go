package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// fakePeer is an A2A server on the wire (the SDK's JSON-RPC transport) whose
// answers the test scripts.
type fakePeer struct {
	a2asrv.RequestHandler // unimplemented methods panic: the client must not call them

	mu      sync.Mutex
	got     []*sdk.MessageSendParams
	headers []http.Header
	answer  func(ctx context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error)
}

func (f *fakePeer) OnSendMessage(ctx context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
	f.mu.Lock()
	f.got = append(f.got, p)
	f.mu.Unlock()
	return f.answer(ctx, p)
}

func (f *fakePeer) received() []*sdk.MessageSendParams {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*sdk.MessageSendParams(nil), f.got...)
}

func startPeer(t *testing.T, token string, answer func(ctx context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error)) (*fakePeer, *httptest.Server) {
	t.Helper()
	fp := &fakePeer{answer: answer}
	rpc := a2asrv.NewJSONRPCHandler(fp)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != InvokePath {
			http.NotFound(w, r)
			return
		}
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":"missing or wrong bearer token"}`, http.StatusUnauthorized)
			return
		}
		fp.mu.Lock()
		fp.headers = append(fp.headers, r.Header.Clone())
		fp.mu.Unlock()
		rpc.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return fp, srv
}

func completedTask(p *sdk.MessageSendParams, answer string) *sdk.Task {
	fin := time.Now()
	return TaskFromResult(api.RunResult{RunID: "callee-run-1", Agent: "k8s-engineer", Status: api.StatusCompleted, Answer: answer, FinishedAt: &fin}, p.Message.ContextID)
}

func newTestClient(t *testing.T, sol string, token string, timeout time.Duration) (*Client, *store.Memory) {
	t.Helper()
	peers, err := NewPeers(map[string]string{"k8s-engineer": sol}, "", "", "platform-sre")
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory(nil)
	c, err := NewClient(ClientOptions{Self: persona.Info{Name: "noor", Slug: "platform-sre"}, Peers: peers, Token: token, Audit: st, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

func auditOf(t *testing.T, st *store.Memory) []store.A2AEntry {
	t.Helper()
	es, _, err := st.ListA2A(context.Background(), "platform-sre", store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestSendDelegateOnTheWire(t *testing.T) {
	t.Parallel()
	fp, srv := startPeer(t, "s3cret", func(_ context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
		return completedTask(p, "opened PR agent/fix/kubecrew-fixtures-deployment-oomkill-app-oomkilled"), nil
	})
	c, st := newTestClient(t, srv.URL, "s3cret", time.Minute)
	f := oomFinding()
	res, err := c.Send(context.Background(), Call{To: "sol", Verb: VerbDelegate, Text: "Raise the memory limit of oomkill/app.", Finding: &f,
		RunDepth: 0, DiscussionID: "disc-1", TraceID: "trace-1", CallerRunID: "noor-run-1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeCompleted || res.TaskID != "callee-run-1" || !strings.Contains(res.Answer, "opened PR") || res.Depth != 1 {
		t.Fatalf("result = %+v", res)
	}
	got := fp.received()
	if len(got) != 1 {
		t.Fatalf("peer received %d messages", len(got))
	}
	m := got[0].Message
	meta, err := ParseMeta(m.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	// A minute's call timeout: the callee's budget is that less a tenth.
	want := Meta{Verb: VerbDelegate, Depth: 1, HasDepth: true, Caller: "platform-sre", DiscussionID: "disc-1", TraceID: "trace-1", CallerRunID: "noor-run-1", BudgetMS: 54000}
	if meta != want {
		t.Errorf("metadata on the wire = %+v, want %+v", meta, want)
	}
	in, err := ParseMessage(m)
	if err != nil || in.Finding == nil || in.Finding.Name != "oomkill" || in.Text != "Raise the memory limit of oomkill/app." {
		t.Errorf("message on the wire = %+v (%v)", in, err)
	}
	if cfg := got[0].Config; cfg != nil && cfg.Blocking != nil && !*cfg.Blocking {
		t.Errorf("delegate was sent non-blocking")
	}
	if h := fp.headers[0].Get("Authorization"); h != "Bearer s3cret" {
		t.Errorf("Authorization = %q", h)
	}

	es := auditOf(t, st)
	if len(es) != 1 {
		t.Fatalf("audit = %+v", es)
	}
	e := es[0]
	if e.ID != m.ID+":sent" || e.Direction != DirectionSent || e.Verb != "delegate" || e.Caller != "platform-sre" || e.Callee != "k8s-engineer" ||
		e.Depth != 1 || e.Text != "Raise the memory limit of oomkill/app." || e.Outcome != OutcomeCompleted ||
		e.CallerRunID != "noor-run-1" || e.CalleeRunID != "callee-run-1" || !strings.Contains(e.Answer, "opened PR") ||
		!strings.Contains(string(e.Data), `"OOMKilled"`) || e.FinishedAt == nil || e.DiscussionID != "disc-1" || e.TraceID != "trace-1" {
		t.Errorf("audit entry = %+v data %s", e, e.Data)
	}
}

func TestSendNotifyDoesNotWait(t *testing.T) {
	t.Parallel()
	fp, srv := startPeer(t, "", func(_ context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
		return WorkingTask("callee-run-2", p.Message.ContextID, time.Now(), p.Message), nil
	})
	c, st := newTestClient(t, srv.URL, "", time.Minute)
	res, err := c.Send(context.Background(), Call{To: "k8s-engineer", Verb: VerbNotify, Text: "PR #4 merged", DiscussionID: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeAccepted || res.TaskID != "callee-run-2" {
		t.Fatalf("result = %+v", res)
	}
	cfg := fp.received()[0].Config
	if cfg == nil || cfg.Blocking == nil || *cfg.Blocking {
		t.Fatalf("notify must be sent with configuration.blocking=false, got %+v", cfg)
	}
	if h := fp.headers[0].Get("Authorization"); h != "" {
		t.Errorf("no token configured, yet Authorization = %q", h)
	}
	e := auditOf(t, st)[0]
	if e.Outcome != OutcomeAccepted || e.FinishedAt != nil || e.CalleeRunID != "callee-run-2" {
		t.Errorf("audit = %+v", e)
	}
}

func TestSendRefusals(t *testing.T) {
	t.Parallel()
	t.Run("depth, before anything is sent", func(t *testing.T) {
		t.Parallel()
		fp, srv := startPeer(t, "", func(_ context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
			return completedTask(p, "should not happen"), nil
		})
		c, st := newTestClient(t, srv.URL, "", time.Minute)
		_, err := c.Send(context.Background(), Call{To: "sol", Verb: VerbAsk, Text: "why?", RunDepth: 4, CallerRunID: "r"})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "MAX_SOCIAL_DEPTH is 5") {
			t.Fatalf("error = %v", err)
		}
		if n := len(fp.received()); n != 0 {
			t.Fatalf("peer received %d messages after a refusal", n)
		}
		e := auditOf(t, st)[0]
		if e.Outcome != OutcomeRefused || e.Depth != 5 || e.Text != "why?" || !strings.Contains(e.Error, "social depth 5") || e.Callee != "k8s-engineer" {
			t.Fatalf("audit = %+v", e)
		}
	})
	t.Run("by the peer", func(t *testing.T) {
		t.Parallel()
		_, srv := startPeer(t, "", func(_ context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
			return nil, fmt.Errorf("%w: %w", sdk.ErrInvalidRequest, CycleError("k8s-engineer", "d", "r0"))
		})
		c, st := newTestClient(t, srv.URL, "", time.Minute)
		_, err := c.Send(context.Background(), Call{To: "sol", Text: "again?", DiscussionID: "d"})
		var ce *CallError
		if !errors.As(err, &ce) || ce.Outcome != OutcomeRefused || !strings.Contains(err.Error(), "k8s-engineer refused the message") || !strings.Contains(err.Error(), "cycle") {
			t.Fatalf("error = %v", err)
		}
		if e := auditOf(t, st)[0]; e.Outcome != OutcomeRefused || !strings.Contains(e.Error, "cycle") {
			t.Fatalf("audit = %+v", e)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		t.Parallel()
		_, srv := startPeer(t, "right", func(_ context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
			return completedTask(p, "x"), nil
		})
		c, st := newTestClient(t, srv.URL, "wrong", time.Minute)
		_, err := c.Send(context.Background(), Call{To: "sol", Text: "hi"})
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "AUTH_TOKEN") {
			t.Fatalf("error = %v", err)
		}
		if e := auditOf(t, st)[0]; e.Outcome != OutcomeFailed || !strings.Contains(e.Error, "401") {
			t.Fatalf("audit = %+v", e)
		}
	})
	t.Run("bad input never leaves", func(t *testing.T) {
		t.Parallel()
		fp, srv := startPeer(t, "", nil)
		c, st := newTestClient(t, srv.URL, "", time.Minute)
		bad := oomFinding()
		bad.Name = ""
		for _, call := range []Call{
			{To: "sol"},
			{To: "sol", Text: "x", Verb: "order"},
			{To: "bob", Text: "x"},
			{To: "sol", Text: "x", Finding: &bad},
			{To: "sol", Text: strings.Repeat("y", MaxTextChars+1)},
		} {
			if _, err := c.Send(context.Background(), call); err == nil {
				t.Errorf("Send(%+v) succeeded", call)
			}
		}
		if len(fp.received()) != 0 || len(auditOf(t, st)) != 0 {
			t.Fatalf("bad input reached the peer or the log")
		}
	})
}

func TestSendTimeoutSaysWhich(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	_, srv := startPeer(t, "", func(ctx context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil, ctx.Err()
	})
	defer close(release)
	c, st := newTestClient(t, srv.URL, "", 300*time.Millisecond)
	_, err := c.Send(context.Background(), Call{To: "sol", Verb: VerbDelegate, Text: "restart web"})
	if err == nil || !strings.Contains(err.Error(), "no answer from k8s-engineer within A2A_CALL_TIMEOUT (300ms)") {
		t.Fatalf("error = %v", err)
	}
	if e := auditOf(t, st)[0]; e.Outcome != OutcomeFailed || e.Text != "restart web" {
		t.Fatalf("audit = %+v", e)
	}
}

// A calling run with too little time left sends nothing: the refusal is
// in the audit log, and the peer never sees the message.
func TestSendWithNoTimeLeftIsRefused(t *testing.T) {
	t.Parallel()
	fp, srv := startPeer(t, "", func(_ context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
		return completedTask(p, "done"), nil
	})
	c, st := newTestClient(t, srv.URL, "", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Send(ctx, Call{To: "sol", Verb: VerbAsk, Text: "anything?"})
	if err == nil || !strings.Contains(err.Error(), "too little for k8s-engineer to answer") {
		t.Fatalf("error = %v", err)
	}
	if e := auditOf(t, st); len(e) != 1 || e[0].Outcome != OutcomeRefused || len(fp.received()) != 0 {
		t.Fatalf("audit = %+v, peer got %d", e, len(fp.received()))
	}
}

// A failed A2A call is logged at warn with the error and the peer's URL.
func TestFailedCallLoggedAtWarn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	peers, err := NewPeers(map[string]string{"k8s-engineer": srv.URL}, "", "", "platform-sre")
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	c, err := NewClient(ClientOptions{Self: persona.Info{Name: "noor", Slug: "platform-sre"}, Peers: peers,
		Audit: store.NewMemory(nil), Timeout: 5 * time.Second, Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(context.Background(), Call{To: "sol", Verb: VerbDelegate, Text: "restart web"}); err == nil {
		t.Fatal("a call to a closed port succeeded")
	}
	warns := logs.FilterLevelExact(zap.WarnLevel).FilterMessage("a2a call failed").All()
	if len(warns) != 1 || warns[0].ContextMap()["error"] == nil || warns[0].ContextMap()["peer_url"] != srv.URL {
		t.Fatalf("warn logs = %+v (all: %+v)", warns, logs.All())
	}
}
