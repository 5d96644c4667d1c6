package eval

import (
	"regexp"
	"strings"

	"github.com/kubecrew/kubecrew/pkg/api"
	"github.com/kubecrew/kubecrew/services/agent/internal/engine"
)

// Where the competent policy's evidence comes from: typed fields only
// (docs/MANUAL.md, "The action envelope"). Noor reads the sweep's
// config-changed= field of a problem line (pkg/kube renders it from the
// ConfigMaps' write times); Sol reads the delegated finding's evidence
// lines the engine renders in the system prompt's Prior findings from
// the finding's typed fields (engine.EvidenceLines). A finding's detail,
// the task, an alert's description, an event, a log line or any tool's
// free text is never read for it.

// sweepConfigChanged lists the problems ("ns/Kind/name") the sweep marks
// config-changed=.
func sweepConfigChanged(out string) map[string]bool {
	changed := map[string]bool{}
	for _, m := range problemRE.FindAllStringSubmatch(out, -1) {
		for _, kv := range strings.Fields(m[6]) {
			if k, _, ok := strings.Cut(kv, "="); ok && k == "config-changed" {
				changed[m[3]+"/"+m[4]+"/"+m[5]] = true
			}
		}
	}
	return changed
}

// priorRE is a Prior findings line: "- [critical] ns/deployment/name …".
var priorRE = regexp.MustCompile(`^- \[[a-z]+\] ([a-z0-9-]+)/([a-z]+)/([a-z0-9.-]+)[ (]`)

// typedConfigChange is the config-change evidence the system prompt's
// Prior findings section carries for the workload ns/name (nil: none).
func typedConfigChange(sys, ns, kind, name string) *api.ConfigChange {
	_, section, ok := strings.Cut(sys, "# Prior findings\n")
	if !ok {
		return nil
	}
	section, _, _ = strings.Cut(section, "\n\n")
	var current string
	for _, line := range strings.Split(section, "\n") {
		if m := priorRE.FindStringSubmatch(line); m != nil {
			current = m[1] + "/" + m[2] + "/" + m[3]
			continue
		}
		if ev, found := strings.CutPrefix(line, engine.EvidencePrefix); found && current == ns+"/"+strings.ToLower(kind)+"/"+name {
			if cc := configChange(ev); cc.After() {
				return cc
			}
		}
	}
	return nil
}
