// Package authtest checks a service's auth guard on the wire: it walks
// every route of a chi router and calls each over HTTP with no token, wrong
// ones, the read-only token and the full one, so a route added later is
// covered without editing a test. Both services' tests use it.
package authtest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// Options describe the service under test.
type Options struct {
	URL    string      // base URL of the running service
	Routes chi.Routes  // its router
	Params [][2]string // URL parameters to fill in: {"{id}", "nope"}
	// Open paths answer without a token.
	Open map[string]bool
	// Full is AUTH_TOKEN, Read AUTH_READ_TOKEN.
	Full, Read string
}

// CheckEveryRoute runs the matrix and returns the routes it walked, as
// "METHOD /path" with the parameters filled in, for the caller to check
// that the routes it cares about were among them.
func CheckEveryRoute(t *testing.T, o Options) map[string]bool {
	t.Helper()
	type route struct{ method, path string }
	var routes []route
	err := chi.Walk(o.Routes, func(method, path string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		for _, p := range o.Params {
			path = strings.ReplaceAll(path, p[0], p[1])
		}
		routes = append(routes, route{method, path})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range routes {
		seen[r.method+" "+r.path] = true
		var body string
		if r.method != http.MethodGet {
			body = "{" // malformed: past the guard it is a 400, never an action
		}
		for _, tc := range []struct {
			name, header string
			want         int // 0: anything but 401 and 403
		}{
			{"no token", "", http.StatusUnauthorized},
			{"a wrong token", "Bearer nope", http.StatusUnauthorized},
			{"the token without a scheme", o.Full, http.StatusUnauthorized},
			{"the token as Basic", "Basic " + o.Full, http.StatusUnauthorized},
			{"the read-only token", "Bearer " + o.Read, map[bool]int{true: 0, false: http.StatusForbidden}[r.method == http.MethodGet]},
			{"the token, lower-case scheme", "bearer " + o.Full, 0},
			{"the token, padded", "  Bearer   " + o.Full + " ", 0},
		} {
			want := tc.want
			if o.Open[r.path] {
				want = 0
			}
			code, b := do(t, r.method, o.URL+r.path, body, tc.header)
			refused := code == http.StatusUnauthorized || code == http.StatusForbidden
			if (want == 0 && refused) || (want != 0 && code != want) {
				t.Errorf("%s %s with %s = %d %s; want %s", r.method, r.path, tc.name, code, b,
					map[bool]string{true: "past the guard", false: http.StatusText(want)}[want == 0])
			}
		}
	}
	return seen
}

func do(t *testing.T, method, url, body, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, "(a stream)" // it would not end: closing it ends it
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, string(b)
}
