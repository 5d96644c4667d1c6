package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
)

// TestPRsReadTheForgeAtMostEvery15s: GET /prs answers from its last read
// of the forge for 15 s, each state on its own, and a failed read is an
// error the next request retries, never a cached empty list.
func TestPRsReadTheForgeAtMostEvery15s(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	var reads []int
	fail := false
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := server.New(server.Deps{Now: clock, PRs: func(_ context.Context, recent int) (api.PRList, error) {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, recent)
		if fail {
			return api.PRList{}, errors.New("github: 502 Bad Gateway")
		}
		return api.PRList{Forge: "github acme/gitops", Items: []api.PRView{{Number: len(reads), State: "open"}}}, nil
	}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	get := func(query string) (int, api.PRList) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/prs" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var l api.PRList
		_ = json.Unmarshal(b, &l)
		return resp.StatusCode, l
	}
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	steps := []struct {
		name, query string
		before      func()
		code, pr    int // the answer's PR number: which read it came from
		reads       int
	}{
		{"first read", "", nil, 200, 1, 1},
		{"cached", "", func() { advance(14 * time.Second) }, 200, 1, 1},
		{"state=all is its own read", "?state=all", nil, 200, 2, 2},
		{"stale after 15 s", "", func() { advance(2 * time.Second) }, 200, 3, 3},
		{"a failed read", "", func() { advance(time.Minute); mu.Lock(); fail = true; mu.Unlock() }, 502, 0, 4},
		{"retried, not cached", "", func() { mu.Lock(); fail = false; mu.Unlock() }, 200, 5, 5},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		code, l := get(st.query)
		pr := 0
		if len(l.Items) > 0 {
			pr = l.Items[0].Number
		}
		mu.Lock()
		n := len(reads)
		mu.Unlock()
		if code != st.code || pr != st.pr || n != st.reads {
			t.Errorf("%s: %d, PR #%d, %d reads; want %d, #%d, %d", st.name, code, pr, n, st.code, st.pr, st.reads)
		}
	}
	if reads[1] != 20 {
		t.Errorf("state=all read %d closed PRs, want the default 20", reads[1])
	}
}

// TestPRsOneReadAtATime: requests that come while the forge is being read
// wait for that read instead of starting their own.
func TestPRsOneReadAtATime(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 8), make(chan struct{})
	var mu sync.Mutex
	reads := 0
	s := server.New(server.Deps{PRs: func(context.Context, int) (api.PRList, error) {
		mu.Lock()
		reads++
		mu.Unlock()
		started <- struct{}{}
		<-release
		return api.PRList{Forge: "local /srv/gitops.git", Items: []api.PRView{{Number: 7, State: "open"}}}, nil
	}})
	var arrived atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	codes := make(chan int, 3)
	for range 3 {
		go func() {
			resp, err := http.Get(srv.URL + "/prs")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	<-started // one read under way; the others come while it lasts
	for deadline := time.Now().Add(10 * time.Second); arrived.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range 3 {
		if code := <-codes; code != 200 {
			t.Errorf("GET /prs = %d", code)
		}
	}
	if reads != 1 {
		t.Errorf("%d reads of the forge for three requests at once", reads)
	}
}
