// Package manifests checks the rendered kustomize output of manifests/ and the
// Dockerfile against the rules of docs/ARCHITECTURE.md: a
// startupProbe before liveness, no CPU limit that throttles a boot, the
// part-of label Sol refuses to act on, read-only RBAC without Secrets, the
// persona files owning their settings, and an image that ships what the pods
// run. hack/manifests-check.sh runs these tests after a server-side dry-run.
//
// It is its own module (not in go.work) because nothing else imports it; run
// it with `cd manifests && GOWORK=off go test ./...`.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Meta is the object metadata the checks read.
type Meta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Render is one kustomize output, split by kind.
type Render struct {
	Name            string
	All             []Header
	Deployments     []Deployment
	CronJobs        []CronJob
	Services        []Service
	ServiceAccounts []ServiceAccount
	Roles           []Role // Roles and ClusterRoles
	Bindings        []Binding
	NetworkPolicies []NetworkPolicy
	ConfigMaps      []ConfigMap
	PDBs            []PDB
	ServiceMonitors []ServiceMonitor
}

// Header is what every object has.
type Header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   Meta   `yaml:"metadata"`
}

// Ref names the object in messages: Kind/namespace/name.
func (h Header) Ref() string {
	if h.Metadata.Namespace != "" {
		return h.Kind + "/" + h.Metadata.Namespace + "/" + h.Metadata.Name
	}
	return h.Kind + "/" + h.Metadata.Name
}

// Deployment is the subset of apps/v1 Deployment the checks read.
type Deployment struct {
	Header `yaml:",inline"`
	Spec   struct {
		Replicas *int          `yaml:"replicas"`
		Selector LabelSelector `yaml:"selector"`
		Template PodTemplate   `yaml:"template"`
		Strategy struct {
			Type          string `yaml:"type"`
			RollingUpdate *struct {
				MaxUnavailable any `yaml:"maxUnavailable"`
				MaxSurge       any `yaml:"maxSurge"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
	} `yaml:"spec"`
}

// CronJob is the subset of batch/v1 CronJob the checks read.
type CronJob struct {
	Header `yaml:",inline"`
	Spec   struct {
		Schedule    string `yaml:"schedule"`
		JobTemplate struct {
			Spec struct {
				Template PodTemplate `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

// LabelSelector is metav1.LabelSelector without expressions (the checks
// refuse expressions, which the manifests do not use).
type LabelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []any             `yaml:"matchExpressions"`
}

// PodTemplate is a pod template.
type PodTemplate struct {
	Metadata Meta    `yaml:"metadata"`
	Spec     PodSpec `yaml:"spec"`
}

// PodSpec is the subset of a pod spec the checks read.
type PodSpec struct {
	ServiceAccountName           string       `yaml:"serviceAccountName"`
	AutomountServiceAccountToken *bool        `yaml:"automountServiceAccountToken"`
	SecurityContext              *PodSecurity `yaml:"securityContext"`
	Containers                   []Container  `yaml:"containers"`
	InitContainers               []Container  `yaml:"initContainers"`
	Volumes                      []Volume     `yaml:"volumes"`
	TerminationGracePeriod       *int         `yaml:"terminationGracePeriodSeconds"`
	HostNetwork                  bool         `yaml:"hostNetwork"`
	HostPID                      bool         `yaml:"hostPID"`
}

// PodSecurity is the pod-level security context.
type PodSecurity struct {
	RunAsNonRoot   *bool `yaml:"runAsNonRoot"`
	RunAsUser      *int  `yaml:"runAsUser"`
	SeccompProfile *struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

// Container is the subset of a container the checks read.
type Container struct {
	Name            string             `yaml:"name"`
	Image           string             `yaml:"image"`
	Command         []string           `yaml:"command"`
	Args            []string           `yaml:"args"`
	Ports           []ContainerPort    `yaml:"ports"`
	Env             []EnvVar           `yaml:"env"`
	EnvFrom         []EnvFrom          `yaml:"envFrom"`
	StartupProbe    *Probe             `yaml:"startupProbe"`
	LivenessProbe   *Probe             `yaml:"livenessProbe"`
	ReadinessProbe  *Probe             `yaml:"readinessProbe"`
	Resources       Resources          `yaml:"resources"`
	SecurityContext *ContainerSecurity `yaml:"securityContext"`
	VolumeMounts    []VolumeMount      `yaml:"volumeMounts"`
}

// ContainerPort is a container port.
type ContainerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

// EnvVar is one env entry.
type EnvVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
		SecretKeyRef    *KeyRef `yaml:"secretKeyRef"`
		ConfigMapKeyRef *KeyRef `yaml:"configMapKeyRef"`
	} `yaml:"valueFrom"`
}

// KeyRef is a secretKeyRef or configMapKeyRef.
type KeyRef struct {
	Name     string `yaml:"name"`
	Key      string `yaml:"key"`
	Optional *bool  `yaml:"optional"`
}

// EnvFrom is one envFrom entry.
type EnvFrom struct {
	ConfigMapRef *struct {
		Name string `yaml:"name"`
	} `yaml:"configMapRef"`
	SecretRef *struct {
		Name string `yaml:"name"`
	} `yaml:"secretRef"`
}

// Probe is an HTTP probe.
type Probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	FailureThreshold    int `yaml:"failureThreshold"`
	TimeoutSeconds      int `yaml:"timeoutSeconds"`
}

// Resources are requests and limits as written.
type Resources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

// ContainerSecurity is the container-level security context.
type ContainerSecurity struct {
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	Privileged               *bool `yaml:"privileged"`
	RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	Capabilities             *struct {
		Add  []string `yaml:"add"`
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

// Volume is a pod volume (ConfigMap and emptyDir are what the checks read).
type Volume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name  string `yaml:"name"`
		Items []struct {
			Key  string `yaml:"key"`
			Path string `yaml:"path"`
		} `yaml:"items"`
	} `yaml:"configMap"`
	EmptyDir *struct {
		SizeLimit string `yaml:"sizeLimit"`
	} `yaml:"emptyDir"`
	Secret *struct {
		SecretName string `yaml:"secretName"`
		Optional   *bool  `yaml:"optional"`
	} `yaml:"secret"`
}

// VolumeMount is a container volume mount.
type VolumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

// Service is the subset of a Service the checks read.
type Service struct {
	Header `yaml:",inline"`
	Spec   struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []ServicePort     `yaml:"ports"`
	} `yaml:"spec"`
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort any    `yaml:"targetPort"`
}

// ServiceAccount is a ServiceAccount.
type ServiceAccount struct {
	Header                       `yaml:",inline"`
	AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
}

// Role is a Role or ClusterRole.
type Role struct {
	Header `yaml:",inline"`
	Rules  []Rule `yaml:"rules"`
}

// Rule is one RBAC policy rule.
type Rule struct {
	APIGroups       []string `yaml:"apiGroups"`
	Resources       []string `yaml:"resources"`
	ResourceNames   []string `yaml:"resourceNames"`
	NonResourceURLs []string `yaml:"nonResourceURLs"`
	Verbs           []string `yaml:"verbs"`
}

// Binding is a RoleBinding or ClusterRoleBinding.
type Binding struct {
	Header  `yaml:",inline"`
	RoleRef struct {
		Kind string `yaml:"kind"`
		Name string `yaml:"name"`
	} `yaml:"roleRef"`
	Subjects []struct {
		Kind      string `yaml:"kind"`
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"subjects"`
}

// NetworkPolicy is the subset of a NetworkPolicy the checks read.
type NetworkPolicy struct {
	Header `yaml:",inline"`
	Spec   struct {
		PodSelector LabelSelector `yaml:"podSelector"`
		PolicyTypes []string      `yaml:"policyTypes"`
		Ingress     []IngressRule `yaml:"ingress"`
	} `yaml:"spec"`
}

// IngressRule is one rule of a NetworkPolicy's ingress.
type IngressRule struct {
	From []struct {
		PodSelector       *LabelSelector `yaml:"podSelector"`
		NamespaceSelector *LabelSelector `yaml:"namespaceSelector"`
		IPBlock           any            `yaml:"ipBlock"`
	} `yaml:"from"`
	Ports []struct {
		Port     any    `yaml:"port"`
		Protocol string `yaml:"protocol"`
	} `yaml:"ports"`
}

// ServiceMonitor is the subset of a Prometheus Operator ServiceMonitor the
// checks read.
type ServiceMonitor struct {
	Header `yaml:",inline"`
	Spec   struct {
		Selector  LabelSelector `yaml:"selector"`
		Endpoints []struct {
			Port        string `yaml:"port"`
			Path        string `yaml:"path"`
			HonorLabels bool   `yaml:"honorLabels"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

// ConfigMap is a ConfigMap.
type ConfigMap struct {
	Header `yaml:",inline"`
	Data   map[string]string `yaml:"data"`
}

// PDB is a PodDisruptionBudget.
type PDB struct {
	Header `yaml:",inline"`
	Spec   struct {
		MinAvailable   any           `yaml:"minAvailable"`
		MaxUnavailable any           `yaml:"maxUnavailable"`
		Selector       LabelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

// Parse splits a multi-document kustomize output into a Render. Unknown kinds
// are kept in All only.
func Parse(name string, data []byte) (*Render, error) {
	r := &Render{Name: name}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		var h Header
		if err := n.Decode(&h); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if h.Kind == "" {
			continue // an empty document
		}
		r.All = append(r.All, h)
		var target any
		switch h.Kind {
		case "Deployment":
			r.Deployments = append(r.Deployments, Deployment{})
			target = &r.Deployments[len(r.Deployments)-1]
		case "CronJob":
			r.CronJobs = append(r.CronJobs, CronJob{})
			target = &r.CronJobs[len(r.CronJobs)-1]
		case "Service":
			r.Services = append(r.Services, Service{})
			target = &r.Services[len(r.Services)-1]
		case "ServiceAccount":
			r.ServiceAccounts = append(r.ServiceAccounts, ServiceAccount{})
			target = &r.ServiceAccounts[len(r.ServiceAccounts)-1]
		case "Role", "ClusterRole":
			r.Roles = append(r.Roles, Role{})
			target = &r.Roles[len(r.Roles)-1]
		case "RoleBinding", "ClusterRoleBinding":
			r.Bindings = append(r.Bindings, Binding{})
			target = &r.Bindings[len(r.Bindings)-1]
		case "NetworkPolicy":
			r.NetworkPolicies = append(r.NetworkPolicies, NetworkPolicy{})
			target = &r.NetworkPolicies[len(r.NetworkPolicies)-1]
		case "ConfigMap":
			r.ConfigMaps = append(r.ConfigMaps, ConfigMap{})
			target = &r.ConfigMaps[len(r.ConfigMaps)-1]
		case "PodDisruptionBudget":
			r.PDBs = append(r.PDBs, PDB{})
			target = &r.PDBs[len(r.PDBs)-1]
		case "ServiceMonitor":
			r.ServiceMonitors = append(r.ServiceMonitors, ServiceMonitor{})
			target = &r.ServiceMonitors[len(r.ServiceMonitors)-1]
		default:
			continue
		}
		if err := n.Decode(target); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, h.Ref(), err)
		}
	}
	if len(r.All) == 0 {
		return nil, fmt.Errorf("%s: no objects", name)
	}
	return r, nil
}

// PodTemplates lists every pod template in the render with its owner.
func (r *Render) PodTemplates() []OwnedTemplate {
	var out []OwnedTemplate
	for i := range r.Deployments {
		d := &r.Deployments[i]
		out = append(out, OwnedTemplate{Owner: d.Header, Template: &d.Spec.Template})
	}
	for i := range r.CronJobs {
		c := &r.CronJobs[i]
		out = append(out, OwnedTemplate{Owner: c.Header, Template: &c.Spec.JobTemplate.Spec.Template})
	}
	return out
}

// OwnedTemplate is a pod template and the object holding it.
type OwnedTemplate struct {
	Owner    Header
	Template *PodTemplate
}

// Deployment returns the named Deployment, or nil.
func (r *Render) Deployment(name string) *Deployment {
	for i := range r.Deployments {
		if r.Deployments[i].Metadata.Name == name {
			return &r.Deployments[i]
		}
	}
	return nil
}

// ConfigMap returns the ConfigMap whose name is base or base-<hash>, or nil.
func (r *Render) ConfigMap(name string) *ConfigMap {
	for i := range r.ConfigMaps {
		n := r.ConfigMaps[i].Metadata.Name
		if n == name || (strings.HasPrefix(n, name+"-") && !strings.Contains(n[len(name)+1:], "-")) {
			return &r.ConfigMaps[i]
		}
	}
	return nil
}
