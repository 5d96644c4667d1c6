package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/kubecrew/kubecrew/pkg/pulse"
	"github.com/kubecrew/kubecrew/services/agent/internal/config"
	"github.com/kubecrew/kubecrew/services/agent/internal/pulseserver"
)

// PulseTimeout is the effective bound of one pulse run: PULSE_TIMEOUT when
// set, else half of PULSE_INTERVAL; never more than RUN_TIMEOUT (the engine
// would end the run there anyway).
func PulseTimeout(cfg *config.Config) time.Duration {
	t := cfg.Duration("PULSE_TIMEOUT")
	if t <= 0 {
		t = cfg.Duration("PULSE_INTERVAL") / 2
	}
	if rt := cfg.Duration("RUN_TIMEOUT"); rt > 0 && t > rt {
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
	interval, timeout := cfg.Duration("PULSE_INTERVAL"), PulseTimeout(cfg)
	enabled := cfg.Bool("PULSE_ENABLED")
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
		Log:        log, Metrics: pulse.NewMetrics(a.Reg),
	}
	if a.Deliverer != nil {
		o.Reporter = a.Deliverer
	}
	sched, err := pulse.New(o)
	if err != nil {
		return err
	}
	pulseserver.New(sched, log.Named("http")).Mount(a.Server.Router(), a.Server.RequireAuth)
	if enabled {
		go sched.Loop(a.bg)
	} else {
		log.Info("pulse timer off (PULSE_ENABLED=false); POST /pulse runs tasks on demand", zap.Int("tasks", len(o.Tasks)))
	}
	return nil
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
