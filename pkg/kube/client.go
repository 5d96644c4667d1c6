// Package kube holds kubecrew's cluster tools: typed functions over client-go
// that the model fills with validated slots (a kind from a fixed list, names
// matching the DNS pattern), never flags or free text (docs/ARCHITECTURE.md).
// Secrets are never read, listed or described by any tool. Summary tools
// (cluster_problems) compute the broad view in code, with a coverage block.
// The one write, k8s_rollout, goes through a single gated primitive.
package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubecrew/kubecrew/pkg/safetext"
	"github.com/kubecrew/kubecrew/pkg/tools"
)

// Client-side rate limits. client-go's defaults (5/10) make a 600-namespace
// sweep crawl; these stay well under a shared API server's priority-and-
// fairness budget for one reader.
const (
	DefaultQPS     = 50
	DefaultBurst   = 100
	requestTimeout = 30 * time.Second
)

// ErrClusterUnavailable is wrapped by every error that means the API server
// could not be reached (or its config not loaded). Its text starts every
// such tool answer: "cluster_unavailable: …".
var ErrClusterUnavailable = errors.New("cluster_unavailable")

// Client is the cluster connection every tool shares.
type Client struct {
	cs    kubernetes.Interface
	log   *zap.Logger
	now   func() time.Time
	down  error  // non-nil: no usable config; every call answers this
	where string // "in-cluster", a kubeconfig description, or "clientset"
	// cmValueKeys are the ConfigMap keys whose values k8s_get_yaml shows;
	// every other value is redacted (keys only).
	cmValueKeys map[string]bool
	host        string // the API server URL, when known
	// envelope judges every write right before it is made (nil: none).
	envelope tools.Envelope
	// restartMode is ROLLOUT_RESTART_MODE (auto, annotation, evict);
	// evictPoll and evictTimeout pace an eviction restart: how often it
	// looks again, and how long one pod's eviction (a PodDisruptionBudget
	// answering 429) or its replacement's readiness may take.
	restartMode  string
	evictPoll    time.Duration
	evictTimeout time.Duration
	// beforeWrite, set by tests only, runs between a write primitive's
	// precondition check and its write.
	beforeWrite func(context.Context)
}

// WithEnvelope sets the action envelope every write asks first (docs/MANUAL.md,
// "The action envelope").
func WithEnvelope(e tools.Envelope) Option { return func(c *Client) { c.envelope = e } }

// SetEnvelope sets the action envelope of a connected client; call it
// before the client is used.
func (c *Client) SetEnvelope(e tools.Envelope) {
	if c != nil {
		c.envelope = e
	}
}

// NamespaceLabels returns the labels of namespace name: the action
// envelope reads its opt-in label there.
func (c *Client) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	if err := c.avail(); err != nil {
		return nil, err
	}
	ns, err := c.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, c.apiErr(err, "get namespace "+name)
	}
	return ns.Labels, nil
}

// Option configures a Client.
type Option func(*Client)

// WithClock injects the clock used for ages, event windows and the restart
// annotation.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithLogger sets the logger (default: none).
func WithLogger(l *zap.Logger) Option { return func(c *Client) { c.log = l } }

// WithConfigMapValueKeys names the ConfigMap keys whose values k8s_get_yaml
// may show (CONFIGMAP_VALUE_KEYS); by default it shows keys only.
func WithConfigMapValueKeys(keys []string) Option {
	return func(c *Client) {
		c.cmValueKeys = map[string]bool{}
		for _, k := range keys {
			if k = strings.TrimSpace(k); k != "" {
				c.cmValueKeys[k] = true
			}
		}
	}
}

// New wraps an existing clientset (a fake one in tests).
func New(cs kubernetes.Interface, opts ...Option) *Client {
	c := &Client{cs: cs, log: zap.NewNop(), now: time.Now, where: "clientset", restartMode: RestartAuto,
		evictPoll: DefaultEvictPoll, evictTimeout: DefaultEvictTimeout}
	for _, o := range opts {
		o(c)
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	return c
}

var klogOnce sync.Once

// Connect builds a Client from kubeconfig (a path; empty: $KUBECONFIG or
// ~/.kube/config) and context (empty: the current one), or from the
// in-cluster ServiceAccount when neither is given and the process runs in a
// pod. It never dials the API server.
//
// Connect always returns a usable *Client: when the configuration cannot be
// loaded it also returns the error, and the Client's tools answer
// "cluster_unavailable: …" and Ready reports it, so the agent still starts
// and says what is wrong.
func Connect(kubeconfig, kubeContext string, log *zap.Logger, opts ...Option) (*Client, error) {
	if log == nil {
		log = zap.NewNop()
	}
	klogOnce.Do(func() { klog.SetLogger(zapr.NewLogger(log.Named("client-go"))) })
	cfg, where, err := loadConfig(kubeconfig, kubeContext)
	if err != nil {
		err = fmt.Errorf("%w: loading cluster config (%s): %v", ErrClusterUnavailable, where, err)
		return &Client{log: log, now: time.Now, down: err, where: where}, err
	}
	cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	cfg.Timeout = requestTimeout
	cfg.UserAgent = "kubecrew"
	// protobuf for built-in types: a 1,000-pod list decodes several times faster than JSON
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	// in-cluster bandwidth is cheap; gzip of multi-megabyte lists costs the API server CPU
	cfg.DisableCompression = true
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		err = fmt.Errorf("%w: building client (%s): %v", ErrClusterUnavailable, where, err)
		return &Client{log: log, now: time.Now, down: err, where: where}, err
	}
	log.Info("cluster client configured", zap.String("source", where), zap.String("host", cfg.Host),
		zap.Float32("qps", cfg.QPS), zap.Int("burst", cfg.Burst))
	c := &Client{cs: cs, log: log, now: time.Now, where: where, host: cfg.Host, restartMode: RestartAuto,
		evictPoll: DefaultEvictPoll, evictTimeout: DefaultEvictTimeout}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

func loadConfig(kubeconfig, kubeContext string) (*rest.Config, string, error) {
	if kubeconfig == "" && kubeContext == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, "in-cluster", nil
		} else if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, "in-cluster", err
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules() // honours $KUBECONFIG
	where := "kubeconfig from $KUBECONFIG or ~/.kube/config"
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
		where = "kubeconfig " + kubeconfig
	}
	if kubeContext != "" {
		where += ", context " + kubeContext
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	return cfg, where, err
}

// Clientset returns the underlying clientset (nil when the config could not
// be loaded).
func (c *Client) Clientset() kubernetes.Interface { return c.cs }

// Ready reports whether the API server answers; the error wraps
// ErrClusterUnavailable. Meant for an agent's /ready.
func (c *Client) Ready(ctx context.Context) error {
	if c.down != nil {
		return c.down
	}
	ctx, cancel := context.WithTimeoutCause(ctx, 5*time.Second, errors.New("API server readiness probe timed out"))
	defer cancel()
	if _, err := discovery.ToDiscoveryInterfaceWithContext(c.cs.Discovery()).ServerVersionWithContext(ctx); err != nil {
		if apierrors.IsNotFound(err) {
			// Something answers, but not a Kubernetes API server (a proxy,
			// a web site, a wrong port).
			return fmt.Errorf("%w: %s answered 404 to GET /version: not a Kubernetes API server; check the server URL (%s)",
				ErrClusterUnavailable, c.hostOr("the API server"), c.where)
		}
		return c.apiErr(err, "server version")
	}
	return nil
}

func (c *Client) hostOr(def string) string {
	if c.host != "" {
		return c.host
	}
	return def
}

// WhoAmI asks the API server who this client is (a SelfSubjectReview):
// "system:serviceaccount:kubecrew:agent-platform-sre". "" when the server
// does not say.
func (c *Client) WhoAmI(ctx context.Context) string {
	if c.down != nil {
		return ""
	}
	r, err := c.cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return ""
	}
	return r.Status.UserInfo.Username
}

// avail answers the config error, if any, before a tool touches the API.
func (c *Client) avail() error { return c.down }

// apiErr turns a client-go error into the text the model sees: a denied or
// missing object says so; anything that means the server did not answer
// (network, TLS, timeouts, 503, throttling) is cluster_unavailable. A 500
// is the server answering about something behind it (a kubelet for logs).
func (c *Client) apiErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, ErrClusterUnavailable):
		return err
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: canceled: %w", what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: %s: %s", what, safetext.Clean(err.Error(), 300))
	case apierrors.IsNotFound(err):
		return fmt.Errorf("not found: %s", what)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w: unauthorized (credentials rejected) for %s", ErrClusterUnavailable, what)
	case apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		apierrors.IsTooManyRequests(err):
		return fmt.Errorf("%w: API server error on %s: %s", ErrClusterUnavailable, what, safetext.Clean(err.Error(), 300))
	case errors.As(err, &status):
		return fmt.Errorf("%s: %s", what, safetext.Clean(err.Error(), 300))
	case unreachable(err):
		c.log.Debug("cluster unreachable", zap.String("what", what), zap.Error(err))
		return fmt.Errorf("%w: API server unreachable (%s): %s", ErrClusterUnavailable, what, safetext.Clean(err.Error(), 300))
	}
	return fmt.Errorf("%s: %s", what, safetext.Clean(err.Error(), 300))
}

// unreachable reports errors that mean no answer came from the API server:
// transport errors (dial, DNS, TLS, resets, EOF) and timeouts.
func unreachable(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	return errors.As(err, &urlErr) || errors.As(err, &netErr) || errors.As(err, &certErr) || errors.As(err, &unknownAuth) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH)
}
