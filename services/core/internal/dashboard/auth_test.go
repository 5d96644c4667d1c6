package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/services/core/internal/dashboard"
)

func postForm(t *testing.T, u string, form url.Values, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestLogin: with AUTH_TOKEN set nothing is readable without a token or
// the login's cookie; the cookie is HttpOnly, Secure, SameSite=Strict,
// opens reads only, and cannot be forged or carried to another site.
func TestLogin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, httpauth.Tokens{Full: "full-s3cret", Read: "read-s3cret"})
	for _, p := range []string{"/", "/alerts", "/investigations/inv-oom", "/agents/platform-sre"} {
		code, body, hdr := get(t, f.URL+p)
		if code != http.StatusSeeOther || hdr.Get("Location") != "/login?next="+url.QueryEscape(p) {
			t.Errorf("GET %s without a token = %d %s", p, code, hdr.Get("Location"))
		}
		if strings.Contains(body, "KubePodOOMKilled") || strings.Contains(body, "request_changes") || strings.Contains(body, "AGENT_MODEL") {
			t.Errorf("GET %s without a token shows data: %s", p, body)
		}
	}
	if code, body, _ := get(t, f.URL+"/", "Accept", "application/json"); code != http.StatusUnauthorized || !strings.Contains(body, `"error"`) {
		t.Errorf("GET / as JSON without a token = %d %s", code, body)
	}
	if code, body, _ := get(t, f.URL+"/alerts", "Authorization", "Bearer read-s3cret"); code != 200 || !strings.Contains(body, "KubePodOOMKilled") {
		t.Errorf("GET /alerts with the read token = %d", code)
	}
	if code, body, _ := get(t, f.URL+"/login?next=/alerts"); code != 200 || !strings.Contains(body, `name="token"`) || !strings.Contains(body, `value="/alerts"`) {
		t.Errorf("GET /login = %d %s", code, body)
	}
	for _, tc := range []struct {
		name, token string
		code        int
	}{{"no token", "", http.StatusBadRequest}, {"a wrong token", "nope", http.StatusUnauthorized}} {
		if resp := postForm(t, f.URL+"/login", url.Values{"token": {tc.token}, "next": {"/"}}); resp.StatusCode != tc.code || len(resp.Cookies()) != 0 {
			t.Errorf("login with %s = %d, %d cookies", tc.name, resp.StatusCode, len(resp.Cookies()))
		}
	}
	for _, tok := range []string{"read-s3cret", "full-s3cret"} {
		resp := postForm(t, f.URL+"/login", url.Values{"token": {tok}, "next": {"//evil.example/x"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Fatalf("login = %d → %q, want 303 to / (never off-site)", resp.StatusCode, resp.Header.Get("Location"))
		}
		cs := resp.Cookies()
		if len(cs) != 1 || cs[0].Name != dashboard.CookieName || !cs[0].HttpOnly || !cs[0].Secure || cs[0].SameSite != http.SameSiteStrictMode {
			t.Fatalf("cookie = %+v", cs)
		}
		if strings.Contains(cs[0].Value, tok) {
			t.Fatal("the cookie holds the token")
		}
		c := cs[0]
		cookie := c.Name + "=" + c.Value
		if code, body, _ := get(t, f.URL+"/investigations/inv-oom", "Cookie", cookie); code != 200 || !strings.Contains(body, "request_changes") {
			t.Errorf("page with the cookie = %d", code)
		}
		if code, _, _ := get(t, f.URL+"/api/v1/investigations/inv-oom/report", "Cookie", cookie); code != 200 {
			t.Errorf("the linked report with the cookie = %d", code)
		}
		// the cookie opens reads only: a write still needs AUTH_TOKEN
		req, _ := http.NewRequest(http.MethodPost, f.URL+"/api/v1/agents/platform-sre/run", strings.NewReader(`{"task":"x"}`))
		req.AddCookie(c)
		resp2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp2.Body.Close()
		if resp2.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST with only the cookie = %d, want 401", resp2.StatusCode)
		}
		forged := c.Name + "=" + c.Value[:len(c.Value)-2] + "xx"
		if code, _, _ := get(t, f.URL+"/", "Cookie", forged); code != http.StatusSeeOther {
			t.Errorf("a forged cookie = %d, want the login", code)
		}
		expired := c.Name + "=1." + strings.SplitN(c.Value, ".", 2)[1]
		if code, _, _ := get(t, f.URL+"/", "Cookie", expired); code != http.StatusSeeOther {
			t.Errorf("an expired cookie = %d, want the login", code)
		}
	}
}
