// Package chain follows an investigation across agents: the triage run,
// the run it delegated to, the runs that one told (docs/ARCHITECTURE.md,
// "The request walk"). The report page and the chat post read it.
package chain

import (
	"context"
	"encoding/json"
	"time"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/tracereport"
)

// RunReader reads an agent's run with its trace (*dispatch.Client).
type RunReader interface {
	GetRun(ctx context.Context, slug, runID string) (json.RawMessage, error)
}

// MaxRuns bounds how many runs one chain follows.
const MaxRuns = 12

// Follower reads chains.
type Follower struct {
	Reader RunReader
	// Resolve maps a slug or persona name to the name the reader takes
	// (nil: as given).
	Resolve func(string) (string, bool)
	// Timeout bounds each read (0: 10s).
	Timeout time.Duration
}

// Follow reads the chain that starts at first through the A2A sends and
// delegations recorded in each trace, breadth first, at most MaxRuns. A run
// that cannot be read is kept with its FetchError.
func (f Follower) Follow(ctx context.Context, first tracereport.Link) []tracereport.Run {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	queue := []tracereport.Link{first}
	seen := map[tracereport.Link]bool{first: true}
	var runs []tracereport.Run
	for len(queue) > 0 && len(runs) < MaxRuns {
		l := queue[0]
		queue = queue[1:]
		name := l.Agent
		if f.Resolve != nil {
			if n, ok := f.Resolve(l.Agent); ok {
				name = n
			}
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		raw, err := f.Reader.GetRun(cctx, name, l.RunID)
		cancel()
		run := tracereport.Run{AgentName: name, RunResult: kapi.RunResult{RunID: l.RunID, Agent: name}}
		var ar kapi.RunView // an agent's GET /runs/{id}
		switch {
		case err != nil:
			run.FetchError = redact.Error(err)
		case json.Unmarshal(raw, &ar) != nil:
			run.FetchError = "the agent's answer is not a run"
		default:
			run = tracereport.Run{RunResult: ar.RunResult, AgentName: name, Task: ar.Task, Caller: ar.Caller,
				SocialDepth: ar.SocialDepth, Trace: ar.Trace}
		}
		runs = append(runs, run)
		for _, next := range tracereport.Links(run) {
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return runs
}

// Settled reports whether every run of the chain has ended (none running)
// and every run could be read.
func Settled(runs []tracereport.Run) bool {
	for _, r := range runs {
		if r.FetchError != "" || r.Status == "" || r.Status == kapi.StatusRunning {
			return false
		}
	}
	return len(runs) > 0
}
