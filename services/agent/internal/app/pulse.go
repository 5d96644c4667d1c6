package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/kubecrew/kubecrew/pkg/lifecycle"
	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/pkg/pulse/lease"
	"github.com/kubecrew/kubecrew/pkg/report"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/pulseserver"
)

// PulseTimeout is the effective bound of one pulse run: PULSE_TIMEOUT when
// set, else half of PULSE_INTERVAL; never more than RUN_TIMEOUT (the engine
// would end the run there anyway).
func PulseTimeout(cfg *config.Config) time.Duration {
	t := cfg.PulseTimeout
	if t <= 0 {
		t = cfg.PulseInterval / 2
	}
	if rt := cfg.RunTimeout; rt > 0 && t > rt {
		t = rt
	}
	return t
}

// pulseStartDelay is the wait before the timer's first tick: a pod that
// just started gets ready (and a rolling update settles) before it pulses.
const pulseStartDelay = time.Minute

// setupPulse mounts GET/POST /pulse and starts the pulse timer when
// PULSE_ENABLED. POST /pulse works with the timer off (an in-cluster
// CronJob, or the core, may drive the pulse instead).
func (a *App) setupPulse(ctx context.Context) error {
	cfg := a.Config
	interval, timeout := cfg.PulseInterval, PulseTimeout(cfg)
	enabled := cfg.PulseEnabled
	if enabled && timeout >= interval {
		s := cfg.Settings()["PULSE_TIMEOUT"]
		return &config.Error{Var: "PULSE_TIMEOUT", Where: s.Where, Msg: fmt.Sprintf(
			"%s is not shorter than PULSE_INTERVAL (%s): a pulse run must end well inside the interval", timeout, interval)}
	}
	holder, err := pulseHolder()
	if err != nil {
		return err
	}
	log := a.Log.Named("pulse")
	o := pulse.Options{
		Agent: cfg.Persona.Slug, Holder: holder, Tasks: cfg.Persona.Pulse, Store: a.Store,
		Runner:   pulseserver.EngineRunner{Engine: a.Engine},
		Interval: interval, Timeout: timeout, Enabled: enabled,
		StartDelay: min(interval, pulseStartDelay),
		Log:        log, Metrics: pulse.NewMetrics(a.metricsReg),
	}
	if a.Deliverer != nil {
		o.Reporter = a.Deliverer
	}
	// The morning digest (docs/MANUAL.md, "The morning digest") is built in
	// code from the findings' lifecycle and the GitOps repository.
	var prs lifecycle.PRs
	if a.forgeOK && a.Git != nil {
		prs = a.Git
	}
	o.Digest = func(ctx context.Context, since, now time.Time) (report.Report, error) {
		return lifecycle.Digest(ctx, a.Store, prs, since, now)
	}
	ls, err := a.pulseLease(log)
	if err != nil {
		return err
	}
	if ls != nil {
		o.Leader, o.Holder, o.LockTTL = ls, ls.Identity(), lease.DefaultLeaseDuration
	}
	sched, err := pulse.New(o)
	if err != nil {
		return err
	}
	if ls != nil {
		// The election outlives a.bg: the Lease is released only after the
		// timer's last tick (Loop releases on its way out) or, with the
		// timer off, after Shutdown has drained the runs (the closer).
		go func() {
			if err := ls.Run(context.WithoutCancel(a.bg)); err != nil {
				log.Error("pulse lease election did not start", zap.Error(err))
			}
		}()
		a.closers = append(a.closers, func() {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := sched.Release(rctx); err != nil {
				log.Warn("pulse lease not released; another replica takes over when it expires", zap.Error(err))
			}
		})
	}
	pulseserver.New(sched, log.Named("http")).Mount(a.Server.Router())
	if enabled {
		go sched.Loop(a.bg)
	} else {
		log.Info("pulse timer off (PULSE_ENABLED=false); POST /pulse runs tasks on demand", zap.Int("tasks", len(o.Tasks)))
	}
	return nil
}

// pulseLease returns the Lease leadership when the agent runs in a cluster:
// the cluster client comes from the in-cluster ServiceAccount (no
// KUBECONFIG, no KUBE_CONTEXT) and POD_NAME (the downward API) names this
// replica. The Lease is kubecrew-pulse-<slug> in AGENT_NAMESPACE. Otherwise
// it returns nil: the store's pulse lock decides.
func (a *App) pulseLease(log *zap.Logger) (*lease.Lease, error) {
	cfg := a.Config
	pod := cfg.PodName
	inCluster := cfg.Kubeconfig == "" && cfg.KubeContext == "" &&
		a.Kube != nil && a.Kube.Clientset() != nil
	if inCluster {
		_, err := rest.InClusterConfig()
		inCluster = err == nil
	}
	switch {
	case inCluster && pod == "":
		log.Warn("pulse leadership: the store lock (POD_NAME is not set; pass it from the downward API for a Lease)")
		return nil, nil
	case !inCluster:
		log.Info("pulse leadership: the store lock (not running in a cluster)")
		return nil, nil
	}
	l, err := lease.New(lease.Options{
		Client: a.Kube.Clientset(), Namespace: cfg.Namespace,
		Name: lease.Name(cfg.Persona.Slug), Identity: pod, Log: log,
	})
	if err != nil {
		return nil, &config.Error{Var: "POD_NAME", Msg: err.Error()}
	}
	log.Info("pulse leadership: a Lease", zap.String("lease", l.String()), zap.String("identity", pod))
	return l, nil
}

// pulseHolder names this replica in the pulse lock: the pod name (the
// hostname) and a random suffix, so a restarted pod is a new holder.
func pulseHolder() (string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "agent"
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("pulse holder id: %w", err)
	}
	return host + "-" + hex.EncodeToString(b), nil
}
