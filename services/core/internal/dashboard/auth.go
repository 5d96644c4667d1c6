package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
)

// CookieName is the dashboard's session cookie.
const CookieName = "kubecrew_dashboard"

// SessionTTL is how long a login lasts.
const SessionTTL = 12 * time.Hour

// auth is the dashboard's door (docs/MANUAL.md, "Dashboard"): with AUTH_TOKEN
// set, a visitor shows AUTH_TOKEN or AUTH_READ_TOKEN as a bearer header, or
// signs in once with either on the login form, which sets an HttpOnly,
// Secure, SameSite=Strict cookie. The cookie holds an expiry and its HMAC
// under a key derived from both tokens, never a token: changing a token
// signs everyone out. A cookie opens reads only.
type auth struct {
	tokens httpauth.Tokens
	now    func() time.Time
}

func (a auth) key() []byte {
	k := sha256.Sum256([]byte("kubecrew dashboard session\x00" + a.tokens.Full + "\x00" + a.tokens.Read))
	return k[:]
}

func (a auth) sign(exp int64) string {
	m := hmac.New(sha256.New, a.key())
	m.Write([]byte(strconv.FormatInt(exp, 10)))
	return strconv.FormatInt(exp, 10) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// session reports whether r carries a valid, unexpired session cookie.
func (a auth) session(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return false
	}
	exp, _, ok := strings.Cut(c.Value, ".")
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || a.now().Unix() >= n {
		return false
	}
	return hmac.Equal([]byte(a.sign(n)), []byte(c.Value))
}

// require lets through a visitor with a token or a session; a browser
// without either is sent to the login form, anything else gets 401.
func (a auth) require(next http.Handler) http.Handler {
	if !a.tokens.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.tokens.Check(r) != httpauth.None || a.session(r) {
			next.ServeHTTP(w, r)
			return
		}
		if wantsHTML(r.Header.Get("Accept")) {
			http.Redirect(w, r, "/login?"+url.Values{"next": {r.URL.RequestURI()}}.Encode(), http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="kubecrew-core"`)
		kapi.WriteError(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer <AUTH_TOKEN>), or sign in at /login")
	})
}

// CookieOr is the API's door with the session cookie as a third key:
// a signed-in browser may GET the API (the investigation reports the
// dashboard links); everything else goes through tokens.
func (s *Dashboard) CookieOr(tokens func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		guarded := tokens(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.auth.tokens.Enabled() && r.Header.Get("Authorization") == "" && httpauth.SafeMethod(r.Method) && s.auth.session(r) {
				next.ServeHTTP(w, r)
				return
			}
			guarded.ServeHTTP(w, r)
		})
	}
}

// safeNext keeps a redirect on this site, the one check for the form's
// field and the query: a path of this site, with no control character (a
// browser drops tabs and newlines, so "/\t/evil.example" would become
// "//evil.example"), no backslash (read as "/"), no second leading slash,
// scheme, host or userinfo. Anything else goes to "/".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") ||
		strings.IndexFunc(next, unicode.IsControl) >= 0 || !utf8.ValidString(next) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}

type loginView struct {
	Next  string
	Error string
}

func (s *Dashboard) loginForm(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if !s.auth.tokens.Enabled() || s.auth.session(r) {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Data: loginView{Next: next}})
}

// MaxLoginBody caps the login form.
const MaxLoginBody = 4 << 10

// login checks the token of the form and sets the session cookie.
func (s *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxLoginBody)
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, "login", page{Title: "Sign in", Data: loginView{Next: "/", Error: "the form could not be read: " + err.Error()}})
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if !s.auth.tokens.Enabled() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" {
		s.render(w, r, http.StatusBadRequest, "login", page{Title: "Sign in", Data: loginView{Next: next, Error: "The form needs a token."}})
		return
	}
	client := clientAddr(r)
	if wait := s.limiter.wait(client); wait > 0 {
		s.d.Log.Warn("sign-in refused: too many failed sign-ins from this address", zap.String("client", client), zap.Duration("retry_after", wait))
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		s.render(w, r, http.StatusTooManyRequests, "login", page{Title: "Sign in", Data: loginView{Next: next,
			Error: fmt.Sprintf("Too many failed sign-ins from your address: try again in %s.", wait.Round(time.Second))}})
		return
	}
	probe := &http.Request{Header: http.Header{"Authorization": {"Bearer " + token}}}
	if s.auth.tokens.Check(probe) == httpauth.None {
		s.limiter.failed(client)
		s.d.Log.Warn("failed sign-in: the token is neither AUTH_TOKEN nor AUTH_READ_TOKEN", zap.String("client", client))
		s.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in", Data: loginView{Next: next, Error: "That is neither AUTH_TOKEN nor AUTH_READ_TOKEN."}})
		return
	}
	exp := s.d.Now().Add(SessionTTL)
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: s.auth.sign(exp.Unix()), Path: "/", Expires: exp, MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// wantsHTML: a browser asks for text/html before any JSON.
func wantsHTML(accept string) bool {
	h, j := strings.Index(accept, "text/html"), strings.Index(accept, "application/json")
	return h >= 0 && (j < 0 || h < j)
}
