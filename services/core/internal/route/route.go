// Package route decides which agent investigates an alert: ordered label
// matchers → agent slug, ignore rules, and per-route cooldown and
// max_in_flight. Routes come from a YAML file (ROUTES_FILE) or the built-in
// default; a bad file fails start-up naming the file and line.
package route

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// DefaultFile is the built-in routes file, used when ROUTES_FILE is empty.
//
//go:embed default.yaml
var DefaultFile []byte

// Target is where an alert goes and under which guards.
type Target struct {
	Route       string        // the matching route's name, or "default"
	Agent       string        // agent slug
	Cooldown    time.Duration // minimum time between investigations of one alert
	MaxInFlight int           // alert runs the agent may have at once
	Ignored     bool
	Reason      string // why ignored (which rule)
	// Notify names the chats the investigation's report goes to
	// (discord, slack, webhook) when NotifySet; otherwise every configured
	// one. An empty set posts nowhere (fixture namespaces).
	Notify    []string
	NotifySet bool
}

// Posts reports whether the alert's investigation is posted to the chat
// target: never for an ignored alert.
func (t Target) Posts(target string) bool {
	if t.Ignored {
		return false
	}
	return !t.NotifySet || slices.Contains(t.Notify, target)
}

// NotifyTargets are the chat targets a route may name.
var NotifyTargets = []string{"discord", "slack", "webhook"}

// Matcher tests one label.
type Matcher struct {
	Label string
	Value string         // equality when Re is nil
	Re    *regexp.Regexp // anchored
}

// Matches reports whether labels satisfy m. A missing label is the empty
// string, as in Alertmanager.
func (m Matcher) Matches(labels map[string]string) bool {
	v := labels[m.Label]
	if m.Re != nil {
		return m.Re.MatchString(v)
	}
	return v == m.Value
}

func (m Matcher) String() string {
	if m.Re != nil {
		return fmt.Sprintf("%s=~%q", m.Label, strings.TrimSuffix(strings.TrimPrefix(m.Re.String(), "^(?:"), ")$"))
	}
	return fmt.Sprintf("%s=%q", m.Label, m.Value)
}

// Rule is a conjunction of matchers.
type Rule struct {
	Name     string
	Line     int
	Matchers []Matcher
	// Route fields (unused by ignore rules).
	Agent       string
	Cooldown    time.Duration
	MaxInFlight int
	Notify      []string
	NotifySet   bool
}

// Matches reports whether every matcher holds (an empty rule matches all).
func (r Rule) Matches(labels map[string]string) bool {
	for _, m := range r.Matchers {
		if !m.Matches(labels) {
			return false
		}
	}
	return true
}

func (r Rule) describe() string {
	parts := make([]string, len(r.Matchers))
	for i, m := range r.Matchers {
		parts[i] = m.String()
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Routes is a parsed routes file.
type Routes struct {
	Source  string // file name, for messages
	Default Rule   // agent, cooldown, max_in_flight for alerts no route matches
	Ignore  []Rule
	Routes  []Rule
	// Correlation makes the alerts of one incident one investigation.
	Correlation Correlation
	// QueueMax bounds each agent's busy queue (incidents waiting for a
	// slot); when full, the lowest severity is dropped first.
	QueueMax int
}

// DefaultQueueMax is the busy queue's bound per agent when the routes file
// sets none.
const DefaultQueueMax = 500

// Match routes one alert by its labels: ignore rules first, then the first
// matching route, else the default.
func (rs *Routes) Match(labels map[string]string) Target {
	for i, ig := range rs.Ignore {
		if ig.Matches(labels) {
			name := ig.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			return Target{
				Route:       "ignore",
				Agent:       rs.Default.Agent,
				Cooldown:    rs.Default.Cooldown,
				MaxInFlight: rs.Default.MaxInFlight,
				Ignored:     true,
				Reason:      fmt.Sprintf("ignore rule %s (%s:%d) matched %s", name, rs.Source, ig.Line, ig.describe()),
			}
		}
	}
	for _, r := range rs.Routes {
		if r.Matches(labels) {
			return Target{Route: r.Name, Agent: r.Agent, Cooldown: r.Cooldown, MaxInFlight: r.MaxInFlight, Notify: r.Notify, NotifySet: r.NotifySet}
		}
	}
	return Target{Route: "default", Agent: rs.Default.Agent, Cooldown: rs.Default.Cooldown, MaxInFlight: rs.Default.MaxInFlight,
		Notify: rs.Default.Notify, NotifySet: rs.Default.NotifySet}
}

// Agents lists the distinct agents alerts can reach.
func (rs *Routes) Agents() []string {
	seen := map[string]bool{rs.Default.Agent: true}
	out := []string{rs.Default.Agent}
	for _, r := range rs.Routes {
		if !seen[r.Agent] {
			seen[r.Agent] = true
			out = append(out, r.Agent)
		}
	}
	return out
}

// MaxInFlightOf returns the largest max_in_flight configured for agent (the
// limit used when a freed slot is offered to a pending alert).
func (rs *Routes) MaxInFlightOf(agent string) int {
	n := 0
	if rs.Default.Agent == agent {
		n = rs.Default.MaxInFlight
	}
	for _, r := range rs.Routes {
		if r.Agent == agent && r.MaxInFlight > n {
			n = r.MaxInFlight
		}
	}
	if n == 0 {
		n = 1
	}
	return n
}
