package api

// FindingArgs is the one schema of a finding as a model sends it, to
// report_finding. It is an alias of an unnamed struct so the tool schema
// derived from it is inlined, not a $ref. A field that says what it is by
// its name carries no description: every model call pays for each word
// (docs/MANUAL.md, "Model cost").
type FindingArgs = struct {
	Key         string  `json:"key,omitempty" description:"ignored"`
	Severity    string  `json:"severity" enum:"critical,high,medium,low"`
	Kind        string  `json:"kind" description:"e.g. Deployment"`
	Namespace   string  `json:"namespace"`
	Name        string  `json:"name" description:"the owning workload for pods"`
	Container   string  `json:"container,omitempty"`
	Reason      string  `json:"reason" description:"e.g. OOMKilled"`
	Detail      string  `json:"detail" description:"one line of evidence"`
	Remediation string  `json:"remediation" description:"what would fix it"`
	Remediable  bool    `json:"remediable" description:"an agent may fix it (restart or memory-limit PR)"`
	Confidence  float64 `json:"confidence,omitempty" description:"0..1"`
}

// DelegatedFindingArgs is delegate_task's finding: FindingArgs's fields,
// enum and required ones, without the descriptions the model already has
// from report_finding (the two convert to each other).
type DelegatedFindingArgs = struct {
	Key         string  `json:"key,omitempty"`
	Severity    string  `json:"severity" enum:"critical,high,medium,low"`
	Kind        string  `json:"kind"`
	Namespace   string  `json:"namespace"`
	Name        string  `json:"name"`
	Container   string  `json:"container,omitempty"`
	Reason      string  `json:"reason"`
	Detail      string  `json:"detail"`
	Remediation string  `json:"remediation"`
	Remediable  bool    `json:"remediable"`
	Confidence  float64 `json:"confidence,omitempty"`
}

// FindingFrom is the finding a model described (its key is derived later).
func FindingFrom(a FindingArgs) Finding {
	return Finding{
		Severity: a.Severity, Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, Container: a.Container,
		Reason: a.Reason, Detail: a.Detail, Remediation: a.Remediation, Remediable: a.Remediable, Confidence: a.Confidence,
	}
}
