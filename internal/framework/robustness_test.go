package framework_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	testapi "github.com/stewardhq/steward/internal/framework/internal/testapi/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
	"github.com/stewardhq/steward/internal/testenv"
)

// statusWrites counts the status writes the manager made.
func statusWrites(m *running) int {
	return strings.Count(m.writes.String(), "status-patch")
}

// touch changes an annotation of the Widget: a pass without a spec change.
func touch(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	update(t, c, ns, name, func(w *testapi.Widget) {
		metav1.SetMetaDataAnnotation(&w.ObjectMeta, "test/touched", time.Now().Format(time.RFC3339Nano))
	})
}

// TestErrorsBackOff checks each error class of Observe: a transient error
// whose text changes with every attempt backs off through the rate limiter
// (its status is written once, not on every attempt, so the framework's own
// write does not retrigger the pass), a terminal one is not retried, and a
// conflict requeues quietly without touching status.
func TestErrorsBackOff(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	m := startManager(t, cfg, ns, testOptions(a))
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)
	time.Sleep(300 * time.Millisecond)

	t.Run("transient", func(t *testing.T) {
		a.failObserve.Store(failTransient)
		m.writes.reset()
		before, beforeEvents := a.observes.Load(), m.events.n.Load()
		touch(t, c, ns, "w")
		w := waitWidget(t, c, ns, "w", "Synced=False/ReconcileError", func(w *testapi.Widget) bool {
			return condition(w, framework.ConditionSynced).Reason == framework.ReasonReconcileError
		})
		if msg := condition(w, framework.ConditionSynced).Message; !strings.Contains(msg, "backend unreachable at attempt") {
			t.Errorf("Synced message = %q, want the error", msg)
		}
		time.Sleep(3 * time.Second)
		passes := a.observes.Load() - before
		// The default rate limiter waits 5ms, 10ms, 20ms, ...: about 10
		// attempts in 3s; a pass retriggered by its own write makes hundreds.
		if passes < 3 || passes > 20 {
			t.Errorf("%d failing passes in 3s, want a few spaced by exponential backoff", passes)
		}
		if n := statusWrites(m); n != 1 {
			t.Errorf("%d status writes for one failure streak, want 1:\n%s", n, m.writes)
		}
		if n := m.events.n.Load() - beforeEvents; n != 1 {
			t.Errorf("%d Events for one failure streak, want 1 (Synced turning False)", n)
		}
		t.Logf("%d failing passes in 3s", passes)
	})
	t.Run("terminal", func(t *testing.T) {
		a.failObserve.Store(failTerminal)
		touch(t, c, ns, "w")
		waitWidget(t, c, ns, "w", "Synced=False/TerminalError", func(w *testapi.Widget) bool {
			return condition(w, framework.ConditionSynced).Reason == framework.ReasonTerminalError
		})
		before := a.observes.Load()
		time.Sleep(time.Second)
		// At most the pass its own status write triggered.
		if passes := a.observes.Load() - before; passes > 1 {
			t.Errorf("%d passes after a terminal error, want no retry", passes)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		a.failObserve.Store(failConflict)
		m.writes.reset()
		touch(t, c, ns, "w")
		before := a.observes.Load()
		time.Sleep(time.Second)
		// Requeued every 100ms, quietly: no status write.
		if passes := a.observes.Load() - before; passes < 4 {
			t.Errorf("%d passes in 1s after conflicts, want a quick requeue", passes)
		}
		if n := statusWrites(m); n != 0 {
			t.Errorf("%d status writes after conflicts, want none:\n%s", n, m.writes)
		}
		if s := condition(widget(t, c, ns, "w"), framework.ConditionSynced); s.Reason != framework.ReasonTerminalError {
			t.Errorf("Synced = %+v, want it untouched by conflicts", s)
		}
	})
	a.failObserve.Store(failNone)
	waitWidget(t, c, ns, "w", "Synced=True after recovering", inSync)
}

// TestFlowInterrupt checks that an actor can interrupt a running flow (a
// scale-out canceling a drain): the flow ends Aborted with the reason, an
// Event records it, and Observe runs again.
func TestFlowInterrupt(t *testing.T) {
	cfg, c, ns := setup(t)
	log := newFlowLog()
	a := newActor("a", log)
	startManager(t, cfg, ns, testOptions(a))

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Flow: "steps", FlowToken: "1"}))
	waitWidget(t, c, ns, "w", "the flow to wait in step 2", func(w *testapi.Widget) bool {
		op := w.Status.Operation
		return op != nil && op.Step == "wait" && op.Phase == commonv1.PhaseRunning
	})
	before := a.observes.Load()
	a.interrupt.Store(true)
	w := waitWidget(t, c, ns, "w", "the flow to be interrupted and Synced=True", func(w *testapi.Widget) bool {
		op := w.Status.Operation
		return op != nil && op.Phase == commonv1.PhaseAborted && inSync(w)
	})
	if op := w.Status.Operation; op.Step != "wait" || !strings.Contains(op.Message, "scale-out arrived") || op.FinishedAt == nil {
		t.Errorf("interrupted operation = %+v, want aborted at step wait with the reason", op)
	}
	if f := condition(w, framework.ConditionOperationFailed); f.Status != metav1.ConditionFalse ||
		f.Reason != framework.ReasonOperationAborted || !strings.Contains(f.Message, "scale-out arrived") {
		t.Errorf("OperationFailed = %+v, want False/%s with the reason", f, framework.ReasonOperationAborted)
	}
	if a.observes.Load() == before {
		t.Error("Observe did not run after the interruption")
	}
	if completed, _ := log.snapshot(); completed["three"] != 0 {
		t.Errorf("step three ran after the interruption")
	}
	waitEvent(t, c, ns, framework.ReasonOperationInterrupted)
}

// TestRescueBeforeGates checks that a rescue acts even when the object
// would not otherwise get past the dependency or pause checks.
func TestRescueBeforeGates(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	startManager(t, cfg, ns, testOptions(a))
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)

	for _, gate := range []struct {
		name  string
		close func(w *testapi.Widget)
		shut  func(w *testapi.Widget) bool
		open  func(w *testapi.Widget)
	}{
		{"dependency missing", func(w *testapi.Widget) { w.Spec.DependsOn = []string{"missing"} },
			func(w *testapi.Widget) bool {
				return condition(w, framework.ConditionDependenciesReady).Status == metav1.ConditionFalse
			},
			func(w *testapi.Widget) { w.Spec.DependsOn = nil }},
		{"paused", func(w *testapi.Widget) { w.Spec.Paused = true },
			func(w *testapi.Widget) bool {
				return condition(w, framework.ConditionPaused).Status == metav1.ConditionTrue
			},
			func(w *testapi.Widget) { w.Spec.Paused = false }},
	} {
		t.Run(gate.name, func(t *testing.T) {
			a.failing.Store(true)
			update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Flow, w.Spec.FlowToken = "flaky", gate.name })
			waitWidget(t, c, ns, "w", "the flow to fail", func(w *testapi.Widget) bool {
				op := w.Status.Operation
				return op != nil && op.Trigger == gate.name && op.Phase == commonv1.PhaseFailed
			})
			update(t, c, ns, "w", gate.close)
			waitWidget(t, c, ns, "w", "the gate to close", gate.shut)
			update(t, c, ns, "w", func(w *testapi.Widget) {
				metav1.SetMetaDataAnnotation(&w.ObjectMeta, commonv1.RescueAnnotation, string(commonv1.RescueAbort))
			})
			w := waitWidget(t, c, ns, "w", "the abort to apply behind the gate", func(w *testapi.Widget) bool {
				_, pending := w.Annotations[commonv1.RescueAnnotation]
				return !pending && w.Status.Operation.Phase == commonv1.PhaseAborted
			})
			if !gate.shut(w) {
				t.Errorf("the gate opened: %+v", w.Status.Conditions)
			}
			if f := condition(w, framework.ConditionOperationFailed); f.Status != metav1.ConditionFalse {
				t.Errorf("OperationFailed = %+v after the abort, want False", f)
			}
			update(t, c, ns, "w", gate.open)
			waitWidget(t, c, ns, "w", "Synced=True", inSync)
		})
	}
}

// TestFlowStepsCompleteOnce runs flows while the Widget's children change
// every few milliseconds, each change triggering a pass that may read the
// Widget from a cache that has not seen the last step's status write: no
// step may complete twice.
func TestFlowStepsCompleteOnce(t *testing.T) {
	cfg, c, ns := setup(t)
	log := newFlowLog()
	a := newActor("a", log)
	a.gate.Store(true)
	startManager(t, cfg, ns, testOptions(a))
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { churn(t, c, ns, "w-0", stop) })
	const flows = 3
	for i := range flows {
		token := fmt.Sprint(i)
		update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Flow, w.Spec.FlowToken = "steps", token })
		waitWidget(t, c, ns, "w", "flow "+token+" to succeed", func(w *testapi.Widget) bool {
			op := w.Status.Operation
			return op != nil && op.Trigger == token && op.Phase == commonv1.PhaseSucceeded
		})
	}
	close(stop)
	wg.Wait()
	completed, runs := log.snapshot()
	for _, step := range []string{"one", "wait", "three"} {
		if completed[step] != flows {
			t.Errorf("step %s completed %d times over %d flows, want once per flow (runs %v)", step, completed[step], flows, runs)
		}
	}
}

// churn edits a Gadget every few milliseconds until stop closes.
func churn(t *testing.T, c client.Client, ns, name string, stop <-chan struct{}) {
	g := &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		patch := fmt.Appendf(nil, `{"spec":{"note":"%d"}}`, i)
		if err := c.Patch(t.Context(), g, client.RawPatch(types.MergePatchType, patch)); err != nil && t.Context().Err() == nil {
			t.Errorf("edit Gadget %s: %v", name, err)
			return
		}
	}
}

// TestReapplyAfterForeignEdit checks that a child someone else changed is
// applied again, restoring the fields the framework owns.
func TestReapplyAfterForeignEdit(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	m := startManager(t, cfg, ns, testOptions(a))
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 2}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)
	time.Sleep(300 * time.Millisecond)
	m.writes.reset()

	g := &testapi.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w-1"}}
	if err := c.Patch(t.Context(), g, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"index":99}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Gadget to be applied again", func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(g), g); err != nil {
			return false, err.Error()
		}
		return g.Spec.Index == 1, fmt.Sprintf("index %d", g.Spec.Index)
	})
	if log := m.writes.String(); !strings.Contains(log, "apply") {
		t.Errorf("no apply after the edit; writes:\n%s", log)
	}
}

// TestDeleteWhilePaused checks that deleting a paused object still runs
// Finalize and removes the finalizer: pause stops reconciling, not cleanup.
func TestDeleteWhilePaused(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	startManager(t, cfg, ns, testOptions(a))
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 1}))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)
	update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Paused = true })
	waitWidget(t, c, ns, "w", "Paused=True", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionPaused).Status == metav1.ConditionTrue
	})

	a.finalizeDone.Store(true)
	if err := c.Delete(t.Context(), newWidget(ns, "w", testapi.WidgetSpec{})); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the paused Widget to be finalized and gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w"}, &testapi.Widget{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
	if a.finalizes.Load() == 0 {
		t.Error("Finalize did not run for a paused Widget")
	}
}

// configMapNames returns the sorted names of the config ConfigMaps in ns
// that are not being deleted.
func configMapNames(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var list corev1.ConfigMapList
	if err := c.List(t.Context(), &list, client.InNamespace(ns), client.HasLabels{framework.ConfigLabel}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		if cm.DeletionTimestamp.IsZero() {
			names = append(names, cm.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestConfigRollbackIsNewest rolls config A, then B, then back to A, then C
// with one revision kept for rollback: A, used most recently, is kept and
// B is collected.
func TestConfigRollbackIsNewest(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	opts := testOptions(a)
	opts.ConfigRevisions = 1
	startManager(t, cfg, ns, opts)

	conf := func(v string) map[string]string { return map[string]string{"app.conf": v} }
	name := func(v string) string { return standard.ConfigMapName("w", "config", conf(v)) }
	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Config: conf("A")}))
	for _, v := range []string{"A", "B", "A", "C"} {
		update(t, c, ns, "w", func(w *testapi.Widget) { w.Spec.Config = conf(v) })
		waitWidget(t, c, ns, "w", "config "+v+" rolled out", func(w *testapi.Widget) bool {
			return inSync(w) && w.Status.ConfigMap == name(v)
		})
	}
	want := []string{name("A"), name("C")}
	slices.Sort(want)
	testenv.Eventually(t, "B to be collected", func() (bool, string) {
		got := configMapNames(t, c, ns)
		return slices.Equal(got, want), fmt.Sprintf("ConfigMaps %v, want %v", got, want)
	})
}

// TestConfigMapOfPreviousIncarnation deletes a Widget and creates one of the
// same name while the old config ConfigMap is still there (envtest runs no
// garbage collector): the new Widget must not adopt it, and reports why
// until it is gone.
func TestConfigMapOfPreviousIncarnation(t *testing.T) {
	cfg, c, ns := setup(t)
	a := newActor("a", newFlowLog())
	a.finalizeDone.Store(true)
	startManager(t, cfg, ns, testOptions(a))

	spec := testapi.WidgetSpec{Config: map[string]string{"k": "v"}}
	create(t, c, newWidget(ns, "w", spec))
	waitWidget(t, c, ns, "w", "Synced=True", inSync)
	if err := c.Delete(t.Context(), newWidget(ns, "w", spec)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Widget to be gone", func() (bool, string) {
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "w"}, &testapi.Widget{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})

	create(t, c, newWidget(ns, "w", spec))
	w := waitWidget(t, c, ns, "w", "Synced=False naming the foreign ConfigMap", func(w *testapi.Widget) bool {
		return condition(w, framework.ConditionSynced).Reason == framework.ReasonReconcileError
	})
	cmName := standard.ConfigMapName("w", "config", spec.Config)
	if msg := condition(w, framework.ConditionSynced).Message; !strings.Contains(msg, cmName) || !strings.Contains(msg, "by a deleted Widget of the same name") {
		t.Errorf("Synced message = %q, want it to name %s and its owner", msg, cmName)
	}
	// The garbage collector's part.
	if err := c.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cmName}}); err != nil {
		t.Fatal(err)
	}
	w = waitWidget(t, c, ns, "w", "Synced=True with a ConfigMap of its own", inSync)
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: cmName}, &cm); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&cm, w) {
		t.Errorf("ConfigMap %s is controlled by %v, want the new Widget %s", cmName, cm.OwnerReferences, w.UID)
	}
}

// TestExample runs the controllers of example_test.go: the restart flow
// waits for the Gadgets, which the Gadget controller makes Ready.
func TestExample(t *testing.T) {
	cfg, c, ns := setup(t)
	startManagerWith(t, cfg, ns, setupExample)

	create(t, c, newWidget(ns, "w", testapi.WidgetSpec{Replicas: 2, FlowToken: "1"}))
	waitWidget(t, c, ns, "w", "the restart flow to succeed and Synced=True", func(w *testapi.Widget) bool {
		op := w.Status.Operation
		return op != nil && op.Name == "restart" && op.Phase == commonv1.PhaseSucceeded && inSync(w)
	})
	if got := gadgets(t, c, ns); !slices.Equal(got, []string{"w-0", "w-1"}) {
		t.Errorf("Gadgets = %v, want [w-0 w-1]", got)
	}
	waitEvent(t, c, ns, "Restarting")
}
