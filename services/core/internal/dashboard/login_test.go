package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/services/core/internal/dashboard"
)

// TestNextStaysOnSite: the login's next is checked the same way in the
// query (GET /login) and the form (POST /login): a tab or newline, a
// backslash, a second slash, a scheme or a host sends the visitor to "/"
// (issue 31, case 6: "/\t/evil.example" redirected off-site).
func TestNextStaysOnSite(t *testing.T) {
	t.Parallel()
	f := newFixture(t, httpauth.Tokens{Full: "full-s3cret"})
	for _, tc := range []struct{ next, want string }{
		{"/alerts?state=firing", "/alerts?state=firing"},
		{"/investigations/inv-oom", "/investigations/inv-oom"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"//evil.example/x", "/"},
		{"/\\evil.example", "/"},
		{"/\\/evil.example", "/"},
		{"/a\\b", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"evil.example", "/"},
		{"/\u0085/evil.example", "/"},
	} {
		t.Run(url.QueryEscape(tc.next), func(t *testing.T) {
			resp := postForm(t, f.URL+"/login", url.Values{"token": {"full-s3cret"}, "next": {tc.next}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != tc.want {
				t.Errorf("form: %d → %q, want %q", resp.StatusCode, resp.Header.Get("Location"), tc.want)
			}
			c := resp.Cookies()[0]
			_, _, hdr := get(t, f.URL+"/login?next="+url.QueryEscape(tc.next), "Cookie", c.Name+"="+c.Value)
			if hdr.Get("Location") != tc.want {
				t.Errorf("query, signed in: → %q, want %q", hdr.Get("Location"), tc.want)
			}
			code, body, _ := get(t, f.URL+"/login?next="+url.QueryEscape(tc.next))
			if code != http.StatusOK || !strings.Contains(body, `name="next" value="`+tc.want+`"`) && tc.want == "/" {
				t.Errorf("query: the form carries another next than %q (%d)", tc.want, code)
			}
		})
	}
}

// TestFailedLoginsLoggedAndSlowed: a wrong token is logged with the client
// address, and after dashboard.LoginFailures of them that address's
// sign-ins are refused with 429 and Retry-After — even with the right
// token — while another address still signs in (issue 31, case 6: 2,000
// guesses in 1.1 s, none logged).
func TestFailedLoginsLoggedAndSlowed(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	d, err := dashboard.New(dashboard.Deps{API: http.NotFoundHandler(), Tokens: httpauth.Tokens{Full: "full-s3cret"},
		Now: func() time.Time { return now }, Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	d.Routes(r)
	login := func(addr, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = addr + ":40000"
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec
	}
	for i := 0; i < dashboard.LoginFailures; i++ {
		if rec := login("192.0.2.7", "guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i+1, rec.Code)
		}
	}
	failed := logs.FilterMessageSnippet("failed sign-in").All()
	if len(failed) != dashboard.LoginFailures || failed[0].ContextMap()["client"] != "192.0.2.7" {
		t.Fatalf("failed sign-ins logged: %d, first %v", len(failed), failed)
	}
	for _, token := range []string{"guess", "full-s3cret"} {
		rec := login("192.0.2.7", token)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" || len(rec.Result().Cookies()) != 0 {
			t.Errorf("after %d failures, %q: %d Retry-After %q", dashboard.LoginFailures, token, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	if rec := login("198.51.100.9", "full-s3cret"); rec.Code != http.StatusSeeOther {
		t.Errorf("another address: %d, want the sign-in", rec.Code)
	}
	now = now.Add(dashboard.LoginWindow)
	if rec := login("192.0.2.7", "full-s3cret"); rec.Code != http.StatusSeeOther {
		t.Errorf("after the window: %d, want the sign-in", rec.Code)
	}
}

// TestAuthOffShownOnEveryPage: with AUTH_DISABLED=true (no tokens) every
// page says authentication is off.
func TestAuthOffShownOnEveryPage(t *testing.T) {
	t.Parallel()
	off := newFixture(t, httpauth.Tokens{})
	on := newFixture(t, httpauth.Tokens{Full: "full-s3cret"})
	for _, p := range []string{"/", "/alerts", "/investigations", "/agents"} {
		if code, body, _ := get(t, off.URL+p); code != http.StatusOK || !strings.Contains(body, `id="auth-off"`) {
			t.Errorf("GET %s with authentication off = %d, no banner", p, code)
		}
		if _, body, _ := get(t, on.URL+p, "Authorization", "Bearer full-s3cret"); strings.Contains(body, `id="auth-off"`) {
			t.Errorf("GET %s with a token shows the banner", p)
		}
	}
}
