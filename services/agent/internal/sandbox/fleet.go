package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kubecrew/kubecrew/pkg/persona"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Member is one agent of the fleet.
type Member struct {
	Persona string // noor
	Slug    string // platform-sre
	Port    int
}

// Personas in port order (:8001 … :8005 by default): pkg/persona's table.
var Personas = func() []Member {
	out := make([]Member, len(persona.All))
	for i, p := range persona.All {
		out[i] = Member{Persona: p.Name, Slug: p.Slug}
	}
	return out
}()

// SolReadOnlyTools is Sol's tool list on a cluster the user did not open
// to actions: the read-only half of its tools (no k8s_rollout, and no
// bump_workload_memory since there is no GitOps repository).
const SolReadOnlyTools = "k8s_get_resources,k8s_describe,k8s_get_events,k8s_get_pod_logs"

// FleetConfig is what the fleet is started with.
type FleetConfig struct {
	BinDir     string
	LogDir     string
	Host       string // 127.0.0.1
	CorePort   int
	AgentPort  int // first agent port; the five take AgentPort … AgentPort+4
	Kubeconfig string
	GitOpsRepo string // "" = no GitOps repository
	ReadOnly   bool   // Sol without k8s_rollout
	LLMBaseURL string // "" = deterministic mode
	Environ    []string
	// CoreExtra are more settings of the core; they win over CoreEnv's.
	CoreExtra map[string]string
}

// Fleet is the running core and agents.
type Fleet struct {
	Core    string            // base URL
	Agents  map[string]string // persona → base URL
	Members []Member
	Sup     *Supervisor
}

// URL returns persona's base URL.
func (f *Fleet) URL(persona string) string { return f.Agents[persona] }

// controlled are the variables the sandbox sets itself; inherited values
// would silently change the demo (a stale DATABASE_URL holds last run's
// cooldowns, an AGENT_TOOLS would apply to all five personas, …).
var controlled = []string{
	"AGENT_PERSONA", "LISTEN_ADDR", "AGENT_PEERS", "PEER_URL_TEMPLATE", "KUBECONFIG",
	"GITOPS_FORGE", "GITOPS_REPO", "GITOPS_BRANCH", "PULSE_ENABLED", "AGENT_TOOLS",
	"DATABASE_URL", "AUTH_TOKEN", "AUTH_READ_TOKEN", "AUTH_DISABLED", "PERSONA_DIR", "ROUTES_FILE", "ALERT_COOLDOWN", "AGENT_CALL_TIMEOUT",
	"KUBECREW_TEST_KUBECONFIG",
}

// childEnv is base without the controlled variables, plus set.
func childEnv(base []string, set map[string]string) []string {
	drop := map[string]bool{}
	for _, k := range controlled {
		drop[k] = true
	}
	for k := range set {
		drop[k] = true
	}
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

// AgentEnv is the environment of one agent.
func AgentEnv(c FleetConfig, m Member, peers string) map[string]string {
	env := map[string]string{
		"AGENT_PERSONA": m.Persona,
		"LISTEN_ADDR":   net.JoinHostPort(c.Host, strconv.Itoa(m.Port)),
		"AGENT_PEERS":   peers,
		"PULSE_ENABLED": "false", // the demo runs the incident only
		"AUTH_TOKEN":    Token(),
	}
	if c.Kubeconfig != "" {
		env["KUBECONFIG"] = c.Kubeconfig
	}
	if c.GitOpsRepo != "" {
		env["GITOPS_FORGE"], env["GITOPS_REPO"], env["GITOPS_BRANCH"] = "local", c.GitOpsRepo, "main"
	}
	if c.LLMBaseURL == "" {
		env["AGENT_MODEL"] = "none"
	} else {
		env["LLM_BASE_URL"] = c.LLMBaseURL
	}
	if c.ReadOnly && m.Persona == persona.NameSol {
		env["AGENT_TOOLS"] = SolReadOnlyTools
	}
	return env
}

// CoreEnv is the core's environment.
func CoreEnv(c FleetConfig, peers string) map[string]string {
	env := map[string]string{
		"LISTEN_ADDR":        net.JoinHostPort(c.Host, strconv.Itoa(c.CorePort)),
		"AGENT_PEERS":        peers,
		"ALERT_COOLDOWN":     "30m",
		"AGENT_CALL_TIMEOUT": "600s",
		"AUTH_TOKEN":         Token(),
	}
	for k, v := range c.CoreExtra {
		env[k] = v
	}
	return env
}

// StartFleet starts the five agents, then the core, and waits until every
// one answers GET /ready.
func StartFleet(ctx context.Context, c FleetConfig, sup *Supervisor, out io.Writer) (*Fleet, error) {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	members := make([]Member, len(Personas))
	copy(members, Personas)
	var peers []string
	for i := range members {
		members[i].Port = c.AgentPort + i
		peers = append(peers, members[i].Slug+"=http://"+net.JoinHostPort(c.Host, strconv.Itoa(members[i].Port)))
	}
	peerList := strings.Join(peers, ",")
	ports := []int{c.CorePort}
	for _, m := range members {
		ports = append(ports, m.Port)
	}
	if err := portsFree(c.Host, ports); err != nil {
		return nil, err
	}
	f := &Fleet{Agents: map[string]string{}, Members: members, Sup: sup,
		Core: "http://" + net.JoinHostPort(c.Host, strconv.Itoa(c.CorePort))}
	type started struct {
		name, url string
		p         *Proc
	}
	var all []started
	for _, m := range members {
		env := childEnv(c.Environ, AgentEnv(c, m, peerList))
		p, err := sup.Start(m.Persona, filepath.Join(c.BinDir, "agent"), env, filepath.Join(c.LogDir, m.Persona+".log"))
		if err != nil {
			return nil, err
		}
		u := "http://" + net.JoinHostPort(c.Host, strconv.Itoa(m.Port))
		f.Agents[m.Persona] = u
		all = append(all, started{m.Persona, u, p})
	}
	p, err := sup.Start("core", filepath.Join(c.BinDir, "core"), childEnv(c.Environ, CoreEnv(c, peerList)), filepath.Join(c.LogDir, "core.log"))
	if err != nil {
		return nil, err
	}
	all = append(all, started{"core", f.Core, p})
	for _, s := range all {
		body, err := waitReady(ctx, s.url, s.p, 90*time.Second)
		if err != nil {
			return nil, fmt.Errorf("%s did not become ready: %w\n--- last lines of %s ---\n%s", s.name, err, s.p.LogPath, tail(s.p.LogPath, 15))
		}
		fmt.Fprintf(out, "  %-5s ready on %s%s\n", s.name, s.url, readySummary(body))
	}
	return f, nil
}

// StartFleetOnFreePorts is StartFleet on the ports c asks for, where 0
// means any free one. A free port is picked, released, and bound later by
// the child, so another program may take it in between: when the fleet
// fails to start because an address was in use, its processes are stopped
// and it starts again on fresh ports, at most three times. Ports the user
// chose are never changed. The returned Fleet's URLs name the ports used.
func StartFleetOnFreePorts(ctx context.Context, c FleetConfig, sup *Supervisor, out io.Writer) (*Fleet, error) {
	wantCore, wantAgent := c.CorePort, c.AgentPort
	for attempt := 1; ; attempt++ {
		var err error
		if c.CorePort, c.AgentPort, err = choosePorts(wantCore, wantAgent); err != nil {
			return nil, err
		}
		f, err := StartFleet(ctx, c, sup, out)
		if err == nil || (wantCore != 0 && wantAgent != 0) || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return f, err
		}
		fmt.Fprintf(out, "  a port was taken between choosing it and binding it; starting the fleet again on fresh ports\n")
		sup.Reset(ctx, 10*time.Second)
	}
}

// choosePorts is ChoosePorts; a test makes its first pick collide.
var choosePorts = ChoosePorts

func portsFree(host string, ports []int) error {
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("port %d is taken (another `make run`? stop it, or pick other ports: make run CORE_PORT=9080 AGENT_PORT=9001, or 0 for any free ones): %w", p, err)
		}
		l.Close()
	}
	return nil
}

// waitReady polls url/ready until 200, the process exits, or timeout.
func waitReady(ctx context.Context, url string, p *Proc, timeout time.Duration) (map[string]any, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no 200 from %s/ready within %s", url, timeout))
	defer cancel()
	var last string
	for {
		var body map[string]any
		code, err := GetJSON(ctx, url+"/ready", &body)
		if err == nil && code == http.StatusOK {
			return body, nil
		}
		if err != nil {
			last = err.Error()
		} else {
			b, _ := json.Marshal(body)
			last = fmt.Sprintf("%d %s", code, b)
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("process exited (%v)", p.err)
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.Canceled) {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w (last answer: %s)", context.Cause(ctx), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readySummary renders an agent's /ready checks ("cluster ok, gitops ok").
func readySummary(body map[string]any) string {
	keys := make([]string, 0, len(body))
	for k, v := range body {
		if _, isString := v.(string); isString && k != "status" && k != "error" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := fmt.Sprint(body[k])
		if len(v) > 60 {
			v = v[:60] + "…"
		}
		parts = append(parts, k+" "+v)
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
