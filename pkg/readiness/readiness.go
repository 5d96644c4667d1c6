// Package readiness is GET /ready for both binaries: each dependency is
// probed and reported, and the answer is 503 when one the operator requires
// (READY_REQUIRE, see docs/MANUAL.md "Readiness") is unusable, with a JSON body
// naming it and why.
package readiness

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubecrew/kubecrew/pkg/redact"
)

// Result is one dependency's state.
type Result struct {
	// State is what it is now: "ok", "postgres", "memory", "none",
	// "not configured", "degraded: …".
	State string
	// Err, when set, says why the dependency is unusable.
	Err error
	// Detail is extra JSON shown under "details".<name> (e.g. the
	// permissions the cluster identity was checked for).
	Detail any
}

// Check is one dependency.
type Check struct {
	Name string
	// Required: an unusable dependency makes /ready answer 503.
	Required bool
	Probe    func(ctx context.Context) Result
}

// Failure is one required dependency that is unusable.
type Failure struct {
	Dependency string `json:"dependency"`
	Error      string `json:"error"`
}

// Evaluate probes every check concurrently within ctx and returns the
// status code and the body: "ready", each dependency's state under its
// name, "require", "failing" (required and unusable), "error" (the
// failures in one sentence) and "details". Extra failures (e.g. a drain)
// are added first.
func Evaluate(ctx context.Context, checks []Check, extra ...Failure) (int, map[string]any) {
	results := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.Probe(ctx)
		}()
	}
	wg.Wait()
	body := map[string]any{}
	failing := append([]Failure{}, extra...)
	require := []string{}
	details := map[string]any{}
	for i, c := range checks {
		r := results[i]
		if c.Required {
			require = append(require, c.Name)
		}
		// /ready answers without a token: what a probe says passes the
		// one redaction (docs/MANUAL.md, "Redaction") before it is shown.
		state, _ := redact.String(r.State)
		if r.Err != nil {
			why, _ := redact.String(r.Err.Error())
			state = "unusable: " + why
			if c.Required {
				failing = append(failing, Failure{Dependency: c.Name, Error: why})
			} else {
				state += " (not in READY_REQUIRE, so still ready)"
			}
		}
		body[c.Name] = state
		if r.Detail != nil {
			details[c.Name] = r.Detail
		}
	}
	body["require"] = require
	if len(details) > 0 {
		body["details"] = details
	}
	body["ready"] = len(failing) == 0
	if len(failing) == 0 {
		return http.StatusOK, body
	}
	body["failing"] = failing
	msgs := make([]string, len(failing))
	for i, f := range failing {
		msgs[i] = f.Dependency + ": " + f.Error
	}
	body["error"] = "not ready: " + strings.Join(msgs, "; ")
	return http.StatusServiceUnavailable, body
}

// Public is body (Evaluate's) as a caller without a token sees it
// (docs/MANUAL.md, "Readiness"): whether the process is ready, what it requires,
// each dependency's state in a word and which ones fail — never why, since
// an error names hosts, users and databases. "details" is left out.
func Public(body map[string]any) map[string]any {
	out := make(map[string]any, len(body))
	for k, v := range body {
		switch k {
		case "details", "error":
		case "failing":
			fs, _ := v.([]Failure)
			names := make([]string, 0, len(fs))
			public := make([]Failure, 0, len(fs))
			for _, f := range fs {
				names = append(names, f.Dependency)
				public = append(public, Failure{Dependency: f.Dependency, Error: "unusable"})
			}
			out[k] = public
			out["error"] = "not ready: " + strings.Join(names, ", ") + " unusable (the reasons are shown with a token)"
		default:
			if st, ok := v.(string); ok {
				st, _, _ = strings.Cut(st, ":")
				v = st
			}
			out[k] = v
		}
	}
	return out
}

// ParseRequire reads a READY_REQUIRE value: a comma list of known names;
// "none" requires nothing.
func ParseRequire(v string, known []string) (map[string]bool, error) {
	out := map[string]bool{}
	v = strings.TrimSpace(v)
	if v == "none" {
		return out, nil
	}
	ok := map[string]bool{}
	for _, k := range known {
		ok[k] = true
	}
	for _, p := range strings.Split(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		if !ok[p] {
			sorted := append([]string(nil), known...)
			sort.Strings(sorted)
			return nil, fmt.Errorf("%q is not a dependency; use a comma list of %s, or none", p, strings.Join(sorted, ", "))
		}
		out[p] = true
	}
	return out, nil
}

// Cached wraps a probe so it runs at most once per ttl; callers in between
// get the last result (a kubelet probes every few seconds, and some probes
// cost API calls). A probe that ran out of its caller's time is not kept.
func Cached(ttl time.Duration, probe func(context.Context) Result) func(context.Context) Result {
	var mu sync.Mutex
	var last Result
	var at time.Time
	return func(ctx context.Context) Result {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < ttl {
			return last
		}
		r := probe(ctx)
		if ctx.Err() == nil {
			last, at = r, time.Now()
		}
		return r
	}
}
