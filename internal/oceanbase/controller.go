package oceanbase

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	obv1 "github.com/stewardhq/steward/api/oceanbase/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/oceanbase/build"
	"github.com/stewardhq/steward/internal/oceanbase/obsql"
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
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;delete

// Cluster is the kind this controller reconciles.
type Cluster = obv1.OBCluster

// Context is the framework's pass context of an OBCluster.
type Context = framework.Context[*Cluster]

// Action is an imperative step Observe returns.
type Action = framework.Action[*Cluster]

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
	bootstrap *background
	dbs       dbCache
}

// New returns a controller with opts.
func New(opts Options) *Controller {
	return &Controller{opts: opts.withDefaults(), bootstrap: newBackground()}
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
	_, err := framework.Setup(mgr, framework.Options[*Cluster]{
		Actor:     c,
		App:       build.App,
		PartOf:    build.PartOf,
		Owns:      []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}},
		Flows:     []framework.Flow[*Cluster]{c.bootstrapFlow(), c.scaleInFlow()},
		Resync:    c.opts.Resync,
		Customize: watchPods,
	})
	if err != nil {
		return fmt.Errorf("oceanbase: %w", err)
	}
	return nil
}

// SetupWebhooks registers the OBCluster's defaulting and validating
// webhooks.
func SetupWebhooks(mgr ctrl.Manager) error {
	if err := framework.SetupWebhooks[*Cluster](mgr, New(Options{})); err != nil {
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

// Validate checks what the CRD's schema cannot: the image reference.
func (*Controller) Validate(c *Cluster) error {
	return standard.ValidateImage(field.NewPath("spec", "image"), c.Spec.Image).ToAggregate()
}

// observed is what Declare found, for Observe and the flows' steps.
var observed = framework.NewPassValue[*cluster]("cluster")

// Declare runs on every pass: it ensures the credential Secrets, applies
// the Services and the zones' StatefulSets, observes pods and OceanBase
// into status, and sets the conditions.
func (c *Controller) Declare(ctx *Context) error {
	ob := ctx.Obj
	for _, name := range []string{ob.Spec.Credentials.Root, ob.Spec.Credentials.Operator} {
		if err := ensurePasswordSecret(ctx, name); err != nil {
			return err
		}
	}
	for _, svc := range []*corev1.Service{build.HeadlessService(ob), build.ClientService(ob)} {
		if err := ctx.Apply(svc, svc.Labels["app.kubernetes.io/component"]); err != nil {
			return err
		}
	}
	cl, err := c.observe(ctx)
	if err != nil {
		return err
	}
	for _, zone := range ob.Spec.Zones {
		replicas := cl.replicas(zone, ctx.Operation())
		for i := range int(replicas) {
			if err := ctx.Apply(build.ServerService(ob, zone.Name, i), build.ComponentServer); err != nil {
				return err
			}
		}
		if err := ctx.Apply(build.StatefulSet(ob, zone, replicas, c.opts.ClusterDomain), build.ComponentObserver); err != nil {
			return err
		}
	}
	if _, err := ctx.DeleteOrphans(&corev1.ServiceList{}); err != nil {
		return err
	}
	c.setConditions(ctx, cl)
	observed.Set(ctx, cl)
	return nil
}

// Observe starts the bootstrap of a new cluster once the first observer of
// every zone runs, adds servers whose pods run and OceanBase does not know,
// starts a scale-in when a zone has more observers than the spec, and sets
// drifted parameters.
func (c *Controller) Observe(ctx *Context) (Action, error) {
	ob := ctx.Obj
	cl, err := observed.MustGet(ctx)
	if err != nil {
		return nil, err
	}
	departing := cl.departing(ob)
	switch {
	case ob.Status.BootstrappedAt == nil:
		if cl.seedsReady(ob) {
			return framework.StartFlow[*Cluster](flowBootstrap, "new cluster"), nil
		}
		return nil, nil
	case cl.db == nil:
		return nil, nil // OceanBase did not answer; status says so
	case len(departing) > 0:
		return framework.StartFlow[*Cluster](flowScaleIn, scaleInTrigger(departing)), nil
	case len(cl.missingServers()) > 0:
		return c.addServers, nil
	case len(ob.Status.ParameterDrift) > 0:
		return c.setParameters, nil
	}
	return nil, nil
}

// Finalize closes the cluster's login, and deletes the generated credential Secrets and the observers'
// volume claims when the reclaim policy is Delete; with Retain it keeps
// both, so that a cluster created again with the same name finds its data
// and can log in.
func (c *Controller) Finalize(ctx *Context) (bool, error) {
	ob := ctx.Obj
	c.dbs.drop(ob.UID) // the cluster's login goes with it
	if ob.Spec.Storage.ReclaimPolicy != "Delete" {
		return true, nil
	}
	sel := client.MatchingLabels(build.Selector(ob, build.ComponentObserver))
	if err := ctx.Client.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(ob.Namespace), sel); err != nil {
		return false, fmt.Errorf("delete the volume claims: %w", err)
	}
	for _, name := range []string{ob.Spec.Credentials.Root, ob.Spec.Credentials.Operator} {
		s := &corev1.Secret{}
		err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: ob.Namespace, Name: name}, s)
		if apierrors.IsNotFound(err) || err == nil && s.Labels["app.kubernetes.io/component"] != build.ComponentCredentials {
			continue // not ours: the user's Secret stays
		}
		if err != nil {
			return false, err
		}
		if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, s)); err != nil {
			return false, fmt.Errorf("delete Secret %s: %w", name, err)
		}
	}
	return true, nil
}

// ensurePasswordSecret creates a Secret with a random password when the
// named Secret does not exist. It never changes an existing Secret. The
// Secret has no owner: with the Retain policy it outlives the cluster,
// like the data it opens.
func ensurePasswordSecret(ctx *Context, name string) error {
	err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: ctx.Obj.Namespace, Name: name}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	s := build.PasswordSecret(ctx.Obj, name, rand.Text())
	if err := ctx.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s: %w", name, err)
	}
	ctx.Log.Info("Generated a password Secret", "secret", name)
	return nil
}

// password reads the password in Secret name (key "password").
func password(ctx context.Context, r client.Reader, namespace, name string) (string, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return "", fmt.Errorf("read Secret %s: %w", name, err)
	}
	p, ok := s.Data["password"]
	if !ok {
		return "", framework.InvalidSpec(fmt.Errorf("secret %s has no key \"password\"", name))
	}
	return string(p), nil
}

// connect logs in to the first of hosts that answers.
func (c *Controller) connect(ctx context.Context, hosts []string, login obsql.Login, timeout time.Duration) (*sql.DB, error) {
	var errs []error
	for _, h := range hosts {
		db, err := obsql.Open(ctx, c.opts.Resolve(h), login, timeout)
		if err == nil {
			return db, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("no observer to connect to")
	}
	return nil, fmt.Errorf("no observer answered: %w", errs[len(errs)-1])
}
