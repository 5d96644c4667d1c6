// Package httpauth is the one bearer-token check both kubecrew services put
// in front of their routes (docs/MANUAL.md, "Authentication"): one parser of the
// Authorization header, constant-time comparison, and two tokens — AUTH_TOKEN
// opens every route, the optional AUTH_READ_TOKEN opens reads (GET and HEAD)
// only, for dashboards.
package httpauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// Access is what a request's credential allows.
type Access int

const (
	// None: no credential, or one that matches neither token.
	None Access = iota
	// Read: the read-only token; safe methods only.
	Read
	// Full: AUTH_TOKEN; every route.
	Full
)

// BearerToken returns the credential of an Authorization header value of
// the form "Bearer <token>". The scheme is matched case-insensitively
// (RFC 9110 §11.1), spaces and tabs around the header and between scheme and
// token are ignored; any other shape (another scheme, no token, a token
// with inner whitespace) is not a bearer credential.
func BearerToken(header string) (string, bool) {
	h := strings.Trim(header, " \t")
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok {
		scheme, rest, ok = strings.Cut(h, "\t")
	}
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok := strings.Trim(rest, " \t")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// Tokens are the configured credentials. Full empty disables the check
// (every request has Full access; the services refuse to start so unless
// AUTH_DISABLED=true); Read empty means no read-only token.
type Tokens struct {
	Full string // AUTH_TOKEN
	Read string // AUTH_READ_TOKEN
}

// Enabled reports whether requests must carry a token.
func (t Tokens) Enabled() bool { return t.Full != "" }

// Check returns the access the request's Authorization header grants.
// Both tokens are compared whatever the outcome, as fixed-length digests,
// so timing says nothing about either token or its length.
func (t Tokens) Check(r *http.Request) Access {
	if !t.Enabled() {
		return Full
	}
	got, ok := BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return None
	}
	g := sha256.Sum256([]byte(got))
	f := sha256.Sum256([]byte(t.Full))
	rd := sha256.Sum256([]byte(t.Read))
	full := subtle.ConstantTimeCompare(g[:], f[:])
	read := subtle.ConstantTimeCompare(g[:], rd[:]) & boolInt(t.Read != "")
	switch {
	case full == 1:
		return Full
	case read == 1:
		return Read
	}
	return None
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SafeMethod reports whether m only reads (what the read-only token opens).
func SafeMethod(m string) bool { return m == http.MethodGet || m == http.MethodHead }

// Allowed reports whether access a may make request r.
func Allowed(a Access, r *http.Request) bool {
	return a == Full || (a == Read && SafeMethod(r.Method))
}

// Middleware refuses requests the tokens do not allow: 401 without a valid
// credential, 403 for the read-only token on a method that writes. Realm
// names the service in WWW-Authenticate. The body is {"error": "..."}.
func (t Tokens) Middleware(realm string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if !t.Enabled() {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch a := t.Check(r); {
			case Allowed(a, r):
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accessKey{}, a)))
			case a == Read:
				api.WriteError(w, http.StatusForbidden, "the read-only token (AUTH_READ_TOKEN) opens GET requests only; "+r.Method+" needs AUTH_TOKEN")
			default:
				w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
				api.WriteError(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer <AUTH_TOKEN>)")
			}
		})
	}
}

type accessKey struct{}

// Writer reports whether the request ctx belongs to was let in by
// Middleware with AUTH_TOKEN, the write token: the only caller a run may
// treat as a person (docs/MANUAL.md, "Authentication"). Without authentication
// (AUTH_DISABLED=true) and for the read-only token it is false.
func Writer(ctx context.Context) bool {
	a, _ := ctx.Value(accessKey{}).(Access)
	return a == Full
}
