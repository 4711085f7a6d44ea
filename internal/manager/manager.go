package manager

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/gpss"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/oceanbase"
	"github.com/stewardhq/steward/internal/systems"
	"github.com/stewardhq/steward/internal/version"
	"github.com/stewardhq/steward/internal/zookeeper"
)

// LeaderElectionID is the name of the Lease the manager replicas compete for.
const LeaderElectionID = "steward.steward.dev"

// Builtin returns a registry of the systems compiled into this build:
// ZooKeeper, GPSS, OceanBase and MatrixOne. Naming another system in
// --systems fails with "not available in this build"; systems are added
// here as they land (as previews while incomplete, systems.Preview).
func Builtin() *systems.Registry {
	return systems.NewRegistry(zookeeper.System(zookeeper.Options{}), gpss.System(gpss.Options{}),
		oceanbase.System(oceanbase.Options{}), matrixone.System(matrixone.Options{}))
}

// New builds a manager from opts and sets up the selected systems on it.
// It does not start the manager or contact the API server.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	mgr, _, err := newManager(cfg, opts)
	return mgr, err
}

// newManager is New, also returning the drain Run starts on shutdown: its
// readiness check and the webhook server's Connection: close are wired in.
func newManager(cfg *rest.Config, opts Options) (ctrl.Manager, *drain, error) {
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	selected, err := opts.registry().Select(opts.Systems)
	if err != nil {
		return nil, nil, fmt.Errorf("select systems: %w", err)
	}
	log := opts.logger()
	// Validate parsed it already. The systems' validation reads it.
	standard.NodePortRange, _ = standard.ParsePortRange(opts.ServiceNodePortRange)

	d := newDrain(opts.ShutdownDelay)
	scheme := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))

	gracefulShutdownTimeout := opts.GracefulShutdownTimeout
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  log,
		Metrics:                 metricsOptions(opts),
		WebhookServer:           closingServer{Server: newWebhookServer(opts.Webhooks), drain: d},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// The process exits as soon as the manager stops, so stepping down
		// is safe, and it lets the next replica take over at once instead of
		// waiting for the Lease to expire.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &gracefulShutdownTimeout,
		Cache:                         cacheOptions(opts.WatchNamespaces),
		NewClient:                     newClient,
		Controller:                    config.Controller{MaxConcurrentReconciles: opts.MaxConcurrentReconciles},
		MapperProvider:                restMapper,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create manager: %w", err)
	}

	if err := framework.IndexInstances(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("shutdown", d.check); err != nil {
		return nil, nil, fmt.Errorf("add readiness check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, fmt.Errorf("add readiness check: %w", err)
	}

	if len(selected) == 0 {
		log.Info("No systems registered", "systems", opts.Systems)
	}
	for _, s := range selected {
		log.Info("Setting up system", "system", s.Name)
		if err := s.Setup(mgr); err != nil {
			return nil, nil, fmt.Errorf("set up system %q: %w", s.Name, err)
		}
	}
	if err := setupWebhooks(mgr, opts.Webhooks, selected); err != nil {
		return nil, nil, err
	}
	return mgr, d, nil
}

// metricsOptions serve the metrics endpoint, behind the API server's
// authentication and authorization when opts.MetricsSecure: a scraper
// needs a token allowed to GET /metrics (the chart's metrics-reader
// ClusterRole). The serving certificate is self-signed, generated at start.
// With opts.Pprof it serves Go's profiles too, behind the same checks.
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsBindAddress, TLSOpts: tlsOptions}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if opts.Pprof {
		// The filter wraps these too: the SubjectAccessReview asks for GET
		// on the request's path, a non-resource URL under /debug/pprof/.
		o.ExtraHandlers = map[string]http.Handler{
			"/debug/pprof/":        http.HandlerFunc(pprof.Index), // and every named profile: heap, goroutine, ...
			"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
			"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
			"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
			"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
		}
	}
	return o
}

// cacheOptions keep only Steward's own Secrets in the manager's cache (those
// labeled managed-by=steward), not every Secret of the cluster: less memory,
// and other workloads' credentials never sit in the operator's heap. A
// Secret outside the cache is still read from the API server when a
// controller needs it (a name clash with a user's Secret, say).
//
// Volume claims are only ever listed by the standard labels, so only
// Steward's are cached too. Pods are not filtered: a config ConfigMap is
// collected only when no pod of the namespace, anyone's, uses it; they are
// cached slim instead (slimPod), with what Steward reads of them, and so
// are StatefulSets' pod templates (slimStatefulSet), claims and Services
// (slimClaim, slimService) and config ConfigMaps' data (slimConfigMap). No
// cached object keeps its managedFields, which Steward never reads (its
// applies go to the API server) and which make up much of a pod's size:
// the operator's memory grows with the clusters it runs. With namespaces
// (--watch-namespaces), the cache holds those namespaces' objects only,
// which is what a namespace-scoped install's Roles let it list.
func cacheOptions(namespaces []string) cache.Options {
	ours := labels.SelectorFromSet(labels.Set{standard.LabelManagedBy: standard.ManagedBy})
	o := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:                {Label: ours},
			&corev1.PersistentVolumeClaim{}: {Label: ours, Transform: slimClaim},
			&corev1.Pod{}:                   {Transform: slimPod},
			&appsv1.StatefulSet{}:           {Transform: slimStatefulSet},
			&corev1.Service{}:               {Transform: slimService},
			&corev1.ConfigMap{}:             {Transform: slimConfigMap},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// newClient is the manager's client: controller-runtime's, reading cached
// kinds from the cache through framework.IndexedReader, so that a List of
// one cluster's children reads those only (framework.InstanceIndex).
func newClient(cfg *rest.Config, options client.Options) (client.Client, error) {
	if options.Cache != nil && options.Cache.Reader != nil {
		r, err := framework.IndexedReader(options.Cache.Reader, options.Scheme)
		if err != nil {
			return nil, err
		}
		options.Cache.Reader = r
	}
	return client.New(cfg, options)
}

// restMapper is the manager's REST mapper: controller-runtime's lazy
// dynamic mapper, behind a static one that knows the kinds cacheOptions
// filters or transforms and those the cache indexes (the same kinds). The
// cache asks for their scope when it is built, and the static answer keeps
// New from contacting the API server.
func restMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	dynamic, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	static := meta.NewDefaultRESTMapper(nil)
	for _, obj := range framework.IndexedKinds() {
		gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme)
		if err != nil {
			return nil, err
		}
		static.Add(gvk, meta.RESTScopeNamespace)
	}
	return meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{static, dynamic}}, nil
}

// tlsOptions harden the metrics and webhook servers: HTTP/1.1 only, since
// HTTP/2's stream handling has been the way in for denial-of-service
// attacks (CVE-2023-44487, CVE-2023-39325) that the scrapers and the API
// server, which speak HTTP/1.1 here, gain nothing from risking.
var tlsOptions = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}

// Run builds the manager with [New] and runs it until ctx is canceled.
// Then it drains before it stops: /readyz fails at once, so the Services
// in front of this replica (the webhook Service above all) stop routing
// to it, while the manager keeps serving for opts.ShutdownDelay; only
// then does it stop, giving the controllers up to
// opts.GracefulShutdownTimeout and releasing the Lease.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	log := opts.logger()
	log.Info("Starting Steward", "version", version.Version, "goVersion", runtime.Version(),
		"systems", opts.Systems, "leaderElection", opts.LeaderElect)

	mgr, drain, err := newManager(cfg, opts)
	if err != nil {
		return err
	}
	managerCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go drain.run(ctx, managerCtx, stop, log)
	if err := mgr.Start(managerCtx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	log.Info("Manager stopped")
	return nil
}

func (o *Options) logger() logr.Logger {
	if o.Logger.GetSink() != nil {
		return o.Logger
	}
	return ctrl.Log
}
