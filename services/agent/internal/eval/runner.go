package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/services/agent/internal/sandbox"
)

// Config is one eval run.
type Config struct {
	Root    string // repository root
	BinDir  string // agent and core binaries
	WorkDir string // cluster, logs, GitOps repositories, saved report pages
	// LLMBaseURL, for ModeModel: the real endpoint (LLM_API_KEY and
	// AGENT_MODEL come from Environ).
	LLMBaseURL string
	Environ    []string
	Out        io.Writer // progress
	// ModelDelay is how long the scripted models take to answer each call
	// (a real model's seconds; 0 answers at once).
	ModelDelay time.Duration
}

// Runner holds the sandbox cluster for the whole run; each scenario gets
// its own namespace, GitOps repository, fleet, chat receiver and model.
type Runner struct {
	cfg     Config
	sb      *sandbox.Sandbox
	cl      *cluster
	fleetKC string
	audit   *AuditTail
	chat    *Receiver
	seq     int // scenario runs so far: each gets a namespace of its own
}

// Start brings up the sandbox cluster with the audit log on and a user of
// the fleet's own.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, err
	}
	policy := filepath.Join(cfg.WorkDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy), 0o644); err != nil {
		return nil, err
	}
	token := newCanary()
	tokens := filepath.Join(cfg.WorkDir, "fleet-token.csv")
	if err := os.WriteFile(tokens, []byte(token+","+FleetUser+","+FleetUser+"-uid,\"system:masters\"\n"), 0o600); err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.WorkDir, "cluster")
	var sb *sandbox.Sandbox
	var err error
	// testenv.sh picks free ports and binds them later: another program can
	// take one in between; a fresh start picks new ones.
	for try := 1; ; try++ {
		sb, err = sandbox.StartCluster(ctx, cfg.Root, dir, sandbox.TierSim,
			[]string{"AUDIT_POLICY_FILE=" + policy, "EXTRA_TOKENS_FILE=" + tokens}, cfg.Out)
		if err == nil {
			break
		}
		if try == 3 || ctx.Err() != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Out, "[eval] the sandbox cluster did not start (%v); trying again\n", err)
		_ = os.RemoveAll(dir)
	}
	r := &Runner{cfg: cfg, sb: sb, audit: &AuditTail{Path: filepath.Join(dir, "audit.log")}, chat: NewReceiver()}
	fail := func(err error) (*Runner, error) { r.Close(); return nil, err }
	r.fleetKC = filepath.Join(cfg.WorkDir, "fleet.kubeconfig")
	if err := fleetKubeconfig(sb.Kubeconfig, token, r.fleetKC); err != nil {
		return fail(err)
	}
	if r.cl, err = newCluster(sb.Kubeconfig, cfg.Root); err != nil {
		return fail(err)
	}
	if err := kubetest.CreateSimNodes(ctx, r.cl.cs); err != nil {
		return fail(err)
	}
	if err := r.cl.createFleetDecoy(ctx); err != nil {
		return fail(fmt.Errorf("creating the fleet's stand-in workload: %w", err))
	}
	return r, nil
}

// Close stops the cluster and the chat receiver.
func (r *Runner) Close() {
	if r.chat != nil {
		r.chat.Close()
	}
	r.sb.Stop(r.cfg.Out)
}

// scenarioRun is everything one scenario run produced.
type scenarioRun struct {
	s         Scenario
	ns        string
	canary    string
	repo      string
	fleet     *sandbox.Fleet
	tap       ModelTap
	start     time.Time
	decisions []api.AlertDecision
	triggerID string
	triggerAt string // persona of the trigger run
	answer    string
	err       error // the trigger itself failed
}

// RunScenario runs s once in mode and grades it.
func (r *Runner) RunScenario(ctx context.Context, s Scenario, mode string, attempt int) Result {
	res := Result{Scenario: s.Name, Mode: mode, Attempt: attempt, Known: s.Known(mode)}
	r.seq++
	ns := fmt.Sprintf("ev%d-%s", r.seq, s.Name)
	if len(ns) > 63 {
		ns = ns[:63]
	}
	sr := &scenarioRun{s: s, ns: ns, canary: newCanary()}
	ctx, cancel := context.WithTimeoutCause(ctx, time.Duration(s.Timeout)+90*time.Second,
		fmt.Errorf("scenario %s took longer than its timeout %s (+90s for setup)", s.Name, time.Duration(s.Timeout)))
	defer cancel()
	defer func() {
		// the next scenario starts from a clean slate; the controllers finish the deletion
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer dcancel()
		_ = r.cl.cs.CoreV1().Namespaces().Delete(dctx, ns, metav1.DeleteOptions{})
	}()
	errOut := func(err error) Result {
		res.Failed = append(res.Failed, "setup: "+err.Error())
		res.finish()
		return res
	}
	dir := filepath.Join(r.cfg.WorkDir, ns)
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return errOut(err)
	}
	if err := r.prepare(ctx, sr, dir); err != nil {
		return errOut(err)
	}

	env, llmURL, err := r.fleetEnv(sr, mode)
	if err != nil {
		return errOut(err)
	}
	if sr.tap != nil {
		defer sr.tap.Close()
	}
	r.chat.Take()
	if err := r.audit.Mark(); err != nil {
		return errOut(err)
	}
	sup := sandbox.NewSupervisor()
	defer sup.Stop(context.WithoutCancel(ctx), 10*time.Second)
	sr.fleet, err = sandbox.StartFleetOnFreePorts(ctx, sandbox.FleetConfig{
		BinDir: r.cfg.BinDir, LogDir: filepath.Join(dir, "logs"), Host: "127.0.0.1",
		Kubeconfig: r.fleetKC, GitOpsRepo: sr.repo, LLMBaseURL: llmURL, Environ: env,
	}, sup, io.Discard)
	if err != nil {
		return errOut(err)
	}

	// the trigger, then quiet
	sr.start = time.Now()
	tctx, tcancel := context.WithTimeoutCause(ctx, time.Duration(s.Timeout), fmt.Errorf("timeout %s", time.Duration(s.Timeout)))
	defer tcancel()
	sr.err = r.fire(tctx, sr)
	quietErr := waitQuiet(tctx, sr.fleet)
	res.Wall = time.Since(sr.start)
	ev, err := r.collect(context.WithoutCancel(ctx), sr, dir)
	if err != nil {
		return errOut(err)
	}
	if quietErr != nil {
		ev.notQuiet = quietErr.Error()
	}
	grade(&res, sr, ev, mode)
	sup.Stop(context.WithoutCancel(ctx), 10*time.Second)
	if len(res.Failed) > 0 {
		res.Reports = ev.savedReports
	}
	res.finish()
	return res
}

// fleetEnv starts the scenario's model (the scripted policy, or a
// recording proxy in front of the real endpoint) and returns the agents'
// environment and model URL ("" = deterministic).
func (r *Runner) fleetEnv(sr *scenarioRun, mode string) (env []string, llmURL string, err error) {
	env = append([]string(nil), r.cfg.Environ...)
	switch mode {
	case ModeCompetent, ModeReckless:
		pol := Competent
		if mode == ModeReckless {
			pol = Reckless
		}
		sr.tap = NewPolicyTap(Scripted(failAfter(sr.s.Setup.ModelFailsAfter, pol), r.cfg.ModelDelay))
		llmURL = sr.tap.URL()
		env = append(env, "AGENT_MODEL=eval-"+mode, "LLM_API_KEY=eval-scripted", "LLM_FALLBACK_BASE_URL=")
	case ModeModel:
		if sr.tap, err = NewProxyTap(r.cfg.LLMBaseURL); err != nil {
			return nil, "", err
		}
		llmURL = sr.tap.URL()
	}
	env = append(env, "REPORT_WEBHOOK_URL="+r.chat.URL()+"/hook")
	for k, v := range sr.s.Setup.Env {
		env = append(env, k+"="+v)
	}
	return env, llmURL, nil
}

// prepare fills the scenario's namespace and GitOps repository (and its
// PR), then waits until the cluster shows what the scenario needs.
func (r *Runner) prepare(ctx context.Context, sr *scenarioRun, dir string) error {
	s, ns := sr.s, sr.ns
	gitopsYAML, err := r.cl.setUp(ctx, s, ns, sr.canary)
	if err != nil {
		return err
	}
	files := map[string][]byte{"README.md": []byte("GitOps repository of the eval scenario " + s.Name + "\n")}
	if gitopsYAML != "" {
		files["apps/"+ns+"/workloads.yaml"] = []byte(gitopsYAML)
	}
	for p, content := range s.Setup.GitOpsFiles {
		files[p] = []byte(content)
	}
	sr.repo = filepath.Join(dir, "gitops.git")
	if err := gitops.InitLocalRepo(sr.repo, files); err != nil {
		return err
	}
	if p := s.Setup.PR; p != nil {
		if err := openSetupPR(ctx, sr.repo, "apps/"+ns+"/workloads.yaml", gitopsYAML, *p); err != nil {
			return err
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := r.cl.waitProblems(wctx, ns, defaultWait(s)); err != nil {
		return err
	}
	return r.cl.afterWait(wctx, s, ns, sr.canary)
}

// openSetupPR opens the scenario's PR on the local forge.
func openSetupPR(ctx context.Context, repo, path, content string, p SetupPR) error {
	forge, err := gitops.NewLocal(repo, "main")
	if err != nil {
		return err
	}
	for old, repl := range p.Replace {
		if !strings.Contains(content, old) {
			return fmt.Errorf("setup.pr: %q is not in the manifest", old)
		}
		content = strings.ReplaceAll(content, old, repl)
	}
	author := p.Author
	if author == "" {
		author = "k8s-engineer"
	}
	_, err = forge.OpenPR(ctx, "agent/fix/eval-setup", path, []byte(content), p.Title, p.Body, author)
	return err
}

// fire sends the scenario's trigger.
func (r *Runner) fire(ctx context.Context, sr *scenarioRun) error {
	t := sr.s.Trigger
	f := sr.fleet
	switch {
	case t.Alert != nil:
		n := max(t.Alert.Repeat, 1)
		body := alertBody(*t.Alert, sr.ns, time.Now().Add(-5*time.Minute))
		for i := 0; i < n; i++ {
			var ans struct {
				Decisions []api.AlertDecision `json:"decisions"`
				Error     string              `json:"error"`
			}
			code, err := sandbox.PostJSON(ctx, f.Core+"/api/v1/alerts", body, &ans)
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("core answered the alert with %d: %s", code, ans.Error)
			}
			sr.decisions = append(sr.decisions, ans.Decisions...)
			if i+1 < n {
				// a standing alert: Alertmanager re-sends it at its repeat
				// interval; the earlier investigation is over by then
				if err := waitQuiet(ctx, f); err != nil {
					return err
				}
			}
		}
		return nil
	case t.Run != nil:
		req := api.RunRequest{Task: substitute(t.Run.Task, sr.ns, "", time.Now()), WorkflowType: t.Run.WorkflowType,
			Context: map[string]string{}, Caller: t.Run.Caller, SocialDepth: t.Run.SocialDepth}
		for k, v := range t.Run.Context {
			req.Context[k] = substitute(v, sr.ns, "", time.Now())
		}
		if _, ok := req.Context["namespace"]; !ok {
			req.Context["namespace"] = sr.ns
		}
		var ans struct {
			RunID string `json:"run_id"`
			Error string `json:"error"`
		}
		code, err := sandbox.PostJSON(ctx, f.URL(t.Run.Agent)+"/run?async=1", req, &ans)
		if err != nil {
			return err
		}
		if code != http.StatusAccepted && code != http.StatusOK {
			return fmt.Errorf("POST /run answered %d: %s", code, ans.Error)
		}
		sr.triggerID, sr.triggerAt = ans.RunID, t.Run.Agent
		return nil
	case t.Pulse != nil:
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL(t.Pulse.Agent)+"/pulse", nil)
		if err != nil {
			return err
		}
		sandbox.SetAuth(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST /pulse answered %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
		}
		var tick struct {
			Result *api.RunResult `json:"result"`
		}
		if err := json.Unmarshal(raw, &tick); err == nil && tick.Result != nil {
			sr.triggerID, sr.triggerAt = tick.Result.RunID, t.Pulse.Agent
		}
		return nil
	case t.Ask != nil:
		card, err := agentcard.DefaultResolver.Resolve(ctx, f.URL(t.Ask.Agent))
		if err != nil {
			return fmt.Errorf("resolving the agent card: %w", err)
		}
		c, err := a2aclient.NewFromCard(ctx, card)
		if err != nil {
			return err
		}
		text := substitute(t.Ask.Text, sr.ns, "", time.Now())
		res, err := c.SendMessage(ctx, &sdk.MessageSendParams{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: text})})
		if err != nil {
			return fmt.Errorf("A2A message/send: %w", err)
		}
		sr.triggerAt = t.Ask.Agent
		sr.answer = a2aText(res)
		return nil
	}
	return errors.New("no trigger")
}

// a2aText is the text of an A2A answer (a task's artifacts or a message).
func a2aText(res sdk.SendMessageResult) string {
	var parts []sdk.Part
	switch v := res.(type) {
	case *sdk.Task:
		for _, a := range v.Artifacts {
			parts = append(parts, a.Parts...)
		}
		if v.Status.Message != nil {
			parts = append(parts, v.Status.Message.Parts...)
		}
	case *sdk.Message:
		parts = v.Parts
	}
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(sdk.TextPart); ok {
			b.WriteString(t.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// alertBody is the Alertmanager webhook (version 4) for a.
func alertBody(a AlertTrigger, ns string, startsAt time.Time) map[string]any {
	container, severity, status := a.Container, a.Severity, a.Status
	if container == "" {
		container = "app"
	}
	if severity == "" {
		severity = "critical"
	}
	if status == "" {
		status = "firing"
	}
	labels := map[string]string{"alertname": a.Name, "namespace": ns, "deployment": a.Workload, "container": container, "severity": severity}
	ann := map[string]string{"summary": fmt.Sprintf("%s on %s/%s", a.Name, ns, a.Workload)}
	for k, v := range a.Annotations {
		ann[k] = substitute(v, ns, "", time.Now())
	}
	ends := "0001-01-01T00:00:00Z"
	if status == "resolved" {
		ends = time.Now().UTC().Format(time.RFC3339Nano)
	}
	alert := map[string]any{
		"status": status, "labels": labels, "annotations": ann,
		"startsAt": startsAt.UTC().Format(time.RFC3339Nano), "endsAt": ends,
		"generatorURL": "http://prometheus.eval.invalid/graph", "fingerprint": sandbox.Fingerprint(labels),
	}
	return map[string]any{
		"receiver": "kubecrew-core", "status": status, "alerts": []any{alert},
		"groupLabels":  map[string]string{"alertname": a.Name, "namespace": ns},
		"commonLabels": labels, "commonAnnotations": ann, "externalURL": "http://alertmanager.eval.invalid",
		"version": "4", "groupKey": fmt.Sprintf(`{}:{alertname="%s", namespace="%s"}`, a.Name, ns),
		"truncatedAlerts": 0,
	}
}

// waitQuiet returns once no agent run and no investigation is running, two
// polls in a row 750 ms apart (a notify hands work on asynchronously; the
// callee's run is on record before the caller's ends, the pause only
// covers the hand-over), or when ctx ends.
func waitQuiet(ctx context.Context, f *sandbox.Fleet) error {
	quiet := 0
	for {
		busy, err := fleetBusy(ctx, f)
		if err == nil && !busy {
			quiet++
			if quiet >= 2 {
				return nil
			}
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the fleet was still busy: %w", context.Cause(ctx))
		case <-time.After(750 * time.Millisecond):
		}
	}
}

func fleetBusy(ctx context.Context, f *sandbox.Fleet) (bool, error) {
	var invs struct {
		Items []api.Investigation `json:"items"`
	}
	if code, err := sandbox.GetJSON(ctx, f.Core+"/api/v1/investigations?limit=100", &invs); err != nil || code != http.StatusOK {
		return true, fmt.Errorf("investigations: %d %v", code, err)
	}
	for _, i := range invs.Items {
		if i.Status == "" || i.Status == api.StatusRunning {
			return true, nil
		}
	}
	for _, m := range f.Members {
		var page struct {
			Items []api.RunResult `json:"items"`
		}
		if code, err := sandbox.GetJSON(ctx, f.URL(m.Persona)+"/runs?limit=100", &page); err != nil || code != http.StatusOK {
			return true, fmt.Errorf("%s runs: %d %v", m.Persona, code, err)
		}
		for _, it := range page.Items {
			if it.Status == api.StatusRunning {
				return true, nil
			}
		}
	}
	return false, nil
}
