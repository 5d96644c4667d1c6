// Package settings is what the agent and the core share about their
// settings tables: the --help text generated from a table (so it cannot
// drift from what the binary reads), and the environment variables that
// look like one of the binary's settings but are not (a typo), each with
// a "did you mean".
package settings

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Spec is one setting of a binary's table.
type Spec struct {
	Name    string
	Default string
	Help    string
}

// Help writes the usage of binary: intro, then every setting with its
// default and meaning, in the table's order.
func Help(w io.Writer, intro string, specs []Spec) {
	fmt.Fprintln(w, strings.TrimSpace(intro))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Settings (environment variables):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range specs {
		def := s.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Name, def, s.Help)
	}
	_ = tw.Flush()
}

// Unknown is an environment variable that has one of the binary's prefixes
// but is not one of its settings.
type Unknown struct {
	Name string `json:"name"`
	// DidYouMean is the nearest setting, when one is close.
	DidYouMean string `json:"did_you_mean,omitempty"`
}

func (u Unknown) String() string {
	if u.DidYouMean != "" {
		return fmt.Sprintf("%s is not a setting (did you mean %s?)", u.Name, u.DidYouMean)
	}
	return u.Name + " is not a setting"
}

// Unknowns lists the variables of environ ("NAME=value" pairs, as
// os.Environ gives them) whose name starts with one of prefixes but is not
// in known and not in alsoKnown (settings of the other binary, which a
// shared environment file carries). Kubernetes' service links
// (AGENT_PLATFORM_SRE_SERVICE_HOST, …_PORT_8000_TCP, …) are not settings
// and are skipped. Sorted by name.
func Unknowns(environ []string, prefixes []string, known []Spec, alsoKnown ...string) []Unknown {
	names := map[string]bool{}
	for _, s := range known {
		names[s.Name] = true
	}
	for _, n := range alsoKnown {
		names[n] = true
	}
	var out []Unknown
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if names[name] || !hasPrefix(name, prefixes) || serviceLink(name) {
			continue
		}
		out = append(out, Unknown{Name: name, DidYouMean: nearest(name, known)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// serviceLink reports whether name is one of the variables the kubelet
// sets for every Service of the namespace: X_SERVICE_HOST,
// X_SERVICE_PORT[_NAME], X_PORT, X_PORT_<n>_<PROTO>[_PROTO|_PORT|_ADDR].
func serviceLink(name string) bool {
	if strings.HasSuffix(name, "_SERVICE_HOST") || strings.Contains(name, "_SERVICE_PORT") || strings.HasSuffix(name, "_PORT") {
		return true
	}
	i := strings.LastIndex(name, "_PORT_")
	if i < 0 {
		return false
	}
	rest := strings.Split(name[i+len("_PORT_"):], "_")
	if len(rest) < 2 || strings.Trim(rest[0], "0123456789") != "" {
		return false
	}
	switch rest[1] {
	case "TCP", "UDP", "SCTP":
		return true
	}
	return false
}

// nearest is the known name closest to name, when the edit distance is at
// most a third of its length (at least 2): AGENT_MODLE → AGENT_MODEL.
func nearest(name string, known []Spec) string {
	best, bestD := "", -1
	for _, s := range known {
		if d := Distance(name, s.Name); bestD < 0 || d < bestD {
			best, bestD = s.Name, d
		}
	}
	if bestD < 0 || bestD > max(2, len(name)/3) {
		return ""
	}
	return best
}

// Distance is the Levenshtein edit distance between a and b, with a
// transposition of two neighbours counting as one edit (MODLE → MODEL).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Flags handles a binary's command line, whose configuration is the
// environment: --help (-h) prints Help to stdout, --version prints version;
// anything else is refused. done is false when there are no arguments and
// the binary should start.
func Flags(args []string, stdout, stderr io.Writer, binary, intro, version string, specs []Spec) (code int, done bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		Help(stdout, intro, specs)
		return 0, true
	case "-version", "--version", "version":
		fmt.Fprintf(stdout, "%s %s\n", binary, version)
		return 0, true
	}
	fmt.Fprintf(stderr, "%s: unknown argument %q: the configuration is the environment (%s --help lists every setting; --version)\n", binary, args[0], binary)
	return 2, true
}
