package httpauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"  Bearer   abc  ", "abc", true},
		{"Bearer\tabc", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic abc", "", false},
		{"Bearerabc", "", false},
		{"Bearer a b", "", false},
		{"", "", false},
		{"abc", "", false},
	} {
		got, ok := BearerToken(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMiddleware(t *testing.T) {
	tok := Tokens{Full: "full-secret", Read: "read-secret"}
	h := tok.Middleware("test")(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, tc := range []struct {
		name, method, header string
		want                 int
	}{
		{"no header", http.MethodGet, "", http.StatusUnauthorized},
		{"wrong token", http.MethodGet, "Bearer nope", http.StatusUnauthorized},
		{"other scheme", http.MethodGet, "Basic full-secret", http.StatusUnauthorized},
		{"full get", http.MethodGet, "Bearer full-secret", http.StatusTeapot},
		{"full post lower-case scheme", http.MethodPost, "bearer full-secret", http.StatusTeapot},
		{"read get", http.MethodGet, "Bearer read-secret", http.StatusTeapot},
		{"read head", http.MethodHead, "Bearer read-secret", http.StatusTeapot},
		{"read post", http.MethodPost, "Bearer read-secret", http.StatusForbidden},
		{"read delete", http.MethodDelete, "Bearer read-secret", http.StatusForbidden},
		{"prefix of full", http.MethodGet, "Bearer full-secre", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/x", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
			if rec.Code != http.StatusTeapot && !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("body %q has no error message", rec.Body)
			}
			if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestNoReadTokenMeansNoReadAccess(t *testing.T) {
	tok := Tokens{Full: "full-secret"}
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set("Authorization", "Bearer ")
	if a := tok.Check(req); a != None {
		t.Fatalf("empty bearer with no read token: %v, want None", a)
	}
	if a := (Tokens{}).Check(req); a != Full {
		t.Fatalf("auth disabled: %v, want Full", a)
	}
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer\t x", "Basic a", "", "Bearer", " BeArEr  t "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := BearerToken(h)
		if !ok {
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t") {
			t.Fatalf("BearerToken(%q) = %q: empty or holds whitespace", h, tok)
		}
		if again, ok2 := BearerToken("Bearer " + tok); !ok2 || again != tok {
			t.Fatalf("round trip of %q: %q, %v", tok, again, ok2)
		}
	})
}

// TestWriter: only the write token makes a caller a Writer; the read-only
// token and a disabled check (AUTH_DISABLED=true) never do.
func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tokens Tokens
		header string
		want   bool
	}{
		{"write token", Tokens{Full: "full-secret", Read: "read-secret"}, "Bearer full-secret", true},
		{"read token", Tokens{Full: "full-secret", Read: "read-secret"}, "Bearer read-secret", false},
		{"auth disabled", Tokens{}, "", false},
		{"auth disabled, a token sent anyway", Tokens{}, "Bearer full-secret", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, called bool
			h := tc.tokens.Middleware("test")(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				called, got = true, Writer(r.Context())
			}))
			req := httptest.NewRequest(http.MethodGet, "/x", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if !called || got != tc.want {
				t.Fatalf("called %v, Writer %v; want %v", called, got, tc.want)
			}
		})
	}
}
