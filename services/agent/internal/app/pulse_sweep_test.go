package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// discord records the webhook posts it receives; fail makes it answer 500.
type discord struct {
	mu    sync.Mutex
	posts []map[string]any
	fail  bool
}

func (d *discord) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	d.posts = append(d.posts, m)
	w.WriteHeader(http.StatusNoContent)
}

func (d *discord) count() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.posts) }

// POST /pulse runs Noor's real sweep against the fixture cluster and posts
// to Discord once, under her name and colour; an identical tick posts
// nothing; a failed delivery is retried on the next tick.
func TestPulseRunsNoorsSweepOnTheFixturesAndPostsOnce(t *testing.T) {
	// A private API server: the sweep covers every namespace, and two ticks
	// must see the same cluster for the second to stay quiet, which other
	// tests' objects on the shared server would not allow.
	env := kubetest.Private(t, "pulse-sweep")
	ns := fmt.Sprintf("kc-pulse-%d", rand.IntN(1_000_000))
	if err := env.LoadFixtures(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	hook := &discord{fail: true}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	a := start(t, map[string]string{"AGENT_PERSONA": "noor", "KUBECONFIG": env.Kubeconfig,
		"DISCORD_WEBHOOK_URL": srv.URL + "/api/webhooks/1/secret", "PULSE_ENABLED": "false"})

	tick := func() map[string]any {
		code, body := do(t, "POST", a.url+"/pulse?task=0", "")
		if code != 200 {
			t.Fatalf("POST /pulse = %d %s", code, body)
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return m
	}
	first := tick()
	if hook.count() != 0 {
		t.Fatalf("a failing webhook recorded a post")
	}
	if b, _ := json.Marshal(first); !strings.Contains(string(b), ns+"-deployment-oomkill") {
		t.Errorf("the sweep did not find the fixtures: %s", b)
	}
	hook.mu.Lock()
	hook.fail = false
	hook.mu.Unlock()
	tick() // retried: the failed delivery set no stamp
	if hook.count() != 1 {
		t.Fatalf("posts after the retry = %d, want 1", hook.count())
	}
	tick() // identical state, identical body: quiet
	if hook.count() != 1 {
		t.Fatalf("an identical tick posted again (%d posts)", hook.count())
	}
	post := hook.posts[0]
	if post["username"] != "Noor" {
		t.Errorf("username = %v, want Noor", post["username"])
	}
	embeds, _ := post["embeds"].([]any)
	if len(embeds) == 0 {
		t.Fatalf("no embed: %v", post)
	}
	e := embeds[0].(map[string]any)
	if c, _ := e["color"].(float64); int(c) != 0x5865F2 {
		t.Errorf("colour = %v, want Noor's 0x5865F2", e["color"])
	}
	desc, _ := e["description"].(string)
	// every fixture is at 0/1 available, so critical: the body opens with a
	// critical line of the fixtures.
	if !strings.Contains(desc, ns+"/Deployment/") || !strings.HasPrefix(strings.TrimSpace(desc), "🔴") {
		t.Errorf("report body (most severe first, with the fixtures):\n%s", desc)
	}
}
