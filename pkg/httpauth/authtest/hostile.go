package authtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-chi/chi/v5"
)

// HostileOptions describe a service for the hostile pass (docs/MANUAL.md,
// "Hostile pass"): Options plus what the pass needs beyond the auth matrix.
type HostileOptions struct {
	Options
	// Handler is the service's handler, served in process to prove that a
	// refused caller's body is never read.
	Handler http.Handler
	// Pages are routes that answer a person's browser: a 4xx there may be
	// an HTML page rather than JSON.
	Pages map[string]bool
	// Secrets never appear in an answer to a caller without a token (a
	// store's address, a planted credential).
	Secrets []string
	// NoBody are write routes whose body is not JSON (the login form) or
	// is not read at all.
	NoBody map[string]bool
	// Protocol names the wire protocol of a route whose errors are that
	// protocol's, not {"error": "..."}: "jsonrpc" (an error object, on 200
	// or a 4xx) or "mcp" (the MCP transport: a client sends Accept:
	// application/json, text/event-stream; its 4xx are the SDK's text).
	Protocol map[string]string
	// MaxBody is the largest body the service takes; the "huge" bad body
	// is one byte over it.
	MaxBody int
	// Texts are write routes' bodies of the right shape, a %s where a
	// hostile text goes (inside a JSON string): the route answers it with
	// a 2xx or a 4xx JSON error, never a 5xx, and the store still lists.
	Texts map[string]string
	// Stored counts what the service keeps (runs, decisions); a bad body
	// must not change it.
	Stored func() int
}

type route struct{ method, pattern, path string }

func walk(t *testing.T, o Options) []route {
	t.Helper()
	var routes []route
	err := chi.Walk(o.Routes, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		path := pattern
		for _, p := range o.Params {
			path = strings.ReplaceAll(path, p[0], p[1])
		}
		routes = append(routes, route{method, pattern, strings.ReplaceAll(path, "*", "x")})
		return nil
	})
	if err != nil || len(routes) == 0 {
		t.Fatalf("chi.Walk: %v, %d routes", err, len(routes))
	}
	return routes
}

func writes(method string) bool { return method != http.MethodGet && method != http.MethodHead }

// credential is one way a caller presents (or fails to present) a token.
type credential struct {
	name, header, query string
	// pass: the variant holds a token the route must honour; read: it is
	// the read-only token (it passes reads, 403 on writes).
	pass, read bool
}

func credentials(o Options) []credential {
	return []credential{
		{name: "no header"},
		{name: "wrong token", header: "Bearer nope-" + o.Full},
		{name: "Bearer without token", header: "Bearer "},
		{name: "Bearer alone", header: "Bearer"},
		{name: "token without scheme", header: o.Full},
		{name: "token as Basic", header: "Basic " + o.Full},
		{name: "token with inner space", header: "Bearer " + o.Full + " x"},
		{name: "token in the query", query: "access_token=" + o.Full + "&token=" + o.Full},
		{name: "read token", header: "Bearer " + o.Read, read: true},
		{name: "write token, lower-case scheme", header: "bearer " + o.Full, pass: true},
		{name: "write token", header: "Bearer " + o.Full, pass: true},
	}
}

// HostileMatrix calls every route of the router (chi.Walk: a route added
// later is covered without editing a test) with every credential variant
// over HTTP, and each refused variant in process with a body that fails the
// test when read. It checks: only Open routes answer without a token, the
// read token never passes a write, nothing answers 500 or a non-JSON 5xx,
// every 4xx is JSON with an "error" (or a page on Pages), a redirect stays
// on site, and no Secret reaches a caller without a token.
func HostileMatrix(t *testing.T, o HostileOptions) {
	t.Helper()
	for _, r := range walk(t, o.Options) {
		t.Run(r.method+" "+r.pattern, func(t *testing.T) {
			for _, c := range credentials(o.Options) {
				t.Run(c.name, func(t *testing.T) { matrixCase(t, o, r, c) })
			}
		})
	}
}

// matrixCase is one route with one credential.
func matrixCase(t *testing.T, o HostileOptions, r route, c credential) {
	t.Helper()
	want := 0 // anything but 401 and 403
	switch {
	case o.Open[r.pattern]:
	case c.read && writes(r.method):
		want = http.StatusForbidden
	case !c.pass && !c.read:
		want = http.StatusUnauthorized
	}
	u := o.URL + r.path
	if c.query != "" {
		u += "?" + c.query
	}
	var body string
	if writes(r.method) {
		body = "{" // malformed: past the guard it is a 400, never an action
	}
	code, h, b := send(t, r.method, u, body, c.header, o.Protocol[r.pattern])
	what := r.method + " " + r.path + " with " + c.name
	refused := code == http.StatusUnauthorized || code == http.StatusForbidden
	if (want == 0 && refused) || (want != 0 && code != want) {
		t.Errorf("%s = %d %s; want %d (0: past the guard)", what, code, b, want)
	}
	kind := o.Protocol[r.pattern]
	switch {
	case refused: // the guard's answer is always JSON
		kind = ""
	case o.Pages[r.pattern]:
		kind = "page"
	}
	checkAnswer(t, what, code, h, b, kind)
	if !c.pass && !c.read {
		for _, s := range o.Secrets {
			if s != "" && strings.Contains(string(b), s) {
				t.Errorf("%s leaks %q: %s", what, s, b)
			}
		}
	}
	if want != 0 && writes(r.method) && o.Handler != nil {
		trapBody(t, o.Handler, r.method, r.path, c)
	}
}

// checkAnswer holds for every answer: no 500, a 5xx only as JSON (a
// dependency's outage, /ready), a 4xx JSON with an error (a page may be
// HTML, a protocol route answers in its protocol), a redirect on this site.
func checkAnswer(t *testing.T, what string, code int, h http.Header, b []byte, kind string) {
	t.Helper()
	ct := h.Get("Content-Type")
	switch {
	case code == http.StatusInternalServerError:
		t.Errorf("%s = 500 %s", what, b)
	case code >= 500 && !strings.HasPrefix(ct, "application/json"):
		t.Errorf("%s = %d with %q: %s", what, code, ct, b)
	case kind == "jsonrpc" && (code == http.StatusOK || code >= 400 && code < 500):
		var e struct {
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if code >= 400 && (json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Code == 0) {
			t.Errorf("%s = %d without a JSON-RPC error: %s", what, code, b)
		}
	case code >= 400 && code < 500 && kind == "mcp":
	case code >= 400 && code < 500 && kind == "page" && strings.HasPrefix(ct, "text/html"):
	case code >= 400 && code < 500:
		var e struct {
			Error string `json:"error"`
		}
		if !strings.HasPrefix(ct, "application/json") || json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Errorf("%s = %d %q without a JSON error: %s", what, code, ct, b)
		}
	case code >= 300 && code < 400:
		if loc := h.Get("Location"); !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") {
			t.Errorf("%s redirects off site: %q", what, loc)
		}
	}
}

// readCounter counts reads of a request body.
type readCounter struct{ n *atomic.Int64 }

func (c readCounter) Read([]byte) (int, error) {
	c.n.Add(1)
	return 0, io.ErrUnexpectedEOF
}

// trapBody serves a refused caller's write in process: the handler must
// answer without reading one byte of its body.
func trapBody(t *testing.T, h http.Handler, method, path string, c credential) {
	t.Helper()
	if c.query != "" {
		path += "?" + c.query
	}
	var reads atomic.Int64
	req := httptest.NewRequest(method, path, nil)
	req.Body, req.ContentLength = io.NopCloser(readCounter{&reads}), 64
	req.Header.Set("Content-Type", "application/json")
	if c.header != "" {
		req.Header.Set("Authorization", c.header)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if reads.Load() != 0 {
		t.Errorf("%s %s with %s read the body before refusing it (%d reads, answered %d)", method, path, c.name, reads.Load(), rec.Code)
	}
}

func send(t *testing.T, method, url, body, auth, protocol string) (int, http.Header, []byte) {
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
	if protocol == "mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, resp.Header, nil // it would not end: closing it ends it
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, b
}

// badBodies are bodies no write route may act on.
func badBodies(maxBody int) []struct{ name, body string } {
	return []struct{ name, body string }{
		{"empty", ""},
		{"not JSON", `{"task":`},
		{"plain text", "restart everything"},
		{"an array", `[]`},
		{"a number", `42`},
		{"null", `null`},
		{"wrong types", `{"task":{},"version":[],"status":7,"alerts":"x","enabled":"maybe","message":[1]}`},
		{"deeply nested arrays", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)},
		{"deeply nested objects", strings.Repeat(`{"a":`, 50_000) + "1" + strings.Repeat("}", 50_000)},
		{"huge string", `{"task":"` + strings.Repeat("x", maxBody+1) + `"}`},
		{"invalid UTF-8", "\xff\xfe{\"task\":\"\xc3\x28\"}"},
		{"raw NUL", "{\"task\":\"a\x00b\"}"},
		{"NUL before JSON", "\x00{}"},
		{"two objects", `{}{}`},
	}
}

// HostileBodies sends every bad body to every write route (but NoBody's)
// with the write token: each answers 4xx with a JSON error, never 5xx, and
// Stored does not change.
func HostileBodies(t *testing.T, o HostileOptions) {
	t.Helper()
	for _, r := range walk(t, o.Options) {
		if !writes(r.method) || o.NoBody[r.pattern] || o.Open[r.pattern] {
			continue
		}
		t.Run(r.method+" "+r.pattern, func(t *testing.T) {
			for _, bb := range badBodies(o.MaxBody) {
				t.Run(bb.name, func(t *testing.T) { bodyCase(t, o, r, bb.name, bb.body) })
			}
			if tmpl, ok := o.Texts[r.pattern]; ok {
				for _, tx := range hostileTexts {
					t.Run("text: "+tx.name, func(t *testing.T) { textCase(t, o, r, tx.name, fmt.Sprintf(tmpl, tx.text)) })
				}
			}
		})
	}
}

// bodyCase is one write route with one bad body.
func bodyCase(t *testing.T, o HostileOptions, r route, name, body string) {
	t.Helper()
	before := 0
	if o.Stored != nil {
		before = o.Stored()
	}
	kind := o.Protocol[r.pattern]
	code, h, b := send(t, r.method, o.URL+r.path, body, "Bearer "+o.Full, kind)
	what := r.method + " " + r.path + " with " + name + " body"
	if (code < 400 || code >= 500) && !(kind == "jsonrpc" && code == http.StatusOK) {
		t.Errorf("%s = %d %.300s; want a 4xx", what, code, b)
	}
	if kind == "jsonrpc" && code == http.StatusOK {
		checkAnswer(t, what, http.StatusBadRequest, h, b, kind) // the error object, on 200
	}
	checkAnswer(t, what, code, h, b, kind)
	if o.Stored != nil {
		if after := o.Stored(); after != before {
			t.Errorf("%s stored something: %d → %d", what, before, after)
		}
	}
}

// hostileTexts go inside a JSON string of a well-formed body.
var hostileTexts = []struct{ name, text string }{
	{"escaped NUL", `a\u0000b`},
	{"raw invalid UTF-8", "a\xff\xfeb"},
	{"lone surrogate", `a\ud800b`},
	{"right-to-left override", `a\u202eb`},
	{"markup", `<script>alert(1)</script>`},
	{"SQL", `'; DROP TABLE runs; --`},
}

// textCase sends a well-formed body carrying a hostile text: a 2xx or a
// 4xx JSON error, never a 5xx, and Stored still reads the store.
func textCase(t *testing.T, o HostileOptions, r route, name, body string) {
	t.Helper()
	code, h, b := send(t, r.method, o.URL+r.path, body, "Bearer "+o.Full, o.Protocol[r.pattern])
	what := r.method + " " + r.path + " with " + name
	if code >= 300 && code < 400 {
		t.Errorf("%s = %d", what, code)
	}
	checkAnswer(t, what, code, h, b, o.Protocol[r.pattern])
	if code >= 500 {
		t.Errorf("%s = %d %.300s", what, code, b)
	}
	if o.Stored != nil {
		o.Stored()
	}
}

// Rounds is HOSTILE_ROUNDS (default 1): how many times the hostile tests
// repeat their matrix; `make hostile` raises it.
func Rounds() int {
	n, err := strconv.Atoi(os.Getenv("HOSTILE_ROUNDS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}
