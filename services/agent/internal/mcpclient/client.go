package mcpclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/redact"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Options configure the servers' connections.
type Options struct {
	Servers []Spec
	// ReadTools is AGENT_MCP_READ_TOOLS: the prefixed names (or patterns)
	// this persona may use as read-only when the server says they are.
	ReadTools []string
	// Env is a stdio server's environment (the agent's, without its
	// secrets); nil: the agent's whole environment.
	Env []string
	// ConnectTimeout bounds connecting and listing a server's tools at
	// start (default 20s); CallTimeout one call (default 60s).
	ConnectTimeout, CallTimeout time.Duration
	// Taken reports a name the agent has already (its own tools): a remote
	// tool by that name is skipped, never shadows one.
	Taken   func(name string) bool
	Version string
	Log     *zap.Logger
}

// Status is one server as /ready and /info show it.
type Status struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	State     string   `json:"state"` // "connected" or "down"
	Error     string   `json:"error,omitempty"`
	Tools     []string `json:"tools"`
	ReadOnly  []string `json:"read_only"`
	// Skipped are tools left out, each with why (a name clash, a schema
	// that is not an object).
	Skipped []string `json:"skipped,omitempty"`
}

// Client holds the connected servers.
type Client struct {
	o       Options
	servers []*server
}

type server struct {
	spec    Spec
	session *mcp.ClientSession
	err     error
	tools   []*remote
	skipped []string
}

// Connect connects every server in parallel, each bounded by
// ConnectTimeout, and lists its tools. It never fails: a server that does
// not answer is kept with its error and contributes no tools.
func Connect(ctx context.Context, o Options) *Client {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 20 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	if o.Taken == nil {
		o.Taken = func(string) bool { return false }
	}
	c := &Client{o: o}
	var wg sync.WaitGroup
	for _, sp := range o.Servers {
		s := &server{spec: sp}
		c.servers = append(c.servers, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.connect(ctx, s)
		}()
	}
	wg.Wait()
	// Names are checked after every server listed, in the configured order,
	// so a clash between two servers resolves the same way every start.
	names := map[string]bool{}
	for _, s := range c.servers {
		var kept []*remote
		for _, r := range s.tools {
			switch {
			case o.Taken(r.name) || tools.AutonomousTools[r.name]:
				s.skipped = append(s.skipped, r.name+": the agent has a tool by that name")
			case names[r.name]:
				s.skipped = append(s.skipped, r.name+": another server's tool has that name")
			default:
				names[r.name] = true
				kept = append(kept, r)
			}
		}
		s.tools = kept
		log := o.Log.With(zap.String("server", s.spec.Name), zap.String("transport", s.spec.Transport()))
		if s.err != nil {
			log.Warn("MCP server down at start: its tools are absent until the agent restarts", zap.Error(s.err))
			continue
		}
		log.Info("MCP server connected", zap.Strings("tools", remoteNames(s.tools)), zap.Strings("skipped", s.skipped))
	}
	return c
}

func (c *Client) connect(ctx context.Context, s *server) {
	ctx, cancel := context.WithTimeout(ctx, c.o.ConnectTimeout)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "kubecrew-agent", Version: c.o.Version}, nil)
	var t mcp.Transport
	if s.spec.URL != "" {
		hc := &http.Client{Timeout: c.o.CallTimeout + 5*time.Second}
		t = &mcp.StreamableClientTransport{Endpoint: s.spec.URL, HTTPClient: hc, MaxRetries: 2}
	} else {
		cmd := exec.Command(s.spec.Command[0], s.spec.Command[1:]...)
		cmd.Env = c.o.Env
		cmd.Stderr = &logWriter{log: c.o.Log.Named("mcp-server").With(zap.String("server", s.spec.Name))}
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	sess, err := cl.Connect(ctx, t, nil)
	if err != nil {
		s.err = fmt.Errorf("connecting to %s: %w", where(s.spec), err)
		return
	}
	var listed []*mcp.Tool
	for tl, err := range sess.Tools(ctx, nil) {
		if err != nil {
			_ = sess.Close()
			s.err = fmt.Errorf("listing the tools of %s: %w", where(s.spec), err)
			return
		}
		listed = append(listed, tl)
	}
	s.session = sess
	sort.Slice(listed, func(i, j int) bool { return listed[i].Name < listed[j].Name })
	for _, tl := range listed {
		r, why := newRemote(s, tl, c.o)
		if r == nil {
			s.skipped = append(s.skipped, tl.Name+": "+why)
			continue
		}
		s.tools = append(s.tools, r)
	}
}

func where(s Spec) string {
	if s.URL != "" {
		return redactURL(s.URL)
	}
	return "command " + s.Command[0]
}

func redactURL(u string) string {
	out, _ := redact.String(u)
	return out
}

// Tools returns every kept tool of every connected server.
func (c *Client) Tools() []tools.Tool {
	var out []tools.Tool
	for _, s := range c.servers {
		for _, r := range s.tools {
			out = append(out, r)
		}
	}
	return out
}

// Status reports every configured server.
func (c *Client) Status() []Status {
	out := []Status{}
	for _, s := range c.servers {
		st := Status{Name: s.spec.Name, Transport: s.spec.Transport(), State: "connected",
			Tools: remoteNames(s.tools), ReadOnly: []string{}, Skipped: s.skipped}
		for _, r := range s.tools {
			if r.readOnly {
				st.ReadOnly = append(st.ReadOnly, r.name)
			}
		}
		if s.err != nil {
			st.State, st.Error = "down", redactURL(s.err.Error())
		}
		out = append(out, st)
	}
	return out
}

// Down returns the servers that are down, each with its error.
func (c *Client) Down() []string {
	var out []string
	for _, st := range c.Status() {
		if st.State == "down" {
			out = append(out, st.Name+": "+st.Error)
		}
	}
	return out
}

// Close ends every session (a stdio server's process exits).
func (c *Client) Close() {
	for _, s := range c.servers {
		if s.session != nil {
			_ = s.session.Close()
		}
	}
}

func remoteNames(rs []*remote) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// logWriter logs a stdio server's stderr, line by line, at debug.
type logWriter struct {
	log *zap.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.log.Debug("stderr", zap.String("line", string(w.buf[:i])))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a line without end: log what there is
		w.log.Debug("stderr", zap.String("line", string(w.buf)))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

var _ io.Writer = (*logWriter)(nil)
