package matrixone_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// TestLogSetReplacesAFailedStoreOnlyWhileTheShardsKeepTheirMajority: a
// store down past storeFailureTimeout is not replaced while another store
// is down too; once the others are up its new UUID is recorded, then its
// volume claim and pod are deleted; the new store shows in status.
func TestLogSetReplacesAFailedStoreOnlyWhileTheShardsKeepTheirMajority(t *testing.T) {
	c, ns, probe, l, sts := runningLogSet(t, 30*time.Second)
	testenv.Eventually(t, "StoresHealthy, and the bootstrap recorded for mo-agent", func() (bool, string) {
		stores := &corev1.ConfigMap{}
		got := condition(logSet(t, c, ns), mov1.ConditionStoresHealthy)
		return strings.HasPrefix(got, "True "+mov1.ReasonAllStoresUp) && get(t, c, ns, "log-stores", stores) &&
			stores.Data[build.BootstrappedKey] == "true" && len(stores.OwnerReferences) == 0, got
	})

	// log-2 has been unready for a minute, and HAKeeper does not hear
	// from log-1 either: the shards' majority is in doubt.
	unready(t, c, ns, "log-2", time.Minute)
	v := healthyView(ns, pods...)
	v.LogStores[1].State, v.LogStores[2].State = wire.StoreDown, wire.StoreDown
	probe.set(v)
	testenv.Eventually(t, "ReplacementBlocked", func() (bool, string) {
		got := condition(logSet(t, c, ns), mov1.ConditionStoresHealthy)
		return strings.HasPrefix(got, "False "+mov1.ReasonReplacementBlocked) && strings.Contains(got, "log-1"), got
	})
	time.Sleep(time.Second)
	if !get(t, c, ns, "log-2", &corev1.Pod{}) || gone(t, c, ns, build.DataVolume+"-log-2") {
		t.Fatal("a store was replaced while the majority was in doubt")
	}

	failedPod := &corev1.Pod{}
	get(t, c, ns, "log-2", failedPod)
	// log-1 is heard again: log-2's store is replaced.
	v.LogStores[1].State = wire.StoreUp
	probe.set(v)
	newStore := build.ReplacementStoreID(l, "log-2", 1)
	testenv.Eventually(t, "log-2's claim and pod deleted, its new store recorded", func() (bool, string) {
		stores := &corev1.ConfigMap{}
		get(t, c, ns, "log-stores", stores)
		return stores.Data["log-2"] == newStore && stores.Data[wire.FailedPodKey("log-2")] == string(failedPod.UID) &&
				gone(t, c, ns, build.DataVolume+"-log-2") && !get(t, c, ns, "log-2", &corev1.Pod{}),
			fmt.Sprint(stores.Data)
	})
	for _, pod := range []string{"log-0", "log-1"} {
		if !get(t, c, ns, pod, &corev1.Pod{}) || gone(t, c, ns, build.DataVolume+"-"+pod) {
			t.Fatalf("%s or its claim was deleted too", pod)
		}
	}
	lf := func() framework.Object { return logSet(t, c, ns) }
	op := inStep(t, "the replacement waiting for the new store", lf, "replace-store", "wait-for-new-store")
	if want := fmt.Sprintf("log-2: store %s, pod uid ", wire.StoreID(ns, "log-2")); !strings.HasPrefix(op.Trigger, want) {
		t.Errorf("trigger %q", op.Trigger)
	}
	testenv.Eventually(t, "a StoreReplaced event", func() (bool, string) {
		var events corev1.EventList
		if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Reason == mov1.EventStoreReplaced && strings.Contains(e.Message, newStore) {
				return true, e.Message
			}
		}
		return false, "none"
	})

	// The pod comes back as the new store; HAKeeper has expired the old
	// one and not yet added its replicas to the new one.
	runPod(t, c, sts, 2, "r1")
	v = healthyView(ns, "log-0", "log-1")
	for i := range v.LogShards {
		v.LogShards[i].NumberOfReplicas = 3
	}
	v.LogStores = append(v.LogStores, wire.LogStore{UUID: wire.StoreID(ns, "log-2"), State: wire.StoreDown},
		wire.LogStore{UUID: newStore, State: wire.StoreUp})
	probe.set(v)
	testenv.Eventually(t, "ReplicasMissing, the new store in status", func() (bool, string) {
		l := logSet(t, c, ns)
		got := condition(l, mov1.ConditionStoresHealthy)
		return strings.HasPrefix(got, "False "+mov1.ReasonReplicasMissing) && len(l.Status.Stores) == 3 &&
			l.Status.Stores[2].UUID == newStore && l.Status.Stores[2].State == mov1.StoreUp, got
	})
	succeeded(t, "the replacement done", lf, "replace-store")
	// HAKeeper makes it a member of both shards, then it runs their
	// replicas.
	v.LogShards[0].Replicas[3], v.LogShards[1].Replicas[3] = newStore, newStore
	probe.set(v)
	time.Sleep(time.Second)
	if got := condition(logSet(t, c, ns), mov1.ConditionStoresHealthy); !strings.HasPrefix(got, "False "+mov1.ReasonReplicasMissing) {
		t.Fatalf("healthy before the new store runs its replicas: %s", got)
	}
	v.LogStores[len(v.LogStores)-1].Replicas = []wire.Replica{{ShardID: 0}, {ShardID: 1}}
	probe.set(v)
	testenv.Eventually(t, "StoresHealthy again", func() (bool, string) {
		got := condition(logSet(t, c, ns), mov1.ConditionStoresHealthy)
		return strings.HasPrefix(got, "True"), got
	})
}

// gone reports whether the claim name is deleted or being deleted.
func gone(t *testing.T, c client.Client, ns, name string) bool {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	return !get(t, c, ns, name, pvc) || !pvc.DeletionTimestamp.IsZero()
}

// unready marks pod not ready for d.
func unready(t *testing.T, c client.Client, ns, name string, d time.Duration) {
	t.Helper()
	pod := &corev1.Pod{}
	if !get(t, c, ns, name, pod) {
		t.Fatalf("no pod %s", name)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-d))}}
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// TestLogSetReplacementInterruptsARollingRestart: a rolling restart waits
// for every store to be up; a store that fails meanwhile never is, so once
// it is to be replaced the restart is interrupted and the replacement goes
// first.
func TestLogSetReplacementInterruptsARollingRestart(t *testing.T) {
	c, ns, probe, _, _ := runningLogSet(t, 30*time.Second)
	testenv.Eventually(t, "the LogSet Ready", func() (bool, string) {
		got := condition(logSet(t, c, ns), "Ready")
		return strings.HasPrefix(got, "True"), got
	})

	// log-2 stopped 20 s ago, and a new revision is out: the rolling
	// restart waits for it.
	unready(t, c, ns, "log-2", 20*time.Second)
	v := healthyView(ns, pods...)
	v.LogStores[2].State = wire.StoreDown
	probe.set(v)
	sts := get2(t, c, ns, "log", &appsv1.StatefulSet{})
	sts.Status.UpdateRevision = "r2"
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the rolling restart waiting", func() (bool, string) {
		l := logSet(t, c, ns)
		op := l.Status.Operation
		return op != nil && op.Name == "rolling-restart" && op.Phase == "Running", operation(l)
	})
	// 30 s after it stopped, log-2 is replaced, the restart interrupted.
	testenv.Eventually(t, "log-2 replaced", func() (bool, string) {
		return gone(t, c, ns, build.DataVolume+"-log-2"), operation(logSet(t, c, ns))
	})
	if n := countEvents(t, c, ns, "OperationInterrupted", "the store of log-2 failed: its replacement goes first"); n != 1 {
		t.Errorf("%d OperationInterrupted Events", n)
	}
	for _, pod := range []string{"log-0", "log-1"} {
		if p := (&corev1.Pod{}); !get(t, c, ns, pod, p) || !p.DeletionTimestamp.IsZero() {
			t.Errorf("%s restarted while log-2 was down", pod)
		}
	}
}

// TestLogSetReplaceStoreResumesFromStatus: an operator that finds a
// replace-store flow in status (as a new leader does) goes on from its
// step with the pod and claim its trigger names; a rescue abort ends the
// wait for the new store, and no replacement starts again for a pod that
// has not failed.
func TestLogSetReplaceStoreResumesFromStatus(t *testing.T) {
	c, ns, probe, l, _ := runningLogSet(t, time.Hour)
	lf := func() framework.Object { return logSet(t, c, ns) }
	testenv.Eventually(t, "the LogSet Ready", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})

	// While no operator runs, log-2 stops, and status says a replacement
	// recorded its new store and is to delete its volume and pod (a
	// manager stopped there).
	old := wire.StoreID(ns, "log-2")
	newStore := build.ReplacementStoreID(l, "log-2", 1)
	since := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	pod := get2(t, c, ns, "log-2", &corev1.Pod{})
	claim := get2(t, c, ns, build.DataVolume+"-log-2", &corev1.PersistentVolumeClaim{})
	restartOperator(t, ns, func() {
		unready(t, c, ns, "log-2", time.Minute)
		v := healthyView(ns, pods...)
		v.LogStores[2].State = wire.StoreDown
		probe.set(v)
		patch := fmt.Sprintf(`{"data":{"log-2":%q}}`, newStore)
		if err := c.Patch(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "log-stores"}},
			client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		l := logSet(t, c, ns)
		l.Status.Operation = commonv1.NewOperation("replace-store",
			fmt.Sprintf("log-2: store %s, pod uid %s, claim uid %s", old, pod.UID, claim.UID),
			[]string{"record-new-store", "delete-volume-and-pod", "wait-for-new-store"}, since)
		l.Status.Operation.SetCurrent(1, since)
		if err := c.Status().Update(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	})
	testenv.Eventually(t, "log-2's claim and pod deleted by the new operator", func() (bool, string) {
		p := &corev1.Pod{}
		return gone(t, c, ns, build.DataVolume+"-log-2") && (!get(t, c, ns, "log-2", p) || p.UID != pod.UID), operation(logSet(t, c, ns))
	})
	op := inStep(t, "the replacement waiting for the new store", lf, "replace-store", "wait-for-new-store")
	if !op.StartedAt.Equal(&since) {
		t.Errorf("another replacement ran: started at %s, not %s", op.StartedAt, since)
	}
	testenv.Eventually(t, "StoresHealthy saying what the replacement waits for", func() (bool, string) {
		got := condition(logSet(t, c, ns), mov1.ConditionStoresHealthy)
		return strings.Contains(got, "replacing the failed store "+old+" of log-2: waiting for the StatefulSet to re-create log-2"), got
	})

	rescue(t, c, logSet(t, c, ns), commonv1.RescueAbort)
	testenv.Eventually(t, "the replacement aborted", func() (bool, string) {
		op := logSet(t, c, ns).Status.Operation
		return op != nil && op.Name == "replace-store" && op.Phase == commonv1.PhaseAborted, operation(logSet(t, c, ns))
	})
	time.Sleep(2 * time.Second)
	if op := logSet(t, c, ns).Status.Operation; op.Phase != commonv1.PhaseAborted || !op.StartedAt.Equal(&since) {
		t.Errorf("after the abort: %s", operation(logSet(t, c, ns)))
	}
}

// runningLogSet creates a LogSet whose stores fail after storeFailureTimeout,
// with its shared claim, and runs its pods (revision r1) on their claims,
// every store up in HAKeeper's view.
func runningLogSet(t *testing.T, storeFailureTimeout time.Duration) (client.Client, string, *fakeProbe, *mov1.LogSet, *appsv1.StatefulSet) {
	t.Helper()
	c, ns, probe := setup(t)
	sharedClaim(t, c, ns)
	l := newLogSet(ns)
	l.Spec.StoreFailureTimeout = &metav1.Duration{Duration: storeFailureTimeout}
	if err := c.Create(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, "the StatefulSet", func() (bool, string) { return get(t, c, ns, "log", sts), "not yet" })
	runPods(t, c, sts, "r1")
	for _, pod := range pods {
		createClaim(t, c, ns, build.DataVolume+"-"+pod, corev1.ReadWriteOnce)
	}
	probe.set(healthyView(ns, pods...))
	return c, ns, probe, l, sts
}
