package route

import (
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// correlation reads the correlation section (docs/MANUAL.md, "Storms"):
//
//	correlation:
//	  keys: [node, owner, group]
//	  node_alertnames: [KubeNodeNotReady, ...]
//	  max_listed: 20
func (p *parser) correlation(n *yaml.Node, c *Correlation) error {
	return p.mapping(n, "correlation", map[string]func(k, v *yaml.Node) error{
		"keys": func(_, v *yaml.Node) error {
			ks, err := p.strings(v, "correlation.keys")
			if err != nil {
				return err
			}
			if len(ks) == 0 {
				return p.errf(v, "correlation.keys is empty: name at least one of %s (alert: every alert its own investigation)", strings.Join(KeyKinds, ", "))
			}
			seen := map[string]bool{}
			for i, k := range ks {
				if !slices.Contains(KeyKinds, k) {
					return p.errf(v.Content[i], "correlation.keys: unknown key %q (want %s)", k, strings.Join(KeyKinds, ", "))
				}
				if seen[k] {
					return p.errf(v.Content[i], "correlation.keys: %q repeated", k)
				}
				seen[k] = true
			}
			c.Keys = ks
			return nil
		},
		"node_alertnames": func(_, v *yaml.Node) error {
			ns, err := p.strings(v, "correlation.node_alertnames")
			for i, s := range ns {
				if s == "" {
					return p.errf(v.Content[i], "correlation.node_alertnames: empty alertname")
				}
			}
			c.NodeAlertnames = ns
			return err
		},
		"max_listed": func(_, v *yaml.Node) error {
			k, err := p.intIn(v, "correlation.max_listed", 1, 200)
			c.MaxListed = k
			return err
		},
	})
}

// queue reads the queue section: max_per_agent bounds each agent's busy
// queue.
func (p *parser) queue(n *yaml.Node, max *int) error {
	return p.mapping(n, "queue", map[string]func(k, v *yaml.Node) error{
		"max_per_agent": func(_, v *yaml.Node) error {
			k, err := p.intIn(v, "queue.max_per_agent", 1, 100000)
			*max = k
			return err
		},
	})
}

func (p *parser) strings(n *yaml.Node, what string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s must be a list", what)
	}
	out := make([]string, 0, len(n.Content))
	for _, item := range n.Content {
		s, err := p.str(item, what)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) intIn(n *yaml.Node, what string, lo, hi int) (int, error) {
	s, err := p.str(n, what)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, p.errf(n, "%s %q: want an integer from %d to %d", what, s, lo, hi)
	}
	return v, nil
}
