package store

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
)

// Postgres text and jsonb hold neither NUL nor invalid UTF-8, and model
// answers and tool output (pod logs) can carry both. Both stores clean
// free text the same way on write — NUL dropped, invalid bytes replaced by
// U+FFFD — so such a run is recorded, not failed, and reads the same from
// either store.

func clean(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// cleanErr is clean for an error column (runs, investigations, the A2A
// log, a delegation): an error text quotes what failed, so it passes the
// one redaction before it is stored (docs/MANUAL.md, "Redaction").
func cleanErr(s string) string {
	s, _ = redact.String(clean(s))
	return s
}

func cleanJSON(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

func cleanFinding(f api.Finding) api.Finding {
	f.Key, f.Severity, f.Kind = clean(f.Key), clean(f.Severity), clean(f.Kind)
	f.Namespace, f.Name, f.Container = clean(f.Namespace), clean(f.Name), clean(f.Container)
	f.Reason, f.Detail, f.Remediation = clean(f.Reason), clean(f.Detail), clean(f.Remediation)
	f.Cluster = clean(f.Cluster)
	return f
}

func cleanFindings(fs []api.Finding) []api.Finding {
	for i := range fs {
		fs[i] = cleanFinding(fs[i])
	}
	return fs
}

// cleanRun cleans r's text; r must already be a copy (normRun).
func cleanRun(r Run) Run {
	r.Agent, r.WorkflowType, r.Task, r.Caller = clean(r.Agent), clean(r.WorkflowType), clean(r.Task), clean(r.Caller)
	r.DiscussionID, r.Status, r.Answer, r.Verdict, r.Error = clean(r.DiscussionID), clean(r.Status), clean(r.Answer), clean(r.Verdict), cleanErr(r.Error)
	for k, v := range r.Context {
		if ck := clean(k); ck != k {
			delete(r.Context, k)
			r.Context[ck] = clean(v)
		} else {
			r.Context[k] = clean(v)
		}
	}
	r.Findings = cleanFindings(r.Findings)
	if r.Delegation != nil {
		r.Delegation.To, r.Delegation.RunID = clean(r.Delegation.To), clean(r.Delegation.RunID)
		r.Delegation.Result, r.Delegation.Error = clean(r.Delegation.Result), cleanErr(r.Delegation.Error)
		r.Delegation.Finding = cleanFinding(r.Delegation.Finding)
	}
	return r
}

// cleanA2A cleans e's text; e must already be a copy (normA2A).
func cleanA2A(e A2AEntry) A2AEntry {
	e.Agent, e.Direction, e.Verb, e.Caller, e.Callee = clean(e.Agent), clean(e.Direction), clean(e.Verb), clean(e.Caller), clean(e.Callee)
	e.DiscussionID, e.TraceID, e.Text, e.Outcome = clean(e.DiscussionID), clean(e.TraceID), clean(e.Text), clean(e.Outcome)
	e.Error, e.CallerRunID, e.CalleeRunID, e.Answer = cleanErr(e.Error), clean(e.CallerRunID), clean(e.CalleeRunID), clean(e.Answer)
	e.Data = cleanJSON(e.Data)
	return e
}

func cleanInvestigation(i Investigation) Investigation {
	i.Alertname, i.Agent, i.RunID, i.Status = clean(i.Alertname), clean(i.Agent), clean(i.RunID), clean(i.Status)
	i.Answer, i.Error = clean(i.Answer), cleanErr(i.Error)
	i.Findings = cleanFindings(i.Findings)
	return i
}
