package api

// FindingArgs is the one schema of a finding as a model sends it, to
// report_finding and as delegate_task's finding. It is an alias of an
// unnamed struct so the tool schema derived from it is inlined, not a $ref.
type FindingArgs = struct {
	Key         string  `json:"key,omitempty" description:"ignored: the key is derived from the fields"`
	Severity    string  `json:"severity" enum:"critical,high,medium,low" description:"critical, high, medium or low"`
	Kind        string  `json:"kind" description:"Kubernetes kind of the affected object, e.g. Deployment"`
	Namespace   string  `json:"namespace" description:"namespace of the object"`
	Name        string  `json:"name" description:"name of the object (the owning workload for pods)"`
	Container   string  `json:"container,omitempty" description:"container, when the problem is one container's"`
	Reason      string  `json:"reason" description:"short machine-like reason, e.g. OOMKilled"`
	Detail      string  `json:"detail" description:"one line of evidence"`
	Remediation string  `json:"remediation" description:"what would fix it"`
	Remediable  bool    `json:"remediable" description:"true when an agent may fix it (rollout restart or a memory-limit PR)"`
	Confidence  float64 `json:"confidence,omitempty" description:"0..1"`
}

// FindingFrom is the finding a model described (its key is derived later).
func FindingFrom(a FindingArgs) Finding {
	return Finding{
		Severity: a.Severity, Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, Container: a.Container,
		Reason: a.Reason, Detail: a.Detail, Remediation: a.Remediation, Remediable: a.Remediable, Confidence: a.Confidence,
	}
}
