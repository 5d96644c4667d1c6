package api

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/services/core/internal/dispatch"
)

// AuditItem is one A2A log entry as an agent recorded it.
type AuditItem struct {
	Agent string          `json:"agent"` // whose log it came from
	At    *time.Time      `json:"at"`
	ID    string          `json:"id"`
	Entry json.RawMessage `json:"entry"`
}

// AuditAnswer is the merged audit log and how each agent answered.
type AuditAnswer struct {
	Items      []AuditItem   `json:"items"`
	NextCursor string        `json:"next_cursor"`
	Sources    []AuditSource `json:"sources"`
}

// auditKey orders items newest first, then by agent and id.
type auditKey struct {
	at    int64 // unix nanoseconds; 0 when the entry has no time
	agent string
	id    string
}

func (a auditKey) compare(b auditKey) int {
	if c := cmp.Compare(b.at, a.at); c != 0 {
		return c
	}
	if c := cmp.Compare(a.agent, b.agent); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

func (a auditKey) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(a.at, 10) + "\n" + a.agent + "\n" + a.id))
}

// mergedPage reads the page of a list merged from the agents' answers
// (the audit log, the pull requests): its cursor, when given, is the key
// of the last item of the page before.
func mergedPage(r *http.Request) (store.Page, *auditKey, error) {
	p, err := page(r)
	if err != nil || p.Cursor == "" {
		return p, nil, err
	}
	k, ok := decodeAuditKey(p.Cursor)
	if !ok {
		return p, nil, fmt.Errorf("cursor %q is not one this API issued", p.Cursor)
	}
	return p, &k, nil
}

func decodeAuditKey(s string) (auditKey, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return auditKey{}, false
	}
	parts := strings.SplitN(string(b), "\n", 3)
	if len(parts) != 3 {
		return auditKey{}, false
	}
	at, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return auditKey{}, false
	}
	return auditKey{at: at, agent: parts[1], id: parts[2]}, true
}

// entryMeta reads the time and id of an agent's log entry, whatever the
// casing of its field names.
func entryMeta(raw json.RawMessage) (*time.Time, string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, ""
	}
	var at *time.Time
	for _, k := range []string{"at", "At", "time", "timestamp", "started_at"} {
		var t time.Time
		if v, ok := m[k]; ok && json.Unmarshal(v, &t) == nil && !t.IsZero() {
			t = t.UTC()
			at = &t
			break
		}
	}
	id := ""
	for _, k := range []string{"id", "ID"} {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
			id = s
			break
		}
	}
	return at, id
}

// audit merges every agent's GET /a2a/log, newest first. An agent without
// the endpoint (404) is reported "unsupported", one that fails "down".
func (s *server) audit(w http.ResponseWriter, r *http.Request) {
	p, after, err := mergedPage(r)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "%v", err)
		return
	}
	type fetched struct {
		src   AuditSource
		items []AuditItem
	}
	res := make([]fetched, len(s.Fleet))
	var wg sync.WaitGroup
	for i, a := range s.Fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeoutCause(r.Context(), s.PeerTimeout, fmt.Errorf("no answer within %s", s.PeerTimeout))
			defer cancel()
			f := fetched{src: AuditSource{Agent: a.Slug, Status: "ok"}}
			entries, err := s.Agents.A2ALog(ctx, a.Slug, store.MaxLimit)
			switch {
			case errors.Is(err, dispatch.ErrNotSupported):
				f.src.Status, f.src.Error = "unsupported", "agent has no GET /a2a/log (404)"
			case err != nil:
				f.src.Status, f.src.Error = "down", redact.Error(err)
			}
			for n, e := range entries {
				at, id := entryMeta(e)
				if id == "" {
					id = fmt.Sprintf("#%06d", n)
				}
				f.items = append(f.items, AuditItem{Agent: a.Slug, At: at, ID: id, Entry: e})
			}
			f.src.Entries = len(f.items)
			res[i] = f
		}()
	}
	wg.Wait()
	out := AuditAnswer{Items: []AuditItem{}, Sources: make([]AuditSource, len(res))}
	var all []AuditItem
	for i, f := range res {
		out.Sources[i] = f.src
		all = append(all, f.items...)
	}
	key := func(it AuditItem) auditKey {
		k := auditKey{agent: it.Agent, id: it.ID}
		if it.At != nil {
			k.at = it.At.UnixNano()
		}
		return k
	}
	slices.SortFunc(all, func(a, b AuditItem) int { return key(a).compare(key(b)) })
	for _, it := range all {
		if after != nil && key(it).compare(*after) <= 0 {
			continue
		}
		if len(out.Items) == p.Limit {
			out.NextCursor = key(out.Items[len(out.Items)-1]).encode()
			break
		}
		out.Items = append(out.Items, it)
	}
	WriteJSON(w, http.StatusOK, out)
}
