// Package lease is the pulse's leadership in a cluster: a
// coordination.k8s.io Lease held through client-go's leader election. It
// satisfies pulse.Leader; it lives apart from package pulse so that what
// imports pulse (the persona loader, the core) does not link client-go.
package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Timings (client-go's leader election). A leader that cannot renew stops
// leading after RenewDeadline, before anyone may take an unreleased Lease
// over (LeaseDuration); a clean shutdown releases it at once.
const (
	DefaultLeaseDuration = 30 * time.Second
	DefaultRenewDeadline = 20 * time.Second
	DefaultRetryPeriod   = 5 * time.Second
)

// Name is the name of an agent's pulse Lease.
func Name(agent string) string { return "kubecrew-pulse-" + agent }

// Options configure a Lease leader.
type Options struct {
	Client kubernetes.Interface
	// Namespace and Name place the Lease (coordination.k8s.io/v1); Name
	// is usually Name(slug).
	Namespace string
	Name      string
	// Identity names this replica in the Lease: the pod name.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	Log           *zap.Logger
}

// Lease is a Leader backed by a coordination.k8s.io Lease through
// client-go's leader election. Run keeps the election going (campaigning,
// leading, campaigning again after a lost lease) until its context ends or
// Release is called; either releases the Lease. Lead answers from the
// elector: true only between "started leading" and "stopped leading" while
// the elector still sees this replica as the holder.
type Lease struct {
	o    Options
	lock *resourcelock.LeaseLock
	log  *zap.Logger

	mu       sync.Mutex
	started  bool
	released bool
	stop     context.CancelFunc
	done     chan struct{}
	round    *leaseRound
}

// leaseRound is one elector's life: Run starts a new one after the
// previous lost its lease.
type leaseRound struct {
	el      *leaderelection.LeaderElector
	mu      sync.Mutex
	leading bool
	over    bool
}

// New validates o and builds the Lease leader. It does not talk to the API
// server; Run does.
func New(o Options) (*Lease, error) {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	switch {
	case o.Client == nil:
		return nil, errors.New("pulse lease: a kube client is required")
	case o.Identity == "":
		return nil, errors.New("pulse lease: an identity (the pod name) is required")
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("pulse lease: namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return nil, fmt.Errorf("pulse lease: name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if o.LeaseDuration%time.Second != 0 {
		// the Lease stores whole seconds; a rounded-down duration would let
		// others take over before this replica stops leading
		return nil, fmt.Errorf("pulse lease: lease duration %s must be whole seconds", o.LeaseDuration)
	}
	l := &Lease{o: o, log: o.Log.With(zap.String("lease", o.Namespace+"/"+o.Name), zap.String("identity", o.Identity))}
	l.lock = &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Client:     o.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	// validate the timings now, not at Run
	if _, err := l.elector(&leaseRound{}); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Lease) String() string { return "lease " + l.o.Namespace + "/" + l.o.Name }

// Identity is this replica's name in the Lease.
func (l *Lease) Identity() string { return l.o.Identity }

func (l *Lease) elector(r *leaseRound) (*leaderelection.LeaderElector, error) {
	el, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          l.lock,
		Name:          l.String(),
		LeaseDuration: l.o.LeaseDuration,
		RenewDeadline: l.o.RenewDeadline,
		RetryPeriod:   l.o.RetryPeriod,
		// Release runs only after the scheduler's tick has finished (Loop
		// releases on its way out; the agent releases after draining runs).
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				r.mu.Lock()
				defer r.mu.Unlock()
				if !r.over { // this callback runs in a goroutine: it may come after the stop
					r.leading = true
					l.log.Info("pulse lease acquired: this replica pulses")
				}
			},
			OnStoppedLeading: func() {
				r.mu.Lock()
				defer r.mu.Unlock()
				if r.leading {
					l.log.Info("pulse lease lost or released: this replica stops pulsing")
				}
				r.leading, r.over = false, true
			},
			OnNewLeader: func(id string) {
				if id != l.o.Identity {
					l.log.Info("pulse lease holder observed", zap.String("holder", id))
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pulse lease: %w", err)
	}
	return el, nil
}

// Run campaigns for the Lease and holds it until ctx ends or Release is
// called, then releases it. After losing the Lease (a renewal that failed
// for RenewDeadline) it campaigns again. It returns an error only when the
// Lease was already run or released.
func (l *Lease) Run(ctx context.Context) error {
	l.mu.Lock()
	switch {
	case l.released:
		l.mu.Unlock()
		return fmt.Errorf("%s: already released", l)
	case l.started:
		l.mu.Unlock()
		return fmt.Errorf("%s: already running", l)
	}
	ctx, l.stop = context.WithCancel(ctx)
	l.started, l.done = true, make(chan struct{})
	done := l.done
	l.mu.Unlock()
	defer close(done)
	defer l.stop()

	ctx = klog.NewContext(ctx, zapr.NewLogger(l.log.Named("leaderelection")))
	l.log.Info("pulse lease election started", zap.Duration("lease_duration", l.o.LeaseDuration),
		zap.Duration("renew_deadline", l.o.RenewDeadline), zap.Duration("retry_period", l.o.RetryPeriod))
	for ctx.Err() == nil {
		r := &leaseRound{}
		el, err := l.elector(r)
		if err != nil { // validated by New
			return err
		}
		r.el = el
		l.mu.Lock()
		l.round = r
		l.mu.Unlock()
		el.Run(ctx) // returns when ctx ends (after releasing) or the lease is lost
	}
	l.log.Info("pulse lease election stopped")
	return nil
}

// Lead reports whether this replica holds the Lease: false before Run has
// won it and after Release.
func (l *Lease) Lead(context.Context) (bool, error) {
	l.mu.Lock()
	r := l.round
	l.mu.Unlock()
	if r == nil || r.el == nil {
		return false, nil
	}
	r.mu.Lock()
	leading := r.leading
	r.mu.Unlock()
	return leading && r.el.IsLeader(), nil
}

// Release stops the election and gives the Lease back, waiting (until ctx
// ends) for the release to be written. It is final: the Lease does not
// campaign again. Release before Run just prevents Run.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	l.released = true
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: release not confirmed: %w", l, context.Cause(ctx))
	}
}
