package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/persona"
)

// IncidentWorkload is the fixture the demo incident is about.
const IncidentWorkload = "oomkill"

// Decision is one entry of the core's webhook answer.
type Decision struct {
	Fingerprint     string `json:"fingerprint"`
	Alertname       string `json:"alertname"`
	Status          string `json:"status"`
	Decision        string `json:"decision"`
	Agent           string `json:"agent"`
	InvestigationID string `json:"investigation_id"`
	Reason          string `json:"reason"`
}

// Investigation is the core's GET /api/v1/investigations/{id}.
type Investigation struct {
	ID         string        `json:"id"`
	Agent      string        `json:"agent"`
	RunID      string        `json:"run_id"`
	Status     string        `json:"status"`
	Findings   []api.Finding `json:"findings"`
	Answer     string        `json:"answer"`
	Error      string        `json:"error"`
	StartedAt  time.Time     `json:"started_at"`
	FinishedAt *time.Time    `json:"finished_at"`
}

// AuditItem is one entry of an agent's GET /a2a/log.
type AuditItem struct {
	ID          string    `json:"id"`
	Agent       string    `json:"agent"`
	Direction   string    `json:"direction"`
	Verb        string    `json:"verb"`
	Caller      string    `json:"caller"`
	Callee      string    `json:"callee"`
	Depth       int       `json:"depth"`
	Text        string    `json:"text"`
	Outcome     string    `json:"outcome"`
	CallerRunID string    `json:"caller_run_id"`
	CalleeRunID string    `json:"callee_run_id"`
	At          time.Time `json:"at"`
}

// Outcome is everything the incident produced, step by step; a step that
// was not reached leaves its fields empty.
type Outcome struct {
	AlertAt       time.Time
	Decision      Decision
	Investigation Investigation
	NoorRun       RunView
	Delegation    *api.Delegation
	SolRun        RunView
	VeraRunID     string
	NoorAudit     *AuditItem // Noor's "sent" entry of the delegation
	SolAudit      *AuditItem // Sol's "received" entry of it
	PR            gitops.PR
	Diff          string
	Plus, Minus   int
	Reviews       []gitops.Review
	Merged        bool
	MergedFile    string // the manifest on main after the merge
	MergedAfter   time.Duration
	ReportURL     string
	ReportStatus  int
	// ChainURL is the core's page of the whole chain (Noor → Sol → Vera).
	ChainURL    string
	ChainStatus int
}

// IncidentConfig says where the incident happens.
type IncidentConfig struct {
	Namespace string
	Repo      string // the local GitOps repository
	RepoPath  string // the manifest's path inside it
	Clientset kubernetes.Interface
	Poll      time.Duration // 0 = 100ms
}

// OOMAlert is the Alertmanager webhook (version 4) kube-prometheus would
// send for the oomkill workload.
func OOMAlert(ns, workload, pod string, startsAt time.Time) map[string]any {
	labels := map[string]string{
		"alertname": "KubePodOOMKilled", "namespace": ns, "deployment": workload, "container": "app", "severity": "critical",
	}
	if pod != "" {
		labels["pod"] = pod
	}
	where := ns + "/" + workload
	if pod != "" {
		where = ns + "/" + pod
	}
	ann := map[string]string{
		"summary":     fmt.Sprintf("Container app of %s was OOMKilled", where),
		"description": fmt.Sprintf("Container app in %s was terminated with reason OOMKilled and is crash looping (memory limit 32Mi).", where),
	}
	alert := map[string]any{
		"status": "firing", "labels": labels, "annotations": ann,
		"startsAt": startsAt.UTC().Format(time.RFC3339Nano), "endsAt": "0001-01-01T00:00:00Z",
		"generatorURL": "http://prometheus.sandbox.invalid/graph", "fingerprint": Fingerprint(labels),
	}
	return map[string]any{
		"receiver": "kubecrew-core", "status": "firing", "alerts": []any{alert},
		"groupLabels":  map[string]string{"alertname": labels["alertname"], "namespace": ns},
		"commonLabels": labels, "commonAnnotations": ann, "externalURL": "http://alertmanager.sandbox.invalid",
		"version": "4", "groupKey": fmt.Sprintf(`{}:{alertname="%s", namespace="%s"}`, labels["alertname"], ns),
		"truncatedAlerts": 0,
	}
}

// Fingerprint is Alertmanager's alert fingerprint: FNV-1a 64 over the
// sorted label names and values, each followed by 0xff.
func Fingerprint(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, k := range names {
		h.Write([]byte(k))
		h.Write([]byte{0xff})
		h.Write([]byte(labels[k]))
		h.Write([]byte{0xff})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Drive runs the demo incident on a running fleet: an OOMKill alert to the
// core → the core's decision → Noor's triage → delegation to Sol over A2A
// → Sol's PR → Vera's review → merge. It prints the timeline as it goes
// and returns what it saw; the error names the step that did not happen.
func Drive(ctx context.Context, f *Fleet, c IncidentConfig, tl *Timeline) (o *Outcome, err error) {
	if c.Poll <= 0 {
		c.Poll = 150 * time.Millisecond
	}
	o = &Outcome{AlertAt: time.Now()}
	w := newWatcher(f, tl, o.AlertAt, 4*c.Poll)
	defer func() {
		w.tick(context.WithoutCancel(ctx))
		tl.FlushAll()
	}()
	// every wait also follows the agents' runs
	wait := func(what string, fn func() (bool, error)) error {
		return poll(ctx, c.Poll, what, func() (bool, error) {
			w.tick(ctx)
			return fn()
		})
	}
	noor, sol := f.URL(persona.NameNoor), f.URL(persona.NameSol)

	// 1. The alert, as Alertmanager would post it.
	pod := ""
	if c.Clientset != nil {
		pods, err := c.Clientset.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + IncidentWorkload})
		if err == nil && len(pods.Items) > 0 {
			pod = pods.Items[0].Name
		}
	}
	body := OOMAlert(c.Namespace, IncidentWorkload, pod, o.AlertAt.Add(-2*time.Minute))
	var ans struct {
		Decisions []Decision `json:"decisions"`
		Error     string     `json:"error"`
	}
	code, err := PostJSON(ctx, f.Core+"/api/v1/alerts", body, &ans)
	if err != nil {
		return o, fmt.Errorf("posting the alert to the core: %w", err)
	}
	if code != http.StatusOK || len(ans.Decisions) != 1 {
		return o, fmt.Errorf("core answered the alert with %d %+v", code, ans)
	}
	d := ans.Decisions[0]
	o.Decision = d
	var notes []string
	if d.Reason != "" {
		notes = append(notes, "reason: "+d.Reason)
	}
	tl.Add(o.AlertAt, notes, "alert KubePodOOMKilled (%s/%s, severity critical) → core decided: %s to %s (investigation %s)",
		c.Namespace, IncidentWorkload, d.Decision, d.Agent, d.InvestigationID)
	if d.Decision != "dispatched" || d.InvestigationID == "" {
		return o, fmt.Errorf("core did not dispatch the alert: %s (%s)", d.Decision, d.Reason)
	}

	// 2. Noor's triage, until the core records the investigation's end.
	var inv Investigation
	err = wait("the investigation to finish", func() (bool, error) {
		code, err := GetJSON(ctx, f.Core+"/api/v1/investigations/"+d.InvestigationID, &inv)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("GET investigation %s: %d", d.InvestigationID, code)
		}
		return inv.Status != "" && inv.Status != api.StatusRunning, nil
	})
	o.Investigation = inv
	if err != nil {
		return o, err
	}
	took := ""
	if inv.FinishedAt != nil {
		took = fmt.Sprintf(" in %.1fs", inv.FinishedAt.Sub(inv.StartedAt).Seconds())
	}
	notes = nil
	for _, fd := range inv.Findings {
		notes = append(notes, fmt.Sprintf("%-8s %s %s/%s %s — %s", fd.Severity, fd.Kind, fd.Namespace, fd.Name, fd.Reason, short(fd.Detail, 70)))
	}
	tl.Add(timeOr(inv.FinishedAt), notes, "core recorded investigation %s: %s%s, %d finding(s), Noor's run %s", inv.ID, inv.Status, took, len(inv.Findings), inv.RunID)
	if inv.Status == api.StatusFailed || inv.RunID == "" {
		return o, fmt.Errorf("investigation %s failed: %s", inv.ID, inv.Error)
	}
	if o.NoorRun, err = GetRun(ctx, noor, inv.RunID); err != nil {
		return o, fmt.Errorf("reading Noor's run: %w", err)
	}

	// 3. The delegation to Sol, and both sides of the A2A audit log.
	del := o.NoorRun.Delegation
	o.Delegation = del
	if del == nil {
		return o, fmt.Errorf("noor delegated nothing (verdict %q): %s", o.NoorRun.Verdict, short(o.NoorRun.Answer, 300))
	}
	if !del.Sent || del.RunID == "" || del.Error != "" {
		return o, fmt.Errorf("the delegation to %s did not go through: %s", del.To, del.Error)
	}
	err = wait("Sol's run to finish", func() (bool, error) {
		rv, err := GetRun(ctx, sol, del.RunID)
		if err != nil {
			return false, nil // the run record may lag the A2A answer
		}
		o.SolRun = rv
		return rv.Finished(), nil
	})
	if err != nil {
		return o, err
	}
	o.VeraRunID = notifiedRun(o.SolRun, persona.SlugVera)
	err = wait("the delegation in both A2A audit logs", func() (bool, error) {
		o.NoorAudit = findAudit(ctx, noor, func(a AuditItem) bool {
			return a.Direction == "sent" && a.Verb == "delegate" && a.CalleeRunID == del.RunID
		})
		o.SolAudit = findAudit(ctx, sol, func(a AuditItem) bool {
			return a.Direction == "received" && a.Verb == "delegate" && a.CalleeRunID == del.RunID
		})
		return o.NoorAudit != nil && o.SolAudit != nil, nil
	})
	if err != nil {
		return o, err
	}
	tl.Add(o.SolAudit.At, []string{fmt.Sprintf("%q", short(o.SolAudit.Text, 160))},
		"%s's delegation reached Sol over A2A: Sol's /a2a/log holds it as received (depth %d, %s), Noor's as sent — the instruction:",
		displayName(o.SolAudit.Caller), o.SolAudit.Depth, o.SolAudit.Outcome)

	// 4. Sol's PR in the GitOps repository.
	forge, err := gitops.NewLocal(c.Repo, "main")
	if err != nil {
		return o, fmt.Errorf("opening the GitOps repository: %w", err)
	}
	branch := "agent/fix/" + del.Finding.Key
	// Sol opens the PR inside his run, which has ended: a short grace for
	// the forge's records, then his answer says why there is none.
	prCtx, cancelPR := context.WithTimeoutCause(ctx, 10*time.Second, fmt.Errorf("no PR on %s although Sol's run %s ended (verdict %q)", branch, del.RunID, o.SolRun.Verdict))
	defer cancelPR()
	err = poll(prCtx, c.Poll, "Sol's pull request on "+branch, func() (bool, error) {
		w.tick(prCtx)
		prs, err := forge.ListPRs(ctx, "all")
		if err != nil {
			return false, err
		}
		for _, pr := range prs {
			if pr.Branch == branch {
				o.PR = pr
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return o, fmt.Errorf("%w (Sol answered: %s)", err, short(o.SolRun.Answer, 300))
	}
	if o.Diff, err = forge.Diff(ctx, o.PR.Number); err != nil {
		return o, fmt.Errorf("reading PR #%d's diff: %w", o.PR.Number, err)
	}
	o.Plus, o.Minus = CountChanged(o.Diff)
	tl.Add(o.PR.CreatedAt, []string{diffExcerpt(o.Diff)}, "%s opened PR #%d %q (%s → %s), +%d/−%d:",
		displayName(o.PR.Author), o.PR.Number, o.PR.Title, o.PR.Branch, o.PR.Base, o.Plus, o.Minus)

	// 5. Vera's review and the merge.
	var veraDone time.Time
	var vr RunView
	err = wait(fmt.Sprintf("Vera's review and the merge of PR #%d", o.PR.Number), func() (bool, error) {
		if o.VeraRunID != "" && veraDone.IsZero() {
			if rv, err := GetRun(ctx, f.URL(persona.NameVera), o.VeraRunID); err == nil && rv.Finished() {
				veraDone, vr = time.Now(), rv
			}
		}
		rs, err := forge.Reviews(ctx, o.PR.Number)
		if err != nil {
			return false, err
		}
		for _, r := range rs[len(o.Reviews):] {
			tl.Add(r.At, []string{reviewExcerpt(r.Body)}, "%s (%s) reviewed PR #%d: %s", displayName(r.Reviewer), r.Reviewer, o.PR.Number, r.Verdict)
		}
		o.Reviews = rs
		pr, err := forge.GetPR(ctx, o.PR.Number)
		if err != nil {
			return false, err
		}
		o.PR = pr
		switch pr.State {
		case "merged":
			return true, nil
		case "closed":
			return false, fmt.Errorf("PR #%d was closed without merging", pr.Number)
		}
		if !veraDone.IsZero() && time.Since(veraDone) > 10*time.Second {
			return false, fmt.Errorf("PR #%d is still %s although Vera's run %s ended (verdict %q): %s", pr.Number, pr.State, o.VeraRunID, vr.Verdict, short(vr.Answer, 300))
		}
		return false, nil
	})
	if err != nil {
		return o, err
	}
	o.Merged = true
	o.MergedAfter = time.Since(o.AlertAt)
	if b, err := forge.ReadFile(ctx, c.RepoPath); err == nil {
		o.MergedFile = string(b)
	}
	tl.Add(time.Time{}, nil, "PR #%d is merged into main (seen %.1fs after the alert); %s on main now reads: %s", o.PR.Number, o.MergedAfter.Seconds(),
		c.RepoPath, limitLine(o.MergedFile, o.Diff))

	// 6. The incident report page, if the agent serves one.
	o.ReportURL = noor + "/runs/" + o.NoorRun.RunID + "/report"
	o.ReportStatus = statusOf(ctx, o.ReportURL)
	o.ChainURL = f.Core + "/api/v1/investigations/" + o.Investigation.ID + "/report"
	o.ChainStatus = statusOf(ctx, o.ChainURL)
	return o, nil
}

// reviewExcerpt is the first lines of a review body.
func reviewExcerpt(body string) string {
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if len(lines) > 8 {
		lines = append(lines[:8], "…")
	}
	for i := range lines {
		lines[i] = "  " + short(lines[i], 140)
	}
	return strings.Join(lines, "\n")
}

// poll calls fn every interval until it reports done, errs, or ctx ends.
func poll(ctx context.Context, every time.Duration, what string, fn func() (bool, error)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		done, err := fn()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// findAudit returns the newest entry of an agent's /a2a/log matching ok.
func findAudit(ctx context.Context, base string, ok func(AuditItem) bool) *AuditItem {
	var page struct {
		Items []AuditItem `json:"items"`
	}
	if code, err := GetJSON(ctx, base+"/a2a/log?limit=100", &page); err != nil || code != http.StatusOK {
		return nil
	}
	for i := range page.Items {
		if ok(page.Items[i]) {
			return &page.Items[i]
		}
	}
	return nil
}

// notifiedRun is the callee run id of the run's A2A message to slug.
func notifiedRun(r RunView, slug string) string {
	for _, ev := range r.Trace {
		if ev.Type != "a2a_send" {
			continue
		}
		var d struct {
			To          string `json:"to"`
			CalleeRunID string `json:"callee_run_id"`
		}
		if err := json.Unmarshal(ev.Data, &d); err == nil && d.To == slug && d.CalleeRunID != "" {
			return d.CalleeRunID
		}
	}
	return ""
}

// CountChanged counts added and removed lines of a unified diff.
func CountChanged(diff string) (plus, minus int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			plus++
		case strings.HasPrefix(l, "-"):
			minus++
		}
	}
	return plus, minus
}

// diffExcerpt is the diff from its first hunk on (at most 20 lines).
func diffExcerpt(diff string) string {
	lines := strings.Split(strings.TrimRight(diff, "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "@@") {
			lines = lines[i:]
			break
		}
	}
	if len(lines) > 20 {
		lines = append(lines[:20], "…")
	}
	return "  " + strings.Join(lines, "\n  ")
}

// limitLine is the line of file holding the diff's new value.
func limitLine(file, diff string) string {
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			added := strings.TrimSpace(l[1:])
			for _, fl := range strings.Split(file, "\n") {
				if strings.TrimSpace(fl) == added {
					return strings.TrimSpace(fl)
				}
			}
			return "(the new line " + added + " is NOT on main)"
		}
	}
	return "(no added line)"
}

func timeOr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
