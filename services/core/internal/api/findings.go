package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	kapi "github.com/kubecrew/kubecrew/pkg/api"

	"github.com/kubecrew/kubecrew/pkg/store"
)

// findingsScanPage is the investigations page size the findings list walks
// (fixed: a findings cursor points into one such page).
const findingsScanPage = 50

// findingsScanMax bounds the investigations pages one request walks.
const findingsScanMax = 20

// findingsCursor is a position in the flattened findings: the store cursor
// of an investigations page, an investigation in it, a finding in that.
type findingsCursor struct {
	C string `json:"c"`
	I int    `json:"i"`
	F int    `json:"f"`
}

func (c findingsCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeFindingsCursor(s string) (findingsCursor, bool) {
	var c findingsCursor
	if s == "" {
		return c, true
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.I < 0 || c.F < 0 || c.I >= findingsScanPage {
		return c, false
	}
	return c, true
}

// findingFilters are the query parameters GET /api/v1/findings filters on.
var findingFilters = []string{"severity", "agent", "namespace", "kind", "reason", "alertname", "remediable"}

// findingFilter keeps the findings matching every parameter given; a
// parameter may list several values (severity=critical,high).
type findingFilter struct {
	sets       map[string]map[string]bool
	remediable *bool
}

func parseFindingFilter(r *http.Request) (findingFilter, error) {
	f := findingFilter{sets: map[string]map[string]bool{}}
	q := r.URL.Query()
	for _, name := range findingFilters {
		vs := q[name]
		if name == "remediable" {
			continue // a boolean, below
		}
		if len(vs) == 0 {
			continue
		}
		set := map[string]bool{}
		for _, v := range vs {
			for _, x := range strings.Split(v, ",") {
				if x = strings.TrimSpace(x); x != "" {
					set[x] = true
				}
			}
		}
		if name == "severity" {
			for x := range set {
				if !kapi.ValidSeverity(x) {
					return f, fmt.Errorf("severity %q: want critical, high, medium or low (a comma list for several)", x)
				}
			}
		}
		if len(set) > 0 {
			f.sets[name] = set
		}
	}
	if v := q.Get("remediable"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, fmt.Errorf("remediable %q: want true or false", v)
		}
		f.remediable = &b
	}
	return f, nil
}

func (f findingFilter) match(agent, alertname string, fd kapi.Finding) bool {
	for name, want := range f.sets {
		var v string
		switch name {
		case "severity":
			v = fd.Severity
		case "agent":
			v = agent
		case "namespace":
			v = fd.Namespace
		case "kind":
			v = fd.Kind
		case "reason":
			v = fd.Reason
		case "alertname":
			v = alertname
		}
		if !want[v] {
			return false
		}
	}
	return f.remediable == nil || fd.Remediable == *f.remediable
}

// findings lists the findings of investigations, newest investigation
// first, filtered by the query (findingFilters).
func (s *server) findings(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	filter, err := parseFindingFilter(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	cur, ok := decodeFindingsCursor(p.Cursor)
	if !ok {
		WriteError(w, http.StatusBadRequest, "cursor %q is not one this API issued", p.Cursor)
		return
	}
	out := ListAnswer[FindingView]{Items: []FindingView{}}
	for scanned := 0; scanned < findingsScanMax; scanned++ {
		invs, next, err := s.Store.ListInvestigations(r.Context(), store.Page{Limit: findingsScanPage, Cursor: cur.C})
		if err != nil {
			s.storeError(w, err)
			return
		}
		for i := cur.I; i < len(invs); i++ {
			inv := invs[i]
			f0 := 0
			if i == cur.I {
				f0 = cur.F
			}
			for f := f0; f < len(inv.Findings); f++ {
				if !filter.match(inv.Agent, inv.Alertname, inv.Findings[f]) {
					continue
				}
				if len(out.Items) == p.Limit {
					out.NextCursor = findingsCursor{C: cur.C, I: i, F: f}.encode()
					WriteJSON(w, http.StatusOK, out)
					return
				}
				at := inv.StartedAt
				if inv.FinishedAt != nil {
					at = *inv.FinishedAt
				}
				out.Items = append(out.Items, FindingView{InvestigationID: inv.ID, Agent: inv.Agent, RunID: inv.RunID,
					Fingerprint: inv.Fingerprint, Alertname: inv.Alertname, At: at.UTC(), Finding: inv.Findings[f]})
			}
		}
		if next == "" {
			WriteJSON(w, http.StatusOK, out)
			return
		}
		cur = findingsCursor{C: next}
	}
	out.NextCursor = cur.encode()
	WriteJSON(w, http.StatusOK, out)
}
