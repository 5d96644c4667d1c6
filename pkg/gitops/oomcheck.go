package gitops

import (
	"context"
	"fmt"

	"github.com/kubecrew/kubecrew/pkg/api"
)

// OOMKillReader reads from the cluster, right before a memory bump's PR,
// whether the named container of a workload was OOM-killed and at which
// memory limit (pkg/kube's Client.OOMKill): nil and a sentence saying
// what the cluster shows when no pod records such a kill.
type OOMKillReader interface {
	OOMKill(ctx context.Context, namespace, kind, name, container string) (*api.OOMKill, string, error)
}

// checkOOMKill is a memory bump's precondition (docs/MANUAL.md, "The action
// envelope"): the container was OOM-killed, as the cluster shows now, at
// the limit the manifest holds now. The finding's words, the request's
// reason, an alert or a PR body are not read: a bump is refused, naming
// what the cluster shows, when the kill is not there, or was at another
// limit (a raise already made, or Git and the cluster differ). Without a
// reader (Options.OOMKills nil: a library use with no cluster) nothing is
// checked; the agent always wires its cluster client.
func (s *Service) checkOOMKill(ctx context.Context, req BumpRequest, kind, path, manifestLimit string) (*api.OOMKill, error) {
	if s.opts.OOMKills == nil {
		return nil, nil
	}
	what := fmt.Sprintf("%s %s/%s", kind, req.Namespace, req.Name)
	k, note, err := s.opts.OOMKills.OOMKill(ctx, req.Namespace, kind, req.Name, req.Container)
	if err != nil {
		return nil, fmt.Errorf("%w: a memory bump of %s needs the OOM kill read from the cluster first: %w; no PR was opened", ErrRefused, what, err)
	}
	if k == nil {
		return nil, fmt.Errorf("%w: a memory bump of %s needs container %s OOM-killed, and the cluster shows: %s; no PR was opened",
			ErrRefused, what, req.Container, note)
	}
	if k.Limit == "" {
		return nil, fmt.Errorf("%w: container %s was OOM-killed in pod %s with no memory limit, while %s sets %s; no PR was opened",
			ErrRefused, req.Container, k.Pod, path, manifestLimit)
	}
	live, err1 := parseMemory(k.Limit)
	inGit, err2 := parseMemory(manifestLimit)
	if err1 != nil || err2 != nil || live.Cmp(inGit) != 0 {
		return nil, fmt.Errorf("%w: container %s was OOM-killed in pod %s at limit %s, but %s holds %s now (a raise already made, or Git and the cluster differ); no PR was opened",
			ErrRefused, req.Container, k.Pod, k.Limit, path, manifestLimit)
	}
	return k, nil
}
