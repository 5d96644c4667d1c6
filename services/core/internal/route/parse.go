package route

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	kapi "github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/pkg/persona"
)

// Options are the settings a routes file is checked against.
type Options struct {
	// DefaultCooldown applies where the file sets none (ALERT_COOLDOWN).
	DefaultCooldown time.Duration
	// CallTimeout is AGENT_CALL_TIMEOUT: every cooldown must exceed it, or
	// an alert becomes eligible again while its investigation still runs.
	CallTimeout time.Duration
	// Resolve maps an agent name or persona alias to a known slug.
	Resolve func(name string) (slug string, ok bool)
	// Forbidden agents may not receive alerts (slug → why).
	Forbidden map[string]string
}

// Error is a problem in a routes file at a line.
type Error = kapi.FileError

// Parse reads a routes file. name is used in error messages.
func Parse(name string, data []byte, o Options) (*Routes, error) {
	p := parser{file: name, o: o}
	rs, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

type parser struct {
	file string
	o    Options
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parse(data []byte) (*Routes, error) {
	rs := &Routes{
		Source:      p.file,
		Default:     Rule{Name: "default", Cooldown: p.o.DefaultCooldown, MaxInFlight: 1},
		Correlation: DefaultCorrelation(),
		QueueMax:    DefaultQueueMax,
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: p.file, Msg: "empty routes file"}
		}
		return nil, &Error{File: p.file, Line: yamlErrLine(err), Msg: fmt.Sprintf("not YAML: %v", err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errf(&extra, "more than one YAML document; a routes file holds one")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "top level must be a mapping with defaults, ignore, routes, correlation, queue")
	}
	defAgent := &yaml.Node{Line: 0}
	haveDefAgent := false
	err := p.mapping(root, "top level", map[string]func(k, v *yaml.Node) error{
		"defaults": func(_, v *yaml.Node) error {
			return p.mapping(v, "defaults", map[string]func(k, v *yaml.Node) error{
				"agent": func(_, v *yaml.Node) error {
					slug, err := p.agent(v)
					if err != nil {
						return err
					}
					rs.Default.Agent, haveDefAgent, defAgent = slug, true, v
					return nil
				},
				"cooldown": func(_, v *yaml.Node) error {
					d, err := p.cooldown(v)
					rs.Default.Cooldown = d
					return err
				},
				"max_in_flight": func(_, v *yaml.Node) error {
					n, err := p.maxInFlight(v)
					rs.Default.MaxInFlight = n
					return err
				},
				"notify": func(_, v *yaml.Node) error {
					ts, err := p.notify(v, "defaults.notify")
					rs.Default.Notify, rs.Default.NotifySet = ts, true
					return err
				},
			})
		},
		"ignore": func(_, v *yaml.Node) error {
			return p.sequence(v, "ignore", func(i int, item *yaml.Node) error {
				r, err := p.rule(item, fmt.Sprintf("ignore rule #%d", i+1), false)
				if err != nil {
					return err
				}
				if len(r.Matchers) == 0 {
					return p.errf(item, "ignore rule #%d has no matchers: it would ignore every alert", i+1)
				}
				rs.Ignore = append(rs.Ignore, r)
				return nil
			})
		},
		"correlation": func(_, v *yaml.Node) error { return p.correlation(v, &rs.Correlation) },
		"queue":       func(_, v *yaml.Node) error { return p.queue(v, &rs.QueueMax) },
		"routes": func(_, v *yaml.Node) error {
			return p.sequence(v, "routes", func(i int, item *yaml.Node) error {
				r, err := p.rule(item, fmt.Sprintf("route #%d", i+1), true)
				if err != nil {
					return err
				}
				if r.Name == "" {
					r.Name = fmt.Sprintf("route-%d", i+1)
				}
				rs.Routes = append(rs.Routes, r)
				return nil
			})
		},
	})
	if err != nil {
		return nil, err
	}
	if !haveDefAgent {
		rs.Default.Agent, _ = p.o.Resolve(persona.SlugNoor)
	}
	if why, bad := p.o.Forbidden[rs.Default.Agent]; bad {
		return nil, p.errf(defAgent, "defaults.agent %q: %s", rs.Default.Agent, why)
	}
	if err := p.checkCooldown(nil, "defaults.cooldown", rs.Default.Cooldown); err != nil {
		return nil, err
	}
	for i := range rs.Routes {
		r := &rs.Routes[i]
		if r.Agent == "" {
			r.Agent = rs.Default.Agent
		}
		if r.Cooldown == 0 {
			r.Cooldown = rs.Default.Cooldown
		}
		if r.MaxInFlight == 0 {
			r.MaxInFlight = rs.Default.MaxInFlight
		}
		if !r.NotifySet {
			r.Notify, r.NotifySet = rs.Default.Notify, rs.Default.NotifySet
		}
	}
	return rs, nil
}

// mapping walks a mapping node, calling the handler of each key; unknown and
// repeated keys are errors.
func (p *parser) mapping(n *yaml.Node, what string, handlers map[string]func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "%s must be a mapping", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		h, ok := handlers[k.Value]
		if !ok {
			return p.errf(k, "unknown key %q in %s (allowed: %s)", k.Value, what, keys(handlers))
		}
		if seen[k.Value] {
			return p.errf(k, "key %q repeated in %s", k.Value, what)
		}
		seen[k.Value] = true
		if err := h(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) sequence(n *yaml.Node, what string, each func(i int, item *yaml.Node) error) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, "%s must be a list", what)
	}
	for i, item := range n.Content {
		if err := each(i, item); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) rule(n *yaml.Node, what string, isRoute bool) (Rule, error) {
	r := Rule{Line: n.Line}
	handlers := map[string]func(k, v *yaml.Node) error{
		"name": func(_, v *yaml.Node) error {
			s, err := p.str(v, what+" name")
			r.Name = s
			return err
		},
		"match": func(_, v *yaml.Node) error {
			return p.labels(v, what+" match", func(k, val *yaml.Node) error {
				r.Matchers = append(r.Matchers, Matcher{Label: k.Value, Value: val.Value})
				return nil
			})
		},
		"match_re": func(_, v *yaml.Node) error {
			return p.labels(v, what+" match_re", func(k, val *yaml.Node) error {
				re, err := regexp.Compile("^(?:" + val.Value + ")$")
				if err != nil {
					return p.errf(val, "%s match_re %s: bad regular expression %q: %v", what, k.Value, val.Value, err)
				}
				r.Matchers = append(r.Matchers, Matcher{Label: k.Value, Re: re})
				return nil
			})
		},
		"namespaces": func(_, v *yaml.Node) error {
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return p.errf(v, "%s namespaces must be a non-empty list", what)
			}
			alts := make([]string, 0, len(v.Content))
			for _, item := range v.Content {
				s, err := p.str(item, what+" namespaces")
				if err != nil {
					return err
				}
				if s == "" {
					return p.errf(item, "%s namespaces: empty namespace", what)
				}
				alts = append(alts, regexp.QuoteMeta(s))
			}
			r.Matchers = append(r.Matchers, Matcher{Label: "namespace", Re: regexp.MustCompile("^(?:" + strings.Join(alts, "|") + ")$")})
			return nil
		},
	}
	if isRoute {
		handlers["agent"] = func(_, v *yaml.Node) error {
			slug, err := p.agent(v)
			if err != nil {
				return err
			}
			if why, bad := p.o.Forbidden[slug]; bad {
				return p.errf(v, "%s agent %q: %s", what, slug, why)
			}
			r.Agent = slug
			return nil
		}
		handlers["cooldown"] = func(_, v *yaml.Node) error {
			d, err := p.cooldown(v)
			r.Cooldown = d
			return err
		}
		handlers["max_in_flight"] = func(_, v *yaml.Node) error {
			n, err := p.maxInFlight(v)
			r.MaxInFlight = n
			return err
		}
		handlers["notify"] = func(_, v *yaml.Node) error {
			ts, err := p.notify(v, what+" notify")
			r.Notify, r.NotifySet = ts, true
			return err
		}
	}
	if err := p.mapping(n, what, handlers); err != nil {
		return Rule{}, err
	}
	return r, nil
}

func (p *parser) labels(n *yaml.Node, what string, each func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return p.errf(n, "%s must be a non-empty mapping of label: value", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !validLabel(k.Value) {
			return p.errf(k, "%s: invalid label name %q", what, k.Value)
		}
		if seen[k.Value] {
			return p.errf(k, "%s: label %q repeated", what, k.Value)
		}
		seen[k.Value] = true
		if v.Kind != yaml.ScalarNode {
			return p.errf(v, "%s %s: value must be a string", what, k.Value)
		}
		if err := each(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, "%s must be a string", what)
	}
	return n.Value, nil
}

// notify reads a list of chat targets (NotifyTargets); [] posts nowhere.
func (p *parser) notify(n *yaml.Node, what string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s must be a list of %s ([] posts nowhere)", what, strings.Join(NotifyTargets, ", "))
	}
	out := []string{}
	for _, item := range n.Content {
		s, err := p.str(item, what)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(NotifyTargets, s) {
			return nil, p.errf(item, "%s: unknown chat %q (want %s)", what, s, strings.Join(NotifyTargets, ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (p *parser) agent(n *yaml.Node) (string, error) {
	s, err := p.str(n, "agent")
	if err != nil {
		return "", err
	}
	slug, ok := p.o.Resolve(s)
	if !ok {
		return "", p.errf(n, "unknown agent %q", s)
	}
	return slug, nil
}

func (p *parser) cooldown(n *yaml.Node) (time.Duration, error) {
	s, err := p.str(n, "cooldown")
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, p.errf(n, "cooldown %q: malformed duration (want e.g. 30m, 1h)", s)
	}
	return d, p.checkCooldown(n, "cooldown", d)
}

func (p *parser) checkCooldown(n *yaml.Node, what string, d time.Duration) error {
	if d <= 0 {
		return p.errf(n, "%s %s must be positive", what, d)
	}
	if p.o.CallTimeout > 0 && d <= p.o.CallTimeout {
		return p.errf(n, "%s %s must be longer than AGENT_CALL_TIMEOUT (%s): otherwise an alert becomes eligible again while its investigation still runs", what, d, p.o.CallTimeout)
	}
	return nil
}

func (p *parser) maxInFlight(n *yaml.Node) (int, error) {
	s, err := p.str(n, "max_in_flight")
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > 100 {
		return 0, p.errf(n, "max_in_flight %q: want an integer from 1 to 100", s)
	}
	return v, nil
}

func validLabel(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

func keys[V any](m map[string]V) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(err error) int {
	if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}
