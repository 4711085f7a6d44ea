package matrixone_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone"
	"github.com/stewardhq/steward/internal/matrixone/hakeeper"
	"github.com/stewardhq/steward/internal/matrixone/mosql"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// fakeAdmin stands in for MatrixOne's SQL in envtests, where no CN runs:
// a work state set goes into the test's view of HAKeeper, as HAKeeper
// would record it, and each CN holds the sessions the test says.
type fakeAdmin struct {
	mu       sync.Mutex
	view     *hakeeperView
	sessions map[string]int // by store UUID
	password string         // the password of every call
	calls    []string
	// probe answers the log pods' probes, the lock service handshake
	// included.
	probe *fakeProbe
	// lag is how long HAKeeper's view takes to show a work state set
	// (the probes' answers lag behind mo_ctl).
	lag time.Duration
}

func (a *fakeAdmin) SetWorkState(_ context.Context, t mosql.Target, uuid string, state mosql.WorkState) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.password = t.Password
	a.calls = append(a.calls, fmt.Sprintf("%s:%d", uuid, state))
	if a.view == nil {
		return fmt.Errorf("no HAKeeper")
	}
	record := func() {
		for i := range a.view.CNStores {
			if a.view.CNStores[i].UUID == uuid {
				a.view.CNStores[i].WorkState = map[mosql.WorkState]string{mosql.Working: wire.WorkStateWorking, mosql.Draining: wire.WorkStateDraining}[state]
			}
		}
		a.view.publish()
	}
	if a.lag > 0 {
		time.AfterFunc(a.lag, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			record()
		})
		return nil
	}
	record()
	return nil
}

func (a *fakeAdmin) setLag(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lag = d
}

func (a *fakeAdmin) Sessions(_ context.Context, t mosql.Target, uuid string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.password = t.Password
	return a.sessions[uuid], nil
}

func (a *fakeAdmin) GlobalCheckpoint(_ context.Context, t mosql.Target) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.password = t.Password
	a.calls = append(a.calls, "globalcheckpoint@"+t.Addr)
	return nil
}

func (a *fakeAdmin) Serving(_ context.Context, t mosql.Target) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.password = t.Password
	return nil
}

func (a *fakeAdmin) setSessions(uuid string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[uuid] = n
}

// edit changes the view under the lock and publishes it.
func (a *fakeAdmin) edit(f func(v *hakeeper.View)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.view.View)
	a.view.publish()
}

func (a *fakeAdmin) setView(v *hakeeperView) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.view = v
}

// workState is the CN's work state in the view, read under the lock.
func (a *fakeAdmin) workState(uuid string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.view.CNStores {
		if s.UUID == uuid {
			return s.WorkState
		}
	}
	return ""
}

// workStateCalls counts the work states set to state for the CN uuid.
func (a *fakeAdmin) workStateCalls(uuid string, state mosql.WorkState) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c == fmt.Sprintf("%s:%d", uuid, state) {
			n++
		}
	}
	return n
}

func (a *fakeAdmin) lastPassword() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.password
}

// readyCNs runs a LogSet, a TN and the CNSet "cn" of replicas CNs (spec
// changed by edit), and waits until the CNSet is Ready.
func readyCNs(t *testing.T, replicas int32, timeout time.Duration) (client.Client, string, *fakeAdmin, *hakeeperView) {
	t.Helper()
	return readyCNsWith(t, replicas, timeout, func(*matrixone.Options) {})
}

// readyCNsWith is readyCNs with the controllers' options changed by opts.
func readyCNsWith(t *testing.T, replicas int32, timeout time.Duration, opts func(*matrixone.Options)) (client.Client, string, *fakeAdmin, *hakeeperView) {
	t.Helper()
	admin := &fakeAdmin{sessions: map[string]int{}}
	c, ns, probe := setupWith(t, func(o *matrixone.Options) { o.Admin = admin; o.DrainSettle = time.Second; opts(o) })
	admin.probe = probe
	view := readyLogSet(t, c, ns, probe)
	tn := &mov1.TNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tn"}, Spec: mov1.TNSetSpec{LogSet: "log"}}
	cn := &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cn"},
		Spec: mov1.CNSetSpec{LogSet: "log", Replicas: ptr.To(replicas), DrainTimeout: &metav1.Duration{Duration: timeout}}}
	for _, obj := range []client.Object{tn, cn} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	tnSts := &appsv1.StatefulSet{}
	eventually(t, "the TN's StatefulSet", func() (bool, string) { return get(t, c, ns, "tn", tnSts), "not yet" })
	runPods(t, c, tnSts, "t1")
	view.TNStores = []wire.TNStore{{UUID: wire.StoreID(ns, "tn-0"), State: wire.StoreUp}}
	view.publish()
	cnSts := &appsv1.StatefulSet{}
	eventually(t, "the CNs' StatefulSet", func() (bool, string) { return get(t, c, ns, "cn", cnSts), "not yet" })
	runPods(t, c, cnSts, "c1")
	for i := range int(replicas) {
		view.CNStores = append(view.CNStores, wire.CNStore{UUID: wire.StoreID(ns, fmt.Sprintf("cn-%d", i)),
			State: wire.StoreUp, WorkState: wire.WorkStateWorking})
	}
	view.publish()
	admin.setView(view)
	eventually(t, "the CNSet Ready", func() (bool, string) {
		got := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	return c, ns, admin, view
}

// scaleCNs sets the CNSet's replicas.
func scaleCNs(t *testing.T, c client.Client, ns string, replicas int32) {
	t.Helper()
	testenv.Update(t, c, &mov1.CNSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cn"}},
		func(cn *mov1.CNSet) { cn.Spec.Replicas = ptr.To(replicas) })
}

func stsReplicas(t *testing.T, c client.Client, ns string) int32 {
	return *get2(t, c, ns, "cn", &appsv1.StatefulSet{}).Spec.Replicas
}

// releasePods plays the StatefulSet controller of the set name: it
// deletes the pods at or above its replicas, and observes its generation.
func releasePods(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	sts := get2(t, c, ns, name, &appsv1.StatefulSet{})
	sts.Status.ObservedGeneration, sts.Status.Replicas, sts.Status.ReadyReplicas = sts.Generation, *sts.Spec.Replicas, *sts.Spec.Replicas
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	for i := int(*sts.Spec.Replicas); i < int(*sts.Spec.Replicas)+8; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i)}}
		if err := client.IgnoreNotFound(c.Delete(t.Context(), pod)); err != nil {
			t.Fatal(err)
		}
	}
}

// operation is obj's status.operation, "none" when it has none, for
// messages.
func operation(obj framework.Object) string {
	op := obj.StatusCore().Operation
	if op == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s at %s (trigger %q, skipped %v, held %v): %s %s", op.Name, op.Phase, op.Step, op.Trigger,
		op.Skipped, op.Held, op.LastError, op.Message)
}

// rescue sets the rescue annotation on obj to verb.
func rescue(t *testing.T, c client.Client, obj client.Object, verb commonv1.Rescue) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, commonv1.RescueAnnotation, verb)
	if err := c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// cnSet is the CNSet "cn".
func cnSet(t *testing.T, c client.Client, ns string) *mov1.CNSet {
	t.Helper()
	return get2(t, c, ns, "cn", &mov1.CNSet{})
}

// inStep waits until obj's operation is flow, running step.
func inStep(t *testing.T, what string, obj func() framework.Object, flow, step string) *commonv1.Operation {
	t.Helper()
	var op *commonv1.Operation
	eventually(t, what, func() (bool, string) {
		o := obj()
		op = o.StatusCore().Operation
		return op != nil && op.Name == flow && op.Phase == commonv1.PhaseRunning && op.Step == step, operation(o)
	})
	return op
}

// succeeded waits until obj's operation is flow, succeeded.
func succeeded(t *testing.T, what string, obj func() framework.Object, flow string) *commonv1.Operation {
	t.Helper()
	var op *commonv1.Operation
	eventually(t, what, func() (bool, string) {
		o := obj()
		op = o.StatusCore().Operation
		return op != nil && op.Name == flow && op.Phase == commonv1.PhaseSucceeded, operation(o)
	})
	return op
}

func TestCNScaleInDrainsFirst(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 3, time.Hour)
	cn1, cn2 := wire.StoreID(ns, "cn-1"), wire.StoreID(ns, "cn-2")
	admin.setSessions(cn1, 1)
	admin.setSessions(cn2, 2)
	scaleCNs(t, c, ns, 1)

	eventually(t, "cn-1 and cn-2 draining", func() (bool, string) {
		return admin.workState(cn1) == wire.WorkStateDraining && admin.workState(cn2) == wire.WorkStateDraining,
			admin.workState(cn1) + " " + admin.workState(cn2)
	})
	cn := func() framework.Object { return cnSet(t, c, ns) }
	if op := inStep(t, "the scale-in draining", cn, "scale-in", "drain-leaving-cns"); op.Trigger != "replicas 3 to 1" {
		t.Errorf("trigger %q", op.Trigger)
	}
	for _, name := range []string{"cn-1", "cn-2"} {
		pod := get2(t, c, ns, name, &corev1.Pod{})
		if pod.Annotations[matrixone.AnnotationDrainStarted] == "" {
			t.Errorf("%s has no drain start: %v", name, pod.Annotations)
		}
	}
	root := get2(t, c, ns, "log-root", &corev1.Secret{})
	if got := admin.lastPassword(); got == "" || got != string(root.Data["password"]) {
		t.Errorf("the admin logged in with %q, not root's generated password", got)
	}
	eventually(t, "the CNSet Draining, saying how many sessions remain", func() (bool, string) {
		got := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), commonv1.ConditionProgressing)
		return strings.Contains(got, mov1.ReasonDraining) && strings.Contains(got, "sessions"), got
	})

	// cn-1 holds no session any more: it is drained, but the StatefulSet
	// keeps every pod while cn-2 drains (it removes the highest first).
	admin.setSessions(cn1, 0)
	eventually(t, "cn-1 drained", func() (bool, string) {
		pod := get2(t, c, ns, "cn-1", &corev1.Pod{})
		return pod.Annotations[matrixone.AnnotationDrained] != "", fmt.Sprint(pod.Annotations)
	})
	time.Sleep(2 * time.Second)
	if got := stsReplicas(t, c, ns); got != 3 {
		t.Fatalf("the StatefulSet has %d replicas while cn-2 holds sessions", got)
	}

	if !admin.probe.wasAnnounced(ns, "cn-1") {
		t.Error("cn-1 drained without announcing its restart to the lock table allocator")
	}

	// cn-2 holds no session either, but its lock tables have not moved:
	// it stays until the allocator says it may stop.
	admin.probe.holdLocks(ns, "cn-2", true)
	admin.setSessions(cn2, 0)
	eventually(t, "cn-2's restart announced, the CNSet saying its lock tables move", func() (bool, string) {
		got := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), commonv1.ConditionProgressing)
		return admin.probe.wasAnnounced(ns, "cn-2") && strings.Contains(got, "lock tables move"), got
	})
	time.Sleep(2 * time.Second)
	if got := stsReplicas(t, c, ns); got != 3 {
		t.Fatalf("the StatefulSet has %d replicas while cn-2's lock tables move", got)
	}
	admin.probe.holdLocks(ns, "cn-2", false)
	eventually(t, "the StatefulSet scaled in to 1", func() (bool, string) {
		got := stsReplicas(t, c, ns)
		return got == 1, fmt.Sprint(got)
	})
	op := inStep(t, "the scale-in releasing the CNs", cn, "scale-in", "release-leaving-cns")
	if held, ok := op.HeldReplicas("cn"); !ok || held != 1 {
		t.Errorf("the scale-in holds %v", op.Held)
	}
	if ws := admin.workState(wire.StoreID(ns, "cn-0")); ws != wire.WorkStateWorking {
		t.Errorf("the CN kept is %s", ws)
	}
	// The StatefulSet controller removes the pods: the scale-in is done,
	// and the StatefulSet stays at 1.
	releasePods(t, c, ns, "cn")
	succeeded(t, "the scale-in done", cn, "scale-in")
	eventually(t, "the CNSet Ready", func() (bool, string) {
		got := condition(cnSet(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	if got := stsReplicas(t, c, ns); got != 1 {
		t.Errorf("the StatefulSet has %d replicas after the scale-in", got)
	}
}

// TestCNScaleInResumesAfterAnOperatorRestart: an operator that takes over
// in the middle of a drain goes on from status.operation and the drains
// recorded on the pods: the flow is not started again, nor the drain.
func TestCNScaleInResumesAfterAnOperatorRestart(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, time.Hour)
	cn1 := wire.StoreID(ns, "cn-1")
	admin.setSessions(cn1, 1)
	scaleCNs(t, c, ns, 1)
	cn := func() framework.Object { return cnSet(t, c, ns) }
	eventually(t, "cn-1 draining", func() (bool, string) {
		return admin.workState(cn1) == wire.WorkStateDraining, admin.workState(cn1)
	})
	before := inStep(t, "the scale-in draining", cn, "scale-in", "drain-leaving-cns")
	started := get2(t, c, ns, "cn-1", &corev1.Pod{}).Annotations[matrixone.AnnotationDrainStarted]

	// The CN's last session ends while no operator runs.
	restartOperator(t, ns, func() { admin.setSessions(cn1, 0) })
	eventually(t, "the StatefulSet scaled in by the new operator", func() (bool, string) {
		got := stsReplicas(t, c, ns)
		return got == 1, fmt.Sprint(got, " ", operation(cnSet(t, c, ns)))
	})
	if got := get2(t, c, ns, "cn-1", &corev1.Pod{}).Annotations[matrixone.AnnotationDrainStarted]; got != started {
		t.Errorf("cn-1's drain started again: %s, then %s", started, got)
	}
	releasePods(t, c, ns, "cn")
	op := succeeded(t, "the scale-in done", cn, "scale-in")
	if !op.StartedAt.Equal(&before.StartedAt) || op.Trigger != before.Trigger {
		t.Errorf("the scale-in started again: %+v, before %+v", op, before)
	}
	if n := countEvents(t, c, ns, mov1.EventDraining, "Draining cn-1:"); n != 1 {
		t.Errorf("%d Draining Events for cn-1", n)
	}
}

// TestCNScaleInRescueSkipReleasesUndrainedCNs: skipping the drain of a
// scale-in releases the CNs at once, their sessions cut.
func TestCNScaleInRescueSkipReleasesUndrainedCNs(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, time.Hour)
	admin.setSessions(wire.StoreID(ns, "cn-1"), 3)
	scaleCNs(t, c, ns, 1)
	cn := func() framework.Object { return cnSet(t, c, ns) }
	inStep(t, "the scale-in draining", cn, "scale-in", "drain-leaving-cns")
	time.Sleep(2 * time.Second)
	if got := stsReplicas(t, c, ns); got != 2 {
		t.Fatalf("the StatefulSet has %d replicas while cn-1 drains", got)
	}
	rescue(t, c, cnSet(t, c, ns), commonv1.RescueSkip)
	op := inStep(t, "the scale-in releasing cn-1", cn, "scale-in", "release-leaving-cns")
	if len(op.Skipped) != 1 || op.Skipped[0] != "drain-leaving-cns" {
		t.Errorf("skipped %v", op.Skipped)
	}
	eventually(t, "the StatefulSet scaled in", func() (bool, string) {
		got := stsReplicas(t, c, ns)
		return got == 1, fmt.Sprint(got)
	})
	releasePods(t, c, ns, "cn")
	succeeded(t, "the scale-in done", cn, "scale-in")
	if n := countEvents(t, c, ns, framework.ReasonOperationRescued, "skip"); n != 1 {
		t.Errorf("%d OperationRescued Events", n)
	}
}

func TestCNDrainTimesOut(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, 3*time.Second)
	admin.setSessions(wire.StoreID(ns, "cn-1"), 5)
	scaleCNs(t, c, ns, 1)
	eventually(t, "the StatefulSet scaled in at the timeout", func() (bool, string) {
		got := stsReplicas(t, c, ns)
		cn := get2(t, c, ns, "cn", &mov1.CNSet{})
		return got == 1, fmt.Sprint(got, " ", condition(cn, framework.ConditionSynced), "; ", condition(cn, commonv1.ConditionProgressing))
	})
	events := &corev1.EventList{}
	if err := c.List(t.Context(), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events.Items {
		if e.Reason == mov1.EventDrainTimedOut && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "cn-1") {
			found = true
		}
	}
	if !found {
		t.Error("no DrainTimedOut warning about cn-1")
	}
}

func TestCNScaleInUndoneSetsTheCNWorkingAgain(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, time.Hour)
	cn1 := wire.StoreID(ns, "cn-1")
	admin.setSessions(cn1, 1)
	scaleCNs(t, c, ns, 1)
	eventually(t, "cn-1 draining", func() (bool, string) {
		return admin.workState(cn1) == wire.WorkStateDraining, admin.workState(cn1)
	})
	scaleCNs(t, c, ns, 2)
	eventually(t, "cn-1 working again, its drain cleared, the set Ready", func() (bool, string) {
		pod := get2(t, c, ns, "cn-1", &corev1.Pod{})
		ready := condition(get2(t, c, ns, "cn", &mov1.CNSet{}), framework.ConditionReady)
		return admin.workState(cn1) == wire.WorkStateWorking && pod.Annotations[matrixone.AnnotationDrainStarted] == "" &&
			strings.HasPrefix(ready, "True"), admin.workState(cn1) + " " + ready
	})
	if got := stsReplicas(t, c, ns); got != 2 {
		t.Errorf("the StatefulSet has %d replicas", got)
	}
	op := cnSet(t, c, ns).Status.Operation
	if op == nil || op.Name != "scale-in" || op.Phase != commonv1.PhaseAborted ||
		op.Message != "Interrupted: spec.replicas went up to 2: the CNs the set keeps are set working again" {
		t.Errorf("the scale-in: %s", operation(cnSet(t, c, ns)))
	}
}

// TestCNScaleInUndoneAfterItsLocksMovedRestartsTheCN: MatrixOne cannot
// take an announced lock service restart back, so a CN the set keeps
// after its lock tables moved is restarted rather than set working.
func TestCNScaleInUndoneAfterItsLocksMovedRestartsTheCN(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, time.Hour)
	admin.probe.holdLocks(ns, "cn-1", true)
	old := get2(t, c, ns, "cn-1", &corev1.Pod{})
	scaleCNs(t, c, ns, 1)
	eventually(t, "cn-1's lock tables moving", func() (bool, string) {
		pod := get2(t, c, ns, "cn-1", &corev1.Pod{})
		return pod.Annotations[matrixone.AnnotationLocksMoving] != "", fmt.Sprint(pod.Annotations)
	})
	scaleCNs(t, c, ns, 2)
	eventually(t, "cn-1 restarted", func() (bool, string) {
		pod := &corev1.Pod{}
		return !get(t, c, ns, "cn-1", pod) || pod.UID != old.UID || !pod.DeletionTimestamp.IsZero(), string(pod.UID)
	})
}

func TestCNRestartDrainsFirst(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, time.Hour)
	cn0 := wire.StoreID(ns, "cn-0")
	admin.setSessions(cn0, 1)
	old := get2(t, c, ns, "cn-0", &corev1.Pod{})
	// A new revision: every pod is stale.
	sts := get2(t, c, ns, "cn", &appsv1.StatefulSet{})
	sts.Status.UpdateRevision = "c2"
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cn-0 draining before its restart", func() (bool, string) {
		return admin.workState(cn0) == wire.WorkStateDraining, admin.workState(cn0)
	})
	cn := func() framework.Object { return cnSet(t, c, ns) }
	if op := inStep(t, "the rolling restart", cn, "rolling-restart", "restart-stale-stores"); op.Trigger != "revision c2" {
		t.Errorf("trigger %q", op.Trigger)
	}
	time.Sleep(2 * time.Second)
	if get2(t, c, ns, "cn-0", &corev1.Pod{}).UID != old.UID {
		t.Fatal("cn-0 restarted while it held a session")
	}
	admin.setSessions(cn0, 0)
	eventually(t, "cn-0 restarted once drained", func() (bool, string) {
		p := &corev1.Pod{}
		return !get(t, c, ns, "cn-0", p) || p.DeletionTimestamp != nil, "still there"
	})
	// The StatefulSet re-creates it on the new revision; HAKeeper still has
	// its store Draining: the controller sets it Working.
	runPod(t, c, sts, 0, "c2")
	eventually(t, "the restarted cn-0 working again", func() (bool, string) {
		return admin.workState(cn0) == wire.WorkStateWorking, admin.workState(cn0)
	})
}

// TestCNRollingRestartAbortedGoesOnWhereItWas: a rescue abort ends the
// rolling restart; the controller starts another for the stale CNs, which
// finds cn-0's drain on its pod and does not start it again.
func TestCNRollingRestartAbortedGoesOnWhereItWas(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 2, time.Hour)
	cn0 := wire.StoreID(ns, "cn-0")
	first := restartDrainingCN0(t, c, ns, admin)
	started := get2(t, c, ns, "cn-0", &corev1.Pod{}).Annotations[matrixone.AnnotationDrainStarted]
	time.Sleep(time.Second) // a second rolling restart starts in another second: its startedAt tells them apart
	rescue(t, c, cnSet(t, c, ns), commonv1.RescueAbort)
	eventually(t, "the aborted rolling restart followed by another", func() (bool, string) {
		o := cnSet(t, c, ns)
		op := o.Status.Operation
		return op != nil && op.Name == "rolling-restart" && op.Phase == commonv1.PhaseRunning && !op.StartedAt.Equal(&first.StartedAt), operation(o)
	})
	if n := countEvents(t, c, ns, framework.ReasonOperationRescued, "abort"); n != 1 {
		t.Errorf("%d OperationRescued Events", n)
	}
	admin.setSessions(cn0, 0)
	eventually(t, "cn-0 restarted once drained", func() (bool, string) {
		p := &corev1.Pod{}
		return !get(t, c, ns, "cn-0", p) || p.DeletionTimestamp != nil, "still there"
	})
	if n := countEvents(t, c, ns, mov1.EventDraining, "Draining cn-0:"); n != 1 {
		t.Errorf("cn-0's drain started %d times (first at %s)", n, started)
	}
}

// TestCNScaleInInterruptsARollingRestart: CNs that leave need no restart,
// so a scale-in goes first; the rolling restart goes on afterwards with
// the drain it had started.
func TestCNScaleInInterruptsARollingRestart(t *testing.T) {
	c, ns, admin, _ := readyCNs(t, 3, time.Hour)
	cn0 := wire.StoreID(ns, "cn-0")
	cn := func() framework.Object { return cnSet(t, c, ns) }
	restartDrainingCN0(t, c, ns, admin)
	scaleCNs(t, c, ns, 2)
	eventually(t, "the scale-in released cn-2", func() (bool, string) {
		got := stsReplicas(t, c, ns)
		return got == 2, fmt.Sprint(got, " ", operation(cnSet(t, c, ns)))
	})
	if n := countEvents(t, c, ns, framework.ReasonOperationInterrupted, "the scale-in goes first"); n != 1 {
		t.Errorf("%d OperationInterrupted Events", n)
	}
	if admin.workState(cn0) != wire.WorkStateDraining {
		t.Errorf("cn-0 is %s while the scale-in ran", admin.workState(cn0))
	}
	releasePods(t, c, ns, "cn")
	inStep(t, "the rolling restart again", cn, "rolling-restart", "restart-stale-stores")
	admin.setSessions(cn0, 0)
	eventually(t, "cn-0 restarted once drained", func() (bool, string) {
		p := &corev1.Pod{}
		return !get(t, c, ns, "cn-0", p) || p.DeletionTimestamp != nil, "still there"
	})
	if n := countEvents(t, c, ns, mov1.EventDraining, "Draining cn-0:"); n != 1 {
		t.Errorf("cn-0's drain started %d times", n)
	}
}

// restartDrainingCN0 makes every CN stale (a new revision, c2) while cn-0
// holds a session, and returns the rolling restart once it drains cn-0.
func restartDrainingCN0(t *testing.T, c client.Client, ns string, admin *fakeAdmin) *commonv1.Operation {
	t.Helper()
	cn0 := wire.StoreID(ns, "cn-0")
	admin.setSessions(cn0, 1)
	sts := get2(t, c, ns, "cn", &appsv1.StatefulSet{})
	sts.Status.UpdateRevision = "c2"
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cn-0 draining for its restart", func() (bool, string) {
		return admin.workState(cn0) == wire.WorkStateDraining, admin.workState(cn0)
	})
	return inStep(t, "the rolling restart", func() framework.Object { return cnSet(t, c, ns) }, "rolling-restart", "restart-stale-stores")
}
