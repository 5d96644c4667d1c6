package eval

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubecrew/kubecrew/pkg/kube/kubetest"
)

// Main is the eval command (services/agent/cmd/eval): it runs the suite
// and returns the exit code — 0 only when every scenario passed or is a
// known failure that still fails, 2 for bad flags.
// options are the command line, checked.
type options struct {
	modes   []string
	todo    []Scenario
	repeat  int
	root    string
	bin     string
	out     string
	llm     string
	environ []string
	delay   time.Duration
}

func Main(ctx context.Context, args []string, getenv func(string) string, environ []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args, getenv, stderr)
	if err != nil {
		if err != errUsage {
			fmt.Fprintf(stderr, "eval: %v\n", err)
		}
		return 2
	}
	o.environ = fleetEnviron(environ, slices.Contains(o.modes, ModeModel))
	model := "none (deterministic), scripted (competent, reckless)"
	if slices.Contains(o.modes, ModeModel) {
		model = getenv("AGENT_MODEL")
	}
	sum, err := run(ctx, o, model, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "eval: starting the sandbox cluster: %v\n", err)
		return 1
	}
	switch {
	case ctx.Err() != nil:
		return 130
	case !sum.OK():
		return 1
	}
	return 0
}

// errUsage: the flag package has printed the problem already.
var errUsage = errors.New("usage")

func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modeFlag := fs.String("mode", "", "comma list of deterministic, competent, reckless, model (default: the first three; model when LLM_BASE_URL is set)")
	dir := fs.String("scenarios", "eval/scenarios", "directory of scenario files (*.yaml)")
	filter := fs.String("filter", "", "run only scenarios whose name matches this regular expression")
	fs.IntVar(&o.repeat, "repeat", 1, "run each scenario N times (flakiness, pass@k)")
	timeout := fs.Duration("timeout", 0, "override every scenario's timeout")
	fs.DurationVar(&o.delay, "model-delay", 0, "the scripted models answer each call after this long (a real model's pace, e.g. 2s)")
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the agent and core binaries (make build)")
	fs.StringVar(&o.out, "out", "", "directory for the table, the JSON, logs and report pages (default: a new /tmp/kubecrew-eval.*)")
	if err := fs.Parse(args); err != nil {
		return o, errUsage
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.llm = strings.TrimSpace(getenv("LLM_BASE_URL"))
	if *modeFlag == "" {
		*modeFlag = strings.Join([]string{ModeDeterministic, ModeCompetent, ModeReckless}, ",")
		if o.llm != "" {
			*modeFlag = ModeModel
		}
	}
	o.modes = strings.Split(*modeFlag, ",")
	for _, m := range o.modes {
		switch m {
		case ModeDeterministic, ModeCompetent, ModeReckless:
		case ModeModel:
			if o.llm == "" || getenv("AGENT_MODEL") == "" {
				return o, fmt.Errorf("-mode model needs LLM_BASE_URL and AGENT_MODEL (and LLM_API_KEY) in the environment")
			}
		default:
			return o, fmt.Errorf("-mode %q: want deterministic, competent, reckless or model", m)
		}
	}
	if o.repeat < 1 {
		return o, fmt.Errorf("-repeat %d: want 1 or more", o.repeat)
	}
	re, err := regexp.Compile(*filter)
	if err != nil {
		return o, fmt.Errorf("-filter: %w", err)
	}
	if o.root, err = kubetest.RepoRoot(); err != nil {
		return o, err
	}
	if !filepath.IsAbs(*dir) {
		*dir = filepath.Join(o.root, *dir)
	}
	all, err := Load(*dir)
	if err != nil {
		return o, err
	}
	for _, s := range all {
		if re.MatchString(s.Name) {
			if *timeout > 0 {
				s.Timeout = Duration(*timeout)
			}
			o.todo = append(o.todo, s)
		}
	}
	if len(o.todo) == 0 {
		return o, fmt.Errorf("no scenario of %s matches -filter %q", *dir, *filter)
	}
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return o, err
	}
	for _, b := range []string{"agent", "core"} {
		if _, err := os.Stat(filepath.Join(o.bin, b)); err != nil {
			return o, fmt.Errorf("%s/%s missing: run `make build` first", o.bin, b)
		}
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "kubecrew-eval."); err != nil {
			return o, err
		}
	}
	return o, nil
}

// run starts the cluster, runs every scenario in every mode, and writes
// eval.md and eval.json.
func run(ctx context.Context, o options, model string, stdout io.Writer) (*Summary, error) {
	say := func(format string, a ...any) { fmt.Fprintf(stdout, "[eval] "+format+"\n", a...) }
	say("%d scenario(s) × %d, modes %s; output in %s", len(o.todo), o.repeat, strings.Join(o.modes, ","), o.out)
	r, err := Start(ctx, Config{Root: o.root, BinDir: o.bin, WorkDir: o.out, LLMBaseURL: o.llm, Environ: o.environ, Out: stdout, ModelDelay: o.delay})
	if err != nil {
		return nil, err
	}
	sum := &Summary{Mode: strings.Join(o.modes, ","), Model: model, StartedAt: time.Now().UTC()}
	for _, mode := range o.modes {
		for _, s := range o.todo {
			for i := 1; s.RunsIn(mode) && i <= o.repeat && ctx.Err() == nil; i++ {
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
	jsonPath, mdPath := filepath.Join(o.out, "eval.json"), filepath.Join(o.out, "eval.md")
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
	return sum, nil
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
