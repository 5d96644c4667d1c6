package api

import "time"

// ConfigChange is evidence that a workload's pods started before their
// configuration was last written: a ConfigMap the pod template references
// (envFrom, env valueFrom, a volume) was created or had its data written
// after the newest of the affected pods started. A rollout restart makes
// the pods start on what is there now; without such evidence it would
// only repeat the crash (docs/ARCHITECTURE.md, "The request walk", 5).
type ConfigChange struct {
	Kind string `json:"kind"` // ConfigMap
	Name string `json:"name"`
	// ChangedAt is the object's last data write (its newest managedFields
	// entry that owns data or binaryData; its creation when none does).
	ChangedAt time.Time `json:"changed_at"`
	// PodsStartedAt is when the newest of the affected pods started.
	PodsStartedAt time.Time `json:"pods_started_at"`
}

// After reports whether the evidence holds: the write came strictly
// after the pods started (the API server's times have whole seconds, so
// the same second proves nothing).
func (c *ConfigChange) After() bool {
	return c != nil && !c.ChangedAt.IsZero() && !c.PodsStartedAt.IsZero() && c.ChangedAt.After(c.PodsStartedAt)
}

// OOMKill is evidence that a container was OOM-killed at a memory limit,
// as the cluster records it: the pod's container status (its last
// termination, or its current state, reason OOMKilled) and that pod's
// own memory limit for the container. A memory bump is justified only
// when Limit is the limit the manifest holds now (pkg/gitops).
type OOMKill struct {
	Pod       string `json:"pod"`
	Container string `json:"container"`
	// Limit is the container's resources.limits.memory in that pod.
	Limit string `json:"limit"`
	// At is when the killed instance finished (zero when not recorded).
	At time.Time `json:"at,omitempty"`
}
