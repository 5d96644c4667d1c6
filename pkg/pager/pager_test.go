package pager_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/pager/pagertest"
	"github.com/kubecrew/kubecrew/pkg/store"
)

func incident() pager.Incident {
	return pager.Incident{Key: "kubecrew/shop-deployment-cart-app-oomkilled", Severity: pager.SeverityCritical,
		Summary: "The memory bump of shop/Deployment/cart did not stop the OOM kills: 3 since the rollout",
		Source:  "shop/Deployment/cart", Component: "app", Group: "shop", Class: "OOMKilled",
		Details: map[string]string{"evidence": "pod cart-7d9f-abcde container app OOMKilled at 2026-12-01T18:00:00Z", "action": "gitops.pr.mergetrivial #4 (256Mi -> 384Mi)"},
		Link:    "https://kubecrew.example.com/runs/0193/report", At: time.Date(2026, 12, 1, 18, 5, 0, 0, time.UTC)}
}

func TestPagerDutyTriggerAndResolveOnTheWire(t *testing.T) {
	pd := pagertest.NewPagerDuty(t)
	p, err := pager.New(pager.Config{Target: "pagerduty", Key: pd.RoutingKey, URL: pd.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inc := incident()
	if err := p.Trigger(ctx, inc); err != nil {
		t.Fatal(err)
	}
	if err := p.Resolve(ctx, inc.Key, "the OOM kills stopped"); err != nil {
		t.Fatal(err)
	}
	evs := pd.Events()
	if len(evs) != 2 || len(pd.Rejected()) != 0 {
		t.Fatalf("events %+v, rejected %v", evs, pd.Rejected())
	}
	tr, rs := evs[0], evs[1]
	if tr.Action != "trigger" || tr.DedupKey != inc.Key || tr.Payload.Severity != "critical" || tr.Payload.Source != "shop/Deployment/cart" ||
		tr.Payload.Summary != inc.Summary || tr.Payload.Timestamp != "2026-12-01T18:05:00Z" || tr.Payload.Class != "OOMKilled" ||
		tr.Payload.Details["evidence"] == "" || len(tr.Links) != 1 || tr.Links[0].Href != inc.Link || tr.ClientURL != inc.Link || tr.Client != "kubecrew" {
		t.Errorf("trigger: %+v payload %+v", tr, tr.Payload)
	}
	if rs.Action != "resolve" || rs.DedupKey != inc.Key || rs.Payload != nil {
		t.Errorf("resolve: %+v", rs)
	}
}

func TestPagerDutyRefusalsAreErrors(t *testing.T) {
	pd := pagertest.NewPagerDuty(t)
	p, err := pager.New(pager.Config{Target: "pagerduty", Key: "0123456789abcdef0123456789abcdef", URL: pd.URL})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Trigger(context.Background(), incident())
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a wrong routing key: err = %v, want the API's 400", err)
	}
	if r := pd.Rejected(); len(r) != 1 || !strings.Contains(r[0], "routing_key") {
		t.Errorf("rejected = %v", r)
	}
}

func TestOpsgenieCreateAndCloseOnTheWire(t *testing.T) {
	og := pagertest.NewOpsgenie(t, "eb243592-faa2-4ba2-a551q-1afdf565c889")
	p, err := pager.New(pager.Config{Target: "opsgenie", Key: og.Key, URL: og.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inc := incident()
	inc.Key = "kubecrew/shop deployment/cart?x" // an alias that needs escaping in the close path
	inc.Summary = strings.Repeat("OOM kills go on after the memory bump; ", 10)
	if err := p.Trigger(ctx, inc); err != nil {
		t.Fatal(err)
	}
	if err := p.Resolve(ctx, inc.Key, "the OOM kills stopped"); err != nil {
		t.Fatal(err)
	}
	cr, cl := og.Created(), og.Closed()
	if len(cr) != 1 || len(cl) != 1 || len(og.Rejected()) != 0 {
		t.Fatalf("created %+v closed %+v rejected %v", cr, cl, og.Rejected())
	}
	a := cr[0]
	if a.Alias != inc.Key || a.Priority != "P1" || len([]rune(a.Message)) > 130 || !strings.HasSuffix(a.Message, "…") ||
		a.Entity != "shop/Deployment/cart" || a.Details["report"] != inc.Link || !strings.Contains(a.Description, "Report: "+inc.Link) ||
		a.Source != "kubecrew" {
		t.Errorf("create: %+v", a)
	}
	if cl[0].Alias != inc.Key || cl[0].Note != "the OOM kills stopped" || cl[0].Source != "kubecrew" {
		t.Errorf("close: %+v", cl[0])
	}

	bad, _ := pager.New(pager.Config{Target: "opsgenie", Key: "wrong", URL: og.URL})
	if err := bad.Trigger(ctx, incident()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong GenieKey: err = %v, want 401", err)
	}
}

func TestWebhookPostsTheIncident(t *testing.T) {
	var mu sync.Mutex
	var got []pager.WebhookEvent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev pager.WebhookEvent
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	p, err := pager.New(pager.Config{Target: "webhook", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	inc := incident()
	if err := p.Trigger(context.Background(), inc); err != nil {
		t.Fatal(err)
	}
	if err := p.Resolve(context.Background(), inc.Key, "fixed"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Action != "trigger" || got[0].Key != inc.Key || got[0].Link != inc.Link || got[0].Details["evidence"] == "" ||
		got[1].Action != "resolve" || got[1].Note != "fixed" {
		t.Errorf("webhook got %+v", got)
	}
}

func TestNewNamesWhatToSet(t *testing.T) {
	for _, tc := range []struct {
		c    pager.Config
		want string
	}{
		{pager.Config{}, "no incident API"},
		{pager.Config{Target: "none"}, "no incident API"},
		{pager.Config{Target: "pagerduty"}, "PAGE_KEY"},
		{pager.Config{Target: "opsgenie"}, "PAGE_KEY"},
		{pager.Config{Target: "webhook"}, "PAGE_URL"},
		{pager.Config{Target: "victorops", Key: "k"}, "want pagerduty, opsgenie, webhook or none"},
		{pager.Config{Target: "webhook", URL: "ftp://x"}, "PAGE_URL"},
	} {
		_, err := pager.New(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.c, err, tc.want)
		}
	}
	if _, err := pager.New(pager.Config{}); !errors.Is(err, pager.ErrNoPager) {
		t.Errorf("no target: %v, want ErrNoPager", err)
	}
}

func TestIncidentIsChecked(t *testing.T) {
	pd := pagertest.NewPagerDuty(t)
	p, _ := pager.New(pager.Config{Target: "pagerduty", Key: pd.RoutingKey, URL: pd.URL})
	for _, mut := range []func(*pager.Incident){
		func(i *pager.Incident) { i.Key = "" },
		func(i *pager.Incident) { i.Key = strings.Repeat("k", 256) },
		func(i *pager.Incident) { i.Summary = " " },
		func(i *pager.Incident) { i.Severity = "high" },
	} {
		inc := incident()
		mut(&inc)
		if err := p.Trigger(context.Background(), inc); err == nil {
			t.Errorf("%+v: want an error", inc)
		}
	}
	if n := len(pd.Events()) + len(pd.Rejected()); n != 0 {
		t.Errorf("a bad incident reached the API (%d requests)", n)
	}
}

// TestEscalatorPagesOnceAndResolvesOnce: many passes that find the fix did
// not work page once; a failed trigger pages on the next pass; resolves
// after the first are not sent.
func TestEscalatorPagesOnceAndResolvesOnce(t *testing.T) {
	pd := pagertest.NewPagerDuty(t)
	p, _ := pager.New(pager.Config{Target: "pagerduty", Key: pd.RoutingKey, URL: pd.URL})
	ledger := store.NewMemory(nil)
	e := pager.NewEscalator(p, ledger, nil, nil)
	ctx := context.Background()
	inc := incident()
	var wg sync.WaitGroup
	results := make([]string, 6)
	for i := range results {
		wg.Go(func() {
			r, err := e.Page(ctx, inc, "action a1")
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		})
	}
	wg.Wait()
	if n := pd.Count("trigger", inc.Key); n != 1 {
		t.Fatalf("6 concurrent pages sent %d triggers (%v), want 1", n, results)
	}
	for range 3 {
		if _, err := e.Resolve(ctx, inc.Key, "the OOM kills stopped"); err != nil {
			t.Fatal(err)
		}
	}
	if n := pd.Count("resolve", inc.Key); n != 1 {
		t.Fatalf("3 resolves sent %d, want 1", n)
	}

	// The API down: the trigger fails, the claim is released, the next pass pages.
	pd.Close()
	inc2 := incident()
	inc2.Key = "kubecrew/other"
	if _, err := e.Page(ctx, inc2, "action a2"); err == nil {
		t.Fatal("a page to an API that is down: want an error")
	}
	if open, _ := ledger.ListPages(ctx, true, 0); len(open) != 0 {
		t.Fatalf("a trigger never delivered left the incident open: %+v", open)
	}

	off := pager.NewEscalator(nil, ledger, nil, nil)
	if r, err := off.Page(ctx, inc, "x"); r != pager.Off || err != nil || off.Enabled() {
		t.Errorf("no pager: %q %v", r, err)
	}
}
