package gpss

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpssv1 "github.com/stewardhq/steward/api/gpss/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/gpss/build"
	"github.com/stewardhq/steward/internal/gpss/gpssconfig"
	"github.com/stewardhq/steward/internal/systems"
)

// The controller's RBAC, on top of the framework's (docs/design/framework.md).
//
// +kubebuilder:rbac:groups=gpss.steward.dev,resources=gpssclusters,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=gpss.steward.dev,resources=gpssclusters/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=gpss.steward.dev,resources=gpssclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps;serviceaccounts,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch;delete

// Cluster is the kind this controller reconciles.
type Cluster = gpssv1.GpssCluster

// Context is the framework's pass context of a GpssCluster.
type Context = framework.Context[*Cluster]

// Action is an imperative step Observe returns.
type Action = framework.Action[*Cluster]

// DefaultResync is how often an in-sync cluster is observed again.
const DefaultResync = time.Minute

// Options configure the GPSS controller. The zero value is ready to use.
type Options struct {
	// ClusterDomain is the cluster's DNS domain, in the managed etcd's
	// addresses (default build.DefaultClusterDomain).
	ClusterDomain string
	// Resync is how often an in-sync cluster is observed again (default
	// DefaultResync).
	Resync time.Duration
	// Dial connects to a cluster's job API (default: its gRPC Service).
	Dial Dialer
	// InstanceAddress is where one instance's job API is reached (default:
	// its pod's IP and the gRPC port).
	InstanceAddress InstanceAddress
}

func (o Options) withDefaults() Options {
	if o.ClusterDomain == "" {
		o.ClusterDomain = build.DefaultClusterDomain
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.Dial == nil {
		o.Dial = dialService
	}
	if o.InstanceAddress == nil {
		o.InstanceAddress = podAddress
	}
	return o
}

// Controller is the GpssCluster actor.
type Controller struct {
	opts Options
	// instances asks every instance ListJobs in the background (serving.go).
	instances *probe.Collector[instanceAnswer]
	// trigger enqueues a cluster when an instance's answer changed.
	trigger *framework.Trigger
	// rechecks are the passes recheckAt has asked for, by cluster and time.
	rechecks sync.Map
}

// New returns a controller with opts.
func New(opts Options) *Controller {
	trigger := framework.NewTrigger()
	return &Controller{opts: opts.withDefaults(), trigger: trigger, instances: newServingCollector(trigger.Enqueue)}
}

// System returns the GPSS system for the manager's registry, with its
// admission webhooks (SetupWebhooks).
func System(opts Options) systems.System {
	return systems.System{
		Name:     systems.GPSS,
		Setup:    func(mgr ctrl.Manager) error { return Setup(mgr, opts) },
		Webhooks: SetupWebhooks,
	}
}

// Setup registers the API types and the controller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := gpssv1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("gpss: registering the API: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &gpssv1.GpssCluster{}, clusterIDIndex, func(o client.Object) []string {
		return []string{o.(*gpssv1.GpssCluster).Spec.ClusterID}
	}); err != nil {
		return fmt.Errorf("gpss: index GpssClusters by clusterID: %w", err)
	}
	c := New(opts)
	_, err := framework.Setup(mgr, framework.Options[*Cluster, *cluster]{
		Actor:  c,
		App:    build.App,
		PartOf: build.PartOf,
		Owns: []client.Object{
			&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{},
		},
		Flows:  []framework.Flow[*Cluster, *cluster]{c.scaleInFlow(), c.rolloutFlow()},
		Resync: c.opts.Resync,
		// A cluster whose instances stay unreachable is observed less and
		// less often; its probes start a pass on any answer that changes.
		ResyncNotReadyMax: framework.LongNotReadyResyncs * c.opts.Resync,
		Trigger:           c.trigger,
		Customize:         watchPods,
	})
	if err != nil {
		return fmt.Errorf("gpss: %w", err)
	}
	return nil
}

// watchPods adds a watch on the instances' and etcd's pods, which their
// StatefulSets own: a pod that becomes ready or goes away starts a pass.
func watchPods(b *builder.Builder) *builder.Builder {
	return b.Watches(&corev1.Pod{}, workload.EnqueueOwnerByLabels(build.App, build.ComponentInstance, build.ComponentEtcd))
}

// Default applies the API's defaults (gpssv1.Default); the defaulting
// webhook calls it too.
func (*Controller) Default(g *Cluster) { gpssv1.Default(g) }

// Validate checks what the CRD's schema cannot: the image reference, each
// of etcd.endpoints a URL with a host and a port in range (the schema's
// pattern passes "http://:2379"), and spec.config (gpssconfig.Validate: a JSON object, none of the keys the
// operator owns, its ports valid and distinct from spec.ports). The
// validating webhook rejects what it rejects; the controller calls it every
// pass and reports InvalidSpec.
func (*Controller) Validate(g *Cluster) error {
	spec := field.NewPath("spec")
	errs := standard.ValidateImage(spec.Child("image"), g.Spec.Image)
	if m := g.Spec.Etcd.Managed; m != nil && build.ManagesEtcd(g) {
		errs = append(errs, standard.ValidateImage(spec.Child("etcd", "managed", "image"), m.Image)...)
	}
	for i, e := range g.Spec.Etcd.Endpoints {
		errs = append(errs, standard.ValidateEndpoint(spec.Child("etcd", "endpoints").Index(i), e, "http", "https")...)
	}
	if g.Spec.Config != nil {
		p := g.Spec.Ports
		errs = append(errs, gpssconfig.Validate(g.Spec.Config.Raw, spec.Child("config"), map[string]int{
			"spec.ports.grpc": int(p.GRPC), "spec.ports.gpfdist": int(p.Gpfdist), "spec.ports.cluster": int(p.Cluster),
		})...)
	}
	return errs.ToAggregate()
}

// Declare runs on every pass: it applies the ServiceAccount, the Services
// and, for a managed etcd, the etcd; once the etcd is ready (for a new
// cluster), the configuration and the instances' StatefulSet; then it
// observes the instances into status and sets the conditions. It returns
// what it found, for Observe and the flow steps of the same pass.
func (c *Controller) Declare(ctx *Context) (*cluster, error) {
	g := ctx.Obj
	if sa := build.ServiceAccount(g); sa != nil {
		if err := ctx.Apply(sa, build.ComponentInstance); err != nil {
			return nil, err
		}
	}
	if build.ManagesEtcd(g) {
		if err := ctx.Apply(build.EtcdService(g), build.ComponentEtcd); err != nil {
			return nil, err
		}
		if err := ctx.Apply(build.EtcdStatefulSet(g, c.opts.ClusterDomain), build.ComponentEtcd); err != nil {
			return nil, err
		}
	}
	for _, svc := range []*corev1.Service{build.HeadlessService(g), build.GRPCService(g)} {
		if err := ctx.Apply(svc, componentOf(svc)); err != nil {
			return nil, err
		}
	}
	cl, err := c.observe(ctx)
	if err != nil {
		return nil, err
	}
	if cl.sts != nil || cl.etcdReady {
		if err := c.applyInstances(ctx, cl); err != nil {
			return nil, err
		}
	}
	if _, err := ctx.CollectConfigMaps(build.ComponentConfig); err != nil {
		return nil, err
	}
	if err := c.setServing(ctx, cl); err != nil {
		return nil, err
	}
	c.instancesStatus(ctx, cl)
	recordJobs(ctx, cl)
	recordRevision(g, cl)
	c.setConditions(ctx, cl)
	return cl, nil
}

// applyInstances applies the configuration, one gpfdist Service per
// instance, and the instances' StatefulSet, then deletes the gpfdist
// Services of instances beyond it.
func (c *Controller) applyInstances(ctx *Context, cl *cluster) error {
	g := ctx.Obj
	data, err := build.ConfigData(g, c.opts.ClusterDomain)
	if err != nil {
		return framework.InvalidSpec(fmt.Errorf("spec.config: %w", err))
	}
	name, err := ctx.EnsureConfigMap(build.ComponentConfig, data)
	if err != nil {
		return err
	}
	replicas := desiredReplicas(g, cl, ctx.Operation())
	for i := range int(replicas) {
		if err := ctx.Apply(build.GpfdistService(g, i), build.ComponentGpfdist); err != nil {
			return err
		}
	}
	sts := build.StatefulSet(g, replicas, g.Spec.Image, name)
	if err := ctx.Apply(sts, build.ComponentInstance); err != nil {
		return err
	}
	cl.sts = sts
	return c.deleteDepartedServices(ctx, cl, int(replicas))
}

// deleteDepartedServices deletes the gpfdist Services of ordinals at or
// beyond replicas.
func (c *Controller) deleteDepartedServices(ctx *Context, cl *cluster, replicas int) error {
	for ordinal, svc := range cl.gpfdist {
		if ordinal < replicas {
			continue
		}
		if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID})); err != nil {
			return fmt.Errorf("delete Service %s: %w", svc.Name, err)
		}
		ctx.Log.Info("Deleted the gpfdist Service of a departed instance", "service", svc.Name)
	}
	return nil
}

// Observe starts a scale-in when the StatefulSet has more instances than
// spec.replicas, a rollout when an instance runs an earlier pod template
// than the StatefulSet's latest, and starts jobs a scale-in stopped if it
// ended (aborted, say) before it started them again (clearing what it
// recorded, even when it had stopped none). Scaling out and
// everything else Declare applies.
func (c *Controller) Observe(ctx *Context, cl *cluster) (Action, error) {
	g := ctx.Obj
	switch {
	case cl.sts != nil && ptr.Deref(cl.sts.Spec.Replicas, 0) > g.Spec.Replicas:
		return framework.StartFlow[*Cluster](flowScaleIn, scaleInTrigger(*cl.sts.Spec.Replicas, g.Spec.Replicas)), nil
	case len(stale(cl)) > 0:
		return framework.StartFlow[*Cluster](flowRollout, rolloutTrigger(cl.sts.Status.UpdateRevision)), nil
	case len(g.Status.StoppedJobs) > 0 || len(g.Status.JobsInErrorBeforeScaleIn) > 0:
		return framework.Named("StartStoppedJobs", func(ctx *Context) error {
			_, err := c.startStoppedJobs(ctx, cl)
			return err
		}), nil
	}
	return nil, nil
}

func componentOf(obj client.Object) string { return obj.GetLabels()[standard.LabelComponent] }
