package oceanbase

import (
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/systems"
)

// The controller's RBAC, on top of the framework's (docs/design/framework.md).
//
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obclusters,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obclusters/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=oceanbase.steward.dev,resources=obclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;delete;deletecollection

// Cluster is the kind this controller reconciles.
type Cluster = obv1.OBCluster

// Context is the framework's pass context of an OBCluster.
type Context = framework.Context[*Cluster]

// Action is an imperative step Observe returns.
type Action = framework.Action[*Cluster]

// transitionPoll is how soon a cluster that is not Ready is observed
// again (framework.Options.ResyncNotReady).
const transitionPoll = 2 * time.Second

// Defaults of Options.
const (
	DefaultResync           = 30 * time.Second
	DefaultStatementTimeout = 10 * time.Second
)

// Options configure the OceanBase controller. The zero value is ready to
// use.
type Options struct {
	// ClusterDomain is the cluster's DNS domain, in the observers'
	// advertised host names (default build.DefaultClusterDomain).
	ClusterDomain string
	// Resync is how often an in-sync cluster is observed again (default
	// DefaultResync).
	Resync time.Duration
	// StatementTimeout bounds one statement (default
	// DefaultStatementTimeout); a bootstrap has its own, longer bound.
	StatementTimeout time.Duration
	// Resolve maps a server's IP (its Service's) to the host to dial, for
	// tests whose observers are not behind real Services; nil dials the IP.
	Resolve func(ip string) string
}

func (o Options) withDefaults() Options {
	if o.ClusterDomain == "" {
		o.ClusterDomain = build.DefaultClusterDomain
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.Resolve == nil {
		o.Resolve = func(ip string) string { return ip }
	}
	return o
}

// Controller is the OBCluster actor.
type Controller struct {
	opts      Options
	bootstrap *framework.Background
	logins    *logins
	// services asks, in the background, whether the observers about to be
	// bootstrapped or added answer on their Services (probeServices), and
	// trigger enqueues a cluster when one's answer changes.
	services *probe.Collector[struct{}]
	trigger  *framework.Trigger
}

// New returns a controller with opts.
func New(opts Options) *Controller {
	opts = opts.withDefaults()
	trigger := framework.NewTrigger()
	return &Controller{opts: opts, bootstrap: framework.NewBackground(), logins: newLogins(opts),
		services: newServiceCollector(trigger.Enqueue), trigger: trigger}
}

// System returns the OceanBase system for the manager's registry.
func System(opts Options) systems.System {
	return systems.System{
		Name:     systems.OceanBase,
		Setup:    func(mgr ctrl.Manager) error { return Setup(mgr, opts) },
		Webhooks: SetupWebhooks,
	}
}

// Setup registers the API types and the controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := obv1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("oceanbase: registering the API: %w", err)
	}
	c := New(opts)
	_, err := framework.Setup(mgr, framework.Options[*Cluster, *cluster]{
		Actor:  c,
		App:    build.App,
		PartOf: build.PartOf,
		Owns:   []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}},
		Flows: []framework.Flow[*Cluster, *cluster]{c.bootstrapFlow(), c.scaleInFlow(), c.upgradeFlow(), c.addZoneFlow(),
			c.removeZoneFlow(), c.recoverFlow()},
		Resync:  c.opts.Resync,
		Trigger: c.trigger,
		// OceanBase changes on its own (a server added starts serving, a
		// restarted one comes back, a zone is started), which no watch
		// sees: a cluster that is not Ready is observed again soon, and
		// one that stays so (unreachable) less and less often.
		ResyncNotReady:    transitionPoll,
		ResyncNotReadyMax: framework.LongNotReadyResyncs * c.opts.Resync,
		Customize:         func(b *builder.Builder) *builder.Builder { return watchViews(watchPods(b)) },
	})
	if err == nil {
		err = setupTenants(mgr, opts) // tenant.go
	}
	if err == nil {
		err = setupViews(mgr) // OBZone and OBServer, views.go
	}
	if err == nil {
		err = setupParameters(mgr, c) // parameter.go
	}
	if err == nil {
		err = setupBackupPolicies(mgr, opts) // backuppolicy.go
	}
	if err == nil {
		err = setupTenantBackups(mgr, opts) // backup.go
	}
	if err == nil {
		err = setupTenantRestores(mgr, opts) // restore.go
	}
	if err == nil {
		err = setupTenantOperations(mgr, opts) // operation.go
	}
	if err != nil {
		return fmt.Errorf("oceanbase: %w", err)
	}
	return nil
}

// watchPods adds a watch on the observers' pods, which their StatefulSets
// own: a pod that becomes ready or goes away starts a pass.
func watchPods(b *builder.Builder) *builder.Builder {
	return b.Watches(&corev1.Pod{}, workload.EnqueueOwnerByLabels(build.App, build.ComponentObserver))
}

// Default applies the API's defaults (obv1.Default).
func (*Controller) Default(c *Cluster) { obv1.Default(c) }

// clusterHolder names the cluster's passes as a user of its login.
func clusterHolder(ob *Cluster) string { return holderOf("OBCluster", ob.UID) }

// Declare runs on every pass: it ensures the credential Secrets, observes
// the pods and OceanBase (observe.go), writes what it found into status,
// applies the Services, the zones' StatefulSets and the views, and sets the
// conditions (status.go). It returns what it found, for Observe and the
// flows' steps.
func (c *Controller) Declare(ctx *Context) (*cluster, error) {
	ob := ctx.Obj
	for _, name := range []string{ob.Spec.Credentials.Root, ob.Spec.Credentials.Operator} {
		newSecret := func(pw string) *corev1.Secret { return build.PasswordSecret(ob, name, pw) }
		if err := framework.EnsurePasswordSecret(ctx, ctx.Client, ctx.Reader, ctx.Log, newSecret); err != nil {
			return nil, err
		}
	}
	for _, svc := range []*corev1.Service{build.HeadlessService(ob), build.ClientService(ob)} {
		if err := ctx.Apply(svc, svc.Labels["app.kubernetes.io/component"]); err != nil {
			return nil, err
		}
	}
	cl, err := c.observe(ctx)
	if err != nil {
		return nil, err
	}
	c.writeStatus(ob, cl)
	for _, zone := range ob.Spec.Zones {
		replicas := cl.replicas(zone, ctx.Operation())
		for i := range int(replicas) {
			if err := ctx.Apply(build.ServerService(ob, zone.Name, i), build.ComponentServer); err != nil {
				return nil, err
			}
		}
		if err := ctx.Apply(build.StatefulSet(ob, zone, replicas, c.opts.ClusterDomain), build.ComponentObserver); err != nil {
			return nil, err
		}
	}
	if err := applyLeavingServices(ctx, cl); err != nil {
		return nil, err
	}
	if _, err := ctx.DeleteOrphans(&corev1.ServiceList{}); err != nil {
		return nil, err
	}
	if err := c.applyViews(ctx, cl); err != nil { // OBZones and OBServers (views.go)
		return nil, err
	}
	// StoresLost is set here, not where a flow starts: a pass that ends
	// the recover flow must say the stores are back, and no later pass may
	// come soon once the cluster is Ready.
	c.setStoresLost(ctx, cl)
	c.setBootstrapped(ctx, cl)
	c.setReady(ctx, cl)
	return cl, nil
}

// replicas is the number of observers zone's StatefulSet should have:
// what a running or failed flow holds it at (status.operation.held: a
// scale-in's remove-observers step, once OceanBase has let the departing
// servers go), but never fewer than the spec's; without a hold, the spec's,
// except that a StatefulSet with more keeps them, as their servers may be
// in OceanBase still.
func (cl *cluster) replicas(zone obv1.OBZoneSpec, op *commonv1.Operation) int32 {
	return workload.Replicas(zone.Replicas, cl.sets[zone.Name], op)
}

// applyLeavingServices keeps the Services of a leaving zone's servers: a
// server's address is its Service's IP, and OceanBase must reach it until
// it has let the server go.
func applyLeavingServices(ctx *Context, cl *cluster) error {
	for _, zone := range slices.Sorted(maps.Keys(cl.leaving)) {
		lz := cl.leaving[zone]
		n := int(ptr.Deref(lz.set.Spec.Replicas, 0))
		for o := range lz.pods {
			n = max(n, o+1)
		}
		for i := range n {
			if err := ctx.Apply(build.ServerService(ctx.Obj, zone, i), build.ComponentServer); err != nil {
				return err
			}
		}
	}
	return nil
}

// Observe starts the bootstrap of a new cluster once the first observer of
// every zone runs; then, one at a time and in this order, a recovery when
// observers lost their store, a flow that adds or removes zones when the
// spec's zones differ from OceanBase's, a scale-in when a zone has more
// observers than the spec and an upgrade when an observer runs another
// image; it adds servers whose pods run and OceanBase does not know, and
// sets drifted parameters.
func (c *Controller) Observe(ctx *Context, cl *cluster) (Action, error) {
	ob := ctx.Obj
	departing, zoneFlow, lost := cl.departing(ob), cl.zoneFlow(ob), cl.toRecover()
	switch {
	case ob.Status.BootstrappedAt == nil:
		if cl.seedsReady(ob) {
			return framework.StartFlow[*Cluster](flowBootstrap, "new cluster"), nil
		}
		return nil, nil
	case cl.db == nil:
		return nil, nil // OceanBase did not answer; status says so
	case len(lost) > 0: // first: a scale-in or a zone's removal may need the lost server's zone to serve
		return framework.StartFlow[*Cluster](flowRecover, recoverTrigger(lost)), nil
	case zoneFlow != nil:
		return zoneFlow, nil
	case len(departing) > 0:
		return framework.StartFlow[*Cluster](flowScaleIn, scaleInTrigger(departing)), nil
	case cl.upgradeNeeded(ob):
		return framework.StartFlow[*Cluster](flowUpgrade, "pod template of image "+ob.Spec.Image), nil
	case len(cl.missingServers()) > 0:
		return framework.Named("AddServers", func(ctx *Context) error { return c.addServers(ctx, cl) }), nil
	case len(ob.Status.ParameterDrift) > 0:
		return framework.Named("SetParameters", func(ctx *Context) error { return c.setParameters(ctx, cl) }), nil
	}
	return nil, nil
}

// Finalize closes the cluster's login, and deletes the generated credential Secrets and the observers'
// volume claims when the reclaim policy is Delete; with Retain it keeps
// both, so that a cluster created again with the same name finds its data
// and can log in.
func (c *Controller) Finalize(ctx *Context) (bool, error) {
	ob := ctx.Obj
	c.logins.release(clusterHolder(ob)) // the cluster's login goes with it,
	c.logins.forget(ob.UID)             // once its other users are done
	c.services.Forget(framework.Group(ob), nil)
	if ob.Spec.Storage.ReclaimPolicy != "Delete" {
		return true, nil
	}
	sel := client.MatchingLabels(build.Selector(ob, build.ComponentObserver))
	if err := ctx.Client.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(ob.Namespace), sel); err != nil {
		return false, fmt.Errorf("delete the volume claims: %w", err)
	}
	for _, name := range []string{ob.Spec.Credentials.Root, ob.Spec.Credentials.Operator} {
		if err := framework.DeleteGeneratedSecret(ctx, ctx.Client, build.PasswordSecret(ob, name, "")); err != nil {
			return false, err
		}
	}
	return true, nil
}
