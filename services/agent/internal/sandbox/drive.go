package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/a2a"
	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/persona"
)

// Drive runs the demo incident on a running fleet: an OOMKill alert to the
// core → the core's decision → Noor's triage → delegation to Sol over A2A
// → Sol's PR → Vera's review → merge. It prints the timeline as it goes
// and returns what it saw; the error names the step that did not happen.
func Drive(ctx context.Context, f *Fleet, c IncidentConfig, tl *Timeline) (o *Outcome, err error) {
	if c.Poll <= 0 {
		c.Poll = 150 * time.Millisecond
	}
	o = &Outcome{AlertAt: time.Now()}
	d := &driver{f: f, c: c, tl: tl, o: o, w: newWatcher(f, tl, o.AlertAt, 4*c.Poll),
		noor: f.URL(persona.NameNoor), sol: f.URL(persona.NameSol)}
	defer func() {
		d.w.tick(context.WithoutCancel(ctx))
		tl.FlushAll()
	}()
	for _, step := range []func(context.Context) error{d.alert, d.triage, d.delegation, d.pullRequest, d.reviewAndMerge} {
		if err := step(ctx); err != nil {
			return o, err
		}
	}
	d.reports(ctx)
	return o, nil
}

// driver is one drive of the incident: each step fills its part of the
// outcome and adds what it saw to the timeline.
type driver struct {
	f         *Fleet
	c         IncidentConfig
	tl        *Timeline
	w         *watcher
	o         *Outcome
	noor, sol string        // the agents' base URLs
	forge     *gitops.Local // the GitOps repository, from the PR step on
}

// wait polls fn until done; every wait also follows the agents' runs.
func (d *driver) wait(ctx context.Context, what string, fn func() (bool, error)) error {
	return poll(ctx, d.c.Poll, what, func() (bool, error) {
		d.w.tick(ctx)
		return fn()
	})
}

// alert posts the alert as Alertmanager would and reads the core's
// decision: it must dispatch.
func (d *driver) alert(ctx context.Context) error {
	c, o := d.c, d.o
	pod := ""
	if c.Clientset != nil {
		pods, err := c.Clientset.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + IncidentWorkload})
		if err == nil && len(pods.Items) > 0 {
			pod = pods.Items[0].Name
		}
	}
	body := OOMAlert(c.Namespace, IncidentWorkload, pod, o.AlertAt.Add(-2*time.Minute))
	var ans struct {
		Decisions []api.AlertDecision `json:"decisions"`
		Error     string              `json:"error"`
	}
	code, err := PostJSON(ctx, d.f.Core+"/api/v1/alerts", body, &ans)
	if err != nil {
		return fmt.Errorf("posting the alert to the core: %w", err)
	}
	if code != http.StatusOK || len(ans.Decisions) != 1 {
		return fmt.Errorf("core answered the alert with %d %+v", code, ans)
	}
	dec := ans.Decisions[0]
	o.Decision = dec
	var notes []string
	if dec.Reason != "" {
		notes = append(notes, "reason: "+dec.Reason)
	}
	d.tl.Add(o.AlertAt, notes, "alert KubePodOOMKilled (%s/%s, severity critical) → core decided: %s to %s (investigation %s)",
		c.Namespace, IncidentWorkload, dec.Decision, dec.Agent, dec.InvestigationID)
	if dec.Decision != "dispatched" || dec.InvestigationID == "" {
		return fmt.Errorf("core did not dispatch the alert: %s (%s)", dec.Decision, dec.Reason)
	}
	return nil
}

// triage waits for Noor's run, until the core records the investigation's
// end, and reads her run.
func (d *driver) triage(ctx context.Context) error {
	o := d.o
	id := o.Decision.InvestigationID
	var inv api.Investigation
	err := d.wait(ctx, "the investigation to finish", func() (bool, error) {
		code, err := GetJSON(ctx, d.f.Core+"/api/v1/investigations/"+id, &inv)
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("GET investigation %s: %d", id, code)
		}
		return inv.Status != "" && inv.Status != api.StatusRunning, nil
	})
	o.Investigation = inv
	if err != nil {
		return err
	}
	took := ""
	if inv.FinishedAt != nil {
		took = fmt.Sprintf(" in %.1fs", inv.FinishedAt.Sub(inv.StartedAt).Seconds())
	}
	var notes []string
	for _, fd := range inv.Findings {
		notes = append(notes, fmt.Sprintf("%-8s %s %s/%s %s — %s", fd.Severity, fd.Kind, fd.Namespace, fd.Name, fd.Reason, short(fd.Detail, 70)))
	}
	d.tl.Add(timeOr(inv.FinishedAt), notes, "core recorded investigation %s: %s%s, %d finding(s), Noor's run %s", inv.ID, inv.Status, took, len(inv.Findings), inv.RunID)
	if inv.Status == api.StatusFailed || inv.RunID == "" {
		return fmt.Errorf("investigation %s failed: %s", inv.ID, inv.Error)
	}
	if o.NoorRun, err = GetRun(ctx, d.noor, inv.RunID); err != nil {
		return fmt.Errorf("reading Noor's run: %w", err)
	}
	return nil
}

// delegation checks Noor's hand-off to Sol, waits for Sol's run, and finds
// the message in both sides of the A2A audit log.
func (d *driver) delegation(ctx context.Context) error {
	o := d.o
	del := o.NoorRun.Delegation
	o.Delegation = del
	if del == nil {
		return fmt.Errorf("noor delegated nothing (verdict %q): %s", o.NoorRun.Verdict, short(o.NoorRun.Answer, 300))
	}
	if !del.Sent || del.RunID == "" || del.Error != "" {
		return fmt.Errorf("the delegation to %s did not go through: %s", del.To, del.Error)
	}
	err := d.wait(ctx, "Sol's run to finish", func() (bool, error) {
		rv, err := GetRun(ctx, d.sol, del.RunID)
		if err != nil {
			return false, nil // the run record may lag the A2A answer
		}
		o.SolRun = rv
		return rv.Finished(), nil
	})
	if err != nil {
		return err
	}
	o.VeraRunID = notifiedRun(o.SolRun, persona.SlugVera)
	err = d.wait(ctx, "the delegation in both A2A audit logs", func() (bool, error) {
		o.NoorAudit = findAudit(ctx, d.noor, func(a a2a.AuditItem) bool {
			return a.Direction == a2a.DirectionSent && a.Verb == string(a2a.VerbDelegate) && a.CalleeRunID == del.RunID
		})
		o.SolAudit = findAudit(ctx, d.sol, func(a a2a.AuditItem) bool {
			return a.Direction == a2a.DirectionReceived && a.Verb == string(a2a.VerbDelegate) && a.CalleeRunID == del.RunID
		})
		return o.NoorAudit != nil && o.SolAudit != nil, nil
	})
	if err != nil {
		return err
	}
	d.tl.Add(o.SolAudit.At, []string{fmt.Sprintf("%q", short(o.SolAudit.Text, 160))},
		"%s's delegation reached Sol over A2A: Sol's /a2a/log holds it as received (depth %d, %s), Noor's as sent — the instruction:",
		displayName(o.SolAudit.Caller), o.SolAudit.Depth, o.SolAudit.Outcome)
	return nil
}

// pullRequest finds Sol's PR in the GitOps repository and reads its diff.
func (d *driver) pullRequest(ctx context.Context) error {
	o, del := d.o, d.o.Delegation
	forge, err := gitops.NewLocal(d.c.Repo, "main")
	if err != nil {
		return fmt.Errorf("opening the GitOps repository: %w", err)
	}
	d.forge = forge
	branch := "agent/fix/" + del.Finding.Key
	// Sol opens the PR inside his run, which has ended: a short grace for
	// the forge's records, then his answer says why there is none.
	prCtx, cancelPR := context.WithTimeoutCause(ctx, 10*time.Second, fmt.Errorf("no PR on %s although Sol's run %s ended (verdict %q)", branch, del.RunID, o.SolRun.Verdict))
	defer cancelPR()
	err = poll(prCtx, d.c.Poll, "Sol's pull request on "+branch, func() (bool, error) {
		d.w.tick(prCtx)
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
		return fmt.Errorf("%w (Sol answered: %s)", err, short(o.SolRun.Answer, 300))
	}
	if o.Diff, err = forge.Diff(ctx, o.PR.Number); err != nil {
		return fmt.Errorf("reading PR #%d's diff: %w", o.PR.Number, err)
	}
	o.Plus, o.Minus = gitops.CountChanged(o.Diff)
	d.tl.Add(o.PR.CreatedAt, []string{diffExcerpt(o.Diff)}, "%s opened PR #%d %q (%s → %s), +%d/−%d:",
		displayName(o.PR.Author), o.PR.Number, o.PR.Title, o.PR.Branch, o.PR.Base, o.Plus, o.Minus)
	return nil
}

// reviewAndMerge follows Vera's reviews of the PR until it is merged, and
// reads the manifest on main.
func (d *driver) reviewAndMerge(ctx context.Context) error {
	o, forge := d.o, d.forge
	var veraDone time.Time
	var vr api.RunView
	err := d.wait(ctx, fmt.Sprintf("Vera's review and the merge of PR #%d", o.PR.Number), func() (bool, error) {
		if o.VeraRunID != "" && veraDone.IsZero() {
			if rv, err := GetRun(ctx, d.f.URL(persona.NameVera), o.VeraRunID); err == nil && rv.Finished() {
				veraDone, vr = time.Now(), rv
			}
		}
		rs, err := forge.Reviews(ctx, o.PR.Number)
		if err != nil {
			return false, err
		}
		for _, r := range rs[len(o.Reviews):] {
			d.tl.Add(r.At, []string{reviewExcerpt(r.Body)}, "%s (%s) reviewed PR #%d: %s", displayName(r.Reviewer), r.Reviewer, o.PR.Number, r.Verdict)
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
		return err
	}
	o.Merged = true
	o.MergedAfter = time.Since(o.AlertAt)
	if b, err := forge.ReadFile(ctx, d.c.RepoPath); err == nil {
		o.MergedFile = string(b)
	}
	d.tl.Add(time.Time{}, nil, "PR #%d is merged into main (seen %.1fs after the alert); %s on main now reads: %s", o.PR.Number, o.MergedAfter.Seconds(),
		d.c.RepoPath, limitLine(o.MergedFile, o.Diff))
	return nil
}

// reports looks up the incident report pages, if the agent and the core
// serve them.
func (d *driver) reports(ctx context.Context) {
	o := d.o
	o.ReportURL = d.noor + "/runs/" + o.NoorRun.RunID + "/report"
	o.ReportStatus = statusOf(ctx, o.ReportURL)
	o.ChainURL = d.f.Core + "/api/v1/investigations/" + o.Investigation.ID + "/report"
	o.ChainStatus = statusOf(ctx, o.ChainURL)
}
