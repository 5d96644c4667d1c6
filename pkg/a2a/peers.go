package a2a

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/persona"
)

// DefaultPeerTemplate is PEER_URL_TEMPLATE's default.
const DefaultPeerTemplate = "http://agent-{slug}.{namespace}.svc:8000"

// InvokePath is the A2A endpoint on every agent.
const InvokePath = "/invoke"

// Peer is one agent another agent may reach.
type Peer struct {
	persona.Info
	// BaseURL is the agent's HTTP root (no trailing slash).
	BaseURL string
}

// InvokeURL is the peer's A2A endpoint.
func (p Peer) InvokeURL() string { return p.BaseURL + InvokePath }

// Peers resolves agent names to URLs: the static map (AGENT_PEERS) wins,
// then the template. Only the five personas are reachable, and never a URL
// that a model wrote: a name is all a caller can give.
type Peers struct {
	static    map[string]string // slug → base URL
	template  string
	namespace string
	self      string
}

// NewPeers validates the settings. static maps slugs (or persona names) to
// base URLs; template may use {slug} and {namespace}; self is the caller's
// own slug (an agent may not message itself).
func NewPeers(static map[string]string, template, namespace, self string) (*Peers, error) {
	p := &Peers{static: map[string]string{}, template: strings.TrimSpace(template), namespace: strings.TrimSpace(namespace), self: self}
	for k, v := range static {
		info, ok := persona.Lookup(k)
		if !ok {
			return nil, fmt.Errorf("AGENT_PEERS: unknown agent %q; valid: %s", k, validAgents())
		}
		base, err := baseURL(v)
		if err != nil {
			return nil, fmt.Errorf("AGENT_PEERS: %s: %w", k, err)
		}
		p.static[info.Slug] = base
	}
	if p.template != "" {
		if !strings.Contains(p.template, "{slug}") {
			return nil, fmt.Errorf("PEER_URL_TEMPLATE %q must contain {slug}", template)
		}
		if strings.Contains(p.template, "{namespace}") && p.namespace == "" {
			return nil, fmt.Errorf("PEER_URL_TEMPLATE %q uses {namespace} but AGENT_NAMESPACE is empty", template)
		}
		if _, err := baseURL(p.expand("platform-sre")); err != nil {
			return nil, fmt.Errorf("PEER_URL_TEMPLATE: %w", err)
		}
	}
	return p, nil
}

func (p *Peers) expand(slug string) string {
	return strings.NewReplacer("{slug}", slug, "{namespace}", p.namespace).Replace(p.template)
}

func baseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q must not carry a query or fragment", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Resolve turns a slug or persona name ("sol", "k8s-engineer") into a peer.
func (p *Peers) Resolve(name string) (Peer, error) {
	info, ok := persona.Lookup(name)
	if !ok {
		return Peer{}, fmt.Errorf("unknown agent %q; valid agent_slug values: %s", name, validAgents())
	}
	if info.Slug == p.self {
		return Peer{}, fmt.Errorf("%s is you: an agent cannot message itself; valid agent_slug values: %s", info.Slug, p.others())
	}
	if base, ok := p.static[info.Slug]; ok {
		return Peer{Info: info, BaseURL: base}, nil
	}
	if p.template == "" {
		return Peer{}, fmt.Errorf("no address for %s: peers are off (it is not in AGENT_PEERS and PEER_URL_TEMPLATE is none)", info.Slug)
	}
	base, err := baseURL(p.expand(info.Slug))
	if err != nil {
		return Peer{}, fmt.Errorf("PEER_URL_TEMPLATE for %s: %w", info.Slug, err)
	}
	return Peer{Info: info, BaseURL: base}, nil
}

func validAgents() string {
	parts := make([]string, len(persona.All))
	for i, a := range persona.All {
		parts[i] = a.Slug + " (" + a.Name + ")"
	}
	return strings.Join(parts, ", ")
}

func (p *Peers) others() string {
	var parts []string
	for _, a := range persona.All {
		if a.Slug != p.self {
			parts = append(parts, a.Slug+" ("+a.Name+")")
		}
	}
	return strings.Join(parts, ", ")
}
