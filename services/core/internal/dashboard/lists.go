package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
)

// A filtered list reads the API's pages (newest first) until it has a
// page's worth of matches or has read scanPages pages; "older" continues
// from the API cursor where it stopped, so a link is a stable deep link.
const (
	scanPages    = 10
	apiPageLimit = 500
	defaultLimit = 50
	maxLimit     = 500
)

type filterSet map[string]string

func (f filterSet) match(field, value string) bool {
	want := f[field]
	return want == "" || strings.EqualFold(want, value)
}

// listLimit reads ?limit= (default 50, at most 500).
func listLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, &APIError{Path: r.URL.Path, Code: http.StatusBadRequest, Msg: "limit " + strconv.Quote(v) + ": want a whole number from 1 to 500"}
	}
	return n, nil
}

func (f filterSet) any() bool {
	for _, v := range f {
		if v != "" {
			return true
		}
	}
	return false
}

// listPage is a page of an API list; Total is set by the lists that
// count (the alerts firing).
type listPage[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
	Total      *int   `json:"total"`
}

// scan reads pages of path?query from cursor and keeps the items f's keep
// accepts. Without a filter a page is the API's page of limit items. It
// returns the total the API's first page gave, -1 when it gave none.
func scan[T any](s *Dashboard, r *http.Request, path string, query url.Values, limit int, f filterSet, keep func(T) bool) ([]T, string, int, error) {
	cursor := r.URL.Query().Get("cursor")
	size := limit
	if f.any() {
		size = apiPageLimit
	}
	var out []T
	total := -1
	for range scanPages {
		q := url.Values{"limit": {strconv.Itoa(size)}}
		for k, v := range query {
			q[k] = v
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var p listPage[T]
		if err := s.api.get(r.Context(), path, q, &p); err != nil {
			return nil, "", 0, err
		}
		if p.Total != nil && total < 0 {
			total = *p.Total
		}
		for _, it := range p.Items {
			if keep(it) {
				out = append(out, it)
			}
		}
		cursor = p.NextCursor
		if cursor == "" || len(out) >= limit {
			break
		}
	}
	return out, cursor, total, nil
}

type alertGroup struct {
	Fingerprint, Alertname, Status string
	Decisions                      []api.DecisionView
}

type alertsData struct {
	Filter filterSet
	// State is "firing" for the alerts firing (each one's newest
	// decision; Total of them), "" for every decision.
	State   string
	Total   int
	Groups  []alertGroup
	Count   int
	Next    string
	Kinds   []string
	NextURL string
}

func (s *Dashboard) alerts(w http.ResponseWriter, r *http.Request) {
	limit, err := listLimit(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := filterSet{"decision": q.Get("decision"), "alertname": q.Get("alertname"), "fingerprint": q.Get("fingerprint"),
		"agent": q.Get("agent"), "status": q.Get("status")}
	state := q.Get("state")
	var query url.Values
	if state != "" {
		query = url.Values{"state": {state}} // the API refuses one it does not know
	}
	ds, next, total, err := scan(s, r, "/api/v1/alerts", query, limit, f, func(d api.DecisionView) bool {
		return f.match("decision", d.Decision) && f.match("alertname", d.Alertname) && f.match("fingerprint", d.Fingerprint) &&
			f.match("agent", d.Agent) && f.match("status", d.Status)
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := alertsData{Filter: f, State: state, Total: total, Count: len(ds), Next: next, Kinds: decisionKinds}
	idx := map[string]int{}
	for _, dv := range ds {
		i, ok := idx[dv.Fingerprint]
		if !ok {
			i = len(d.Groups)
			idx[dv.Fingerprint] = i
			d.Groups = append(d.Groups, alertGroup{Fingerprint: dv.Fingerprint, Alertname: dv.Alertname, Status: dv.Status})
		}
		d.Groups[i].Decisions = append(d.Groups[i].Decisions, dv)
	}
	if next != "" {
		nq := url.Values{}
		for k, v := range f {
			if v != "" {
				nq.Set(k, v)
			}
		}
		for _, k := range []string{"limit", "state"} {
			if q.Get(k) != "" {
				nq.Set(k, q.Get(k))
			}
		}
		nq.Set("cursor", next)
		d.NextURL = "/alerts?" + nq.Encode()
	}
	s.render(w, r, http.StatusOK, "alerts", page{Title: "Alerts", Nav: "alerts", Data: d})
}

type investigationsData struct {
	Filter   filterSet
	Items    []kapi.Investigation
	NextURL  string
	Statuses []string
}

func (s *Dashboard) investigations(w http.ResponseWriter, r *http.Request) {
	limit, err := listLimit(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := filterSet{"status": q.Get("status"), "alertname": q.Get("alertname")}
	items, next, _, err := scan(s, r, "/api/v1/investigations", nil, limit, f, func(i kapi.Investigation) bool {
		return f.match("status", i.Status) && f.match("alertname", i.Alertname)
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := investigationsData{Filter: f, Items: items,
		Statuses: []string{kapi.StatusRunning, kapi.StatusCompleted, kapi.StatusPartial, kapi.StatusFailed}}
	if next != "" {
		nq := url.Values{"cursor": {next}}
		for k, v := range f {
			if v != "" {
				nq.Set(k, v)
			}
		}
		if q.Get("limit") != "" {
			nq.Set("limit", q.Get("limit"))
		}
		d.NextURL = "/investigations?" + nq.Encode()
	}
	s.render(w, r, http.StatusOK, "investigations", page{Title: "Investigations", Nav: "investigations", Data: d})
}
