package matrixone

import (
	"fmt"
	"net"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
	"github.com/stewardhq/steward/internal/systems"
)

// The controllers' RBAC, on top of the framework's (docs/design/framework.md).
//
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=matrixoneclusters;logsets;tnsets;cnsets;proxysets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=matrixoneclusters/status;logsets/status;tnsets/status;cnsets/status;proxysets/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=matrixone.steward.dev,resources=matrixoneclusters/finalizers;logsets/finalizers;tnsets/finalizers;cnsets/finalizers;proxysets/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete

// Defaults of Options.
const (
	// DefaultResync is how often an in-sync set is observed again.
	DefaultResync = time.Minute
	// DefaultResyncNotReady is how often a set that is not Ready is.
	DefaultResyncNotReady = 5 * time.Second
	// DefaultProbeTimeout bounds one call to a probe: on a busy machine
	// mo-agent took 1.8 to 4.2 s to answer (its own deadline for HAKeeper
	// is 8 s), and a call cut short is an answer missed. A pass waits for
	// fresh answers half as long (viewReader), then reads the last good
	// view.
	DefaultProbeTimeout = 10 * time.Second
	// DefaultProbeInterval is how often the probes are asked in the
	// background.
	DefaultProbeInterval = 5 * time.Second
	// DefaultMaxViewAge is the oldest view of HAKeeper the controllers act
	// on, when the probes missed their latest answers (a busy machine, a
	// log pod restarting). Six background rounds (DefaultProbeInterval),
	// so that a few missed answers stall nothing; and short against what
	// HAKeeper itself lags (it counts a store up until its heartbeat
	// timeout, minutes), while every decision also checks the pods, which
	// the API server shows as they are. Older, the view is unknown:
	// nothing that needs it (a restart, a replacement, a drain's step) is
	// done.
	DefaultMaxViewAge = 30 * time.Second
	// DefaultDrainSettle is the least time a CN drains, however soon it
	// holds no session: a proxy learns of the work state within a few
	// seconds, and until then may still send it a new session.
	DefaultDrainSettle = 15 * time.Second
)

// Options configure the MatrixOne controllers. The zero value is ready to
// use.
type Options struct {
	// Resync and ResyncNotReady: how often an in-sync set is observed
	// again, Ready or not (defaults DefaultResync, DefaultResyncNotReady).
	Resync, ResyncNotReady time.Duration
	// ProbeTimeout bounds one call to a log pod's probe (default
	// DefaultProbeTimeout); ProbeInterval is how often the probes are
	// asked in the background (default DefaultProbeInterval).
	ProbeTimeout, ProbeInterval time.Duration
	// MaxViewAge is the oldest view of HAKeeper acted on (default
	// DefaultMaxViewAge).
	MaxViewAge time.Duration
	// ProbeAddress returns the host:port of a log pod's probe given the
	// pod's IP (default: the IP and build.ProbePort). Tests point it at
	// their own server.
	ProbeAddress func(namespace, pod, ip string) string
	// Admin sets CNs' work state and counts their sessions (default
	// mosql.Client, SQL to a CN). Tests with no CN to reach stand in.
	Admin mosql.Admin
	// DrainSettle is the least time a CN drains (default
	// DefaultDrainSettle).
	DrainSettle time.Duration
}

func (o Options) withDefaults() Options {
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.ResyncNotReady <= 0 {
		o.ResyncNotReady = DefaultResyncNotReady
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	if o.MaxViewAge <= 0 {
		o.MaxViewAge = DefaultMaxViewAge
	}
	if o.Admin == nil {
		o.Admin = mosql.Client{}
	}
	if o.DrainSettle <= 0 {
		o.DrainSettle = DefaultDrainSettle
	}
	return o
}

// System returns the MatrixOne system for the manager's registry, with its
// admission webhooks.
func System(opts Options) systems.System {
	return systems.System{
		Name:     systems.MatrixOne,
		Setup:    func(mgr ctrl.Manager) error { return Setup(mgr, opts) },
		Webhooks: SetupWebhooks,
	}
}

// Setup registers the API types and the controllers with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := mov1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("matrixone: registering the API: %w", err)
	}
	for _, setup := range []func(ctrl.Manager) error{
		func(mgr ctrl.Manager) error { return setupLogSets(mgr, NewLogSetController(opts)) },
		NewTNSetController(opts).setup,
		NewCNSetController(opts).setup,
		NewProxySetController(opts).setup,
		func(mgr ctrl.Manager) error { return setupClusters(mgr, NewClusterController(), opts.withDefaults()) },
	} {
		if err := setup(mgr); err != nil {
			return fmt.Errorf("matrixone: %w", err)
		}
	}
	return nil
}

// httpClient is the probes' HTTP client.
type httpClient = http.Client

// newHTTPClient is the probes' client: short dials, one idle connection per
// pod.
func newHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}
