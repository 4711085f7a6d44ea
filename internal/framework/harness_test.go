package framework_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/testenv"
)

const (
	// testVerbosity is the log verbosity of the managers under test; 1 shows
	// every status write and action.
	testVerbosity = 0
)

// Ctx is the framework context of the test kind.
type Ctx = framework.Context[*testapi.Widget]

var scheme = func() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(testapi.AddToScheme(s))
	return s
}()

// flowLog records flow step runs across managers; it outlives any one actor.
type flowLog struct {
	mu sync.Mutex
	// completed counts the runs of each step that reported done.
	completed map[string]int
	// runs lists the steps in the order they ran, per actor name.
	runs map[string][]string
}

func newFlowLog() *flowLog {
	return &flowLog{completed: map[string]int{}, runs: map[string][]string{}}
}

func (l *flowLog) ran(actor, step string, done bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[actor] = append(l.runs[actor], step)
	if done {
		l.completed[step]++
	}
}

func (l *flowLog) snapshot() (map[string]int, map[string][]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	runs := map[string][]string{}
	for k, v := range l.runs {
		runs[k] = slices.Clone(v)
	}
	completed := map[string]int{}
	for k, v := range l.completed {
		completed[k] = v
	}
	return completed, runs
}

// widgetActor is the test controller: it applies one Gadget per replica, a
// Deployment mounting the config ConfigMap, starts the requested flow, and
// lets the test control finalization, flow steps and probes.
type widgetActor struct {
	name string
	log  *flowLog

	observes     atomic.Int32
	finalizes    atomic.Int32
	finalizeDone atomic.Bool
	// gate opens the "wait" step of the "steps" flow.
	gate atomic.Bool
	// failing makes the "flaky" step of the "flaky" flow fail.
	failing atomic.Bool

	// failObserve makes Observe fail with an error of this class, whose
	// text changes with every call.
	failObserve atomic.Int32
	// interrupt makes InterruptFlow stop the running flow.
	interrupt atomic.Bool
	// declares counts Declare calls.
	declares atomic.Int32

	probeURL       string
	collector      *probe.Collector[int]
	slowestObserve atomic.Int64
	// watchProbes reads the collector's background answers (Watch)
	// instead of calling the server in the pass (Collect); lastProbe is
	// the answer the last pass read.
	watchProbes bool
	lastProbe   atomic.Int64
}

// Error classes of widgetActor.failObserve.
const (
	failNone int32 = iota
	failTransient
	failTerminal
	failConflict
)

// observeError returns the error of the n-th Observe for class, nil for
// failNone.
func observeError(class, n int32) error {
	switch class {
	case failTransient:
		return fmt.Errorf("backend unreachable at attempt %d", n)
	case failTerminal:
		return framework.Terminal(fmt.Errorf("backend rejected attempt %d", n))
	case failConflict:
		return apierrors.NewConflict(testapi.GroupVersion.WithResource("gadgets").GroupResource(), "w-0",
			fmt.Errorf("stale at attempt %d", n))
	}
	return nil
}

func newActor(name string, log *flowLog) *widgetActor {
	return &widgetActor{name: name, log: log}
}

func (a *widgetActor) Observe(c *Ctx, _ *declaration) (framework.Action[*testapi.Widget], error) {
	n := a.observes.Add(1)
	if err := observeError(a.failObserve.Load(), n); err != nil {
		return nil, err
	}
	start := time.Now()
	defer func() {
		if d := int64(time.Since(start)); d > a.slowestObserve.Load() {
			a.slowestObserve.Store(d)
		}
	}()
	w := c.Obj
	if w.Spec.Replicas < 0 {
		return nil, framework.InvalidSpec(fmt.Errorf("spec.replicas is %d, want 0 or more", w.Spec.Replicas))
	}
	if a.collector != nil {
		a.probe(c)
	}
	if w.Spec.Flow != "" {
		if op := c.Operation(); op == nil || op.Trigger != w.Spec.FlowToken {
			return framework.StartFlow[*testapi.Widget](w.Spec.Flow, w.Spec.FlowToken), nil
		}
	}
	return nil, nil
}

// Declare applies the Gadgets (one per replica) and the config rollout on
// every pass, flows included, says so in the Declared condition, and
// returns what it did for the flow steps of the same pass.
func (a *widgetActor) Declare(c *Ctx) (*declaration, error) {
	a.declares.Add(1)
	w := c.Obj
	for i := range max(w.Spec.Replicas, 0) {
		g := &testapi.Gadget{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", w.Name, i)},
			Spec:       testapi.GadgetSpec{Index: i},
		}
		if err := c.Apply(g, "gadget"); err != nil {
			return nil, err
		}
	}
	if _, err := c.DeleteOrphans(&testapi.GadgetList{}); err != nil {
		return nil, err
	}
	if err := a.rollConfig(c); err != nil {
		return nil, err
	}
	c.SetCondition("Declared", metav1.ConditionTrue, "ChildrenApplied", fmt.Sprintf("%d gadgets", max(w.Spec.Replicas, 0)))
	return &declaration{gadgets: int(max(w.Spec.Replicas, 0))}, nil
}

// declaration is what Declare leaves for Observe and the flow steps of the
// same pass.
type declaration struct{ gadgets int }

// rollConfig rolls spec.config out to a Deployment and collects old
// revisions.
func (a *widgetActor) rollConfig(c *Ctx) error {
	w := c.Obj
	if len(w.Spec.Config) == 0 {
		return nil
	}
	name, err := c.EnsureConfigMap("config", w.Spec.Config)
	if err != nil {
		return err
	}
	w.Status.ConfigMap = name
	if err := c.Apply(deployment(w.Name, c.Selector("server"), name), "server"); err != nil {
		return err
	}
	_, err = c.CollectConfigMaps("config")
	return err
}

func deployment(name string, selector map[string]string, configMap string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "server", Image: "example.invalid/server:1"}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
					}}},
				},
			},
		},
	}
}

// probe asks the test's probe server once per pass.
func (a *widgetActor) probe(c *Ctx) {
	targets := []probe.Target{{Group: framework.Group(c.Obj), Key: "server", Address: a.probeURL}}
	if a.watchProbes {
		a.lastProbe.Store(int64(a.collector.Watch(targets, statusCode)["server"].Value))
		return
	}
	a.collector.Collect(c, targets, statusCode)
}

// statusCode is the test probe: GET the target and return the HTTP status.
func statusCode(ctx context.Context, t probe.Target) (int, error) {
	{
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Address, http.NoBody)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
}

// InterruptFlow stops the running flow when the test says so, as a
// scale-out cancels a drain.
func (a *widgetActor) InterruptFlow(*Ctx, *declaration, *commonv1.Operation) (string, bool) {
	return "scale-out arrived", a.interrupt.Load()
}

func (a *widgetActor) Finalize(*Ctx) (bool, error) {
	a.finalizes.Add(1)
	return a.finalizeDone.Load(), nil
}

func (a *widgetActor) Dependencies(c *Ctx) ([]framework.Dependency, error) {
	deps := make([]framework.Dependency, 0, len(c.Obj.Spec.DependsOn))
	for _, name := range c.Obj.Spec.DependsOn {
		deps = append(deps, framework.Dependency{Object: &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Name: name}}})
	}
	return deps, nil
}

// step returns a flow step that records its runs and completes when done
// says so. It fails when Declare did not run before it in the pass.
func (a *widgetActor) step(name string, done func() (bool, error)) framework.Step[*testapi.Widget, *declaration] {
	return framework.Step[*testapi.Widget, *declaration]{Name: name, Run: func(_ *Ctx, seen *declaration) (bool, error) {
		if seen == nil {
			return false, errors.New("no declaration in this pass")
		}
		ok, err := done()
		a.log.ran(a.name, name, ok && err == nil)
		return ok, err
	}}
}

func (a *widgetActor) flows() []framework.Flow[*testapi.Widget, *declaration] {
	always := func() (bool, error) { return true, nil }
	return []framework.Flow[*testapi.Widget, *declaration]{
		{
			Name: "steps",
			Steps: []framework.Step[*testapi.Widget, *declaration]{
				a.step("one", always),
				a.step("wait", func() (bool, error) { return a.gate.Load(), nil }),
				a.step("three", always),
			},
			Poll: 50 * time.Millisecond,
		},
		{
			Name: "flaky",
			Steps: []framework.Step[*testapi.Widget, *declaration]{
				a.step("a", always),
				a.step("flaky", func() (bool, error) {
					if a.failing.Load() {
						return false, errors.New("flaky step fails")
					}
					return true, nil
				}),
				a.step("c", always),
			},
			MaxAttempts: 3,
			Backoff:     framework.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
		},
	}
}

// writeCounter counts the API writes made through a manager's client.
type writeCounter struct {
	n   atomic.Int64
	mu  sync.Mutex
	log []string
}

func (w *writeCounter) add(verb string, obj any) {
	w.n.Add(1)
	desc := fmt.Sprintf("%T", obj)
	if o, ok := obj.(client.Object); ok {
		desc += " " + o.GetName()
	}
	w.mu.Lock()
	w.log = append(w.log, verb+" "+desc)
	w.mu.Unlock()
}

func (w *writeCounter) reset() {
	w.n.Store(0)
	w.mu.Lock()
	w.log = nil
	w.mu.Unlock()
}

func (w *writeCounter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.log, "\n")
}

func (w *writeCounter) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.add("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.add("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.add("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj k8sruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			w.add("apply", obj)
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.add("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			w.add("deleteAllOf", obj)
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			w.add(sub+"-create", obj)
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(sub+"-update", obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(sub+"-patch", obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj k8sruntime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			w.add(sub+"-apply", obj)
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	}
}

// eventCounter counts the Events a reconciler records.
type eventCounter struct {
	events.EventRecorder
	n atomic.Int64
}

func (e *eventCounter) Eventf(regarding, related k8sruntime.Object, eventtype, reason, action, note string, args ...any) {
	e.n.Add(1)
	e.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// running is a manager under test.
type running struct {
	writes *writeCounter
	events *eventCounter
	stop   func()
}

// testOptions are fast framework options for the tests.
func testOptions(a *widgetActor) framework.Options[*testapi.Widget, *declaration] {
	return framework.Options[*testapi.Widget, *declaration]{
		Actor:         a,
		App:           "widget",
		PartOf:        "framework-test",
		Flows:         a.flows(),
		Owns:          []client.Object{&testapi.Gadget{}, &appsv1.Deployment{}},
		ActionRequeue: 20 * time.Millisecond,
		WaitBackoff:   framework.Backoff{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond},
		Controller:    controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4},
	}
}

// startManager runs a manager with a Widget controller limited to namespace
// ns and counts the API writes of its client and the Events of the
// controller. The manager stops when the test ends or when stop is called.
func startManager(t *testing.T, cfg *rest.Config, ns string, opts framework.Options[*testapi.Widget, *declaration]) *running {
	t.Helper()
	var counter *eventCounter
	m := startManagerWith(t, cfg, ns, func(mgr ctrl.Manager) error {
		counter = &eventCounter{EventRecorder: mgr.GetEventRecorder("widget")}
		opts.Recorder = counter
		_, err := framework.Setup(mgr, opts)
		return err
	})
	m.events = counter
	return m
}

// startManagerWith runs a manager limited to namespace ns with the
// controllers setup registers, and counts the API writes of its client.
func startManagerWith(t *testing.T, cfg *rest.Config, ns string, setup func(mgr ctrl.Manager) error) *running {
	t.Helper()
	writes := &writeCounter{}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 testLogger(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every test runs its own manager with the same controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		NewClient: func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(cfg, o)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, writes.funcs()), nil
		},
	})
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("set up controllers: %v", err)
	}
	return &running{writes: writes, stop: testenv.StartManager(t, mgr)}
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c
}

// widget gets the Widget named name in ns.
func widget(t *testing.T, c client.Client, ns, name string) *testapi.Widget {
	t.Helper()
	w := &testapi.Widget{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		t.Fatalf("get Widget %s/%s: %v", ns, name, err)
	}
	return w
}

// waitWidget waits until the Widget satisfies cond.
func waitWidget(t *testing.T, c client.Client, ns, name, what string, cond func(w *testapi.Widget) bool) *testapi.Widget {
	t.Helper()
	var w *testapi.Widget
	testenv.Eventually(t, what, func() (bool, string) {
		w = &testapi.Widget{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
			return false, err.Error()
		}
		return cond(w), fmt.Sprintf("generation %d status %+v", w.Generation, w.Status)
	})
	return w
}

// condition returns the condition t of w, or a zero one.
func condition(w *testapi.Widget, t string) metav1.Condition {
	for _, c := range w.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

// inSync reports whether the framework has reconciled w's current
// generation to Synced=True and Ready=True.
func inSync(w *testapi.Widget) bool {
	return w.Status.ObservedGeneration == w.Generation &&
		condition(w, framework.ConditionSynced).Status == metav1.ConditionTrue &&
		condition(w, framework.ConditionReady).Status == metav1.ConditionTrue
}

// update changes the Widget with mutate, retrying on conflicts.
func update(t *testing.T, c client.Client, ns, name string, mutate func(w *testapi.Widget)) {
	t.Helper()
	testenv.Update(t, c, &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, mutate)
}

// gadgets returns the sorted names of the Gadgets in ns.
func gadgets(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var list testapi.GadgetList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list Gadgets: %v", err)
	}
	var names []string
	for _, g := range list.Items {
		if g.DeletionTimestamp.IsZero() {
			names = append(names, g.Name)
		}
	}
	slices.Sort(names)
	return names
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}
