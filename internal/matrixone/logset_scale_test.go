package matrixone_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/internal/testenv"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// TestLogSetAddsAStoreAndRemovesOneOnlyOnceHAKeeperMovedItsReplicas: a
// store added starts at once and joins without replicas; removed again
// after HAKeeper gave it replicas (another store had failed), it waits
// while a shard would lose its majority without it, then its pod stops, and only once
// HAKeeper has moved its replicas to the other stores is its volume claim
// deleted and its pod's next store given a new UUID.
func TestLogSetAddsAStoreAndRemovesOneOnlyOnceHAKeeperMovedItsReplicas(t *testing.T) {
	c, ns, probe, l, sts := runningLogSet(t, time.Hour)
	lf := func() framework.Object { return logSet(t, c, ns) }
	ready := func(what string) {
		t.Helper()
		testenv.Eventually(t, what, func() (bool, string) {
			got := condition(logSet(t, c, ns), framework.ConditionReady)
			return strings.HasPrefix(got, "True"), got
		})
	}
	ready("the LogSet Ready with three stores")

	// Scale out: log-3 starts at once and joins HAKeeper without
	// replicas.
	setReplicas(t, c, ns, 4)
	testenv.Eventually(t, "the StatefulSet at four pods", func() (bool, string) {
		get(t, c, ns, "log", sts)
		return *sts.Spec.Replicas == 4, sts.Spec.String()
	})
	observed(t, c, sts)
	testenv.Eventually(t, "Ready false while log-3 does not run", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.Contains(got, "log-3"), got
	})
	runPod(t, c, sts, 3, "r1")
	createClaim(t, c, ns, build.DataVolume+"-log-3", corev1.ReadWriteOnce)
	v := healthyView(ns, pods...)
	v.LogStores = append(v.LogStores, wire.LogStore{UUID: wire.StoreID(ns, "log-3"), State: wire.StoreUp})
	probe.set(v)
	ready("the LogSet Ready with four stores")
	if s := logSet(t, c, ns).Status.Stores; len(s) != 4 || s[3].Pod != "log-3" || s[3].State != mov1.StoreUp || s[3].Replicas != 0 {
		t.Fatalf("stores %+v", s)
	}

	// HAKeeper moved log-0's replicas to log-3 (log-0 had failed and
	// came back as a spare). Scale in while log-1 is not ready: log-3
	// waits.
	moved := healthyView(ns, pods...)
	moved.LogStores = append(moved.LogStores, wire.LogStore{UUID: wire.StoreID(ns, "log-3"), State: wire.StoreUp,
		Replicas: []wire.Replica{{ShardID: 0}, {ShardID: 1}}})
	moved.LogStores[0].Replicas = nil
	for i := range moved.LogShards {
		moved.LogShards[i].Replicas[1] = wire.StoreID(ns, "log-3")
		moved.LogShards[i].LeaderID = 2
	}
	probe.set(moved)
	ready("the LogSet Ready with log-3 holding replicas")
	// log-1's store does not run shard 1's replica: without log-3 the
	// shard would keep one of three.
	short := healthyView(ns, pods...)
	short.LogStores, short.LogShards = slices.Clone(moved.LogStores), moved.LogShards
	short.LogStores[1].Replicas = []wire.Replica{{ShardID: 0}}
	probe.set(short)
	testenv.Eventually(t, "status counting shard 1's two replicas that run", func() (bool, string) {
		l := logSet(t, c, ns)
		return len(l.Status.Shards) == 2 && l.Status.Shards[1].Replicas == 2, fmt.Sprintf("%+v", l.Status.Shards)
	})
	setReplicas(t, c, ns, 3)
	inStep(t, "the removal waiting to stop log-3", lf, "remove-store", "stop-store")
	testenv.Eventually(t, "Ready saying why log-3 waits", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.Contains(got, "False "+commonv1.ReasonScaling+": removing the log store of log-3 ("+wire.StoreID(ns, "log-3")+
			"): waiting to stop it: log shard 1 would keep 1 of its 3 replicas up, and needs 2"), got
	})
	time.Sleep(2 * time.Second)
	get(t, c, ns, "log", sts)
	if op := logSet(t, c, ns).Status.Operation; *sts.Spec.Replicas != 4 || len(op.Held) > 0 {
		t.Fatalf("log-3 left while shard 1 needed it: %d pods, %s", *sts.Spec.Replicas, operation(logSet(t, c, ns)))
	}

	// log-1 runs its replica again: log-3's pod stops, but its volume
	// stays while HAKeeper still counts it a member.
	probe.set(moved)
	testenv.Eventually(t, "the StatefulSet held at three pods", func() (bool, string) {
		get(t, c, ns, "log", sts)
		return *sts.Spec.Replicas == 3, operation(logSet(t, c, ns))
	})
	observed(t, c, sts)
	if op := logSet(t, c, ns).Status.Operation; op.Trigger != "log-3: store "+wire.StoreID(ns, "log-3") {
		t.Errorf("trigger %q", op.Trigger)
	}
	deletePod(t, c, ns, "log-3")
	inStep(t, "the removal waiting for HAKeeper", lf, "remove-store", "wait-for-replicas-to-move")
	testenv.Eventually(t, "Ready saying what the removal waits for", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.Contains(got, "waiting for HAKeeper to move the replicas of shards [0 1]"), got
	})
	time.Sleep(2 * time.Second)
	if gone(t, c, ns, build.DataVolume+"-log-3") {
		t.Fatal("log-3's volume claim was deleted while HAKeeper counted its store a member")
	}

	// HAKeeper expired log-3 and put its replicas back on log-0.
	after := healthyView(ns, pods...)
	after.LogStores = append(after.LogStores, wire.LogStore{UUID: wire.StoreID(ns, "log-3"), State: wire.StoreDown,
		Replicas: []wire.Replica{{ShardID: 0}, {ShardID: 1}}})
	probe.set(after)
	succeeded(t, "the removal done", lf, "remove-store")
	if !gone(t, c, ns, build.DataVolume+"-log-3") {
		t.Error("log-3's volume claim is still there")
	}
	stores := get2(t, c, ns, "log-stores", &corev1.ConfigMap{})
	if want := build.ReplacementStoreID(l, "log-3", 1); stores.Data["log-3"] != want {
		t.Errorf("log-3's next store %q, want %q", stores.Data["log-3"], want)
	}
	ready("the LogSet Ready with three stores again")
	got := logSet(t, c, ns)
	if len(got.Status.Stores) != 3 || got.Status.ReadyReplicas != 3 {
		t.Errorf("status after the removal: stores %+v, ready %d", got.Status.Stores, got.Status.ReadyReplicas)
	}
	get(t, c, ns, "log", sts)
	if *sts.Spec.Replicas != 3 {
		t.Errorf("the StatefulSet has %d pods", *sts.Spec.Replicas)
	}
	testenv.Eventually(t, "a StoreRemoved event", func() (bool, string) {
		var events corev1.EventList
		if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == mov1.EventStoreRemoved && strings.Contains(e.Message, "log-3")
		}), "none yet"
	})
}

// TestLogSetStatusCountsTheReplicasTheGuardCounts: a member HAKeeper has
// added to a store that does not run it yet, and a member on a store whose
// pod is not ready, are not counted in status, as neither Ready nor the
// majority guard counts them.
func TestLogSetStatusCountsTheReplicasTheGuardCounts(t *testing.T) {
	c, ns, probe, _, _ := runningLogSet(t, time.Hour)
	testenv.Eventually(t, "the LogSet Ready", func() (bool, string) {
		got := condition(logSet(t, c, ns), framework.ConditionReady)
		return strings.HasPrefix(got, "True"), got
	})
	v := healthyView(ns, pods...)
	v.LogStores[2].Replicas = []wire.Replica{{ShardID: 0}} // shard 1's member added, not started
	probe.set(v)
	testenv.Eventually(t, "shard 1 with two replicas running, shard 0 with three", func() (bool, string) {
		l := logSet(t, c, ns)
		got := condition(l, framework.ConditionReady)
		return len(l.Status.Shards) == 2 && l.Status.Shards[0].Replicas == 3 && l.Status.Shards[1].Replicas == 2 &&
			strings.Contains(got, mov1.ReasonReplicasMissing+": log shard 1 has 2 of 3 replicas running"), got
	})
	probe.set(healthyView(ns, pods...))
	unready(t, c, ns, "log-0", time.Second)
	testenv.Eventually(t, "both shards with two replicas running while log-0 is not ready", func() (bool, string) {
		l := logSet(t, c, ns)
		return len(l.Status.Shards) == 2 && l.Status.Shards[0].Replicas == 2 && l.Status.Shards[1].Replicas == 2,
			condition(l, framework.ConditionReady)
	})
}

// setReplicas sets the LogSet's spec.replicas.
func setReplicas(t *testing.T, c client.Client, ns string, n int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if err := c.Patch(t.Context(), logSet(t, c, ns), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// observed plays the StatefulSet controller: sts's status says it has
// seen its latest generation, its pods on revision r1.
func observed(t *testing.T, c client.Client, sts *appsv1.StatefulSet) {
	t.Helper()
	sts.Status.ObservedGeneration = sts.Generation
	sts.Status.Replicas, sts.Status.ReadyReplicas = *sts.Spec.Replicas, *sts.Spec.Replicas
	if err := c.Status().Update(t.Context(), sts); err != nil {
		t.Fatal(err)
	}
}

// deletePod deletes the pod name at once, as the StatefulSet controller
// and the kubelet would once the StatefulSet is smaller.
func deletePod(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = ns, name
	if err := client.IgnoreNotFound(c.Delete(t.Context(), pod, client.GracePeriodSeconds(0))); err != nil {
		t.Fatal(err)
	}
}

// TestLogSetReplacementInterruptsARemovalWaitingToStop: a removal waits
// for every other store to be up; one that fails meanwhile never is, so
// once it is to be replaced the removal, which has not stopped its store,
// is interrupted and the replacement goes first. The leaving store stays.
func TestLogSetReplacementInterruptsARemovalWaitingToStop(t *testing.T) {
	c, ns, probe, _, sts := runningLogSet(t, 30*time.Second)
	lf := func() framework.Object { return logSet(t, c, ns) }
	setReplicas(t, c, ns, 4)
	testenv.Eventually(t, "the StatefulSet at four pods", func() (bool, string) {
		get(t, c, ns, "log", sts)
		return *sts.Spec.Replicas == 4, sts.Spec.String()
	})
	observed(t, c, sts)
	runPod(t, c, sts, 3, "r1")
	v := healthyView(ns, pods...)
	v.LogStores = append(v.LogStores, wire.LogStore{UUID: wire.StoreID(ns, "log-3"), State: wire.StoreUp})
	v.LogStores[1].State = wire.StoreDown
	probe.set(v)
	unready(t, c, ns, "log-1", 20*time.Second)
	setReplicas(t, c, ns, 3)
	inStep(t, "the removal waiting to stop log-3", lf, "remove-store", "stop-store")
	// 30 s after it stopped, log-1 is replaced, the removal interrupted.
	testenv.Eventually(t, "log-1 replaced", func() (bool, string) {
		return gone(t, c, ns, build.DataVolume+"-log-1"), operation(logSet(t, c, ns))
	})
	if n := countEvents(t, c, ns, "OperationInterrupted", "the store of log-1 failed: its replacement goes first"); n != 1 {
		t.Errorf("%d OperationInterrupted Events", n)
	}
	if p := (&corev1.Pod{}); !get(t, c, ns, "log-3", p) || !p.DeletionTimestamp.IsZero() {
		t.Error("log-3 stopped while log-1 was down")
	}
}
