package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	// Nanoseconds and a non-UTC zone on purpose: stores keep UTC microseconds.
	return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type storeFactory func(t *testing.T, now func() time.Time) fullStore

// runContract holds an implementation to the behaviour every store shares.
func runContract(t *testing.T, newStore storeFactory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s fullStore, c *clock)
	}{
		{"runs", contractRuns},
		{"run list order and pages", contractRunPages},
		{"events", contractEvents},
		{"findings", contractFindings},
		{"pulse", contractPulse},
		{"memory files", contractMemoryFiles},
		{"a2a audit", contractA2A},
		{"delivery stamps", contractDeliveries},
		{"apply alert", contractApplyAlert},
		{"alert lists", contractAlertLists},
		{"decision counts", contractDecisionCounts},
		{"alerts firing", contractFiring},
		{"apply alert concurrently", contractApplyAlertConcurrent},
		{"incident keys: joined and dropped", contractIncidentKeys},
		{"dirty text", contractDirtyText},
		{"bad keys and rejected alerts", contractBadKeys},
		{"retention", contractPrune},
		{"actions", contractActions},
		{"finding lifecycle", contractLifecycle},
		{"escalations", contractEscalations},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			tc.fn(t, newStore(t, c.Now), c)
		})
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func contractRuns(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	r := Run{
		ID: "r1", Agent: "platform-sre", WorkflowType: api.WorkflowManual, Task: "look",
		Context: map[string]string{"k": "v"}, Caller: "core", SocialDepth: 1, DiscussionID: "d1",
	}
	mustNil(t, s.CreateRun(ctx, r))
	mustIs(t, s.CreateRun(ctx, r), ErrConflict)
	mustIs(t, s.CreateRun(ctx, Run{Agent: "x"}), ErrInvalid)
	mustIs(t, s.CreateRun(ctx, Run{ID: "x"}), ErrInvalid)

	got, err := s.GetRun(ctx, "r1")
	mustNil(t, err)
	want := r
	want.Status = api.StatusRunning
	want.StartedAt = utc(c.Now())
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GetRun = %+v\nwant %+v", got, want)
	}
	// No aliasing: changing what we got or gave does not change the store.
	got.Context["k"] = "changed"
	r.Context["k"] = "changed too"
	again, _ := s.GetRun(ctx, "r1")
	if again.Context["k"] != "v" {
		t.Fatalf("store aliases the context map: %q", again.Context["k"])
	}

	fin := c.Now().Add(time.Minute)
	upd := Run{
		ID: "r1", Task: "ignored: immutable", Agent: "ignored", Status: api.StatusCompleted, Answer: "done", Verdict: "ok",
		Findings:   []api.Finding{{Key: "k1", Severity: api.SeverityHigh}},
		Iterations: 3, Tokens: api.Tokens{Prompt: 10, Completion: 5}, Error: "",
		Delegation: &api.Delegation{To: "k8s-engineer", Sent: true}, FinishedAt: &fin,
	}
	mustNil(t, s.UpdateRun(ctx, upd))
	upd.Findings[0].Key = "mutated after write"
	got, err = s.GetRun(ctx, "r1")
	mustNil(t, err)
	if got.Task != "look" || got.Agent != "platform-sre" {
		t.Fatalf("UpdateRun changed immutable fields: %+v", got)
	}
	if got.Status != api.StatusCompleted || got.Answer != "done" || got.Iterations != 3 || got.Tokens.Prompt != 10 ||
		got.Delegation == nil || got.Delegation.To != "k8s-engineer" || got.FinishedAt == nil || !got.FinishedAt.Equal(utc(fin)) ||
		len(got.Findings) != 1 || got.Findings[0].Key != "k1" {
		t.Fatalf("UpdateRun did not store mutable fields: %+v", got)
	}
	if got.FinishedAt.Location() != time.UTC || got.StartedAt.Location() != time.UTC {
		t.Fatalf("times are not UTC: %v %v", got.StartedAt, got.FinishedAt)
	}

	mustIs(t, s.UpdateRun(ctx, Run{ID: "missing", Status: "x"}), ErrNotFound)
	_, err = s.GetRun(ctx, "missing")
	mustIs(t, err, ErrNotFound)
}

func contractRunPages(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	base := c.Now()
	// Seven runs; three share one start time so ties are broken by id.
	starts := map[string]time.Duration{"a": 0, "b": time.Second, "c": time.Second, "d": time.Second, "e": 2 * time.Second, "f": 3 * time.Second, "g": 4 * time.Second}
	for id, off := range starts {
		agent := "noor"
		if id == "e" || id == "g" {
			agent = "sol"
		}
		mustNil(t, s.CreateRun(ctx, Run{ID: id, Agent: agent, WorkflowType: api.WorkflowPulseTask, Status: api.StatusCompleted, StartedAt: base.Add(off)}))
	}
	var ids []string
	cur := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		rs, next, err := s.ListRuns(ctx, RunFilter{}, Page{Limit: 3, Cursor: cur})
		mustNil(t, err)
		if len(rs) > 3 {
			t.Fatalf("page of %d > limit 3", len(rs))
		}
		for _, r := range rs {
			ids = append(ids, r.ID)
		}
		if next == "" {
			break
		}
		cur = next
	}
	if got, want := strings.Join(ids, ""), "gfedcba"; got != want {
		t.Fatalf("runs in order %q, want %q", got, want)
	}

	filters := []struct {
		f    RunFilter
		want string
	}{
		{RunFilter{Agent: "sol"}, "ge"},
		{RunFilter{Agent: "noor", Status: api.StatusCompleted}, "fdcba"},
		{RunFilter{WorkflowType: api.WorkflowAlert}, ""},
		{RunFilter{Status: api.StatusFailed}, ""},
	}
	for _, tc := range filters {
		rs, next, err := s.ListRuns(ctx, tc.f, Page{})
		mustNil(t, err)
		var got string
		for _, r := range rs {
			got += r.ID
		}
		if got != tc.want || next != "" {
			t.Errorf("ListRuns(%+v) = %q next %q, want %q", tc.f, got, next, tc.want)
		}
	}
	// An exact page has no next.
	rs, next, err := s.ListRuns(ctx, RunFilter{}, Page{Limit: 7})
	mustNil(t, err)
	if len(rs) != 7 || next != "" {
		t.Fatalf("full page: %d runs, next %q", len(rs), next)
	}
	for _, bad := range []string{"garbage!", "Zm9v", encodeCursor(base, "")} {
		_, _, err = s.ListRuns(ctx, RunFilter{}, Page{Cursor: bad})
		mustIs(t, err, ErrInvalid)
	}
}

func contractEvents(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	mustNil(t, s.CreateRun(ctx, Run{ID: "r", Agent: "noor"}))
	data := []byte(`{"b": 1,  "a": [2]}`) // kept byte for byte
	mustNil(t, s.AppendEvents(ctx,
		Event{RunID: "r", Seq: 2, Type: "tool_call", Data: data},
		Event{RunID: "r", Seq: 0, Type: "run_start"},
	))
	mustNil(t, s.AppendEvents(ctx, Event{RunID: "r", Seq: 1, Type: "llm_request", Time: c.Now().Add(time.Second)}))
	// A retried append keeps the first write.
	mustNil(t, s.AppendEvents(ctx, Event{RunID: "r", Seq: 2, Type: "replayed"}))
	mustIs(t, s.AppendEvents(ctx, Event{RunID: "r", Seq: 3, Type: "x", Data: []byte("{nope")}), ErrInvalid)
	mustIs(t, s.AppendEvents(ctx, Event{RunID: "r", Seq: 3}), ErrInvalid)
	mustIs(t, s.AppendEvents(ctx, Event{Seq: 3, Type: "x"}), ErrInvalid)

	evs, err := s.Events(ctx, "r")
	mustNil(t, err)
	want := []Event{
		{RunID: "r", Seq: 0, Type: "run_start", Time: utc(c.Now())},
		{RunID: "r", Seq: 1, Type: "llm_request", Time: utc(c.Now().Add(time.Second))},
		{RunID: "r", Seq: 2, Type: "tool_call", Time: utc(c.Now()), Data: data},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Fatalf("Events = %+v\nwant %+v", evs, want)
	}
	evs, err = s.Events(ctx, "none")
	mustNil(t, err)
	if len(evs) != 0 {
		t.Fatalf("events of an unknown run: %v", evs)
	}
}

func contractFindings(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	f := func(k string) api.Finding {
		return api.Finding{Key: k, Severity: api.SeverityLow, Kind: "Pod", Name: k}
	}
	mustNil(t, s.RecordFindings(ctx, "r1", "noor", c.Now(), []api.Finding{f("a"), f("b")}))
	mustNil(t, s.RecordFindings(ctx, "r2", "sol", c.Now().Add(time.Second), []api.Finding{f("c")}))
	mustNil(t, s.RecordFindings(ctx, "r3", "noor", time.Time{}, nil))
	mustIs(t, s.RecordFindings(ctx, "", "noor", c.Now(), []api.Finding{f("x")}), ErrInvalid)

	all, next, err := s.ListFindings(ctx, "", Page{})
	mustNil(t, err)
	if len(all) != 3 || next != "" || all[0].Finding.Key != "c" || all[0].RunID != "r2" || all[0].Agent != "sol" || !all[0].At.Equal(utc(c.Now().Add(time.Second))) {
		t.Fatalf("ListFindings = %+v", all)
	}
	if all[1].ID == "" || all[1].ID == all[2].ID {
		t.Fatalf("finding ids: %q %q", all[1].ID, all[2].ID)
	}
	var keys []string
	cur := ""
	for {
		fs, next, err := s.ListFindings(ctx, "noor", Page{Limit: 1, Cursor: cur})
		mustNil(t, err)
		for _, r := range fs {
			keys = append(keys, r.Finding.Key)
		}
		if next == "" {
			break
		}
		cur = next
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "a,b" {
		t.Fatalf("noor's findings by pages of 1: %v", keys)
	}
	if !reflect.DeepEqual(all[1].Finding, f(all[1].Finding.Key)) {
		t.Fatalf("finding not kept whole: %+v", all[1].Finding)
	}
}

func contractPulse(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	st, err := s.PulseStates(ctx, "noor")
	mustNil(t, err)
	if len(st) != 0 {
		t.Fatalf("fresh pulse states: %v", st)
	}
	mustNil(t, s.SetPulseState(ctx, PulseState{Agent: "noor", Task: "sweep", LastRun: c.Now(), Outcome: "completed", RunID: "r1"}))
	mustNil(t, s.SetPulseState(ctx, PulseState{Agent: "noor", Task: "daily", LastRun: c.Now(), Outcome: "partial", RunID: "r2"}))
	mustNil(t, s.SetPulseState(ctx, PulseState{Agent: "noor", Task: "sweep", LastRun: c.Now().Add(time.Hour), Outcome: "failed", RunID: "r3"}))
	mustNil(t, s.SetPulseState(ctx, PulseState{Agent: "sol", Task: "sweep", LastRun: c.Now()}))
	mustIs(t, s.SetPulseState(ctx, PulseState{Agent: "noor"}), ErrInvalid)
	st, err = s.PulseStates(ctx, "noor")
	mustNil(t, err)
	want := []PulseState{
		{Agent: "noor", Task: "daily", LastRun: utc(c.Now()), Outcome: "partial", RunID: "r2"},
		{Agent: "noor", Task: "sweep", LastRun: utc(c.Now().Add(time.Hour)), Outcome: "failed", RunID: "r3"},
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("PulseStates = %+v\nwant %+v", st, want)
	}

	steps := []struct {
		name    string
		advance time.Duration
		holder  string
		ttl     time.Duration
		want    bool
	}{
		{"free: a takes it", 0, "a", time.Minute, true},
		{"held by a: b fails", 0, "b", time.Minute, false},
		{"a renews", 30 * time.Second, "a", time.Minute, true},
		{"still a's after the first ttl", 40 * time.Second, "b", time.Minute, false},
		{"expired: b takes it", 21 * time.Second, "b", time.Minute, true},
		{"a releasing b's lock does nothing", 0, "a", 0, false},
		{"still b's", 0, "a", time.Minute, false},
		{"b releases", 0, "b", 0, false},
		{"released: a takes it", 0, "a", time.Minute, true},
	}
	for _, step := range steps {
		c.Advance(step.advance)
		got, err := s.TryPulseLock(ctx, "noor", step.holder, step.ttl)
		mustNil(t, err)
		if got != step.want {
			t.Fatalf("%s: TryPulseLock = %v", step.name, got)
		}
	}
	ok, err := s.TryPulseLock(ctx, "sol", "b", time.Minute)
	mustNil(t, err)
	if !ok {
		t.Fatal("locks are not per agent")
	}
	_, err = s.TryPulseLock(ctx, "noor", "", time.Minute)
	mustIs(t, err, ErrInvalid)
}

func contractMemoryFiles(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	paths := []struct {
		path string
		ok   bool
	}{
		{"/memories/beliefs.md", true},
		{"/memories/a.md", true},
		{"/memories/0-x_y.z.md", true},
		{"/memories/.hidden.md", false},
		{"/memories/-x.md", false},
		{"/memories/a..b.md", false},
		{"/memories/../etc.md", false},
		{"/memories/sub/x.md", false},
		{"/memories/Upper.md", false},
		{"/memories/.md", false},
		{"/memories/x.txt", false},
		{"memories/x.md", false},
		{"/data/x.md", false},
		{"", false},
		{"/memories/" + strings.Repeat("a", 129) + ".md", false},
	}
	for _, p := range paths {
		err := s.WriteMemory(ctx, MemoryFile{Agent: "noor", Path: p.path, Content: "x"})
		if p.ok {
			mustNil(t, err)
		} else {
			mustIs(t, err, ErrInvalid)
			_, err = s.ReadMemory(ctx, "noor", p.path)
			mustIs(t, err, ErrInvalid)
		}
	}
	mustIs(t, s.WriteMemory(ctx, MemoryFile{Agent: "noor", Path: "/memories/big.md", Content: strings.Repeat("x", MaxMemoryBytes+1)}), ErrInvalid)
	mustIs(t, s.WriteMemory(ctx, MemoryFile{Agent: "noor", Path: "/memories/nul.md", Content: "a\x00b"}), ErrInvalid)
	mustIs(t, s.WriteMemory(ctx, MemoryFile{Agent: "noor", Path: "/memories/bad.md", Content: "\xff"}), ErrInvalid)
	mustIs(t, s.WriteMemory(ctx, MemoryFile{Path: "/memories/x.md"}), ErrInvalid)
	mustNil(t, s.WriteMemory(ctx, MemoryFile{Agent: "noor", Path: "/memories/max.md", Content: strings.Repeat("é", MaxMemoryBytes/2)}))

	c.Advance(time.Minute)
	mustNil(t, s.WriteMemory(ctx, MemoryFile{Agent: "noor", Path: "/memories/beliefs.md", Content: "v2 ✓"}))
	mustNil(t, s.WriteMemory(ctx, MemoryFile{Agent: "sol", Path: "/memories/beliefs.md", Content: "sol's"}))
	f, err := s.ReadMemory(ctx, "noor", "/memories/beliefs.md")
	mustNil(t, err)
	if f.Content != "v2 ✓" || f.Agent != "noor" || !f.UpdatedAt.Equal(utc(c.Now())) {
		t.Fatalf("ReadMemory = %+v", f)
	}
	_, err = s.ReadMemory(ctx, "ada", "/memories/beliefs.md")
	mustIs(t, err, ErrNotFound)
	list, err := s.ListMemory(ctx, "noor")
	mustNil(t, err)
	var got []string
	for _, f := range list {
		got = append(got, f.Path)
	}
	if strings.Join(got, " ") != "/memories/0-x_y.z.md /memories/a.md /memories/beliefs.md /memories/max.md" {
		t.Fatalf("ListMemory = %v", got)
	}
	list, err = s.ListMemory(ctx, "nobody")
	mustNil(t, err)
	if len(list) != 0 {
		t.Fatalf("ListMemory(nobody) = %v", list)
	}
}

func contractA2A(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	e := A2AEntry{
		ID: "m1", Agent: "noor", Direction: "sent", Verb: "delegate", Caller: "noor", Callee: "k8s-engineer",
		Depth: 1, DiscussionID: "d", TraceID: "t", Text: "restart web", Data: []byte(`{"finding": {"key": "k"}}`),
		Outcome: "accepted", CallerRunID: "r1",
	}
	mustNil(t, s.RecordA2A(ctx, e))
	mustIs(t, s.RecordA2A(ctx, e), ErrConflict)
	mustIs(t, s.RecordA2A(ctx, A2AEntry{ID: "m2"}), ErrInvalid)
	c.Advance(time.Second)
	mustNil(t, s.RecordA2A(ctx, A2AEntry{ID: "m2", Agent: "k8s-engineer", Direction: "received", Verb: "delegate", Text: "restart web"}))
	c.Advance(time.Second)
	mustNil(t, s.RecordA2A(ctx, A2AEntry{Agent: "noor", Verb: "ask", Text: "generated id"}))

	fin := c.Now()
	upd := e
	upd.Text = "immutable"
	upd.Outcome, upd.CalleeRunID, upd.Answer, upd.FinishedAt = "completed", "r9", "restarted", &fin
	mustNil(t, s.UpdateA2A(ctx, upd))
	mustIs(t, s.UpdateA2A(ctx, A2AEntry{ID: "nope"}), ErrNotFound)

	list, next, err := s.ListA2A(ctx, "noor", Page{})
	mustNil(t, err)
	if len(list) != 2 || next != "" || list[0].Text != "generated id" || list[0].ID == "" {
		t.Fatalf("ListA2A(noor) = %+v", list)
	}
	want := e
	want.At = utc(newClock().Now())
	want.Outcome, want.CalleeRunID, want.Answer, want.FinishedAt = "completed", "r9", "restarted", &[]time.Time{utc(fin)}[0]
	if !reflect.DeepEqual(list[1], want) {
		t.Fatalf("entry = %+v\nwant %+v", list[1], want)
	}
	all, next, err := s.ListA2A(ctx, "", Page{Limit: 2})
	mustNil(t, err)
	if len(all) != 2 || next == "" {
		t.Fatalf("ListA2A(all, 2) = %d next %q", len(all), next)
	}
	rest, next, err := s.ListA2A(ctx, "", Page{Limit: 2, Cursor: next})
	mustNil(t, err)
	if len(rest) != 1 || next != "" || rest[0].ID != "m1" {
		t.Fatalf("second page = %+v next %q", rest, next)
	}
}

func contractDeliveries(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	_, err := s.LastDelivery(ctx, "noor", "sweep", "discord")
	mustIs(t, err, ErrNotFound)
	mustNil(t, s.StampDelivery(ctx, DeliveryStamp{Agent: "noor", Task: "sweep", Target: "discord", BodyHash: "h1"}))
	c.Advance(time.Minute)
	mustNil(t, s.StampDelivery(ctx, DeliveryStamp{Agent: "noor", Task: "sweep", Target: "discord", BodyHash: "h2"}))
	mustNil(t, s.StampDelivery(ctx, DeliveryStamp{Agent: "noor", Task: "sweep", Target: "slack", BodyHash: "h3", Thread: "1234567890"}))
	mustIs(t, s.StampDelivery(ctx, DeliveryStamp{Agent: "noor", Task: "sweep"}), ErrInvalid)
	if got, err := s.LastDelivery(ctx, "noor", "sweep", "slack"); err != nil || got.Thread != "1234567890" {
		t.Fatalf("LastDelivery(slack) = %+v, %v; want the thread kept", got, err)
	}
	got, err := s.LastDelivery(ctx, "noor", "sweep", "discord")
	mustNil(t, err)
	want := DeliveryStamp{Agent: "noor", Task: "sweep", Target: "discord", BodyHash: "h2", At: utc(c.Now())}
	if got != want {
		t.Fatalf("LastDelivery = %+v, want %+v", got, want)
	}
}

// decider is a small version of the core's decision: dispatch when the
// alert is not in flight and the agent has a free slot, else deduped or
// busy (pending).
func decider(now func() time.Time, calls *[]string) DecideFunc {
	return func(prev AlertState, ok bool, inFlight int) (AlertDecision, AlertState) {
		if calls != nil {
			*calls = append(*calls, fmt.Sprintf("ok=%v inflight=%d", ok, inFlight))
		}
		st := prev
		st.Alertname = "KubePodCrashLooping"
		st.Firing = true
		st.LastSeen = now()
		if !ok {
			st.FirstSeen = now()
		}
		d := AlertDecision{Alertname: "KubePodCrashLooping", Status: "firing"}
		switch {
		case prev.InFlight:
			d.Decision, d.Reason = DecisionDeduped, "in flight"
		case inFlight > 0:
			d.Decision, d.Reason = DecisionBusy, "agent busy"
			st.Pending = true
		default:
			d.Decision, d.Reason = DecisionDispatched, "new"
			st.LastInvestigated = now()
			st.Investigations++
		}
		return d, st
	}
}

func contractApplyAlert(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	var calls []string
	fn := decider(c.Now, &calls)
	mkInv := func(d AlertDecision) *Investigation {
		return &Investigation{Alert: []byte(`{"labels":{"alertname":"KubePodCrashLooping"}}`), RunID: "pending"}
	}

	d, err := s.ApplyAlert(ctx, "fp1", "platform-sre", fn, mkInv)
	mustNil(t, err)
	if d.Decision != DecisionDispatched || d.InvestigationID == "" || d.ID == "" || d.Fingerprint != "fp1" || d.Agent != "platform-sre" || !d.At.Equal(utc(c.Now())) {
		t.Fatalf("first decision = %+v", d)
	}
	st, err := s.GetAlertState(ctx, "fp1")
	mustNil(t, err)
	if !st.InFlight || st.InvestigationID != d.InvestigationID || st.Investigations != 1 || st.Agent != "platform-sre" || !st.LastInvestigated.Equal(utc(c.Now())) {
		t.Fatalf("state after dispatch = %+v", st)
	}
	inv, err := s.GetInvestigation(ctx, d.InvestigationID)
	mustNil(t, err)
	if inv.Status != api.StatusRunning || inv.Fingerprint != "fp1" || inv.Agent != "platform-sre" || inv.Alertname != "KubePodCrashLooping" ||
		string(inv.Alert) != `{"labels":{"alertname":"KubePodCrashLooping"}}` || inv.RunID != "pending" || inv.FinishedAt != nil {
		t.Fatalf("investigation = %+v", inv)
	}

	c.Advance(time.Second)
	d2, err := s.ApplyAlert(ctx, "fp1", "platform-sre", fn, mkInv)
	mustNil(t, err)
	if d2.Decision != DecisionDeduped {
		t.Fatalf("same alert again: %s", d2.Decision)
	}
	c.Advance(time.Second)
	d3, err := s.ApplyAlert(ctx, "fp2", "platform-sre", fn, mkInv)
	mustNil(t, err)
	if d3.Decision != DecisionBusy || d3.InvestigationID != "" {
		t.Fatalf("other alert, same agent: %+v", d3)
	}
	c.Advance(time.Second)
	d4, err := s.ApplyAlert(ctx, "fp3", "k8s-engineer", fn, nil)
	mustNil(t, err)
	if d4.Decision != DecisionDispatched {
		t.Fatalf("other agent: %+v", d4)
	}
	wantCalls := []string{"ok=false inflight=0", "ok=true inflight=1", "ok=false inflight=1", "ok=false inflight=0"}
	if countsRepeats(s) {
		// The repeat is decided from the state Postgres remembers, without
		// reading the agent's in-flight count (a repeat never depends on it).
		wantCalls[1] = "ok=true inflight=0"
	}
	// fn is pure and the store may call it again: Postgres decides
	// dispatched and busy a second time under the agent lock.
	calls = slices.Compact(calls)
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Fatalf("fn saw %v, want %v", calls, wantCalls)
	}
	pend, err := s.PendingAlerts(ctx, "platform-sre")
	mustNil(t, err)
	if len(pend) != 1 || pend[0].Fingerprint != "fp2" {
		t.Fatalf("PendingAlerts = %+v", pend)
	}

	// Bad input changes nothing.
	_, err = s.ApplyAlert(ctx, "fp9", "platform-sre", func(AlertState, bool, int) (AlertDecision, AlertState) {
		return AlertDecision{Decision: "maybe"}, AlertState{}
	}, nil)
	mustIs(t, err, ErrInvalid)
	_, err = s.GetAlertState(ctx, "fp9")
	mustIs(t, err, ErrNotFound)
	_, err = s.ApplyAlert(ctx, "", "platform-sre", fn, nil)
	mustIs(t, err, ErrInvalid)
	_, err = s.ApplyAlert(ctx, "fp9", "", fn, nil)
	mustIs(t, err, ErrInvalid)

	// Finishing frees the slot: the pending alert dispatches now.
	mustIs(t, s.FinishInvestigation(ctx, Investigation{ID: d.InvestigationID, Status: api.StatusRunning}), ErrInvalid)
	mustIs(t, s.FinishInvestigation(ctx, Investigation{ID: "nope", Status: api.StatusCompleted}), ErrNotFound)
	c.Advance(time.Minute)
	mustNil(t, s.FinishInvestigation(ctx, Investigation{
		ID: d.InvestigationID, Status: api.StatusCompleted, RunID: "run-1", Answer: "oom",
		Findings: []api.Finding{{Key: "f", Severity: api.SeverityHigh}},
	}))
	inv, err = s.GetInvestigation(ctx, d.InvestigationID)
	mustNil(t, err)
	if inv.Status != api.StatusCompleted || inv.RunID != "run-1" || inv.Answer != "oom" || len(inv.Findings) != 1 ||
		inv.FinishedAt == nil || !inv.FinishedAt.Equal(utc(c.Now())) || inv.Fingerprint != "fp1" || len(inv.Alert) == 0 {
		t.Fatalf("finished investigation = %+v", inv)
	}
	st, err = s.GetAlertState(ctx, "fp1")
	mustNil(t, err)
	if st.InFlight {
		t.Fatalf("slot not freed: %+v", st)
	}
	calls = nil
	d5, err := s.ApplyAlert(ctx, "fp2", "platform-sre", fn, mkInv)
	mustNil(t, err)
	if d5.Decision != DecisionDispatched || calls[0] != "ok=true inflight=0" {
		t.Fatalf("pending alert after finish: %+v (fn saw %v)", d5, calls)
	}
	pend, err = s.PendingAlerts(ctx, "platform-sre")
	mustNil(t, err)
	if len(pend) != 0 {
		t.Fatalf("dispatch did not clear pending: %+v", pend)
	}
	_, err = s.GetInvestigation(ctx, "nope")
	mustIs(t, err, ErrNotFound)
}

func contractAlertLists(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	fn := decider(c.Now, nil)
	var dispatched []string
	for i := range 5 {
		d, err := s.ApplyAlert(ctx, fmt.Sprintf("fp%d", i), fmt.Sprintf("agent%d", i%3), fn, nil)
		mustNil(t, err)
		if d.Decision == DecisionDispatched {
			dispatched = append(dispatched, d.InvestigationID)
		}
		if i%2 == 0 {
			c.Advance(time.Second)
		}
	}
	if len(dispatched) != 3 {
		t.Fatalf("dispatched %d, want 3 (one per agent)", len(dispatched))
	}
	ds, next, err := s.ListDecisions(ctx, Page{Limit: 2})
	mustNil(t, err)
	all := ds
	for next != "" {
		ds, next, err = s.ListDecisions(ctx, Page{Limit: 2, Cursor: next})
		mustNil(t, err)
		all = append(all, ds...)
	}
	if len(all) != 5 {
		t.Fatalf("%d decisions", len(all))
	}
	for i := 1; i < len(all); i++ {
		if newerFirst(all[i].At, all[i].ID, all[i-1].At, all[i-1].ID) {
			t.Fatalf("decisions out of order at %d: %+v", i, all)
		}
	}
	if all[0].Fingerprint != "fp4" || all[4].Fingerprint != "fp0" {
		t.Fatalf("newest decision %s, oldest %s", all[0].Fingerprint, all[4].Fingerprint)
	}
	invs, next, err := s.ListInvestigations(ctx, Page{})
	mustNil(t, err)
	if len(invs) != 3 || next != "" || invs[0].ID != dispatched[2] || invs[2].ID != dispatched[0] {
		t.Fatalf("ListInvestigations = %+v", invs)
	}
	_, _, err = s.ListDecisions(ctx, Page{Cursor: "x"})
	mustIs(t, err, ErrInvalid)
}

// contractIncidentKeys: the state is the incident's (a correlation key),
// each decision names the alert it decided; joined and dropped are stored.
func contractIncidentKeys(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	key := "prod/owner/Deployment/api"
	step := func(fp, decision string, pending bool) AlertDecision {
		t.Helper()
		d, err := s.ApplyAlert(ctx, key, "platform-sre", func(prev AlertState, ok bool, _ int) (AlertDecision, AlertState) {
			st := prev
			st.Firing, st.LastSeen, st.Pending = true, c.Now(), pending
			return AlertDecision{Fingerprint: fp, Alertname: "KubePodCrashLooping", Status: "firing", Decision: decision,
				InvestigationID: prev.InvestigationID, Reason: decision + " " + fp}, st
		}, nil)
		mustNil(t, err)
		return d
	}
	first := step("pod-a", DecisionDispatched, false)
	joined := step("pod-b", DecisionJoined, false)
	if first.Fingerprint != "pod-a" || joined.Fingerprint != "pod-b" || joined.InvestigationID != first.InvestigationID || joined.InvestigationID == "" {
		t.Fatalf("decisions %+v then %+v: want each alert's own fingerprint and the one investigation", first, joined)
	}
	inv, err := s.GetInvestigation(ctx, first.InvestigationID)
	mustNil(t, err)
	if inv.Fingerprint != key {
		t.Fatalf("investigation fingerprint %q, want the incident key", inv.Fingerprint)
	}
	mustNil(t, s.FinishInvestigation(ctx, Investigation{ID: inv.ID, Status: "completed"}))
	step("pod-c", DecisionBusy, true)
	dropped := step("pod-c", DecisionDropped, false)
	if dropped.Decision != DecisionDropped {
		t.Fatalf("dropped decision = %+v", dropped)
	}
	st, err := s.GetAlertState(ctx, key)
	mustNil(t, err)
	if st.Pending || st.InFlight {
		t.Fatalf("state after the drop = %+v, want neither pending nor in flight", st)
	}
	ds, _, err := s.ListDecisions(ctx, Page{Limit: 10})
	mustNil(t, err)
	var got []string
	for _, d := range ds {
		got = append(got, d.Decision+":"+d.Fingerprint)
	}
	if fmt.Sprint(got) != "[dropped:pod-c busy:pod-c joined:pod-b dispatched:pod-a]" {
		t.Fatalf("decisions newest first = %v", got)
	}
}

func contractApplyAlertConcurrent(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	const n = 16
	fn := decider(c.Now, nil)
	cases := []struct {
		name string
		fp   func(i int) string
	}{
		{"one fingerprint", func(int) string { return "same" }},
		{"many fingerprints, one agent", func(i int) string { return fmt.Sprintf("fp-%d", i) }},
	}
	for ci, tc := range cases {
		agent := fmt.Sprintf("agent-%d", ci)
		var wg sync.WaitGroup
		got := make([]string, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				d, err := s.ApplyAlert(ctx, tc.fp(i), agent, fn, nil)
				got[i], errs[i] = d.Decision, err
			})
		}
		wg.Wait()
		count := 0
		for i := range n {
			mustNil(t, errs[i])
			if got[i] == DecisionDispatched {
				count++
			}
		}
		if count != 1 {
			t.Fatalf("%s: %d dispatches, want exactly 1: %v", tc.name, count, got)
		}
	}
}

// Model answers and pod logs can hold NUL and invalid UTF-8: the run is
// recorded (cleaned the same way by both stores), never failed.
func contractDirtyText(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	dirty := "a\x00b\xffc"
	const want = "ab\uFFFDc"
	f := api.Finding{Key: "k", Detail: dirty, Reason: dirty}
	mustNil(t, s.CreateRun(ctx, Run{ID: "r", Agent: "noor", Task: dirty, Context: map[string]string{"k": dirty}}))
	mustNil(t, s.UpdateRun(ctx, Run{ID: "r", Status: "completed", Answer: dirty, Findings: []api.Finding{f},
		Delegation: &api.Delegation{To: "k8s-engineer", Finding: f, Result: dirty}}))
	r, err := s.GetRun(ctx, "r")
	mustNil(t, err)
	if r.Task != want || r.Answer != want || r.Context["k"] != want || r.Findings[0].Detail != want || r.Delegation.Result != want || r.Delegation.Finding.Reason != want {
		t.Fatalf("run = %+v", r)
	}
	mustNil(t, s.AppendEvents(ctx, Event{RunID: "r", Type: "tool_result", Data: []byte("{\"out\": \"\xff \\u0000\"}")}))
	evs, err := s.Events(ctx, "r")
	mustNil(t, err)
	if string(evs[0].Data) != "{\"out\": \"\uFFFD \\u0000\"}" {
		t.Fatalf("event data = %q", evs[0].Data)
	}
	mustNil(t, s.RecordFindings(ctx, "r", "noor", time.Time{}, []api.Finding{f}))
	fs, _, err := s.ListFindings(ctx, "noor", Page{})
	mustNil(t, err)
	if fs[0].Finding.Detail != want {
		t.Fatalf("finding = %+v", fs[0])
	}
	mustNil(t, s.RecordA2A(ctx, A2AEntry{ID: "m", Agent: "noor", Text: dirty}))
	mustNil(t, s.UpdateA2A(ctx, A2AEntry{ID: "m", Answer: dirty}))
	es, _, err := s.ListA2A(ctx, "noor", Page{})
	mustNil(t, err)
	if es[0].Text != want || es[0].Answer != want {
		t.Fatalf("a2a = %+v", es[0])
	}
	d, err := s.ApplyAlert(ctx, "fp", "noor", func(AlertState, bool, int) (AlertDecision, AlertState) {
		return AlertDecision{Decision: DecisionDispatched, Reason: dirty, Alertname: dirty}, AlertState{}
	}, func(AlertDecision) *Investigation { return &Investigation{Answer: dirty} })
	mustNil(t, err)
	mustNil(t, s.FinishInvestigation(ctx, Investigation{ID: d.InvestigationID, Status: "failed", Error: dirty, Findings: []api.Finding{f}}))
	inv, err := s.GetInvestigation(ctx, d.InvestigationID)
	mustNil(t, err)
	if inv.Error != want || inv.Alertname != want || inv.Findings[0].Detail != want || d.Reason != want {
		t.Fatalf("investigation = %+v, decision = %+v", inv, d)
	}
	// Identifiers are refused rather than rewritten.
	mustIs(t, s.CreateRun(ctx, Run{ID: "r\x00", Agent: "noor"}), ErrInvalid)
}

// contractBadKeys: a lookup by an id holding a control character is bad
// input (ErrInvalid, a 400), never a database error; a rejected alert is
// recorded without touching any alert state, whatever its fingerprint.
func contractBadKeys(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	for _, id := range []string{"r\x00", "\x00", "a\x01b", "a\nb", "a\x7f", "a\u0085", "\xff"} {
		_, err := s.GetRun(ctx, id)
		mustIs(t, err, ErrInvalid)
		_, err = s.Events(ctx, id)
		mustIs(t, err, ErrInvalid)
		_, err = s.GetInvestigation(ctx, id)
		mustIs(t, err, ErrInvalid)
		_, err = s.GetAlertState(ctx, id)
		mustIs(t, err, ErrInvalid)
	}
	_, err := s.GetRun(ctx, "no-such-run")
	mustIs(t, err, ErrNotFound)

	mustNil(t, s.RecordDecision(ctx, AlertDecision{Fingerprint: "ab\x00cd", Alertname: "X\x00", Status: "firing",
		Decision: DecisionRejected, Reason: "fingerprint holds a control character"}))
	mustNil(t, s.RecordDecision(ctx, AlertDecision{Decision: DecisionRejected, Reason: "fingerprint is blank"}))
	mustIs(t, s.RecordDecision(ctx, AlertDecision{Decision: DecisionRejected}), ErrInvalid)
	mustIs(t, s.RecordDecision(ctx, AlertDecision{Decision: DecisionDispatched, Reason: "x"}), ErrInvalid)
	ds, _, err := s.ListDecisions(ctx, Page{})
	mustNil(t, err)
	if len(ds) != 2 {
		t.Fatalf("decisions: %+v", ds)
	}
	for _, d := range ds {
		if d.Decision != DecisionRejected || d.ID == "" || d.At.IsZero() || strings.ContainsRune(d.Fingerprint+d.Alertname, 0) {
			t.Errorf("decision %+v", d)
		}
	}
	_, err = s.GetAlertState(ctx, "abcd")
	mustIs(t, err, ErrNotFound)
	// ApplyAlert never records a rejected decision: it would write a state.
	_, err = s.ApplyAlert(ctx, "fp", "noor", func(AlertState, bool, int) (AlertDecision, AlertState) {
		return AlertDecision{Decision: DecisionRejected, Reason: "x"}, AlertState{}
	}, nil)
	mustIs(t, err, ErrInvalid)
}

// contractPrune: Prune deletes, per scope, the records older than the
// cutoff, oldest first and at most limit of each kind per call; a run goes
// with its events; an alert state in flight stays however old.
func contractPrune(t *testing.T, s fullStore, c *clock) {
	ctx := context.Background()
	// Three old generations, one hour apart, then the cutoff, then new.
	for i := range 3 {
		id := fmt.Sprintf("old-%d", i)
		mustNil(t, s.CreateRun(ctx, Run{ID: id, Agent: "noor", StartedAt: c.Now()}))
		mustNil(t, s.AppendEvents(ctx, Event{RunID: id, Seq: 0, Type: "run_start"}, Event{RunID: id, Seq: 1, Type: "run_finish"}))
		mustNil(t, s.RecordFindings(ctx, id, "noor", c.Now(), []api.Finding{{Key: id, Severity: "high"}}))
		mustNil(t, s.RecordA2A(ctx, A2AEntry{Agent: "noor", Verb: "ask", Text: id, At: c.Now()}))
		fp := fmt.Sprintf("fp-old-%d", i)
		_, err := s.ApplyAlert(ctx, fp, fmt.Sprintf("agent-%d", i), decider(c.Now, nil), nil)
		mustNil(t, err)
		c.Advance(time.Hour)
	}
	// The first old alert's investigation is finished; the others stay in
	// flight: their alert states are kept however old.
	invs, _, err := s.ListInvestigations(ctx, Page{})
	mustNil(t, err)
	if len(invs) != 3 {
		t.Fatalf("investigations: %d", len(invs))
	}
	for _, inv := range invs {
		if inv.Fingerprint == "fp-old-0" {
			mustNil(t, s.FinishInvestigation(ctx, Investigation{ID: inv.ID, Status: "completed"}))
		}
	}
	cutoff := c.Now()
	c.Advance(time.Hour)
	mustNil(t, s.CreateRun(ctx, Run{ID: "new", Agent: "noor", StartedAt: c.Now()}))
	mustNil(t, s.AppendEvents(ctx, Event{RunID: "new", Seq: 0, Type: "run_start"}))
	mustNil(t, s.RecordFindings(ctx, "new", "noor", c.Now(), []api.Finding{{Key: "new", Severity: "high"}}))
	mustNil(t, s.RecordA2A(ctx, A2AEntry{Agent: "noor", Verb: "ask", Text: "new", At: c.Now()}))
	_, err = s.ApplyAlert(ctx, "fp-new", "agent-new", decider(c.Now, nil), nil)
	mustNil(t, err)

	_, err = s.Prune(ctx, Scope(9), cutoff, 1)
	mustIs(t, err, ErrInvalid)
	_, err = s.Prune(ctx, AgentData, cutoff, 0)
	mustIs(t, err, ErrInvalid)

	// One of each, oldest first.
	n, err := s.Prune(ctx, AgentData, cutoff, 1)
	mustNil(t, err)
	if n != (Pruned{Runs: 1, Events: 2, Findings: 1, A2A: 1}) {
		t.Fatalf("agent prune, limit 1: %+v", n)
	}
	if _, err := s.GetRun(ctx, "old-0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("oldest run not pruned first: %v", err)
	}
	if evs, err := s.Events(ctx, "old-0"); err != nil || len(evs) != 0 {
		t.Fatalf("events of a pruned run: %v %v", evs, err)
	}
	n, err = PruneOlder(ctx, s, AgentData, cutoff, 0)
	mustNil(t, err)
	if n != (Pruned{Runs: 2, Events: 4, Findings: 2, A2A: 2}) {
		t.Fatalf("agent prune, the rest: %+v", n)
	}
	runs, _, err := s.ListRuns(ctx, RunFilter{}, Page{})
	mustNil(t, err)
	fs, _, err := s.ListFindings(ctx, "", Page{})
	mustNil(t, err)
	a2a, _, err := s.ListA2A(ctx, "", Page{})
	mustNil(t, err)
	evs, err := s.Events(ctx, "new")
	mustNil(t, err)
	if len(runs) != 1 || runs[0].ID != "new" || len(fs) != 1 || len(a2a) != 1 || a2a[0].Text != "new" || len(evs) != 1 {
		t.Fatalf("after agent prune: runs %v findings %d a2a %d events %d", runs, len(fs), len(a2a), len(evs))
	}
	// The core's records were not touched by the agent's prune.
	ds, _, err := s.ListDecisions(ctx, Page{})
	mustNil(t, err)
	if len(ds) != 4 {
		t.Fatalf("decisions after agent prune: %d", len(ds))
	}

	n, err = PruneOlder(ctx, s, CoreData, cutoff, 0)
	mustNil(t, err)
	if n != (Pruned{Decisions: 3, Investigations: 1, AlertState: 1}) {
		t.Fatalf("core prune: %+v", n)
	}
	_, err = s.GetAlertState(ctx, "fp-old-0")
	mustIs(t, err, ErrNotFound)
	for _, fp := range []string{"fp-old-1", "fp-old-2", "fp-new"} {
		if _, err := s.GetAlertState(ctx, fp); err != nil {
			t.Errorf("alert state %s: %v (in flight or new: kept)", fp, err)
		}
	}
	ds, _, err = s.ListDecisions(ctx, Page{})
	mustNil(t, err)
	invs, _, err = s.ListInvestigations(ctx, Page{})
	mustNil(t, err)
	if len(ds) != 1 || ds[0].Fingerprint != "fp-new" || len(invs) != 3 || invs[2].Fingerprint != "fp-old-1" {
		t.Fatalf("after core prune: decisions %+v investigations %+v", ds, invs)
	}
	// Nothing older is left: another pass deletes nothing.
	if n, err := PruneOlder(ctx, s, CoreData, cutoff, 0); err != nil || n.Total() != 0 {
		t.Fatalf("second pass: %+v %v", n, err)
	}
}
