package kube

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecrew/kubecrew/pkg/safetext"
)

// PodLogsArgs are the slots of k8s_get_pod_logs.
type PodLogsArgs struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name" description:"pod name"`
	Container string `json:"container,omitempty" description:"required when the pod has several"`
	Previous  bool   `json:"previous,omitempty"`
	TailLines int    `json:"tail_lines,omitempty" description:"default 100, max 500"`
}

const (
	defaultTail   = 100
	maxTail       = 500
	logLimitBytes = 64 << 10
	logMaxRunes   = 48_000
)

// PodLogs returns a container's last lines, sanitized (no control or
// format characters) and bounded in lines and bytes.
func (c *Client) PodLogs(ctx context.Context, a PodLogsArgs) (string, error) {
	if err := c.avail(); err != nil {
		return "", err
	}
	if err := validName("namespace", a.Namespace); err != nil {
		return "", err
	}
	if err := validName("name", a.Name); err != nil {
		return "", err
	}
	if err := validOptionalName("container", a.Container); err != nil {
		return "", err
	}
	tail, err := bound(a.TailLines, defaultTail, maxTail)
	if err != nil {
		return "", err
	}
	what := "pod " + a.Namespace + "/" + a.Name
	pod, err := c.cs.CoreV1().Pods(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
	if err != nil {
		return "", c.apiErr(err, what)
	}
	container := a.Container
	names := containerNames(pod)
	switch {
	case container == "" && len(pod.Spec.Containers) == 1:
		container = pod.Spec.Containers[0].Name
	case container == "":
		return "", fmt.Errorf("%s has %d containers; name one in container: %s", what, len(pod.Spec.Containers), strings.Join(names, ", "))
	case !slices.Contains(names, container):
		return "", fmt.Errorf("%s has no container %q; containers: %s", what, container, strings.Join(names, ", "))
	}
	tl, lb := int64(tail), int64(logLimitBytes)
	req := c.cs.CoreV1().Pods(a.Namespace).GetLogs(a.Name, &corev1.PodLogOptions{
		Container: container, Previous: a.Previous, TailLines: &tl, LimitBytes: &lb,
	})
	rc, err := req.Stream(ctx)
	if err != nil {
		return "", c.apiErr(err, "logs of "+what+" container "+container)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, logLimitBytes+1))
	if err != nil {
		return "", c.apiErr(err, "reading logs of "+what)
	}
	body := safetext.CleanBlock(string(raw), logMaxRunes)
	inst := "current"
	if a.Previous {
		inst = "previous"
	}
	header := fmt.Sprintf("logs of %s container %s (%s instance, last %d lines, at most %d KiB):\n", what, container, inst, tail, logLimitBytes>>10)
	if strings.TrimSpace(body) == "" {
		return header + "(no log output)\n", nil
	}
	if len(raw) > logLimitBytes {
		header += "(byte limit reached: older lines cut)\n"
	}
	return header + body, nil
}

func containerNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.InitContainers {
		out = append(out, c.Name)
	}
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}
