// Package deployreview holds the deterministic reviews of a GitOps
// repository: the deploy path — Dockerfiles, workload manifests and CI
// workflow files — that Dax runs (docs/MANUAL.md, "Deploy-path review"), and
// the API design — OpenAPI documents, Services and the workloads behind
// them — that Ada runs (docs/MANUAL.md, "API design review"), each with or
// without a model. One package because both share the repository walk,
// the finding shape, the report and the one config file. Every finding has a rule id, a severity, the
// file:line it is about and a one-line fix; a repository switches rules
// off in ConfigPath. Mechanism only: the persona decides what to report.
//
// kube-score, the maintained Go library for manifest checks, was tried
// first: its latest release (v1.20.0) imports k8s.io/api packages that
// k8s.io/api v0.37 removed (autoscaling/v2beta1, v2beta2), and the
// modules keep one k8s.io version, so the manifest rules are our own.
package deployreview

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// ConfigPath is the repository file that switches rules off.
const ConfigPath = ".kubecrew/review.yaml"

// maxFileBytes bounds one reviewed file; larger ones are skipped and named.
const maxFileBytes = 512 << 10

// Repo is what a review reads: a GitOps forge's base branch.
type Repo interface {
	ListFiles(ctx context.Context, dir string) ([]string, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// Rule is one check: its id, severity, what it finds and the fix.
type Rule struct {
	ID       string
	Severity string // api.Severity*
	Title    string
	Fix      string
}

// Finding is one rule broken at one place.
type Finding struct {
	Rule     string
	Severity string
	File     string
	Line     int
	Message  string // what is wrong there, one line
	Fix      string // one line
	Kind     string // Dockerfile, Workflow, or the manifest object's kind
	Object   string // the manifest object's namespace/name ("" otherwise)
}

// Where is file:line.
func (f Finding) Where() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// Report is one review.
type Report struct {
	Title    string    // which review: "deploy-path review", "API design review"
	Scope    string    // the directory reviewed ("" = the whole repository)
	Files    int       // files reviewed
	Findings []Finding // sorted: severity, file, line, rule
	Disabled []string  // rules switched off by ConfigPath
	Skipped  []string  // files not reviewed, with why
}

// Review is Dax's deploy-path review of the repository under dir ("" =
// all of it): every rule of Rules not switched off in ConfigPath, on each
// Dockerfile, manifest and CI workflow. A file it cannot read or parse is
// named in Skipped; a bad ConfigPath is an error naming its line.
func Review(ctx context.Context, repo Repo, dir string) (*Report, error) {
	return review(ctx, repo, dir, deployPath)
}

// ReviewAPI is Ada's API design review of the repository under dir:
// every rule of APIRules on each OpenAPI document and on the Services
// and the workloads behind them.
func ReviewAPI(ctx context.Context, repo Repo, dir string) (*Report, error) {
	return review(ctx, repo, dir, apiDesign)
}

// ruleSet is one review: which files it reads, what it checks in each
// and what it checks over all the manifests together.
type ruleSet struct {
	title    string
	classify func(path string) string // "" = not reviewed
	// file checks one file; a manifest file is returned for the set's
	// objects pass; an error names why the file was not reviewed.
	file    func(path, kind string, raw []byte) ([]Finding, *manifestFile, error)
	objects func([]manifestFile) []Finding
}

var deployPath = ruleSet{title: "deploy-path review", classify: classify, file: deployFile, objects: checkManifests}

func deployFile(p, kind string, raw []byte) ([]Finding, *manifestFile, error) {
	switch kind {
	case kindDockerfile:
		return checkDockerfile(p, raw), nil, nil
	case kindWorkflow:
		fs, err := checkWorkflow(p, raw)
		return fs, nil, err
	}
	m, err := parseManifests(p, raw)
	if err != nil {
		return nil, nil, err
	}
	return nil, &m, nil
}

func review(ctx context.Context, repo Repo, dir string, set ruleSet) (*Report, error) {
	dir = strings.Trim(strings.TrimSpace(dir), "/")
	cfg, err := loadConfig(ctx, repo)
	if err != nil {
		return nil, err
	}
	files, err := repo.ListFiles(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", orRoot(dir), err)
	}
	rep := &Report{Title: set.title, Scope: dir, Disabled: cfg.disabledList()}
	var manifests []manifestFile
	for _, f := range files {
		kind := set.classify(f)
		if kind == "" {
			continue
		}
		raw, err := repo.ReadFile(ctx, f)
		switch {
		case err != nil:
			rep.Skipped = append(rep.Skipped, f+" (unreadable: "+err.Error()+")")
			continue
		case len(raw) > maxFileBytes:
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s (over %d KiB)", f, maxFileBytes>>10))
			continue
		}
		rep.Files++
		fs, m, err := set.file(f, kind, raw)
		if err != nil {
			rep.Skipped = append(rep.Skipped, f+" (not YAML: "+err.Error()+")")
		}
		rep.Findings = append(rep.Findings, fs...)
		if m != nil {
			manifests = append(manifests, *m)
		}
	}
	rep.Findings = append(rep.Findings, set.objects(manifests)...)
	rep.Findings = cfg.filter(rep.Findings)
	sortFindings(rep.Findings)
	return rep, nil
}

const (
	kindDockerfile = "dockerfile"
	kindWorkflow   = "workflow"
	kindManifest   = "manifest"
	kindJSON       = "json"
)

// classify names what a repository file is to the deploy-path review
// ("" = not reviewed).
func classify(p string) string {
	base := path.Base(p)
	ext := path.Ext(base)
	switch {
	case base == "Dockerfile" || strings.HasPrefix(base, "Dockerfile.") || strings.HasSuffix(base, ".Dockerfile") || ext == ".dockerfile":
		return kindDockerfile
	case (ext == ".yml" || ext == ".yaml") && strings.HasPrefix(p, ".github/workflows/"):
		return kindWorkflow
	case p == ConfigPath:
		return ""
	case ext == ".yml" || ext == ".yaml":
		return kindManifest
	}
	return ""
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if ra, rb := api.SeverityRank(a.Severity), api.SeverityRank(b.Severity); ra != rb {
			return ra < rb
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Rule < b.Rule
	})
}

// Render is the report for the model and for people: a header with
// counts, one line per finding (most severe first), then the rules off and
// the files skipped.
func (r *Report) Render() string {
	var b strings.Builder
	var sev [4]int
	for _, f := range r.Findings {
		if i := api.SeverityRank(f.Severity); i < 4 {
			sev[i]++
		}
	}
	fmt.Fprintf(&b, "%s of %s: %d files reviewed, %d findings (%d critical, %d high, %d medium, %d low)\n",
		r.Title, orRoot(r.Scope), r.Files, len(r.Findings), sev[0], sev[1], sev[2], sev[3])
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "- %s %s %s [%s] %s — fix: %s\n", f.Severity, f.Rule, f.Where(), strings.TrimSpace(f.Kind+" "+f.Object), f.Message, f.Fix)
	}
	if len(r.Disabled) > 0 {
		fmt.Fprintf(&b, "rules off (%s): %s\n", ConfigPath, strings.Join(r.Disabled, ", "))
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "not reviewed: %s\n", strings.Join(r.Skipped, "; "))
	}
	return b.String()
}

// ToFindings are the report's findings as the fleet's findings: kind the
// manifest object's kind (or Dockerfile, Workflow), namespace the object's
// (none for a Dockerfile or workflow), name file:line, reason the rule id.
func (r *Report) ToFindings() []api.Finding {
	out := make([]api.Finding, 0, len(r.Findings))
	for _, f := range r.Findings {
		detail := f.Message
		if f.Object != "" {
			detail = f.Object + ": " + detail
		}
		ns, _, _ := strings.Cut(f.Object, "/")
		if !strings.Contains(f.Object, "/") {
			ns = ""
		}
		af := api.Finding{Severity: f.Severity, Kind: f.Kind, Namespace: ns, Name: f.Where(), Reason: f.Rule,
			Detail: detail, Remediation: f.Fix, Confidence: 1}
		af.Key = af.DeriveKey()
		out = append(out, af)
	}
	return out
}

func orRoot(dir string) string {
	if dir == "" {
		return "the whole repository"
	}
	return dir + "/"
}
