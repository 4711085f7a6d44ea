package manager

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/systems"
)

// Defaults for the flags in [Options].
const (
	DefaultMetricsBindAddress      = ":8443"
	DefaultHealthProbeBindAddress  = ":8081"
	DefaultGracefulShutdownTimeout = 20 * time.Second
	DefaultShutdownDelay           = 5 * time.Second
	// DefaultMaxConcurrentReconciles is how many objects of one kind are
	// reconciled at once: a pass that waits on the API server or on a
	// flow's probes does not hold up the others.
	DefaultMaxConcurrentReconciles = 4
)

// Options configures the Steward manager. [NewOptions] returns the defaults and
// [Options.BindFlags] binds the command-line flags to them.
type Options struct {
	// Systems is the --systems value: "all" or a comma-separated list of
	// system names. See [systems.Registry.Select].
	Systems string

	// WatchNamespaces limits the manager to these namespaces: its cache,
	// and so every watch and reconcile, sees only their objects. Empty
	// means every namespace. The chart gives a namespace-scoped install
	// Roles in these namespaces only, and webhooks that see only them.
	WatchNamespaces []string

	// LeaderElect enables leader election, so only one replica reconciles.
	LeaderElect bool
	// LeaderElectionNamespace is the namespace of the leader election Lease.
	// Empty means the namespace the pod runs in; it must be set when running
	// outside a cluster with leader election enabled.
	LeaderElectionNamespace string

	// MetricsBindAddress is the address of the Prometheus metrics endpoint;
	// "0" disables it.
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS and lets through only callers
	// whose bearer token the API server authenticates (TokenReview) and
	// authorizes for GET on the non-resource URL /metrics
	// (SubjectAccessReview). Off, metrics are plain HTTP for anyone who can
	// reach the port.
	MetricsSecure bool
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the metrics endpoint, behind its authentication and
	// authorization: a caller needs GET on the profile's path as a
	// non-resource URL (the chart's pprof-reader ClusterRole names each
	// one). Off by
	// default; it needs MetricsSecure, since a profile shows the process's
	// memory.
	Pprof bool
	// HealthProbeBindAddress is the address serving /healthz and /readyz;
	// "0" disables it.
	HealthProbeBindAddress string

	// GracefulShutdownTimeout bounds how long running controllers get to
	// stop once the manager is asked to stop. It must stay below the pod's
	// terminationGracePeriodSeconds.
	GracefulShutdownTimeout time.Duration
	// ShutdownDelay is how long the manager keeps serving, reporting not
	// ready, between being asked to stop and stopping: long enough for the
	// EndpointSlice controller and kube-proxy to stop routing admission
	// requests to this replica, which would otherwise be refused (the API
	// server does not retry a refused webhook call). The pod's
	// terminationGracePeriodSeconds must cover it and the graceful shutdown.
	ShutdownDelay time.Duration

	// MaxConcurrentReconciles is how many objects each controller
	// reconciles at once; one object is never reconciled by two workers.
	MaxConcurrentReconciles int

	// ServiceNodePortRange is the cluster's node port range (the API
	// server's --service-node-port-range), "first-last": a node port a
	// spec asks for outside it is rejected at admission.
	ServiceNodePortRange string

	// Webhooks configures the admission webhook server.
	Webhooks WebhookOptions

	// Zap configures the logger; cmd/steward builds the logger from it.
	Zap zap.Options

	// The fields below are not bound to flags.

	// Registry holds the systems available to --systems. Nil means the
	// systems compiled into this build, see [Builtin].
	Registry *systems.Registry
	// Logger is the manager's logger. The zero value means the global
	// controller-runtime logger (ctrl.Log).
	Logger logr.Logger
}

// NewOptions returns the default options, as the steward binary runs them
// when no flag is given.
func NewOptions() Options {
	return Options{
		Systems:                 systems.All,
		LeaderElect:             true,
		MetricsBindAddress:      DefaultMetricsBindAddress,
		MetricsSecure:           true,
		HealthProbeBindAddress:  DefaultHealthProbeBindAddress,
		GracefulShutdownTimeout: DefaultGracefulShutdownTimeout,
		ShutdownDelay:           DefaultShutdownDelay,
		MaxConcurrentReconciles: DefaultMaxConcurrentReconciles,
		ServiceNodePortRange:    standard.NodePortRange.String(),
		Webhooks:                NewWebhookOptions(),
	}
}

// BindFlags registers the manager's flags, and the zap logging flags, on fs.
// The current field values are the flags' defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	every := "every system in this build"
	if previews := systems.Preview(); len(previews) > 0 {
		every += fmt.Sprintf(" but the previews (%s)", strings.Join(previews, ", "))
	}
	fs.StringVar(&o.Systems, "systems", o.Systems,
		fmt.Sprintf("Comma-separated systems to run, or %q for %s. Known systems: %s.", systems.All, every, strings.Join(systems.Known(), ", ")))
	fs.Func("watch-namespaces", "Comma-separated namespaces to watch and reconcile; empty (the default) for every namespace.",
		func(v string) error {
			o.WatchNamespaces = nil
			for _, ns := range strings.Split(v, ",") {
				if ns = strings.TrimSpace(ns); ns != "" {
					o.WatchNamespaces = append(o.WatchNamespaces, ns)
				}
			}
			return nil
		})
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Enable leader election so that only one replica of the manager reconciles at a time.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace,
		"Namespace of the leader election Lease. Defaults to the pod's namespace; required outside a cluster.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`Address the metrics endpoint binds to; "0" disables it.`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve metrics over HTTPS to authenticated and authorized callers only (TokenReview and SubjectAccessReview).")
	fs.BoolVar(&o.Pprof, "pprof", o.Pprof,
		"Serve Go's runtime profiles at /debug/pprof/ on the metrics endpoint, to callers authorized for GET on the profile's path (needs --metrics-secure).")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`Address the /healthz and /readyz probes bind to; "0" disables them.`)
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout,
		"How long controllers get to finish on shutdown; keep it below the pod's termination grace period.")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", o.ShutdownDelay,
		"How long to keep serving, not ready, after SIGTERM before stopping, so Services stop routing admission requests here first.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles,
		"How many objects each controller reconciles at once; one object is never reconciled twice at once.")
	fs.StringVar(&o.ServiceNodePortRange, "service-node-port-range", o.ServiceNodePortRange,
		"The cluster's node port range (the API server's flag of that name): a node port outside it is rejected at admission.")
	o.Webhooks.BindFlags(fs)
	o.Zap.BindFlags(fs)
}

// Validate checks the options without contacting the cluster, so that a bad
// flag fails fast with a clear message.
func (o *Options) Validate() error {
	var errs []error
	if _, err := o.registry().Select(o.Systems); err != nil {
		errs = append(errs, fmt.Errorf("--systems: %w", err))
	}
	if o.GracefulShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("--graceful-shutdown-timeout must not be negative, got %s", o.GracefulShutdownTimeout))
	}
	if o.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay must not be negative, got %s", o.ShutdownDelay))
	}
	if o.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles must be at least 1, got %d", o.MaxConcurrentReconciles))
	}
	if _, err := standard.ParsePortRange(o.ServiceNodePortRange); err != nil {
		errs = append(errs, fmt.Errorf("--service-node-port-range: %w", err))
	}
	switch {
	case o.Pprof && o.MetricsBindAddress == "0":
		errs = append(errs, errors.New("--pprof serves on the metrics endpoint: it needs --metrics-bind-address"))
	case o.Pprof && !o.MetricsSecure:
		errs = append(errs, errors.New("--pprof needs --metrics-secure: a profile shows the process's memory to whoever reaches the port"))
	}
	for _, ns := range o.WatchNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	errs = append(errs, o.Webhooks.validate()...)
	return errors.Join(errs...)
}

func (o *Options) registry() *systems.Registry {
	if o.Registry != nil {
		return o.Registry
	}
	return Builtin()
}
