package framework_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/probe"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/testenv"
)

func newWidget(ns, name string, spec testapi.WidgetSpec) *testapi.Widget {
	return &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

// TestFinalizer checks that the finalizer is added, that Finalize is retried
// until it reports done, and that the object goes away only then.
func TestFinalizer(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	startManager(t, cfg, ns, testOptions(a))

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	waitWidget(t, c, ns, "w", "the finalizer and Synced=True", func(w *testapi.Widget) bool {
		return slices.Contains(w.Finalizers, framework.DefaultFinalizer) && inSync(w)
	})

	if err := c.Delete(t.Context(), newWidget(ns, "w", testapi.WidgetSpec{})); err != nil {
		t.Fatalf("delete Widget: %v", err)
	}
	testenv.Eventually(t, "Finalize to be retried", func() (bool, string) {
		n := a.finalizes.Load()
		return n >= 3, fmt.Sprintf("%d calls", n)
	})
	w := waitWidget(t, c, ns, "w", "Ready=False/Deleting", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionReady).Reason == framework.ReasonDeleting
	})
	if w.DeletionTimestamp.IsZero() {
		t.Fatal("the Widget has no deletion timestamp")
	}

	a.finalizeDone.Store(true)
	testenv.Eventually(t, "the Widget to be gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w"}, &testapi.Widget{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
}

// TestDependencies checks that a Widget waits, with DependenciesReady=False
// naming the Gadget, until the Gadget it depends on is Ready.
func TestDependencies(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	startManager(t, cfg, ns, testOptions(a))

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1, DependsOn: []string{"dep"}}))
	w := waitWidget(t, c, ns, "w", "DependenciesReady=False", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionDependenciesReady).Status == metav1.ConditionFalse
	})
	dr := condition(w, framework.ConditionDependenciesReady)
	if dr.Reason != framework.ReasonWaitingForDependencies || !strings.Contains(dr.Message, "Gadget dep: not found") {
		t.Errorf("DependenciesReady = %s %q, want %s naming Gadget dep", dr.Reason, dr.Message, framework.ReasonWaitingForDependencies)
	}
	if r := condition(w, framework.ConditionReady); r.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %s, want False while waiting", r.Status)
	}

	dep := &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep"}}
	create(t, c, dep)
	waitWidget(t, c, ns, "w", "the wait to name the not-ready Gadget", func(w *testapi.Widget) bool {
		return strings.Contains(condition(w, framework.ConditionDependenciesReady).Message, "Gadget dep: not")
	})
	time.Sleep(300 * time.Millisecond)
	if got := a.observes.Load(); got != 0 {
		t.Fatalf("Observe was called %d times while a dependency was not ready", got)
	}
	if got := gadgets(t, c, ns); !slices.Equal(got, []string{"dep"}) {
		t.Fatalf("Gadgets = %v before the dependency is ready, want only [dep]", got)
	}

	dep.Status.ObservedGeneration = dep.Generation
	dep.Status.Conditions = []metav1.Condition{{Type: framework.ConditionReady, Status: metav1.ConditionTrue,
		Reason: "Test", LastTransitionTime: metav1.Now(), ObservedGeneration: dep.Generation}}
	if err := c.Status().Update(t.Context(), dep); err != nil {
		t.Fatalf("make the dependency Ready: %v", err)
	}
	waitWidget(t, c, ns, "w", "DependenciesReady=True and Synced=True", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionDependenciesReady).Status == metav1.ConditionTrue && inSync(w)
	})
	if got := gadgets(t, c, ns); !slices.Equal(got, []string{"dep", "w-0"}) {
		t.Errorf("Gadgets = %v, want [dep w-0]", got)
	}
	waitEvent(t, c, ns, framework.ReasonWaitingForDependencies)
	waitEvent(t, c, ns, framework.ReasonDependenciesReady)
}

// waitEvent waits for an Event with reason in ns.
func waitEvent(t *testing.T, c client.Client, ns, reason string) {
	t.Helper()
	testenv.Eventually(t, "an Event "+reason, func() (bool, string) {
		var list eventsv1.EventList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var reasons []string
		for _, e := range list.Items {
			if e.Reason == reason {
				return true, ""
			}
			reasons = append(reasons, e.Reason)
		}
		return false, fmt.Sprintf("reasons %v", reasons)
	})
}

// TestPause checks spec.paused and the paused annotation: a paused Widget
// reports Paused=True and is not acted on until resumed.
func TestPause(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	startManager(t, cfg, ns, testOptions(a))

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)

	for _, pause := range []struct {
		name         string
		pause, clear func(w *testapi.Widget)
	}{
		{"spec", func(w *testapi.Widget) { w.Spec.Paused = true }, func(w *testapi.Widget) { w.Spec.Paused = false }},
		{"annotation", func(w *testapi.Widget) {
			w.Annotations = map[string]string{framework.PausedAnnotation: "true"}
		}, func(w *testapi.Widget) { delete(w.Annotations, framework.PausedAnnotation) }},
	} {
		t.Run(pause.name, func(t *testing.T) {
			update(t, c, ns, "w", pause.pause)
			waitWidget(t, c, ns, "w", "Paused=True", func(w *testapi.Widget) bool {
				return condition(w, framework.ConditionPaused).Status == metav1.ConditionTrue
			})
			before := a.observes.Load()
			want := gadgets(t, c, ns)
			update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Replicas++ })
			time.Sleep(500 * time.Millisecond)
			if got := gadgets(t, c, ns); !slices.Equal(got, want) {
				t.Errorf("Gadgets changed from %v to %v while paused", want, got)
			}
			if got := a.observes.Load(); got != before {
				t.Errorf("Observe ran %d times while paused", got-before)
			}

			update(t, c, ns, "w", pause.clear)
			w := waitWidget(t, c, ns, "w", "Paused=False and Synced=True", func(w *testapi.Widget) bool {
				return condition(w, framework.ConditionPaused).Status == metav1.ConditionFalse && inSync(w)
			})
			if got := len(gadgets(t, c, ns)); got != int(w.Spec.Replicas) {
				t.Errorf("%d Gadgets after resuming, want %d", got, w.Spec.Replicas)
			}
		})
	}
}

// TestOrphans checks that children the Widget no longer wants are deleted,
// and that objects it does not control are left alone.
func TestOrphans(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	startManager(t, cfg, ns, testOptions(a))

	// A Gadget with the Widget's labels but no owner reference.
	create(t, c, &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w-9",
		Labels: standard.Labels("widget", "w", "gadget", "framework-test")}})
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 3}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)
	if got, want := gadgets(t, c, ns), []string{"w-0", "w-1", "w-2", "w-9"}; !slices.Equal(got, want) {
		t.Fatalf("Gadgets = %v, want %v", got, want)
	}
	var g testapi.Gadget
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w-1"}, &g); err != nil {
		t.Fatal(err)
	}
	w := widget(t, c, ns, "w")
	if !metav1.IsControlledBy(&g, w) {
		t.Errorf("Gadget w-1 is not controlled by the Widget: %v", g.OwnerReferences)
	}
	for k, v := range standard.Labels("widget", "w", "gadget", "framework-test") {
		if g.Labels[k] != v {
			t.Errorf("Gadget w-1 label %s = %q, want %q", k, g.Labels[k], v)
		}
	}
	if mf := g.ManagedFields; len(mf) == 0 || mf[0].Manager != framework.FieldOwner || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("Gadget w-1 managed fields = %+v, want an Apply by %q", mf, framework.FieldOwner)
	}

	update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Replicas = 1 })
	testenv.Eventually(t, "the orphans to be deleted", func() (bool, string) {
		got := gadgets(t, c, ns)
		return slices.Equal(got, []string{"w-0", "w-9"}), fmt.Sprintf("Gadgets %v", got)
	})
}

// TestConfigRollout checks that config changes roll onto new immutable
// ConfigMaps, and that old ones are collected once unreferenced, keeping the
// newest revisions.
func TestConfigRollout(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	opts.ConfigRevisions = 2
	startManager(t, cfg, ns, opts)

	config := func(v int) map[string]string { return map[string]string{"app.conf": fmt.Sprintf("version=%d\n", v)} }
	names := make([]string, 6)
	for v := 1; v <= 5; v++ {
		names[v] = standard.ConfigMapName("w", "config", config(v))
		if v == 1 {
			create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Config: config(1)}))
		} else {
			update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Config = config(v) })
		}
		waitWidget(t, c, ns, "w", fmt.Sprintf("config %d rolled out", v), func(w *testapi.Widget) bool {
			return inSync(w) && w.Status.ConfigMap == names[v]
		})
		var d appsv1.Deployment
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w"}, &d); err != nil {
			t.Fatal(err)
		}
		if got := framework.ReferencedConfigMaps(&d.Spec.Template.Spec); !slices.Equal(got, []string{names[v]}) {
			t.Fatalf("the Deployment references %v, want [%s]", got, names[v])
		}
		// The history a StatefulSet of the Widget's would keep: its own
		// revisions do not keep superseded ConfigMaps.
		create(t, c, ownRevision(&d, v))
		var cm corev1.ConfigMap
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names[v]}, &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Immutable == nil || !*cm.Immutable || cm.Data["app.conf"] != config(v)["app.conf"] {
			t.Fatalf("ConfigMap %s is not immutable or has the wrong data: %+v", cm.Name, cm)
		}
		if v == 1 {
			// Pin revision 1 with a StatefulSet the Widget does not own.
			pin := &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pin"},
				Spec: appsv1.StatefulSetSpec{
					Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pin"}},
					Template: deployment("pin", map[string]string{"app": "pin"}, names[1]).Spec.Template,
				},
			}
			create(t, c, pin)
		}
	}
	// Revision 5 is in use, 1 is pinned, 4 and 3 are kept for rollback and
	// 2 is collected although the Deployment's revision 2 names it.
	want := []string{names[1], names[3], names[4], names[5]}
	slices.Sort(want)
	testenv.Eventually(t, "old revisions to be collected", func() (bool, string) {
		var list corev1.ConfigMapList
		if err := c.List(t.Context(), &list, client.InNamespace(ns), client.HasLabels{framework.ConfigLabel}); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, cm := range list.Items {
			if cm.DeletionTimestamp.IsZero() {
				got = append(got, cm.Name)
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprintf("ConfigMaps %v, want %v", got, want)
	})
}

// TestSteadyStateWritesNothing counts the API writes and the Events of the
// manager over many passes of an in-sync Widget with children, a config
// ConfigMap, a dependency and a finished flow: there must be none.
func TestSteadyStateWritesNothing(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	opts.Resync = 20 * time.Millisecond
	m := startManager(t, cfg, ns, opts)

	dep := &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep"}}
	create(t, c, dep)
	dep.Status.Conditions = []metav1.Condition{{Type: framework.ConditionReady, Status: metav1.ConditionTrue,
		Reason: "Test", LastTransitionTime: metav1.Now(), ObservedGeneration: dep.Generation}}
	dep.Status.ObservedGeneration = dep.Generation
	if err := c.Status().Update(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{
		Replicas: 2, DependsOn: []string{"dep"}, Config: map[string]string{"k": "v"}, Flow: "steps", FlowToken: "1",
	}))
	a.gate.Store(true)
	waitWidget(t, c, ns, "w", "the flow to succeed and Synced=True", func(w *testapi.Widget) bool {
		return inSync(w) && w.Status.Operation != nil && w.Status.Operation.Phase == commonv1.PhaseSucceeded
	})

	// Let the cache catch up with the last writes: at most one no-op apply
	// per child may follow a write the cache has not seen yet.
	time.Sleep(500 * time.Millisecond)
	m.writes.reset()
	before, events := a.observes.Load(), m.events.n.Load()
	time.Sleep(2 * time.Second)
	passes := a.observes.Load() - before
	if passes < 20 {
		t.Fatalf("only %d passes in 2s with a 20ms resync; the test proves nothing", passes)
	}
	if n := m.writes.n.Load(); n != 0 {
		t.Fatalf("%d API writes over %d steady-state passes, want 0:\n%s", n, passes, m.writes)
	}
	if n := m.events.n.Load() - events; n != 0 {
		t.Fatalf("%d Events over %d steady-state passes, want 0", n, passes)
	}
	t.Logf("No API writes and no Events over %d steady-state passes", passes)
}

// TestInvalidSpecIsTerminal checks that an invalid spec sets a terminal
// condition and is not retried until the spec changes.
func TestInvalidSpecIsTerminal(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	opts.Resync = 20 * time.Millisecond
	startManager(t, cfg, ns, opts)

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: -1}))
	w := waitWidget(t, c, ns, "w", "Synced=False/InvalidSpec", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionSynced).Reason == framework.ReasonInvalidSpec
	})
	if r := condition(w, framework.ConditionReady); r.Status != metav1.ConditionFalse || r.Reason != framework.ReasonInvalidSpec ||
		!strings.Contains(r.Message, "spec.replicas is -1") {
		t.Errorf("Ready = %+v, want False/InvalidSpec with the error", r)
	}
	before := a.observes.Load()
	// A change that is not a spec change triggers a pass, but no retry.
	update(t, c, ns, "w", func(w *testapi.Widget) { w.Annotations = map[string]string{"touched": "yes"} })
	time.Sleep(time.Second)
	if got := a.observes.Load(); got != before {
		t.Fatalf("Observe ran %d more times on an invalid spec", got-before)
	}
	waitEvent(t, c, ns, framework.ReasonInvalidSpec)

	update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Replicas = 1 })
	waitWidget(t, c, ns, "w", "Synced=True after fixing the spec", inSync)
}

// TestFlowResumesInNewManager stops the manager while a flow waits in its
// second step, starts a new manager, and checks that the new one resumes at
// that step and that every step completes exactly once.
func TestFlowResumesInNewManager(t *testing.T) {
	cfg, c, ns := setup(t)
	log := newFlowLog()
	first := newActor("first", log)
	m1 := startManager(t, cfg, ns, testOptions(first))

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Flow: "steps", FlowToken: "1"}))
	w := waitWidget(t, c, ns, "w", "the flow to wait in step 2", func(w *testapi.Widget) bool {
		op := w.Status.Operation
		return op != nil && op.Step == "wait" && op.Progress == "2/3" && op.Phase == commonv1.PhaseRunning
	})
	if r := condition(w, framework.ConditionSynced); r.Reason != framework.ReasonOperationRunning {
		t.Errorf("Synced reason = %s, want %s", r.Reason, framework.ReasonOperationRunning)
	}
	testenv.Eventually(t, "the first manager to poll step 2", func() (bool, string) {
		_, runs := log.snapshot()
		return slices.Contains(runs["first"], "wait"), fmt.Sprintf("runs %v", runs)
	})
	m1.stop()

	second := newActor("second", log)
	startManager(t, cfg, ns, testOptions(second))
	testenv.Eventually(t, "the second manager to run a step", func() (bool, string) {
		_, runs := log.snapshot()
		return len(runs["second"]) > 0, fmt.Sprintf("runs %v", runs)
	})
	if _, runs := log.snapshot(); runs["second"][0] != "wait" {
		t.Fatalf("the second manager started at step %q, want %q (runs %v)", runs["second"][0], "wait", runs)
	}
	second.gate.Store(true)
	w = waitWidget(t, c, ns, "w", "the flow to succeed", func(w *testapi.Widget) bool {
		return w.Status.Operation != nil && w.Status.Operation.Phase == commonv1.PhaseSucceeded && inSync(w)
	})
	completed, runs := log.snapshot()
	for _, step := range []string{"one", "wait", "three"} {
		if completed[step] != 1 {
			t.Errorf("step %s completed %d times, want once (runs %v)", step, completed[step], runs)
		}
	}
	if w.Status.Operation.FinishedAt == nil || w.Status.Operation.Progress != "3/3" {
		t.Errorf("finished operation = %+v", w.Status.Operation)
	}
}

// TestDeclareRunsDuringFlows changes the spec while a flow waits in a
// step: the declarative phase applies the new children at once, without
// waiting for the flow (which may take an hour) to end.
func TestDeclareRunsDuringFlows(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	startManager(t, cfg, ns, testOptions(a))

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1, Flow: "steps", FlowToken: "1"}))
	waitWidget(t, c, ns, "w", "the flow to wait in step 2", func(w *testapi.Widget) bool {
		op := w.Status.Operation
		return op != nil && op.Step == "wait" && op.Phase == commonv1.PhaseRunning
	})
	update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Replicas = 3 })
	testenv.Eventually(t, "three gadgets while the flow waits", func() (bool, string) {
		names := gadgets(t, c, ns)
		return len(names) == 3, fmt.Sprintf("gadgets %v", names)
	})
	// The gadgets exist before the pass that applied them writes status.
	w := waitWidget(t, c, ns, "w", "Declared says 3 gadgets", func(w *testapi.Widget) bool {
		return condition(w, "Declared").Message == "3 gadgets"
	})
	if op := w.Status.Operation; op.Step != "wait" || op.Phase != commonv1.PhaseRunning {
		t.Fatalf("operation %+v, want still waiting in step wait", op)
	}
	a.gate.Store(true)
	waitWidget(t, c, ns, "w", "the flow to succeed", func(w *testapi.Widget) bool {
		return w.Status.Operation.Phase == commonv1.PhaseSucceeded && inSync(w)
	})
}

// TestFlowRescue fails a flow by running a step out of attempts, then
// rescues it with each of the annotation's verbs.
func TestFlowRescue(t *testing.T) {
	cfg, c, ns := setup(t)
	log := newFlowLog()
	a := newActor("a", log)
	startManager(t, cfg, ns, testOptions(a))

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)

	runToFailure := func(t *testing.T, token string) {
		t.Helper()
		a.failing.Store(true)
		update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Flow, w.Spec.FlowToken = "flaky", token })
		w := waitWidget(t, c, ns, "w", "the flow to fail", func(w *testapi.Widget) bool {
			op := w.Status.Operation
			return op != nil && op.Trigger == token && op.Phase == commonv1.PhaseFailed
		})
		op := w.Status.Operation
		if op.Step != "flaky" || op.Attempts != 3 || !strings.Contains(op.LastError, "flaky step fails") {
			t.Fatalf("failed operation = %+v, want step flaky after 3 attempts", op)
		}
		if f := condition(w, framework.ConditionOperationFailed); f.Status != metav1.ConditionTrue {
			t.Fatalf("OperationFailed = %+v, want True", f)
		}
		if s := condition(w, framework.ConditionSynced); s.Reason != framework.ReasonOperationFailed {
			t.Fatalf("Synced = %+v, want reason %s", s, framework.ReasonOperationFailed)
		}
		// The declarative phase keeps running while the flow waits for a
		// rescue: a child deleted meanwhile comes back.
		before := a.declares.Load()
		if err := c.Delete(t.Context(), &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "gadget w-0 re-applied while the flow is Failed", func() (bool, string) {
			names := gadgets(t, c, ns)
			return slices.Contains(names, "w-0") && a.declares.Load() > before, fmt.Sprintf("gadgets %v", names)
		})
	}
	rescue := func(t *testing.T, verb commonv1.Rescue) *testapi.Widget {
		t.Helper()
		update(t, c, ns, "w", func(w *testapi.Widget) {
			w.Annotations = map[string]string{commonv1.RescueAnnotation: string(verb)}
		})
		return waitWidget(t, c, ns, "w", "the rescue to be consumed and the flow to end", func(w *testapi.Widget) bool {
			_, pending := w.Annotations[commonv1.RescueAnnotation]
			return !pending && !w.Status.Operation.Phase.Active() && inSync(w)
		})
	}

	t.Run("retry", func(t *testing.T) {
		runToFailure(t, "retry")
		a.failing.Store(false)
		w := rescue(t, commonv1.RescueRetry)
		if op := w.Status.Operation; op.Phase != commonv1.PhaseSucceeded || len(op.Skipped) != 0 {
			t.Errorf("operation after retry = %+v, want Succeeded", op)
		}
		if f := condition(w, framework.ConditionOperationFailed); f.Status != metav1.ConditionFalse {
			t.Errorf("OperationFailed = %+v, want False", f)
		}
		waitEvent(t, c, ns, framework.ReasonOperationRescued)
	})
	t.Run("skip", func(t *testing.T) {
		before, _ := log.snapshot()
		runToFailure(t, "skip")
		w := rescue(t, commonv1.RescueSkip)
		if op := w.Status.Operation; op.Phase != commonv1.PhaseSucceeded || !slices.Equal(op.Skipped, []string{"flaky"}) {
			t.Errorf("operation after skip = %+v, want Succeeded with flaky skipped", op)
		}
		after, _ := log.snapshot()
		if after["flaky"] != before["flaky"] || after["c"] != before["c"]+1 {
			t.Errorf("completions before %v after %v: want flaky skipped and c run once", before, after)
		}
	})
	t.Run("abort", func(t *testing.T) {
		before, _ := log.snapshot()
		runToFailure(t, "abort")
		w := rescue(t, commonv1.RescueAbort)
		if op := w.Status.Operation; op.Phase != commonv1.PhaseAborted || op.FinishedAt == nil {
			t.Errorf("operation after abort = %+v, want Aborted", op)
		}
		if f := condition(w, framework.ConditionOperationFailed); f.Status != metav1.ConditionFalse ||
			f.Reason != framework.ReasonOperationAborted {
			t.Errorf("OperationFailed = %+v, want False/%s", f, framework.ReasonOperationAborted)
		}
		if after, _ := log.snapshot(); after["c"] != before["c"] {
			t.Errorf("step c ran after the abort")
		}
	})
}

// TestHungProbeDoesNotDelayThePass runs a Widget whose actor probes a server
// that never answers: each pass is held up at most by the probe deadline, and
// spec changes are still acted on promptly.
func TestHungProbeDoesNotDelayThePass(t *testing.T) {
	cfg, c, ns := setup(t)

	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	const deadline = 200 * time.Millisecond
	a := newActor("a", newFlowLog())
	a.probeURL = srv.URL
	a.collector = probe.NewCollector[int](probe.Options[int]{Kind: "Widget", CallTimeout: time.Minute, Deadline: deadline})
	opts := testOptions(a)
	opts.Resync = 50 * time.Millisecond
	startManager(t, cfg, ns, opts)

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)
	start := time.Now()
	update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Replicas = 2 })
	waitWidget(t, c, ns, "w", "the scale-out to be reconciled", func(w *testapi.Widget) bool {
		return inSync(w) && len(gadgets(t, c, ns)) == 2
	})
	t.Logf("Scale-out reconciled in %s with a hung probe target", time.Since(start).Round(time.Millisecond))
	if slowest := time.Duration(a.slowestObserve.Load()); slowest > deadline+500*time.Millisecond {
		t.Errorf("the slowest Observe took %s, want at most the probe deadline %s plus slack", slowest, deadline)
	}
}

// TestChangedProbeAnswerStartsAPass runs a Widget whose actor reads the
// answers of background probes, without any resync: when the server's
// answer changes, the collector's Notify enqueues the Widget through the
// controller's Trigger, and the pass that follows reads the new answer.
func TestChangedProbeAnswerStartsAPass(t *testing.T) {
	cfg, c, ns := setup(t)

	var answer atomic.Int32
	answer.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(answer.Load()))
	}))
	defer srv.Close()

	a := newActor("a", newFlowLog())
	a.probeURL = srv.URL
	a.watchProbes = true
	trigger := framework.NewTrigger()
	a.collector = probe.NewCollector(probe.Options[int]{Kind: "Widget", Interval: 50 * time.Millisecond,
		Notify: trigger.Enqueue})
	defer a.collector.Close()
	opts := testOptions(a)
	opts.Trigger = trigger
	startManager(t, cfg, ns, opts)

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	testenv.Eventually(t, "the first answer to reach a pass", func() (bool, string) {
		return a.lastProbe.Load() == http.StatusOK, fmt.Sprint(a.lastProbe.Load())
	})
	answer.Store(http.StatusServiceUnavailable)
	observes := a.observes.Load()
	testenv.Eventually(t, "the changed answer to reach a pass", func() (bool, string) {
		return a.lastProbe.Load() == http.StatusServiceUnavailable, fmt.Sprint(a.lastProbe.Load())
	})
	// Polled every 50ms, the same answer again starts no pass.
	time.Sleep(500 * time.Millisecond)
	if n := a.observes.Load() - observes; n > 3 {
		t.Errorf("%d passes after one change of answer, want about 1", n)
	}
}

// ownRevision returns a ControllerRevision of d's template, numbered n and
// controlled by d, as a StatefulSet's controller records its history.
func ownRevision(d *appsv1.Deployment, n int) *appsv1.ControllerRevision {
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": d.Spec.Template}})
	if err != nil {
		panic(err)
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: d.Namespace, Name: fmt.Sprintf("%s-%d", d.Name, n),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Data:     k8sruntime.RawExtension{Raw: data},
		Revision: int64(n),
	}
}
