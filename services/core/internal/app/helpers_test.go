package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
	"github.com/kubecrew/kubecrew/services/core/internal/app"
	"github.com/kubecrew/kubecrew/services/core/internal/config"
	"github.com/kubecrew/kubecrew/services/core/internal/route"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

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

// seqIDs returns ids prefix-0001, prefix-0002, ...
func seqIDs(prefix string) func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s-%04d", prefix, n.Add(1)) }
}

type coreOpts struct {
	env   map[string]string
	store store.CoreStore
	clock *clock
	ids   func() string
	// peers are extra AGENT_PEERS entries (slug → URL).
	peers map[string]string
	// quiet: no logs (storms and benchmarks).
	quiet bool
	// notifyRetry shortens the chat posts' retry waits.
	notifyRetry []time.Duration
}

type testCore struct {
	*app.App
	URL   string
	Store store.CoreStore
	Agent *agenttest.Agent
}

// newCore starts a core wired to one fake agent (platform-sre) on an
// in-memory store unless opts give one.
func newCore(t testing.TB, o coreOpts) *testCore {
	t.Helper()
	ag := agenttest.New(t, "platform-sre")
	env := map[string]string{
		"AGENT_PEERS":        "platform-sre=" + ag.URL(),
		"PEER_URL_TEMPLATE":  "http://127.0.0.1:1/{slug}",
		"AGENT_CALL_TIMEOUT": "10s",
	}
	for k, v := range o.env {
		env[k] = v
	}
	laptop(env)
	for slug, u := range o.peers {
		env["AGENT_PEERS"] += "," + slug + "=" + u
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now
	if o.clock != nil {
		now = o.clock.Now
	}
	st := o.store
	if st == nil {
		st = store.NewMemory(now)
	}
	log := zaptest.NewLogger(t)
	if o.quiet {
		log = zap.NewNop()
	}
	core, err := app.New(cfg, nil, app.Deps{Store: st, Log: log, Now: now, NewID: o.ids, MaintainEvery: time.Hour,
		NotifyRetry: o.notifyRetry, NotifyPoll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCore{App: core, Store: st, Agent: ag}
	srv := httptest.NewServer(core.Handler())
	tc.URL = srv.URL
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := core.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return tc
}

// newRequest builds a request with a JSON body (when body is not nil) and
// the header name/value pairs.
func newRequest(t testing.TB, method, url string, body []byte, header ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// do sends a request and returns the status and body.
func do(t testing.TB, method, url string, body []byte, header ...string) (int, []byte, http.Header) {
	t.Helper()
	req := newRequest(t, method, url, body, header...)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// decisionsAnswer is the webhook's answer.
type decisionsAnswer = kapi.AlertsAnswer

func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// webhookBody builds an Alertmanager v4 webhook for alerts: one group. A
// webhook of one alert is that alert's own group (group_by its
// fingerprint), so tests of one alert's decisions see one incident per
// alert; groupBody names the group.
func webhookBody(alerts ...map[string]any) []byte {
	gk := "{}:{}"
	if len(alerts) == 1 {
		gk = fmt.Sprintf("{}:{fingerprint=%q}", alerts[0]["fingerprint"])
	}
	return groupBody(gk, alerts...)
}

// groupBody builds an Alertmanager v4 webhook of group groupKey.
func groupBody(groupKey string, alerts ...map[string]any) []byte {
	status := "resolved"
	for _, a := range alerts {
		if a["status"] == "firing" {
			status = "firing"
		}
	}
	b, _ := json.Marshal(map[string]any{
		"version": "4", "receiver": "core", "status": status, "groupKey": groupKey, "alerts": alerts,
		"groupLabels": map[string]string{}, "commonLabels": map[string]string{}, "commonAnnotations": map[string]string{},
		"externalURL": "http://am", "truncatedAlerts": 0,
	})
	return b
}

func alert(fp, name, ns, status string) map[string]any {
	endsAt := "0001-01-01T00:00:00Z"
	if status == "resolved" {
		endsAt = "2026-11-30T12:30:00Z"
	}
	return map[string]any{
		"status": status, "fingerprint": fp,
		"labels":      map[string]string{"alertname": name, "namespace": ns, "pod": "pod-" + fp, "severity": "warning"},
		"annotations": map[string]string{"summary": name + " on " + fp},
		"startsAt":    "2026-11-30T11:00:00Z", "endsAt": endsAt, "generatorURL": "http://prom/graph",
	}
}

// incidentKey is the correlation key the core gives alert a of group
// groupKey (docs/MANUAL.md, "Storms"): what its state, investigation and pages hold.
func incidentKey(groupKey string, a map[string]any) string {
	return route.DefaultCorrelation().Key(groupKey, a["fingerprint"].(string), a["labels"].(map[string]string), nil)
}

// soloKey is incidentKey of an alert posted alone (webhookBody of one).
func soloKey(a map[string]any) string {
	return incidentKey(fmt.Sprintf("{}:{fingerprint=%q}", a["fingerprint"]), a)
}

// startHTTP serves a core on a loopback httptest server.
func startHTTP(t testing.TB, c *testCore) string {
	t.Helper()
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return srv.URL
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// laptop sets AUTH_DISABLED=true in env unless it configures
// authentication: a test of authentication sets its tokens.
func laptop(env map[string]string) {
	if env["AUTH_TOKEN"] == "" && env["AUTH_READ_TOKEN"] == "" && env["AUTH_DISABLED"] == "" {
		env["AUTH_DISABLED"] = "true"
	}
}
