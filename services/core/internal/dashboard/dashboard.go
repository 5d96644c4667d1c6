// Package dashboard is the web dashboard the core serves at / (docs/MANUAL.md,
// "Dashboard"): server-rendered pages (html/template, embedded) that read
// only the core's public REST API — the overview, alerts with their
// decisions, investigations with their chain of runs, and agents — plus a
// few lines of JavaScript that localise times and refresh the page's main
// part when the core's event stream says something changed. It never
// writes: the only POST is the login form.
package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/httpauth"
	"github.com/kubecrew/kubecrew/pkg/redact"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Deps are the dashboard's dependencies.
type Deps struct {
	// API is the core's public REST API (the handler api.Routes mounts,
	// without the authentication in front of it: the dashboard checks its
	// own visitors).
	API http.Handler
	// Tokens are AUTH_TOKEN and AUTH_READ_TOKEN; either opens the
	// dashboard (a bearer header or the login form's cookie).
	Tokens httpauth.Tokens
	// Index answers GET / for a client that does not ask for HTML (the
	// JSON route index).
	Index http.Handler
	Now   func() time.Time
	Log   *zap.Logger
}

// Dashboard serves the pages.
type Dashboard struct {
	d     Deps
	api   apiClient
	pages map[string]*template.Template
	auth  auth
	// limiter slows failed sign-ins per client address (limit.go).
	limiter *loginLimiter
}

// New parses the embedded templates.
func New(d Deps) (*Dashboard, error) {
	if d.API == nil {
		return nil, fmt.Errorf("dashboard: the API handler is required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"overview", "alerts", "investigations", "investigation", "agents", "agent", "login", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard template %s: %w", name, err)
		}
		pages[name] = t
	}
	return &Dashboard{d: d, api: apiClient{h: d.API}, pages: pages, auth: auth{tokens: d.Tokens, now: d.Now}, limiter: newLoginLimiter(d.Now)}, nil
}

// Routes mounts the pages on r: /, /alerts, /investigations,
// /investigations/{id}, /agents, /agents/{slug}, /login and /static/.
func (s *Dashboard) Routes(r chi.Router) {
	static, _ := fs.Sub(staticFS, "static")
	r.With(kapi.AllowQuery()).Get("/static/*", http.StripPrefix("/static/", http.FileServerFS(static)).ServeHTTP)
	r.With(kapi.AllowQuery("next")).Get("/login", s.loginForm)
	r.With(kapi.AllowQuery("next")).Post("/login", s.login)
	r.Group(func(r chi.Router) {
		r.Use(s.auth.require)
		r.With(kapi.AllowQuery()).Get("/", s.overview)
		r.With(kapi.AllowQuery("state", "decision", "alertname", "fingerprint", "agent", "status", "limit", "cursor")).Get("/alerts", s.alerts)
		r.With(kapi.AllowQuery("status", "alertname", "limit", "cursor")).Get("/investigations", s.investigations)
		r.With(kapi.AllowQuery()).Get("/investigations/{id}", s.investigation)
		r.With(kapi.AllowQuery()).Get("/agents", s.agents)
		r.With(kapi.AllowQuery("runs_cursor")).Get("/agents/{slug}", s.agent)
	})
}

// page is what every template gets.
type page struct {
	Title string
	Nav   string
	Now   time.Time
	Data  any
	// Partial lists what could not be read (the rest of the page stands).
	Partial []string
	// AuthOff: the core runs with AUTH_DISABLED=true (every page says so).
	AuthOff bool
}

func (s *Dashboard) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	p.Now = s.d.Now().UTC()
	p.AuthOff = !s.auth.tokens.Enabled()
	var b bytes.Buffer
	if err := s.pages[name].Execute(&b, p); err != nil {
		s.d.Log.Error("dashboard render", zap.String("page", name), zap.Error(err))
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", PageCSP)
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// PageCSP is the dashboard pages' Content-Security-Policy: their script,
// styles and data come from this origin (static/dash.js, static/dash.css,
// the event stream), nothing inline, no framing.
const PageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Headers sets, on every answer of the core (pages, redirects, static
// files, the API), a Content-Security-Policy that loads nothing and may not
// be framed, Referrer-Policy and X-Content-Type-Options: nosniff. A page
// sets its own policy over it (PageCSP, the reports').
func Headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// fail renders the error page for an API answer that the page cannot do
// without: the API's 4xx are the visitor's (a bad filter, no such id).
func (s *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusBadGateway
	if ae, ok := err.(*APIError); ok && ae.Code >= 400 && ae.Code < 500 {
		code = ae.Code
	}
	s.render(w, r, code, "error", page{Title: http.StatusText(code), Data: redact.Error(err)})
}

type navItem struct{ Key, Href, Label string }

var nav = []navItem{{"overview", "/", "Overview"}, {"alerts", "/alerts", "Alerts"},
	{"investigations", "/investigations", "Investigations"}, {"agents", "/agents", "Agents"}}

var funcs = template.FuncMap{
	"ts": func(t time.Time) template.HTML {
		if t.IsZero() {
			return "—"
		}
		u := t.UTC()
		return template.HTML(`<time datetime="` + u.Format(time.RFC3339Nano) + `">` + u.Format("2006-01-02 15:04:05") + ` UTC</time>`)
	},
	"tsp": func(t *time.Time) template.HTML {
		if t == nil || t.IsZero() {
			return "—"
		}
		u := t.UTC()
		return template.HTML(`<time datetime="` + u.Format(time.RFC3339Nano) + `">` + u.Format("2006-01-02 15:04:05") + ` UTC</time>`)
	},
	"dur": func(s *float64) string {
		if s == nil {
			return "running"
		}
		return (time.Duration(*s * float64(time.Second))).Round(time.Millisecond).String()
	},
	"q": func(base string, kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Set(kv[i], kv[i+1])
			}
		}
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	},
	"short": func(s string, n int) string {
		if len([]rune(s)) <= n {
			return s
		}
		return string([]rune(s)[:n]) + "…"
	},
	"navItems":  func() []navItem { return nav },
	"list":      func(s ...string) []string { return s },
	"add":       func(a, b int) int { return a + b },
	"lower":     strings.ToLower,
	"pathesc":   url.PathEscape,
	"contains":  strings.Contains,
	"hasPrefix": strings.HasPrefix,
}
