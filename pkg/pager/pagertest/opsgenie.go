package pagertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// OGAlert is an accepted create-alert request.
type OGAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description"`
	Details     map[string]string `json:"details"`
	Entity      string            `json:"entity"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
	Tags        []string          `json:"tags"`
	Responders  []any             `json:"responders"`
	Actions     []string          `json:"actions"`
	Note        string            `json:"note"`
	User        string            `json:"user"`
}

// OGClose is an accepted close request.
type OGClose struct {
	Alias  string
	User   string `json:"user"`
	Source string `json:"source"`
	Note   string `json:"note"`
}

// Opsgenie is a recorded Alert API.
type Opsgenie struct {
	*httptest.Server
	Key      string
	mu       sync.Mutex
	created  []OGAlert
	closed   []OGClose
	open     map[string]bool
	rejected []string
	n        int
}

// NewOpsgenie starts the recorded Alert API taking the integration key key.
func NewOpsgenie(t testing.TB, key string) *Opsgenie {
	o := &Opsgenie{Key: key, open: map[string]bool{}}
	o.Server = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.Close)
	return o
}

// Created returns the accepted create requests, in order.
func (o *Opsgenie) Created() []OGAlert {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OGAlert(nil), o.created...)
}

// Closed returns the accepted close requests, in order.
func (o *Opsgenie) Closed() []OGClose {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OGClose(nil), o.closed...)
}

// Rejected returns why each refused request was refused.
func (o *Opsgenie) Rejected() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.rejected...)
}

func (o *Opsgenie) reply(w http.ResponseWriter, code int, body map[string]any) {
	o.mu.Lock()
	o.n++
	body["took"] = 0.012
	body["requestId"] = fmt.Sprintf("6c0c6c3e-1f7a-4c52-9d5b-%012d", o.n)
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func (o *Opsgenie) reject(w http.ResponseWriter, code int, msg string) {
	o.mu.Lock()
	o.rejected = append(o.rejected, msg)
	o.mu.Unlock()
	o.reply(w, code, map[string]any{"message": msg})
}

func (o *Opsgenie) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "GenieKey "+o.Key {
		o.reject(w, http.StatusUnauthorized, "Could not authenticate")
		return
	}
	if r.Method != http.MethodPost {
		o.reject(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		o.reject(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	switch {
	case r.URL.Path == "/v2/alerts":
		o.create(w, r)
	case strings.HasPrefix(r.URL.Path, "/v2/alerts/") && strings.HasSuffix(r.URL.Path, "/close"):
		o.closeAlert(w, r)
	default:
		o.reject(w, http.StatusNotFound, "no such route "+r.URL.Path)
	}
}

var ogPriorities = map[string]bool{"": true, "P1": true, "P2": true, "P3": true, "P4": true, "P5": true}

func (o *Opsgenie) create(w http.ResponseWriter, r *http.Request) {
	var a OGAlert
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 512<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		o.reject(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	switch {
	case strings.TrimSpace(a.Message) == "" || len([]rune(a.Message)) > 130:
		o.reject(w, http.StatusUnprocessableEntity, "Request body is not processable. message: must be 1 to 130 characters")
		return
	case len([]rune(a.Alias)) > 512, len([]rune(a.Description)) > 15000, len([]rune(a.Entity)) > 512:
		o.reject(w, http.StatusUnprocessableEntity, "Request body is not processable. alias, description or entity too long")
		return
	case !ogPriorities[a.Priority]:
		o.reject(w, http.StatusUnprocessableEntity, "Request body is not processable. priority must be P1 to P5")
		return
	}
	o.mu.Lock()
	o.created = append(o.created, a)
	o.open[a.Alias] = true
	o.mu.Unlock()
	o.reply(w, http.StatusAccepted, map[string]any{"result": "Request will be processed"})
}

func (o *Opsgenie) closeAlert(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("identifierType") != "alias" {
		o.reject(w, http.StatusUnprocessableEntity, "closing by alias needs identifierType=alias (got "+r.URL.RawQuery+")")
		return
	}
	raw := strings.TrimSuffix(strings.TrimPrefix(r.URL.EscapedPath(), "/v2/alerts/"), "/close")
	alias, err := url.PathUnescape(raw)
	if err != nil || alias == "" {
		o.reject(w, http.StatusBadRequest, "alias "+raw)
		return
	}
	var c OGClose
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		o.reject(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	c.Alias = alias
	o.mu.Lock()
	o.closed = append(o.closed, c)
	delete(o.open, alias)
	o.mu.Unlock()
	// The API answers 202 whether or not an open alert has the alias: the
	// request is processed asynchronously.
	o.reply(w, http.StatusAccepted, map[string]any{"result": "Request will be processed"})
}
