package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/services/core/internal/api"
)

type setting struct {
	Name, Value, Source string
}

type agentData struct {
	Agent    agentRow
	Settings []setting
	Runs     []kapi.RunResult
	RunsNext string
	RunsErr  string
	A2A      []api.AuditItem
	A2AErr   string
}

func (s *Dashboard) agents(w http.ResponseWriter, r *http.Request) {
	var as struct {
		Agents []api.AgentView `json:"agents"`
	}
	if err := s.api.get(r.Context(), "/api/v1/agents", nil, &as); err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "agents", page{Title: "Agents", Nav: "agents", Data: s.agentRows(r.Context(), as.Agents)})
}

func (s *Dashboard) agent(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "slug")
	var as struct {
		Agents []api.AgentView `json:"agents"`
	}
	if err := s.api.get(r.Context(), "/api/v1/agents", nil, &as); err != nil {
		s.fail(w, r, err)
		return
	}
	i := slices.IndexFunc(as.Agents, func(a api.AgentView) bool {
		return strings.EqualFold(a.Slug, name) || strings.EqualFold(a.Persona, name)
	})
	if i < 0 {
		s.fail(w, r, &APIError{Path: r.URL.Path, Code: http.StatusNotFound, Msg: "no agent " + quoted(name)})
		return
	}
	d := agentData{Agent: s.agentRows(r.Context(), as.Agents[i:i+1])[0], Settings: settingsOf(as.Agents[i].Settings)}
	slug := as.Agents[i].Slug
	var g gather
	g.do("runs", func() error {
		q := url.Values{"limit": {"25"}}
		if c := r.URL.Query().Get("runs_cursor"); c != "" {
			q.Set("cursor", c)
		}
		var p api.ListAnswer[kapi.RunResult]
		if err := s.api.get(r.Context(), "/api/v1/agents/"+url.PathEscape(slug)+"/runs", q, &p); err != nil {
			d.RunsErr = redact.Error(err)
			return nil
		}
		d.Runs, d.RunsNext = p.Items, p.NextCursor
		return nil
	})
	g.do("a2a", func() error {
		var a api.AuditAnswer
		if err := s.api.get(r.Context(), "/api/v1/audit", url.Values{"limit": {"500"}}, &a); err != nil {
			d.A2AErr = redact.Error(err)
			return nil
		}
		for _, it := range a.Items {
			if it.Agent == slug && len(d.A2A) < 50 {
				d.A2A = append(d.A2A, it)
			}
		}
		for _, src := range a.Sources {
			if src.Agent == slug && src.Status != "ok" {
				d.A2AErr = src.Status + ": " + src.Error
			}
		}
		return nil
	})
	g.wait()
	s.render(w, r, http.StatusOK, "agent", page{Title: "Agent " + slug, Nav: "agents", Data: d})
}

func quoted(s string) string { b, _ := json.Marshal(s); return string(b) }

// settingsOf lists an agent's effective settings (already redacted by
// the API), by name.
func settingsOf(raw json.RawMessage) []setting {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make([]setting, 0, len(m))
	for name, v := range m {
		st := setting{Name: name}
		var obj struct {
			Value  any    `json:"value"`
			Source string `json:"source"`
		}
		if json.Unmarshal(v, &obj) == nil && obj.Value != nil {
			st.Source = obj.Source
			if s, ok := obj.Value.(string); ok {
				st.Value = s
			} else {
				b, _ := json.Marshal(obj.Value)
				st.Value = string(b)
			}
		} else {
			st.Value = string(v)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b setting) int { return strings.Compare(a.Name, b.Name) })
	return out
}
