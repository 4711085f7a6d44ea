package framework

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stewardhq/steward/internal/framework/metrics"
)

// Defaults of Options.
const (
	DefaultActionRequeue   = time.Second
	DefaultConfigRevisions = 3
	// conflictRequeue is how soon a pass that hit a conflict runs again.
	conflictRequeue = 100 * time.Millisecond
	// staleReadRequeue is how soon a pass skipped on a cache behind the
	// controller's own write runs again, should the write's watch event
	// not come first.
	staleReadRequeue = time.Second
	// maxOverwritten bounds the resourceVersions kept per object.
	maxOverwritten = 4
)

// LongNotReadyResyncs is how many Resyncs apart, at most, the systems
// observe a cluster or set that has not been Ready for long when nothing
// it watches or probes changes (Options.ResyncNotReadyMax). With every
// server unreachable, a thousand clusters' passes once a Resync were most
// of the operator's idle CPU (docs/scale.md). Five of the systems' Resyncs
// (a minute at most) stay under the probes' idle timeout
// (probe.DefaultIdleTimeout), so a cluster's probe targets are not dropped
// and asked afresh between two of its passes.
const LongNotReadyResyncs = 5

// DefaultWaitBackoff is the default backoff of dependency waits and of
// Finalize calls that are not done yet.
var DefaultWaitBackoff = Backoff{Initial: time.Second, Max: time.Minute}

// Options configure a Reconciler. S is what the actor's Declare observes
// (Nothing for an actor without one): see Actor.
type Options[T Object, S any] struct {
	// Actor is the controller's business logic. Required.
	Actor Actor[T, S]
	// Name is the controller's name, unique in the manager (default: the
	// kind in lower case).
	Name string
	// App is the app.kubernetes.io/name of the children (default: the kind
	// in lower case).
	App string
	// PartOf is the app.kubernetes.io/part-of of the children, typically the
	// system's name (default: App).
	PartOf string
	// Finalizer is the finalizer the framework manages (default
	// DefaultFinalizer).
	Finalizer string
	// Flows are the task flows the actor can start, by name.
	Flows []Flow[T, S]
	// Owns lists the child types whose changes trigger a pass on their
	// controller owner.
	Owns []client.Object
	// Resync requeues an in-sync object after this long, for actors that
	// observe the application (probes). Zero relies on watches alone.
	Resync time.Duration
	// ResyncNotReady, when shorter than Resync, requeues an in-sync object
	// that is not Ready after this long instead: for applications that
	// become ready on their own, which no watch sees. Zero: Resync.
	ResyncNotReady time.Duration
	// ResyncNotReadyMax, when longer than ResyncNotReady (or Resync), lets
	// the resync of an object that is not Ready grow with the time it has
	// not been Ready (Ready's last transition) up to this, past Resync if
	// longer: for clusters, of which a thousand that stay unreachable (a
	// partition, servers that never start) must not keep the workers busy
	// while their probes, which start a pass on any answer that changes,
	// keep watching them. Zero: ResyncNotReady, always. The systems give
	// their clusters and sets LongNotReadyResyncs times their Resync.
	ResyncNotReadyMax time.Duration
	// ActionRequeue is how soon a pass runs after one that took an action
	// or completed a flow step (default DefaultActionRequeue).
	ActionRequeue time.Duration
	// WaitBackoff spaces dependency checks and Finalize calls that are not
	// done yet (default DefaultWaitBackoff).
	WaitBackoff Backoff
	// ConfigRevisions is how many unreferenced config ConfigMaps
	// CollectConfigMaps keeps for rollback (default DefaultConfigRevisions).
	ConfigRevisions int
	// Recorder records the Events of the reconciler (default: the manager's
	// recorder named after the controller).
	Recorder events.EventRecorder
	// Controller are controller-runtime's controller options (concurrency,
	// rate limiter).
	Controller controller.Options
	// Trigger, when set, enqueues objects from outside the watches, for
	// example when a background probe's answer changed.
	Trigger *Trigger
	// Customize adds watches to the controller's builder, for example on the
	// kinds of the declared dependencies.
	Customize func(b *builder.Builder) *builder.Builder
}

// Reconciler runs the framework's reconcile pass for kind T, whose actor
// observes an S in each pass. It implements reconcile.Reconciler.
type Reconciler[T Object, S any] struct {
	*core
	opts  Options[T, S]
	flows map[string]*Flow[T, S]
}

// core is the part of a Reconciler that does not depend on the actor's
// observation: what a Context reaches, and the bookkeeping shared by the
// passes.
type core struct {
	client   client.Client
	reader   client.Reader
	scheme   *runtime.Scheme
	recorder events.EventRecorder

	gvk    schema.GroupVersionKind
	kind   string
	name   string
	app    string
	partOf string
	// configRevisions is Options.ConfigRevisions.
	configRevisions int
	// flowSteps are the step names of the registered flows, by flow name,
	// for StartFlow.
	flowSteps map[string][]string

	checker childrenChecker
	checks  childrenChecks

	mu       sync.Mutex
	applies  map[applyKey]applyRecord
	inFlight map[types.NamespacedName]string
	// created are the objects this process created that the cache may
	// not show yet (EnsureConfigMap, Context.Created).
	created map[createdKey]time.Time
	// overwritten are, per object, the resourceVersions this controller's
	// own writes replaced: a cached copy at one of them is stale.
	overwritten map[types.NamespacedName][]string
}

// New returns a Reconciler for T on mgr. T must be registered in the
// manager's scheme. An actor that observes something (S is not Nothing)
// must be a Declarer[T, S]: nothing else would provide what Observe and
// the steps receive.
func New[T Object, S any](mgr ctrl.Manager, opts Options[T, S]) (*Reconciler[T, S], error) {
	if opts.Actor == nil {
		return nil, errors.New("framework: Options.Actor is required")
	}
	if _, ok := opts.Actor.(Declarer[T, S]); !ok && reflect.TypeFor[S]() != reflect.TypeFor[Nothing]() {
		return nil, fmt.Errorf("framework: %T observes %s but has no Declare returning it", opts.Actor, reflect.TypeFor[S]())
	}
	if err := checkHooks[T, S](opts.Actor); err != nil {
		return nil, err
	}
	r := &Reconciler[T, S]{
		core: &core{
			client:      mgr.GetClient(),
			reader:      mgr.GetAPIReader(),
			scheme:      mgr.GetScheme(),
			flowSteps:   map[string][]string{},
			applies:     map[applyKey]applyRecord{},
			inFlight:    map[types.NamespacedName]string{},
			created:     map[createdKey]time.Time{},
			overwritten: map[types.NamespacedName][]string{},
			checker:     childrenChecker{client: mgr.GetClient(), scheme: mgr.GetScheme()},
		},
		opts:  opts,
		flows: map[string]*Flow[T, S]{},
	}
	gvk, err := kindOf[T](r.scheme)
	if err != nil {
		return nil, err
	}
	r.gvk, r.kind = gvk, gvk.Kind
	r.name = withDefault(opts.Name, strings.ToLower(gvk.Kind))
	r.app = withDefault(opts.App, strings.ToLower(gvk.Kind))
	r.partOf = withDefault(opts.PartOf, r.app)
	r.opts.Finalizer = withDefault(opts.Finalizer, DefaultFinalizer)
	if r.opts.ActionRequeue <= 0 {
		r.opts.ActionRequeue = DefaultActionRequeue
	}
	if r.opts.ConfigRevisions <= 0 {
		r.opts.ConfigRevisions = DefaultConfigRevisions
	}
	r.configRevisions = r.opts.ConfigRevisions
	r.opts.WaitBackoff = opts.WaitBackoff.withDefaults(DefaultWaitBackoff)
	for i := range opts.Flows {
		f := opts.Flows[i].withDefaults()
		if err := f.validate(); err != nil {
			return nil, err
		}
		if _, dup := r.flows[f.Name]; dup {
			return nil, fmt.Errorf("framework: flow %q registered twice", f.Name)
		}
		r.flows[f.Name] = &f
		r.flowSteps[f.Name] = f.stepNames()
	}
	r.recorder = opts.Recorder
	if r.recorder == nil {
		r.recorder = mgr.GetEventRecorder(r.name)
	}
	return r, nil
}

// Setup creates a Reconciler for T and registers it with mgr, watching T and
// the owned kinds.
func Setup[T Object, S any](mgr ctrl.Manager, opts Options[T, S]) (*Reconciler[T, S], error) {
	r, err := New(mgr, opts)
	if err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return r, nil
}

// SetupWithManager registers the reconciler with mgr. Every change of T
// triggers a pass, including the framework's own status writes: the pass
// that follows a write sees it and finds nothing to do, and no pass is ever
// stranded on a cache that had not caught up yet. Changes of owned children
// trigger a pass on their owner.
func (r *Reconciler[T, S]) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(r.name).
		For(newObject[T]()).
		WithOptions(r.opts.Controller)
	for _, o := range r.opts.Owns {
		b = b.Owns(o)
	}
	if r.opts.Trigger != nil {
		b = b.WatchesRawSource(r.opts.Trigger)
	}
	if r.opts.Customize != nil {
		b = r.opts.Customize(b)
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("framework: set up controller %s: %w", r.name, err)
	}
	return nil
}

// Kind returns the kind the reconciler serves.
func (r *Reconciler[T, S]) Kind() string { return r.kind }

// newObject returns a new empty T, for the reconciler, its passes and the
// webhooks to decode into.
func newObject[T Object]() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}

// kindOf returns T's group, version and kind in scheme.
func kindOf[T Object](scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	obj := newObject[T]()
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("framework: kind of %T: %w", obj, err)
	}
	return gvk, nil
}

// setInFlight records the active operation of the object at k (empty for
// none) and keeps the in-flight gauge in step.
func (r *core) setInFlight(k types.NamespacedName, op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.inFlight[k]
	if had && old == op {
		return
	}
	if had {
		metrics.OperationsInFlight.WithLabelValues(r.kind, old).Dec()
		delete(r.inFlight, k)
	}
	if op != "" {
		metrics.OperationsInFlight.WithLabelValues(r.kind, op).Inc()
		r.inFlight[k] = op
	}
}

// Reconcile runs one pass on the object named by req.
func (r *Reconciler[T, S]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	p := &pass[T, S]{r: r, log: ctrl.LoggerFrom(ctx)}
	res, err := p.run(ctx, req)
	metrics.ReconcileDuration.WithLabelValues(r.kind, p.outcome(res, err)).Observe(time.Since(start).Seconds())
	return res, err
}

func withDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// wrote records that this controller changed the object at k from
// resourceVersion from.
func (r *core) wrote(k types.NamespacedName, from string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.overwritten[k] = append(r.overwritten[k], from)
	if vs := r.overwritten[k]; len(vs) > maxOverwritten {
		r.overwritten[k] = vs[len(vs)-maxOverwritten:]
	}
}

// staleRead reports whether a cached copy of the object at k with
// resourceVersion version predates one of this controller's own writes.
// A copy that does not forgets the record: the cache has caught up (or
// another writer moved the object on, which a write would find out).
// resourceVersions are compared for equality only, as the API allows.
func (r *core) staleRead(k types.NamespacedName, version string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	vs, ok := r.overwritten[k]
	if !ok {
		return false
	}
	if slices.Contains(vs, version) {
		return true
	}
	delete(r.overwritten, k)
	return false
}

// checkHooks refuses an actor with a method named as one of the optional
// hooks (Declare, InterruptFlow, Validate, ...) that does not implement
// the hook: the framework finds hooks by type assertion, so a hook whose
// signature drifted (another observation type, a missing parameter) would
// otherwise never be called, silently.
func checkHooks[T Object, S any](actor Actor[T, S]) error {
	at := reflect.TypeOf(actor)
	for _, hook := range []reflect.Type{
		reflect.TypeFor[Declarer[T, S]](),
		reflect.TypeFor[FlowInterrupter[T, S]](),
		reflect.TypeFor[Defaulter[T]](),
		reflect.TypeFor[UpdateDefaulter[T]](),
		reflect.TypeFor[Validator[T]](),
		reflect.TypeFor[Warner[T]](),
		reflect.TypeFor[ClashChecker[T]](),
		reflect.TypeFor[Admitter[T]](),
		reflect.TypeFor[DependencyDeclarer[T]](),
		reflect.TypeFor[ChildRenderer[T]](),
	} {
		if at.Implements(hook) {
			continue
		}
		for i := range hook.NumMethod() {
			want := hook.Method(i)
			if got, ok := at.MethodByName(want.Name); ok {
				return fmt.Errorf("framework: %T's %s is %s, not the %s hook's %s: the framework would never call it",
					actor, want.Name, got.Type, hook.Name(), want.Type)
			}
		}
	}
	return nil
}
