package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/core/internal/agenttest"
)

// TestPRsAPI: GET /api/v1/prs merges what Sol and Vera read on the forge —
// one item per PR, the fresher copy winning (Sol's older read still has
// open a PR a person merged since; Vera's has it merged) — filters it,
// pages it, and names the agent it could not ask instead of answering as
// if it had nothing.
func TestPRsAPI(t *testing.T) {
	t.Parallel()
	sol, vera := agenttest.New(t, "k8s-engineer"), agenttest.New(t, "code-reviewer")
	c := newCore(t, coreOpts{peers: map[string]string{"k8s-engineer": sol.URL(), "code-reviewer": vera.URL(),
		"eu-west/k8s-engineer": "http://127.0.0.1:1"}})
	now := time.Now().UTC().Truncate(time.Second)
	pr := func(n int, state string, updated time.Duration, review string) kapi.PRView {
		v := kapi.PRView{Number: n, Title: fmt.Sprintf("raise memory #%d", n), URL: fmt.Sprintf("https://github.example/acme/gitops/pull/%d", n),
			Branch: fmt.Sprintf("agent/fix/f%d", n), Base: "main", Author: "k8s-engineer", State: state, Cluster: "default",
			CreatedAt: now.Add(-2 * time.Hour), UpdatedAt: now.Add(-updated)}
		if review != "" {
			v.Reviews, v.Review = 1, &kapi.ReviewView{Reviewer: "code-reviewer", Verdict: review, Body: "more than the limit changes", At: v.UpdatedAt}
		}
		return v
	}
	delegated, pulse := pr(7, "open", 30*time.Minute, "request_changes"), pr(9, "open", 5*time.Minute, "")
	sol.SetPRs(kapi.PRList{Forge: "github acme/gitops", Cluster: "default", AsOf: now.Add(-10 * time.Second),
		Items: []kapi.PRView{delegated, pulse, pr(5, "open", time.Hour, "")}})
	vera.SetPRs(kapi.PRList{Forge: "github acme/gitops", Cluster: "default", AsOf: now,
		Items: []kapi.PRView{delegated, pulse, pr(5, "merged", 2*time.Minute, "")}})
	type answer struct {
		Items []struct {
			Number int
			State  string
			Review *struct{ Verdict string }
		}
		NextCursor string `json:"next_cursor"`
		Total      int
		Sources    []struct{ Agent, Status, Error string }
	}
	get := func(query string) answer {
		t.Helper()
		code, b := call(t, http.MethodGet, c.URL+"/api/v1/prs"+query, nil)
		if code != 200 {
			t.Fatalf("GET /api/v1/prs%s = %d %s", query, code, b)
		}
		return decode[answer](t, b)
	}
	show := func(a answer) string {
		var out []string
		for _, it := range a.Items {
			s := fmt.Sprintf("#%d %s", it.Number, it.State)
			if it.Review != nil {
				s += " " + it.Review.Verdict
			}
			out = append(out, s)
		}
		return fmt.Sprintf("%s (total %d)", strings.Join(out, ", "), a.Total)
	}
	tests := []struct{ query, want string }{
		{"", "#9 open, #7 open request_changes (total 2)"},
		{"?state=all", "#5 merged, #9 open, #7 open request_changes (total 3)"},
		{"?agent=sol&state=all", "#5 merged, #9 open, #7 open request_changes (total 3)"},
		{"?agent=vera", " (total 0)"},
		{"?cluster=default", "#9 open, #7 open request_changes (total 2)"},
		{"?cluster=eu-west", " (total 0)"},
	}
	for _, tc := range tests {
		if got := show(get(tc.query)); got != tc.want {
			t.Errorf("GET /api/v1/prs%s: %s, want %s", tc.query, got, tc.want)
		}
	}
	a := get("")
	var sources []string
	for _, s := range a.Sources {
		sources = append(sources, s.Agent+" "+s.Status)
		if s.Status == "down" && s.Error == "" {
			t.Errorf("%s is down without a reason", s.Agent)
		}
	}
	if got := strings.Join(sources, ", "); got != "k8s-engineer ok, code-reviewer ok, eu-west/k8s-engineer down" {
		t.Errorf("sources: %s", got)
	}
	var walked []string
	cursor := ""
	for range 5 {
		q := "?state=all&limit=1"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p := get(q)
		for _, it := range p.Items {
			walked = append(walked, fmt.Sprint(it.Number))
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if got := strings.Join(walked, ","); got != "5,9,7" {
		t.Errorf("pages: %s", got)
	}
	for _, q := range []string{"?state=closed", "?agent=nobody", "?cursor=nope", "?limit=0", "?author=sol"} {
		if code, b := call(t, http.MethodGet, c.URL+"/api/v1/prs"+q, nil); code != 400 {
			t.Errorf("GET /api/v1/prs%s = %d %s", q, code, b)
		}
	}
}
