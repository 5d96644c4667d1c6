// Command eval is `make eval`: it runs the scenario suite (eval/scenarios,
// one YAML file per scenario) on the sandbox cluster of `make run` with
// the real core and five agents, grades each run by machine, and writes a
// Markdown table and a JSON file. See the README section "Evaluating the
// fleet".
//
//	eval [-mode M[,M…]] [-scenarios DIR] [-filter RE] [-repeat N] [-timeout D] [-bin DIR] [-out DIR]
//
// Modes: deterministic (AGENT_MODEL=none), competent and reckless (the
// scripted models), model (LLM_BASE_URL, LLM_API_KEY and AGENT_MODEL from
// the environment: any OpenAI-compatible endpoint). The default is the
// three scripted modes, or model when LLM_BASE_URL is set. It exits 0 only when every
// scenario passed or is a known failure that still fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
	"github.com/kubecrew/kubecrew/services/agent/internal/eval"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	os.Exit(Main(ctx, os.Args[1:], os.Getenv, os.Environ(), os.Stdout, os.Stderr))
}

// Main runs the suite; it returns the exit code.
func Main(ctx context.Context, args []string, getenv func(string) string, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modeFlag := fs.String("mode", "", "comma list of deterministic, competent, reckless, model (default: the first three; model when LLM_BASE_URL is set)")
	dir := fs.String("scenarios", "eval/scenarios", "directory of scenario files (*.yaml)")
	filter := fs.String("filter", "", "run only scenarios whose name matches this regular expression")
	repeat := fs.Int("repeat", 1, "run each scenario N times (flakiness, pass@k)")
	timeout := fs.Duration("timeout", 0, "override every scenario's timeout")
	bin := fs.String("bin", "bin", "directory holding the agent and core binaries (make build)")
	out := fs.String("out", "", "directory for the table, the JSON, logs and report pages (default: a new /tmp/kubecrew-eval.*)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	bad := func(format string, a ...any) int { fmt.Fprintf(stderr, "eval: "+format+"\n", a...); return 2 }
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	llm := strings.TrimSpace(getenv("LLM_BASE_URL"))
	if *modeFlag == "" {
		*modeFlag = strings.Join([]string{eval.ModeDeterministic, eval.ModeCompetent, eval.ModeReckless}, ",")
		if llm != "" {
			*modeFlag = eval.ModeModel
		}
	}
	modes := strings.Split(*modeFlag, ",")
	for _, m := range modes {
		switch m {
		case eval.ModeDeterministic, eval.ModeCompetent, eval.ModeReckless:
		case eval.ModeModel:
			if llm == "" || getenv("AGENT_MODEL") == "" {
				return bad("-mode model needs LLM_BASE_URL and AGENT_MODEL (and LLM_API_KEY) in the environment")
			}
		default:
			return bad("-mode %q: want deterministic, competent, reckless or model", m)
		}
	}
	if *repeat < 1 {
		return bad("-repeat %d: want 1 or more", *repeat)
	}
	var re *regexp.Regexp
	if *filter != "" {
		var err error
		if re, err = regexp.Compile(*filter); err != nil {
			return bad("-filter: %v", err)
		}
	}
	root, err := kubetest.RepoRoot()
	if err != nil {
		return bad("%v", err)
	}
	if !filepath.IsAbs(*dir) {
		*dir = filepath.Join(root, *dir)
	}
	all, err := eval.Load(*dir)
	if err != nil {
		return bad("%v", err)
	}
	var todo []eval.Scenario
	for _, s := range all {
		if re == nil || re.MatchString(s.Name) {
			if *timeout > 0 {
				s.Timeout = eval.Duration(*timeout)
			}
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		return bad("no scenario of %s matches -filter %q", *dir, *filter)
	}
	if *bin, err = filepath.Abs(*bin); err != nil {
		return bad("%v", err)
	}
	for _, b := range []string{"agent", "core"} {
		if _, err := os.Stat(filepath.Join(*bin, b)); err != nil {
			return bad("%s/%s missing: run `make build` first", *bin, b)
		}
	}
	if *out == "" {
		if *out, err = os.MkdirTemp("", "kubecrew-eval."); err != nil {
			return bad("%v", err)
		}
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, "[eval] "+format+"\n", a...) }
	model := "none (deterministic), scripted (competent, reckless)"
	if *modeFlag == eval.ModeModel {
		model = getenv("AGENT_MODEL")
	}
	say("%d scenario(s) × %d, modes %s; output in %s", len(todo), *repeat, *modeFlag, *out)
	r, err := eval.Start(ctx, eval.Config{Root: root, BinDir: *bin, WorkDir: *out, LLMBaseURL: llm,
		Environ: fleetEnviron(environ, slices.Contains(modes, eval.ModeModel)), Out: stdout})
	if err != nil {
		fmt.Fprintf(stderr, "eval: starting the sandbox cluster: %v\n", err)
		return 1
	}
	sum := &eval.Summary{Mode: *modeFlag, Model: model, StartedAt: time.Now().UTC()}
	for _, mode := range modes {
		for _, s := range todo {
			if !s.RunsIn(mode) {
				continue
			}
			for i := 1; i <= *repeat && ctx.Err() == nil; i++ {
				res := r.RunScenario(ctx, s, mode, i)
				sum.Add(res)
				line := fmt.Sprintf("%-13s %-26s %-15s %5.1fs  model %3d  tools %3d", mode, s.Name, res.Status, float64(res.WallMS)/1000, res.Model, res.Tools)
				if len(res.Failed) > 0 {
					line += "  — " + res.Failed[0]
				}
				say("%s", line)
			}
		}
	}
	r.Close()
	jsonPath, mdPath := filepath.Join(*out, "eval.json"), filepath.Join(*out, "eval.md")
	if f, err := os.Create(jsonPath); err == nil {
		_ = sum.WriteJSON(f)
		f.Close()
	}
	if f, err := os.Create(mdPath); err == nil {
		sum.WriteMarkdown(f)
		f.Close()
	}
	fmt.Fprintln(stdout)
	sum.WriteMarkdown(stdout)
	fmt.Fprintln(stdout)
	say("table: %s; JSON: %s", mdPath, jsonPath)
	if ctx.Err() != nil {
		return 130
	}
	if !sum.OK() {
		return 1
	}
	return 0
}

// fleetEnviron is the environment the agents inherit: without a model
// endpoint unless the mode is a real model (the scripted modes set their
// own), and without a kubeconfig (the fleet gets the sandbox's).
func fleetEnviron(environ []string, realModel bool) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "KUBECONFIG", "KUBECREW_ALLOW_ACTIONS":
			continue
		case "LLM_BASE_URL", "LLM_API_KEY", "AGENT_MODEL", "LLM_FALLBACK_BASE_URL", "LLM_FALLBACK_MODEL", "LLM_FALLBACK_API_KEY":
			if !realModel {
				continue
			}
		}
		out = append(out, kv)
	}
	return out
}
