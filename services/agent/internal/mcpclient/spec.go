// Package mcpclient adds other MCP servers' tools to an agent
// (AGENT_MCP_SERVERS; docs/ARCHITECTURE.md, "MCP"). Each server's tools
// join the registry as <name>_<tool>. They pass the same two gates as the
// agent's own: a tool is read-only only when its server annotates it
// readOnlyHint AND the persona allows it (AGENT_MCP_READ_TOOLS); every
// other one is treated as mutating — the name gate removes it from an
// autonomous run and its call asks the execution gate. Their outputs are
// redacted and bounded by tools.Set.Call like any tool's. A server that is
// down at start is reported (/ready, /info), not fatal.
package mcpclient

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Spec is one entry of AGENT_MCP_SERVERS.
type Spec struct {
	// Name prefixes the server's tools: <name>_<tool>.
	Name string `json:"name"`
	// URL is a streamable HTTP endpoint; Command a program speaking MCP on
	// stdio with its arguments. One of the two is set.
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
}

// Transport names how the server is reached.
func (s Spec) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)

// ParseServers parses AGENT_MCP_SERVERS: entries separated by ";" or new
// lines, each name=URL (http or https) or name=command args (split on
// spaces; a command's arguments may hold commas). Names are 1-16 lower-case
// letters and digits, unique.
func ParseServers(s string) ([]Spec, error) {
	var out []Spec
	seen := map[string]bool{}
	for _, raw := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			continue
		}
		name, val, ok := strings.Cut(entry, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		switch {
		case !ok || val == "":
			return nil, fmt.Errorf("entry %q: want name=URL or name=command args", clip(entry))
		case !nameRE.MatchString(name):
			return nil, fmt.Errorf("entry %q: the name %q must be 1-16 lower-case letters and digits, starting with a letter", clip(entry), clip(name))
		case seen[name]:
			return nil, fmt.Errorf("the name %q is used twice", name)
		}
		seen[name] = true
		sp := Spec{Name: name}
		if strings.HasPrefix(val, "http://") || strings.HasPrefix(val, "https://") {
			u, err := url.Parse(val)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("entry %q: %q is not a URL", name, clip(val))
			}
			sp.URL = val
		} else {
			sp.Command = strings.Fields(val)
		}
		out = append(out, sp)
	}
	return out, nil
}

// ParseAllow checks AGENT_MCP_READ_TOOLS: prefixed tool names or
// path.Match patterns ("k8s_pods_*").
func ParseAllow(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%q is not a name or pattern: %v", clip(p), err)
		}
	}
	return nil
}

func allowed(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
