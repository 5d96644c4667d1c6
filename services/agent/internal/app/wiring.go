package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/deployreview"
	"github.com/kubecrew/kubecrew/pkg/envelope"
	"github.com/kubecrew/kubecrew/pkg/gitops"
	"github.com/kubecrew/kubecrew/pkg/kube"
	"github.com/kubecrew/kubecrew/pkg/pager"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/pkg/store"
	"github.com/kubecrew/kubecrew/pkg/tools"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/personas"
	"github.com/kubecrew/kubecrew/services/agent/internal/pulseserver"
	"github.com/kubecrew/kubecrew/services/agent/internal/server"
	"github.com/kubecrew/kubecrew/services/agent/internal/verify"
)

type (
	openaiRequest  = openai.ChatCompletionRequest
	openaiResponse = openai.ChatCompletionResponse
)

// toolProviders registers the cluster, GitOps and report tools. Every tool
// is registered whatever the persona, so AGENT_TOOLS is checked against one
// registry; a tool whose backend is not configured answers an ERROR saying
// what to set, and /ready reports it, but the agent starts.
func (a *App) toolProviders(ctx context.Context, reg *tools.Registry) error {
	cfg := a.Config
	restartMode, err := kube.ParseRestartMode(cfg.RolloutRestartMode)
	if err != nil {
		return cfg.Fail("ROLLOUT_RESTART_MODE", err.Error())
	}
	kc, err := kube.Connect(cfg.Kubeconfig, cfg.KubeContext, a.Log.Named("kube"),
		kube.WithConfigMapValueKeys(cfg.ConfigMapValueKeys), kube.WithRestartMode(restartMode))
	if err != nil {
		a.Log.Warn("cluster unavailable: cluster tools will answer cluster_unavailable", zap.Error(err))
	}
	a.Kube = kc
	if err := a.verifier(kc); err != nil {
		return err
	}
	env, err := a.envelope(kc)
	if err != nil {
		return err
	}
	a.Envelope = env
	kc.SetEnvelope(env)
	for _, t := range kube.Tools(kc) {
		reg.Add(t)
	}

	var app gitops.GitHubApp
	// An App when either of its ids is set (NewForge says which part is
	// missing); the key file alone is no App: the manifests always name
	// its path.
	if cfg.GitHubAppID != 0 || cfg.GitHubAppInstall != 0 {
		app = gitops.GitHubApp{AppID: int64(cfg.GitHubAppID), InstallationID: int64(cfg.GitHubAppInstall), PrivateKeyFile: cfg.GitHubAppKeyFile}
	}
	forge, err := gitops.NewForge(gitops.ForgeSettings{Kind: cfg.GitOpsForge, Repo: cfg.GitOpsRepo, Branch: cfg.GitOpsBranch,
		GitHubToken: cfg.GitHubToken, GitHubAPIURL: cfg.GitHubAPIURL, GitHubApp: app}, &http.Client{Timeout: 30 * time.Second})
	switch {
	case errors.Is(err, gitops.ErrNoForge):
		a.Log.Info("no GitOps repository configured: GitOps tools will say so")
		forge = noForge{}
	case err != nil:
		return &config.Error{Var: "GITOPS_FORGE", Msg: err.Error()}
	default:
		a.forgeOK = true
	}
	a.forge = forge
	paths, err := gitops.ParsePathTemplates(cfg.GitOpsPathTemplate)
	if err != nil {
		return &config.Error{Var: "GITOPS_PATH_TEMPLATE", Msg: err.Error()}
	}
	a.Git = gitops.NewService(forge, cfg.Persona.Slug, gitops.Options{
		Paths: paths, Cluster: cfg.ClusterName,
		MaxOpenPRs: cfg.GitOpsMaxOpenPRs, StaleAfter: cfg.GitOpsStaleAfter,
		SettleAfter: cfg.GitOpsSettleAfter,
		// get_pr's own truncation (which forbids approval) must bite before the
		// registry's generic one, or a model could approve a diff it saw cut.
		DiffMaxChars: max(1000, min(gitops.DefaultDiffMaxChars, cfg.ToolOutputMaxChars-4000)),
		Metrics:      gitops.NewMetrics(a.metricsReg), Logger: a.Log.Named("gitops"),
		Envelope: env,
		// a memory bump's precondition, read from the cluster right before
		// its PR (docs/MANUAL.md, "The action envelope")
		OOMKills: kc,
	})
	for _, t := range a.Git.Tools() {
		reg.Add(t)
	}
	reg.Add(deployreview.Tool(forge))
	reg.Add(deployreview.APITool(forge))

	targets, err := report.TargetsFromURLs(cfg.DiscordWebhookURL, cfg.SlackWebhookURL,
		cfg.ReportWebhookURL, &http.Client{Timeout: 15 * time.Second})
	if err != nil {
		return &config.Error{Var: "DISCORD_WEBHOOK_URL/SLACK_WEBHOOK_URL/REPORT_WEBHOOK_URL", Msg: err.Error()}
	}
	sender, err := report.NewSender(cfg.Persona.Name, cfg.Persona.Slug, cfg.DisplayName, cfg.ReportColor)
	if err != nil {
		return &config.Error{Var: "REPORT_COLOR", Msg: err.Error()}
	}
	a.Deliverer, err = report.NewDeliverer(report.Options{Sender: sender, Targets: targets, Stamps: a.Store,
		Log: a.Log.Named("report"), Metrics: report.NewMetrics(a.metricsReg)})
	if err != nil {
		return err
	}
	reg.Add(pulseserver.ReportTool(a.Deliverer))
	// last: another server's tools never shadow one of the agent's own
	return a.mcpServers(ctx, reg)
}

// envelope builds the action envelope every mutating primitive asks
// (docs/MANUAL.md, "The action envelope") from the ACTIONS_* settings.
func (a *App) envelope(kc *kube.Client) (*envelope.Envelope, error) {
	cfg := a.Config
	mode, err := envelope.ParseMode(cfg.ActionsMode)
	if err != nil {
		return nil, &config.Error{Var: "ACTIONS_MODE", Msg: err.Error()}
	}
	var ns envelope.Namespaces
	if kc != nil {
		ns = kc
	}
	return envelope.New(a.Store, ns, envelope.Config{
		Agent: cfg.Persona.Slug, Mode: mode, Allow: cfg.ActionsNamespaces, FleetNamespace: cfg.Namespace,
		RestartsPerHour: cfg.ActionsRestartsPerHour, FleetRestartsPerHour: cfg.ActionsFleetRestartsPerHour,
		BumpsPer30Days: cfg.ActionsBumpsPer30Days, FleetBumpsPer30Days: cfg.ActionsFleetBumpsPer30Days,
		MaxGrowth: cfg.ActionsMaxGrowth, Follow: a.Verifier, Log: a.Log.Named("envelope"),
	}), nil
}

// verifier builds the follow-up check after every action and the pager it
// escalates through (docs/MANUAL.md, "The action envelope": verify, then
// escalate). Without a cluster there is nothing to check.
func (a *App) verifier(kc *kube.Client) error {
	cfg := a.Config
	p, err := pager.New(pager.Config{Target: cfg.PageTarget, Key: cfg.PageKey, URL: cfg.PageURL})
	switch {
	case errors.Is(err, pager.ErrNoPager):
		p = nil
	case err != nil:
		return &config.Error{Var: "PAGE_TARGET", Msg: err.Error()}
	}
	a.Escalator = pager.NewEscalator(p, a.Store, nil, a.Log.Named("pager"))
	if kc == nil {
		return nil
	}
	a.Verifier = verify.New(a.bg, kc, a.Store, a.Escalator, verify.Config{Agent: cfg.Persona.Slug,
		SyncTimeout: cfg.VerifySyncTimeout, Window: cfg.VerifyWindow, Interval: cfg.VerifyInterval, Watch: cfg.VerifyWatch,
		LinkBase: cfg.PageLinkBase, Log: a.Log.Named("verify")})
	a.closers = append(a.closers, a.Verifier.Wait)
	return nil
}

// persona is the persona's code (playbook, backstop), given what is
// configured: no cluster, no sweep; no GitOps repository, no review pass.
func (a *App) persona() personas.Persona {
	d := personas.Deps{}
	if a.Kube != nil {
		d.Cluster = a.Kube
	}
	if a.forgeOK {
		d.Reviewer = a.Git
		d.Repo = a.forge
	}
	return personas.For(a.Config.Persona.Slug, d)
}

// prReader serves GET /prs from the forge (docs/MANUAL.md, "Dashboard"); nil
// without a GitOps repository.
func (a *App) prReader() server.PRReader {
	if !a.forgeOK {
		return nil
	}
	forge := strings.TrimSpace(a.Config.GitOpsForge + " " + redact.URL(a.Config.GitOpsRepo))
	return func(ctx context.Context, recent int) (api.PRList, error) {
		items, err := a.Git.PRViews(ctx, recent)
		return api.PRList{Items: items, Forge: forge, Cluster: a.Config.ClusterName}, err
	}
}

// openStore opens the agent's store: in memory without DATABASE_URL, else
// Postgres falling open to memory while it is unreachable (never pinned).
func openStore(ctx context.Context, url string, log *zap.Logger) (store.AgentStore, func(), error) {
	sw, err := store.Open(ctx, url, log)
	if err != nil {
		return nil, nil, &config.Error{Var: "DATABASE_URL", Msg: err.Error()}
	}
	return sw, sw.Close, nil
}

// noForge is the forge of an agent with no GitOps repository configured:
// every call says what to configure.
type noForge struct{}

var _ gitops.Forge = noForge{}

func (noForge) ReadFile(context.Context, string) ([]byte, error)    { return nil, gitops.ErrNoForge }
func (noForge) ListFiles(context.Context, string) ([]string, error) { return nil, gitops.ErrNoForge }
func (noForge) OpenPR(context.Context, string, string, []byte, string, string, string) (gitops.PR, error) {
	return gitops.PR{}, gitops.ErrNoForge
}
func (noForge) ListPRs(context.Context, string) ([]gitops.PR, error) { return nil, gitops.ErrNoForge }
func (noForge) GetPR(context.Context, int) (gitops.PR, error)        { return gitops.PR{}, gitops.ErrNoForge }
func (noForge) Diff(context.Context, int) (string, error)            { return "", gitops.ErrNoForge }
func (noForge) Reviews(context.Context, int) ([]gitops.Review, error) {
	return nil, gitops.ErrNoForge
}
func (noForge) SubmitReview(context.Context, int, gitops.Review) error { return gitops.ErrNoForge }
func (noForge) Merge(context.Context, int, string) error               { return gitops.ErrNoForge }
