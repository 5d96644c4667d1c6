package api

import (
	"html/template"
	"net/http"
	"strings"
)

// Link is one entry of the core's index (GET /).
type Link struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	What   string `json:"what"`
}

// IndexLinks are the routes GET / points to.
var IndexLinks = []Link{
	{"GET", "/api/v1/openapi.yaml", "the OpenAPI 3 description of this API"},
	{"GET", "/api/v1/agents", "each agent's live health, persona, model and tools"},
	{"GET", "/api/v1/alerts", "alert decisions (dispatched, deduped, cooldown, busy, ignored, resolved); ?state=firing: every alert firing"},
	{"GET", "/api/v1/investigations", "investigations, newest first; /{id}/report is the chain of agent runs as a page"},
	{"GET", "/api/v1/findings", "findings (?severity=critical,high&namespace=&agent=&kind=&reason=&alertname=&remediable=)"},
	{"GET", "/api/v1/audit", "the agents' A2A audit logs, merged"},
	{"GET", "/api/v1/prs", "the agents' pull requests as the forge shows them, with their review (?state=open|all&agent=&cluster=)"},
	{"POST", "/api/v1/alerts", "the Alertmanager webhook"},
	{"POST", "/api/v1/agents/{slug}/run", "forward a task to an agent"},
	{"GET", "/health", "liveness"},
	{"GET", "/info", "the effective configuration (secrets redacted), unknown settings, warnings"},
	{"GET", "/ready", "readiness (the store)"},
	{"GET", "/metrics", "Prometheus metrics"},
}

// Index is GET /: where the API is, as JSON, or as a page for a browser.
// A browser gets the dashboard at / instead (internal/dashboard); this page
// is what a client that asks for HTML sees when the index is served alone.
func Index(version string) http.HandlerFunc {
	body := map[string]any{
		"service":   "kubecrew core",
		"version":   version,
		"api":       "/api/v1",
		"openapi":   "/api/v1/openapi.yaml",
		"dashboard": "GET / in a browser (Accept: text/html): the overview, /alerts, /investigations, /agents",
		"routes":    IndexLinks,
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if wantsHTML(r.Header.Get("Accept")) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			// its one inline style attribute; nothing else, no framing
			w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
			_ = indexPage.Execute(w, body)
			return
		}
		WriteJSON(w, http.StatusOK, body)
	}
}

// wantsHTML: a browser asks for text/html before any JSON.
func wantsHTML(accept string) bool {
	h, j := strings.Index(accept, "text/html"), strings.Index(accept, "application/json")
	return h >= 0 && (j < 0 || h < j)
}

var indexPage = template.Must(template.New("index").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>kubecrew core</title></head>
<body style="font-family: sans-serif; max-width: 60em; margin: 2em auto">
<h1>kubecrew core</h1>
<p>Version {{.version}}. The dashboard API is under <a href="/api/v1/agents">/api/v1</a>,
described by <a href="/api/v1/openapi.yaml">/api/v1/openapi.yaml</a>. {{.dashboard}}.</p>
<table>{{range .routes}}<tr><td><code>{{.Method}}</code></td><td>{{if eq .Method "GET"}}<a href="{{.Path}}">{{.Path}}</a>{{else}}<code>{{.Path}}</code>{{end}}</td><td>{{.What}}</td></tr>
{{end}}</table>
</body></html>
`))
