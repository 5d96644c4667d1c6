package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
)

// hook is an httptest webhook: it records every body and answers with the
// scripted statuses (then 204).
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	script []int
}

func newHook(t *testing.T, statuses ...int) *hook {
	t.Helper()
	h := &hook{script: statuses}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		code := http.StatusNoContent
		if len(h.script) > 0 {
			code, h.script = h.script[0], h.script[1:]
		}
		if code/100 == 2 {
			h.bodies = append(h.bodies, b)
		}
		h.mu.Unlock()
		if r.Header.Get("Content-Type") != "application/json" {
			code = http.StatusUnsupportedMediaType
		}
		w.WriteHeader(code)
		if code/100 != 2 {
			_, _ = w.Write([]byte(`{"message": "upstream broke", "code": 0}`))
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// url carries a secret path, as real webhooks do.
func (h *hook) url() string { return h.srv.URL + "/api/webhooks/123/s3cr3t-t0ken" }

func (h *hook) received() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.bodies...)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func noorSender(t *testing.T) Sender {
	t.Helper()
	s, err := NewSender("noor", "platform-sre", "Noor", "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newDeliverer(t *testing.T, st store.Deliveries, c *clock, log *zap.Logger, targets ...Target) *Deliverer {
	t.Helper()
	d, err := NewDeliverer(Options{Sender: noorSender(t), Targets: targets, Stamps: st, Now: c.now, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sweep() Report {
	return Report{Title: Title("Health sweep and delegation.", sweepFindings()), Findings: sweepFindings(), MaxFindings: SweepLines}
}

func TestDiscordPayloadOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	dc, err := NewDiscord(h.url(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2025, 9, 14, 10, 0, 0, 0, time.UTC)}
	st := store.NewMemory(c.now)
	d := newDeliverer(t, st, c, nil, dc)
	ocs := d.Deliver(context.Background(), "continuous-abc", sweep(), DeliverOptions{})
	if len(ocs) != 1 || ocs[0].Status != StatusDelivered || ocs[0].Messages != 1 {
		t.Fatalf("outcomes = %+v", ocs)
	}
	got := h.received()
	if len(got) != 1 {
		t.Fatalf("discord got %d posts, want 1", len(got))
	}
	var p struct {
		Username string `json:"username"`
		Embeds   []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			Color       int    `json:"color"`
		} `json:"embeds"`
		AllowedMentions struct {
			Parse []string `json:"parse"`
		} `json:"allowed_mentions"`
	}
	dec := json.NewDecoder(bytes.NewReader(got[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("payload %s: %v", got[0], err)
	}
	if p.Username != "Noor" || len(p.Embeds) != 1 || p.Embeds[0].Color != 0x5865F2 {
		t.Errorf("payload = %+v", p)
	}
	if p.AllowedMentions.Parse == nil || len(p.AllowedMentions.Parse) != 0 {
		t.Errorf("allowed_mentions.parse = %v, want [] (no pings)", p.AllowedMentions.Parse)
	}
	if !strings.HasPrefix(p.Embeds[0].Description, "🔴 shop/Deployment/payments — OOMKilled") {
		t.Errorf("description starts %q", p.Embeds[0].Description)
	}
	if p.Embeds[0].Title != "Health sweep and delegation — 5 problems (1 critical, 2 high, 1 medium, 1 low)" {
		t.Errorf("title = %q", p.Embeds[0].Title)
	}
	// The stamp records the body that was posted.
	s, err := st.LastDelivery(context.Background(), "platform-sre", "continuous-abc", "discord")
	if err != nil || s.BodyHash != Render(sweep()).Hash() || !s.At.Equal(c.now()) {
		t.Errorf("stamp = %+v, %v", s, err)
	}
}

func TestDiscordLongReportSplitsMostSevereFirst(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	dc, _ := NewDiscord(h.url(), nil)
	c := &clock{t: time.Now()}
	d := newDeliverer(t, store.NewMemory(c.now), c, nil, dc)
	var fs []api.Finding
	for i := 0; i < 40; i++ {
		sev := []string{"low", "medium", "high", "critical"}[i%4]
		fs = append(fs, f(sev, "ns", "Deployment", fmt.Sprintf("app-%02d", i), "Reason", strings.Repeat("evidence ", 30), "fix"))
	}
	ocs := d.Deliver(context.Background(), "weekly-x", Report{Title: "Trend review", Findings: fs}, DeliverOptions{})
	got := h.received()
	if len(got) < 2 || ocs[0].Messages != len(got) {
		t.Fatalf("got %d messages, outcome %+v", len(got), ocs)
	}
	for i, b := range got {
		var p discordPayload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		desc := p.Embeds[0].Description
		if n := UTF16Len(desc); n > DiscordDescriptionMax {
			t.Errorf("message %d description is %d UTF-16 units", i, n)
		}
		if want := fmt.Sprintf("Trend review (%d/%d)", i+1, len(got)); p.Embeds[0].Title != want {
			t.Errorf("message %d title %q, want %q", i, p.Embeds[0].Title, want)
		}
		if i == 0 && (!strings.HasPrefix(desc, "🔴") || strings.Contains(desc, "🔵")) {
			t.Errorf("first message does not hold the critical findings first")
		}
	}
}

func TestDedupeRetryAndPartial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Date(2025, 9, 14, 10, 0, 0, 0, time.UTC)}
	st := store.NewMemory(c.now)

	// 1. A 500 delivers nothing and stamps nothing; the next attempt posts.
	h := newHook(t, http.StatusInternalServerError)
	dc, _ := NewDiscord(h.url(), nil)
	d := newDeliverer(t, st, c, nil, dc)
	ocs := d.Deliver(ctx, "task", sweep(), DeliverOptions{})
	if ocs[0].Status != StatusFailed || !strings.Contains(ocs[0].Error, "answered 500") {
		t.Fatalf("first delivery = %+v, want failed with the status", ocs)
	}
	if _, err := st.LastDelivery(ctx, "platform-sre", "task", "discord"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed delivery was stamped: %v", err)
	}
	c.add(time.Minute)
	if ocs := d.Deliver(ctx, "task", sweep(), DeliverOptions{}); ocs[0].Status != StatusDelivered {
		t.Fatalf("retry = %+v", ocs)
	}
	// 2. The identical body is not re-posted.
	c.add(time.Minute)
	if ocs := d.Deliver(ctx, "task", sweep(), DeliverOptions{}); ocs[0].Status != StatusDuplicate {
		t.Fatalf("identical = %+v", ocs)
	}
	if n := len(h.received()); n != 1 {
		t.Fatalf("discord got %d posts, want 1", n)
	}
	// 3. A changed body posts; another task keeps its own stamp.
	changed := sweep()
	changed.Findings = changed.Findings[1:]
	changed.Title = Title("Health sweep and delegation.", changed.Findings)
	if ocs := d.Deliver(ctx, "task", changed, DeliverOptions{}); ocs[0].Status != StatusDelivered {
		t.Fatalf("changed = %+v", ocs)
	}
	if ocs := d.Deliver(ctx, "other-task", sweep(), DeliverOptions{}); ocs[0].Status != StatusDelivered {
		t.Fatalf("other task = %+v", ocs)
	}

	// 4. Partial: the first of several messages posts, the second fails →
	// stamped (counts as delivered), and the same body is not re-posted.
	hp := newHook(t, http.StatusNoContent, http.StatusBadGateway)
	dp, _ := NewDiscord(hp.url(), nil)
	d2 := newDeliverer(t, st, c, nil, dp)
	var fs []api.Finding
	for i := 0; i < 40; i++ {
		fs = append(fs, f("high", "ns", "Deployment", fmt.Sprintf("a%02d", i), "BackOff", strings.Repeat("e ", 100), ""))
	}
	long := Report{Title: "Long", Findings: fs}
	ocs = d2.Deliver(ctx, "long", long, DeliverOptions{})
	if ocs[0].Status != StatusPartial || ocs[0].Messages != 1 || !ocs[0].Delivered() {
		t.Fatalf("partial = %+v", ocs)
	}
	if ocs := d2.Deliver(ctx, "long", long, DeliverOptions{}); ocs[0].Status != StatusDuplicate {
		t.Fatalf("after partial = %+v, want duplicate", ocs)
	}
}

func TestPostedDuringRunIsNotPostedTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Date(2025, 9, 14, 10, 0, 0, 0, time.UTC)}
	st := store.NewMemory(c.now)
	h := newHook(t)
	dc, _ := NewDiscord(h.url(), nil)
	d := newDeliverer(t, st, c, nil, dc)
	runStart := c.now()
	c.add(time.Second)
	// The agent posts its own wording during the run…
	toolReport := sweep()
	toolReport.Notes = "5 problems, 1 delegated to k8s-engineer."
	if ocs := d.Deliver(ctx, "task", toolReport, DeliverOptions{TouchDuplicate: true}); ocs[0].Status != StatusDelivered {
		t.Fatal(ocs)
	}
	c.add(time.Second)
	// …so the pulse, rendering a different body after the run, skips.
	if ocs := d.Deliver(ctx, "task", sweep(), DeliverOptions{PostedSince: runStart}); ocs[0].Status != StatusPosted {
		t.Fatalf("pulse after post_report = %+v", ocs)
	}
	// Next run: the tool finds the same body (duplicate) and refreshes the
	// stamp, so the pulse still does not post its own rendering.
	c.add(time.Hour)
	runStart = c.now()
	c.add(time.Second)
	if ocs := d.Deliver(ctx, "task", toolReport, DeliverOptions{TouchDuplicate: true}); ocs[0].Status != StatusDuplicate {
		t.Fatal(ocs)
	}
	if ocs := d.Deliver(ctx, "task", sweep(), DeliverOptions{PostedSince: runStart}); ocs[0].Status != StatusPosted {
		t.Fatalf("pulse after a duplicate post_report = %+v", ocs)
	}
	if n := len(h.received()); n != 1 {
		t.Errorf("discord got %d posts, want 1", n)
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	stamp := store.DeliveryStamp{BodyHash: "h1", At: t0}
	cases := []struct {
		name  string
		found bool
		hash  string
		since time.Time
		want  Decision
	}{
		{"never posted", false, "h1", time.Time{}, Post},
		{"same body", true, "h1", time.Time{}, SkipDuplicate},
		{"new body", true, "h2", time.Time{}, Post},
		{"posted during the run", true, "h2", t0.Add(-time.Minute), SkipPostedInRun},
		{"posted at run start", true, "h2", t0, SkipPostedInRun},
		{"posted before the run, new body", true, "h2", t0.Add(time.Minute), Post},
		{"posted before the run, same body", true, "h1", t0.Add(time.Minute), SkipDuplicate},
		{"sub-microsecond run start", true, "h2", t0.Add(500 * time.Nanosecond), SkipPostedInRun},
	}
	for _, c := range cases {
		if got := Decide(stamp, c.found, c.hash, c.since); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestFailuresNeverLogTheWebhookURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Now()}
	core, logs := observed()
	// One answers 500, one refuses connections, one hangs past the timeout.
	h := newHook(t, http.StatusInternalServerError)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/hooks/s3cr3t-t0ken"
	dead.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees the handler so Close returns
	client := &http.Client{Timeout: 200 * time.Millisecond}
	t1, _ := NewDiscord(h.url(), client)
	t2, _ := NewSlack(deadURL, client)
	t3, _ := NewJSONWebhook(hang.URL+"/x/s3cr3t-t0ken", client)
	d := newDeliverer(t, store.NewMemory(c.now), c, zap.New(core), t1, t2, t3)
	ocs := d.Deliver(ctx, "task", sweep(), DeliverOptions{})
	for _, o := range ocs {
		if o.Status != StatusFailed || o.Error == "" {
			t.Errorf("%s: %+v, want failed with a reason", o.Target, o)
		}
		if strings.Contains(o.Error, "s3cr3t") {
			t.Errorf("%s error holds the secret: %s", o.Target, o.Error)
		}
	}
	if strings.Contains(ocs[2].Error, "s3cr3t") || !strings.Contains(ocs[2].Error, "timed out") {
		t.Errorf("timeout error = %q", ocs[2].Error)
	}
	all := logs.String()
	if !strings.Contains(all, "report delivery failed") {
		t.Fatalf("failures not logged: %s", all)
	}
	if strings.Contains(all, "s3cr3t") {
		t.Errorf("a log line holds the webhook secret:\n%s", all)
	}
}

func TestSlackAndJSONWebhookPayloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Now()}
	hs, hj := newHook(t), newHook(t)
	sl, _ := NewSlack(hs.url(), nil)
	js, _ := NewJSONWebhook(hj.url(), nil)
	sol, _ := NewSender("sol", "k8s-engineer", "", "")
	d, err := NewDeliverer(Options{Sender: sol, Targets: []Target{sl, js}, Stamps: store.NewMemory(c.now), Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	r := sweep()
	r.Findings[0].Detail = "a <b> & c"
	ocs := d.Deliver(ctx, "weekly-k", r, DeliverOptions{})
	if !ocs[0].Delivered() || !ocs[1].Delivered() {
		t.Fatalf("outcomes = %+v", ocs)
	}
	var sp slackPayload
	if err := json.Unmarshal(hs.received()[0], &sp); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sp.Text, "*Sol* · *Health sweep") || sp.Username != "Sol" {
		t.Errorf("slack text = %q username %q", sp.Text, sp.Username)
	}
	if !strings.Contains(sp.Text, "a &lt;b&gt; &amp; c") {
		t.Errorf("slack text not escaped: %q", sp.Text)
	}
	var jr JSONReport
	dec := json.NewDecoder(bytes.NewReader(hj.received()[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jr); err != nil {
		t.Fatal(err)
	}
	if jr.Agent != "k8s-engineer" || jr.Username != "Sol" || jr.Color != "#F1C40F" || jr.Task != "weekly-k" ||
		len(jr.Findings) != 5 || jr.Findings[0].Severity != "critical" || !strings.HasPrefix(jr.Text, jr.Title+"\n🔴") {
		t.Errorf("json report = %+v", jr)
	}
}

func TestEmptyReportPostsNothing(t *testing.T) {
	t.Parallel()
	h := newHook(t)
	dc, _ := NewDiscord(h.url(), nil)
	c := &clock{t: time.Now()}
	d := newDeliverer(t, store.NewMemory(c.now), c, nil, dc)
	ocs := d.Deliver(context.Background(), "t", Report{Title: "Healthy"}, DeliverOptions{})
	if ocs[0].Status != StatusEmpty || len(h.received()) != 0 {
		t.Errorf("empty report: %+v, %d posts", ocs, len(h.received()))
	}
}

func TestTargetsFromURLs(t *testing.T) {
	t.Parallel()
	ts, err := TargetsFromURLs("https://discord.com/api/webhooks/1/x", "", "http://hook.local/x", nil)
	if err != nil || len(ts) != 2 || ts[0].Name() != "discord" || ts[1].Name() != "webhook" {
		t.Errorf("targets = %v, %v", ts, err)
	}
	_, err = TargetsFromURLs("", "ftp://slack/secret", "", nil)
	if err == nil || !strings.Contains(err.Error(), "SLACK_WEBHOOK_URL") || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad URL error = %v", err)
	}
	if _, err := NewSender("noor", "platform-sre", "", "purple"); err == nil {
		t.Error("a bad REPORT_COLOR was accepted")
	}
}

// observed is a zap core writing JSON into a buffer.
func observed() (zapcore.Core, *syncBuffer) {
	buf := &syncBuffer{}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zapcore.NewCore(enc, zapcore.AddSync(buf), zapcore.DebugLevel), buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMetricsShareOneRegistry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a, b := NewMetrics(reg), NewMetrics(reg)
	a.deliveries.WithLabelValues("discord", "delivered").Inc()
	b.deliveries.WithLabelValues("discord", "delivered").Inc()
	if v := testutil.ToFloat64(a.deliveries.WithLabelValues("discord", "delivered")); v != 2 {
		t.Errorf("shared counter = %v", v)
	}
}
