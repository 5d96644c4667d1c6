package gitops

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Gate actions of the GitOps primitives (tools.Check).
const (
	ActionPROpen       tools.Action = "gitops.pr.open"
	ActionPRReview     tools.Action = "gitops.pr.review"
	ActionMergeTrivial tools.Action = "gitops.pr.mergetrivial"
)

// Defaults of Options.
const (
	DefaultMaxOpenPRs   = 5
	DefaultStaleAfter   = 7 * 24 * time.Hour
	DefaultSettleAfter  = 24 * time.Hour
	DefaultDiffMaxChars = 20000
)

// Options configure the GitOps service and its tools. Zero values take the
// defaults.
type Options struct {
	MaxOpenPRs int // open agent PRs that are not stale; default 5
	// SettleAfter: a finding whose PR merged (opened less than this ago)
	// gets no new PR, so a fix not yet rolled out is not raised again on
	// the next sweep; default 24h.
	SettleAfter  time.Duration
	StaleAfter   time.Duration // an open agent PR older than this is stale; default 7 days
	DiffMaxChars int           // a longer diff is truncated and cannot be approved; default 20,000
	MergeMethod  string        // default "merge"
	Now          func() time.Time
	Metrics      *Metrics
	Logger       *zap.Logger
	// IsFleetWorkload reports workloads of the fleet itself, which Sol never
	// changes (docs/ARCHITECTURE.md). nil: the agent-<persona> deployments and
	// kubecrew-core.
	IsFleetWorkload func(namespace, kind, name string) bool
	// Envelope judges opening a PR and merging one right before either is
	// done (docs/MANUAL.md, "The action envelope"); nil: none.
	Envelope tools.Envelope
	// Paths are tried first when locating a manifest, expanded with
	// Cluster (the agent's CLUSTER_NAME), the namespace and the name.
	Paths   []PathTemplate
	Cluster string
	// OOMKills reads the OOM kill a memory bump needs, right before its
	// PR (checkOOMKill); nil: not checked.
	OOMKills OOMKillReader
}

// firstDirs expands the path templates for one workload.
func (o Options) firstDirs(namespace, name string) []string {
	var out []string
	for _, t := range o.Paths {
		if d, ok := t.Dir(o.Cluster, namespace, name); ok {
			out = append(out, d)
		}
	}
	return out
}

func (o Options) withDefaults() Options {
	if o.MaxOpenPRs <= 0 {
		o.MaxOpenPRs = DefaultMaxOpenPRs
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.SettleAfter <= 0 {
		o.SettleAfter = DefaultSettleAfter
	}
	if o.DiffMaxChars <= 0 {
		o.DiffMaxChars = DefaultDiffMaxChars
	}
	if o.MergeMethod == "" {
		o.MergeMethod = "merge"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.IsFleetWorkload == nil {
		o.IsFleetWorkload = defaultFleetWorkload
	}
	return o
}

func defaultFleetWorkload(_, _, name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "kubecrew-core" {
		return true
	}
	if rest, ok := strings.CutPrefix(n, "agent-"); ok {
		_, known := persona.Lookup(rest)
		return known
	}
	return false
}

// Service is the GitOps side of one agent: what its tools do, callable
// directly by deterministic playbooks. me is the agent's identity (slug).
type Service struct {
	f    Forge
	me   string
	opts Options
}

// NewService returns the GitOps service for agent me over forge f.
func NewService(f Forge, me string, opts Options) *Service {
	return &Service{f: f, me: strings.TrimSpace(me), opts: opts.withDefaults()}
}

// ErrNoIdentity is returned by every identity-bound operation of an agent
// that cannot name itself.
var ErrNoIdentity = errors.New("this agent has no identity, so it cannot show it is not the PR's author; refusing")

func (s *Service) identity() (string, error) {
	if s.me == "" || CanonicalAgent(s.me) == "" {
		return "", ErrNoIdentity
	}
	return CanonicalAgent(s.me), nil
}

// BumpRequest asks for a memory-bump PR.
type BumpRequest struct {
	Namespace, Kind, Name, Container string
	Factor                           float64 // 0 = 1.5
	FindingKey                       string  // "" = derived (reason OOMKilled)
	Reason                           string  // evidence for the PR body
}

// BumpResult is the PR that carries the bump.
type BumpResult struct {
	PR       PR
	Existing bool // the finding already had an open PR; nothing was opened
	Path     string
	How      string
	Old, New string
	Diff     string
	Stale    []PR
	// NotMade: the action envelope did not let the PR be opened; this is
	// the proposal or recommendation it recorded instead, and PR is empty.
	NotMade string
}

// ProposeMemoryBump finds the workload's manifest in the repository, raises
// the container's memory limit by a byte splice and opens a PR on
// agent/fix/<finding-key>. The same finding returns its open PR instead of
// opening another. It never touches the cluster.
func (s *Service) ProposeMemoryBump(ctx context.Context, req BumpRequest) (*BumpResult, error) {
	me, err := s.identity()
	if err != nil {
		return nil, err
	}
	if err := tools.Check(ctx, ActionPROpen); err != nil {
		return nil, err
	}
	if err := tools.CheckTarget(ctx, req.Kind, req.Namespace, req.Name); err != nil {
		return nil, err
	}
	kind, err := s.checkBumpRequest(req)
	if err != nil {
		return nil, err
	}
	key := req.FindingKey
	if key == "" {
		key = api.Finding{Namespace: req.Namespace, Kind: kind, Name: req.Name, Container: req.Container, Reason: "OOMKilled"}.DeriveKey()
	}
	branch, err := BranchFor(key)
	if err != nil {
		return nil, err
	}
	open, err := s.f.ListPRs(ctx, StateOpen)
	if err != nil {
		return nil, fmt.Errorf("listing open PRs: %w", err)
	}
	fresh, stale := s.splitStale(open)
	s.opts.Metrics.setStale(len(stale))
	for _, p := range open {
		if p.Branch == branch {
			return s.existing(ctx, p, stale)
		}
	}
	if recent, err := s.recentlyMerged(ctx, branch); err != nil {
		return nil, err
	} else if recent != nil {
		return nil, fmt.Errorf("%w: a fix for this finding, #%d (%s), was opened %s ago and has been merged; "+
			"give it time to roll out before raising the limit again (settle window %s)", ErrRefused, recent.Number, recent.Branch,
			s.opts.Now().Sub(recent.CreatedAt).Round(time.Minute), s.opts.SettleAfter)
	}
	if len(fresh) >= s.opts.MaxOpenPRs {
		return nil, fmt.Errorf("%d agent PRs are open and not stale (cap %d): %s — review or close them first%s",
			len(fresh), s.opts.MaxOpenPRs, prList(fresh), staleNote(stale, s.opts.Now()))
	}
	loc, err := LocateManifestIn(ctx, s.f, s.opts.firstDirs(req.Namespace, req.Name), req.Namespace, kind, req.Name, req.Container)
	if err != nil {
		return nil, err
	}
	out, old, nv, err := BumpMemory(loc.Content, kind, req.Name, req.Container, req.Factor)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc.Path, err)
	}
	kill, err := s.checkOOMKill(ctx, req, kind, loc.Path, old)
	if err != nil {
		s.opts.Logger.Info("gitops: memory bump refused: precondition", zap.String("path", loc.Path), zap.Error(err))
		return nil, err
	}
	factor := req.Factor
	if factor == 0 {
		factor = DefaultFactor
	}
	prop := Proposal{Kind: kind, Namespace: req.Namespace, Name: req.Name, Container: req.Container,
		Path: loc.Path, Old: old, New: nv, Factor: factor, Evidence: req.Reason, FindingKey: key, Author: me}
	if kill != nil {
		prop.Evidence = strings.TrimSpace(fmt.Sprintf("read from the cluster right before this PR: container %s of pod %s OOM-killed at limit %s. %s",
			kill.Container, kill.Pod, kill.Limit, req.Reason))
	}
	target := tools.Change{Namespace: req.Namespace, Kind: kind, Name: req.Name, Container: req.Container,
		Old: old, New: nv, Change: spliceDiff(loc.Path, loc.Content, out)}
	if s.opts.Envelope != nil {
		v, err := s.opts.Envelope.Permit(ctx, ActionPROpen, target)
		if err != nil {
			return nil, err
		}
		if !v.Act {
			return &BumpResult{Path: loc.Path, How: loc.How, Old: old, New: nv, Diff: target.Change, Stale: stale, NotMade: v.Answer}, nil
		}
	}
	pr, err := s.f.OpenPR(ctx, branch, loc.Path, out, prop.Title(), prop.Body(), me)
	if errors.Is(err, ErrPRExists) {
		return s.existing(ctx, pr, stale)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the PR: %w", err)
	}
	if s.opts.Envelope != nil {
		s.opts.Envelope.Done(ctx, ActionPROpen, target)
	}
	s.opts.Metrics.prOpened()
	s.opts.Logger.Info("gitops: memory bump proposed", zap.Int("pr", pr.Number), zap.String("branch", branch),
		zap.String("path", loc.Path), zap.String("old", old), zap.String("new", nv))
	d, err := s.f.Diff(ctx, pr.Number)
	if err != nil {
		return nil, fmt.Errorf("PR #%d opened, but its diff could not be read: %w", pr.Number, err)
	}
	return &BumpResult{PR: pr, Path: loc.Path, How: loc.How, Old: old, New: nv, Diff: d, Stale: stale}, nil
}

// checkBumpRequest validates a bump request and returns its canonical kind.
func (s *Service) checkBumpRequest(req BumpRequest) (string, error) {
	if req.Namespace == "" || req.Kind == "" || req.Name == "" || req.Container == "" {
		return "", errors.New("namespace, kind, name and container are all required")
	}
	kind := CanonicalKind(req.Kind)
	if kind == "" || kind == "Pod" {
		return "", fmt.Errorf("kind %q: a memory bump changes a workload's pod template (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob); for a bare pod change its owner", req.Kind)
	}
	if s.opts.IsFleetWorkload(req.Namespace, kind, req.Name) {
		return "", fmt.Errorf("%s %s/%s is part of the kubecrew fleet itself; agents never change their own workloads — a person must", kind, req.Namespace, req.Name)
	}
	if req.Factor != 0 {
		if err := checkFactor(req.Factor); err != nil {
			return "", err
		}
	}
	return kind, nil
}

// recentlyMerged returns a merged PR on branch opened within the settle
// window: the fix is in Git but may not be rolled out yet, so the same
// finding must not raise the limit again on top of it.
func (s *Service) recentlyMerged(ctx context.Context, branch string) (*PR, error) {
	merged, err := s.f.ListPRs(ctx, StateMerged)
	if err != nil {
		return nil, fmt.Errorf("listing merged PRs: %w", err)
	}
	for _, p := range merged {
		if p.Branch == branch && s.opts.Now().Sub(p.CreatedAt) < s.opts.SettleAfter {
			return &p, nil
		}
	}
	return nil, nil
}

func (s *Service) existing(ctx context.Context, p PR, stale []PR) (*BumpResult, error) {
	d, err := s.f.Diff(ctx, p.Number)
	if err != nil {
		return nil, fmt.Errorf("PR #%d exists for this finding, but its diff could not be read: %w", p.Number, err)
	}
	r := &BumpResult{PR: p, Existing: true, Diff: d, Stale: stale}
	if mc, _ := analyseMemoryDiff(d); mc != nil {
		r.Path, r.Old, r.New = mc.Path, mc.Old, mc.New
	}
	return r, nil
}

// splitStale separates open agent PRs into fresh and stale ones.
func (s *Service) splitStale(open []PR) (fresh, stale []PR) {
	now := s.opts.Now()
	for _, p := range open {
		if !IsAgentBranch(p.Branch) || p.State != StateOpen {
			continue
		}
		if now.Sub(p.CreatedAt) > s.opts.StaleAfter {
			stale = append(stale, p)
		} else {
			fresh = append(fresh, p)
		}
	}
	return fresh, stale
}

// StalePRs lists open agent PRs older than the stale threshold, sets the
// kubecrew_gitops_stale_prs gauge, and returns one finding (kind
// PullRequest) per stale PR, so that a cap jammed by PRs nobody merges is
// reported instead of silently blocking new fixes.
func (s *Service) StalePRs(ctx context.Context) ([]PR, []api.Finding, error) {
	open, err := s.f.ListPRs(ctx, StateOpen)
	if err != nil {
		return nil, nil, err
	}
	_, stale := s.splitStale(open)
	s.opts.Metrics.setStale(len(stale))
	now := s.opts.Now()
	var fs []api.Finding
	for _, p := range stale {
		f := api.Finding{
			Severity: api.SeverityMedium, Kind: "PullRequest", Name: fmt.Sprintf("pr-%d", p.Number),
			Reason: "StalePullRequest",
			Detail: fmt.Sprintf("Agent PR #%d %q (%s, by %s) has been open for %s without being merged or closed: %s",
				p.Number, p.Title, p.Branch, p.Author, age(now.Sub(p.CreatedAt)), p.URL),
			Remediation: "Review it (merge or request changes) or close it; stale agent PRs do not count against the open-PR cap but still need a person.",
			Remediable:  false, Confidence: 1,
		}
		f.Key = f.DeriveKey()
		fs = append(fs, f)
	}
	return stale, fs, nil
}

func prList(prs []PR) string {
	var parts []string
	for _, p := range prs {
		parts = append(parts, fmt.Sprintf("#%d %s", p.Number, p.Branch))
	}
	return strings.Join(parts, ", ")
}

func staleNote(stale []PR, now time.Time) string {
	if len(stale) == 0 {
		return ""
	}
	var parts []string
	for _, p := range stale {
		parts = append(parts, fmt.Sprintf("#%d (%s old)", p.Number, age(now.Sub(p.CreatedAt))))
	}
	return fmt.Sprintf(". STALE, not counted against the cap, need a person: %s", strings.Join(parts, ", "))
}

func age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(math.Floor(d.Hours()/24)))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d.Hours()))
	default:
		return fmt.Sprintf("%d minutes", int(d.Minutes()))
	}
}
