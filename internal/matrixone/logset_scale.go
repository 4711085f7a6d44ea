package matrixone

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
)

// Log stores are added at once and removed one at a time, from the
// highest ordinal, by the remove-store flow. MatrixOne 1.2's HAKeeper
// keeps each shard at its replica count (fixed at bootstrap) and places a
// replica only where one is missing: a store added holds none until
// another store fails or leaves, and a store that leaves gives up its
// replicas only once HAKeeper expires it (log-store-timeout after its
// last heartbeat) and adds them on the other stores. No call moves a
// replica sooner, so a leaving store is stopped first, behind the same
// majority guard as a restart.

// storeCount is the number of stores the set runs now: its StatefulSet's
// size, which exceeds spec.replicas while stores are to be removed.
func (st *logState) storeCount(l *LogSet) int {
	if st.sts != nil && st.sts.Spec.Replicas != nil {
		return int(*st.sts.Spec.Replicas)
	}
	return int(l.Spec.Replicas)
}

// toRemove returns the ordinal of the next store to remove, and false when
// the set has no store beyond spec.replicas.
func (st *logState) toRemove(l *LogSet) (int, bool) {
	n := st.storeCount(l)
	return n - 1, n > int(l.Spec.Replicas)
}

// removalBlocked says why the store of the pod at ordinal cannot leave
// now; empty when it can: every other store's pod ready (the last one
// started for RestartSettle) and its store up, HAKeeper running, every
// shard led, and every shard keeping a majority of its replicas without
// the store. The leaving store itself may be down already: what it held
// is then lost already, and the shards' majority is what decides.
func (st *logState) removalBlocked(l *LogSet, ordinal int) string {
	if why := st.othersSettled(l, ordinal); why != "" {
		return why
	}
	uuid := st.storeID(build.LogPodName(l, ordinal))
	if l.Spec.ShardReplicas < 2 {
		if held := st.heldShards(uuid); len(held) > 0 {
			return fmt.Sprintf("the log shards have one replica each, and shards %v have theirs on this store: it cannot leave", held)
		}
		return ""
	}
	if reasons := st.view.MajorityKeptWithout(uuid); len(reasons) > 0 {
		return strings.Join(reasons, "; ")
	}
	return ""
}

// othersSettled says why the stores other than the one at except (-1:
// none) are not all settled; empty when they are: each pod ready for
// RestartSettle and seen ready by the last view, HAKeeper running, every
// shard led, and each store up to HAKeeper.
func (st *logState) othersSettled(l *LogSet, except int) string {
	n := st.storeCount(l)
	for i := range n {
		if i == except {
			continue
		}
		p, ok := st.pods[i]
		if !ok || !workload.IsReady(p) {
			return build.LogPodName(l, i) + " is not ready"
		}
		since, _ := workload.ReadySince(p)
		if st.now.Sub(since) < RestartSettle {
			return fmt.Sprintf("%s has been ready for less than %s", p.Name, RestartSettle)
		}
		if why := viewPredates(st.viewAt, p.Name, since); why != "" {
			return why
		}
	}
	if reason, message := st.notServing(); reason != "" {
		return message
	}
	for i := range n {
		name := build.LogPodName(l, i)
		if s := st.storeState(name); i != except && s != mov1.StoreUp {
			return fmt.Sprintf("the store of %s is %s to HAKeeper", name, s)
		}
	}
	return ""
}

// heldShards returns the IDs of the shards that have a member on the store
// uuid, in order.
func (st *logState) heldShards(uuid string) []uint64 {
	var ids []uint64
	for _, sh := range st.view.LogShards {
		for _, member := range sh.Replicas {
			if member == uuid {
				ids = append(ids, sh.ShardID)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// scalingIn says, for Ready, which store is removed next and, when it
// cannot leave yet, why; empty when no store is to be removed.
func (st *logState) scalingIn(l *LogSet) string {
	ordinal, ok := st.toRemove(l)
	if !ok {
		return ""
	}
	msg := fmt.Sprintf("%d log stores to remove, next %s", st.storeCount(l)-int(l.Spec.Replicas), build.LogPodName(l, ordinal))
	if why := st.removalBlocked(l, ordinal); why != "" {
		msg += ", which waits: " + why
	}
	return msg
}

// The remove-store flow and its steps.
const (
	flowRemoveStore  = "remove-store"
	stepStopStore    = "stop-store"
	stepWaitReplicas = "wait-for-replicas-to-move"
	stepRetireStore  = "retire-store"
	// stopStoreTimeout bounds the wait for the guard (a store that
	// restarts, a shard catching up) and for the pod to go.
	stopStoreTimeout   = 30 * time.Minute
	replicasMoveBudget = 20 * time.Minute
)

// removeStoreFlow removes the store of the highest ordinal in three steps:
// stop-store waits until the store can leave (removalBlocked), then holds
// the StatefulSet one pod smaller and waits until the pod is gone;
// wait-for-replicas-to-move waits until HAKeeper has expired the store and
// every shard runs its replica count on the other stores, none on the
// store; retire-store then records a new UUID for the pod in the stores
// ConfigMap (a store added later under its name is a new store) and
// deletes its volume claim, whose raft data no shard counts on any more.
// Each step finds from the world whether it has anything left to do: a
// pod still there (replicas raised before it stopped) keeps its store and
// volume, and a flow run again never deletes the volume of a pod that
// runs. A replicas raised meanwhile grows the StatefulSet at once
// (workload.Replicas): the pod comes back as the same store, and the
// remaining steps leave it and its volume alone.
func (c *LogSetController) removeStoreFlow() framework.Flow[*LogSet, *logState] {
	return framework.Flow[*LogSet, *logState]{
		Name: flowRemoveStore,
		Steps: []framework.Step[*LogSet, *logState]{
			{Name: stepStopStore, Run: c.stopStore, Timeout: stopStoreTimeout},
			{Name: stepWaitReplicas, Run: c.waitForReplicasToMove, Timeout: replicasMoveBudget},
			{Name: stepRetireStore, Run: c.retireStore},
		},
		MaxAttempts: 5,
		Backoff:     framework.Backoff{Initial: 2 * time.Second, Max: time.Minute},
		Poll:        time.Second,
	}
}

// removal is what a remove-store flow removes: the pod's ordinal and
// name, and its store's UUID. Its String is the flow's trigger.
type removal struct {
	ordinal    int
	pod, store string
}

// String is the trigger: "log-3: store <uuid>".
func (r removal) String() string { return fmt.Sprintf("%s: store %s", r.pod, r.store) }

// removing reads the running remove-store flow's trigger.
func removing(ctx *LogContext) (removal, error) {
	trigger := ctx.Obj.Status.Operation.Trigger
	f := strings.Fields(trigger)
	if len(f) != 3 || f[1] != "store" || !strings.HasSuffix(f[0], ":") {
		return removal{}, framework.Terminal(fmt.Errorf("trigger %q does not name a store to remove", trigger))
	}
	pod := strings.TrimSuffix(f[0], ":")
	ordinal, ok := workload.Ordinal(pod, ctx.Obj.Name+"-")
	if !ok {
		return removal{}, framework.Terminal(fmt.Errorf("trigger %q names no pod of the set", trigger))
	}
	return removal{ordinal: ordinal, pod: pod, store: f[2]}, nil
}

// startRemoval returns the action that starts the remove-store flow for
// the store of the pod at ordinal.
func (st *logState) startRemoval(l *LogSet, ordinal int) framework.Action[*LogSet] {
	pod := build.LogPodName(l, ordinal)
	r := removal{ordinal: ordinal, pod: pod, store: st.storeID(pod)}
	return framework.StartFlow[*LogSet](flowRemoveStore, r.String())
}

// stopStore waits for the guard, then holds the StatefulSet at the leaving
// pod's ordinal (Declare applies it), and is done once the pod is gone; at
// once when the pod runs and spec.replicas keeps it again. A replacement
// due meanwhile interrupts it while it waits (InterruptFlow).
func (c *LogSetController) stopStore(ctx *LogContext, st *logState) (bool, error) {
	r, err := removing(ctx)
	if err != nil || st == nil {
		return false, err
	}
	l := ctx.Obj
	if _, running := st.pods[r.ordinal]; running && int(l.Spec.Replicas) > r.ordinal {
		ctx.Log.Info("A log store's removal was withdrawn before it stopped", "pod", r.pod, "store", r.store)
		return true, nil
	}
	if _, held := ctx.Operation().HeldReplicas(l.Name); !held {
		// With this pass's view, fresh while a flow runs.
		if why := st.removalBlocked(l, r.ordinal); why != "" {
			setRemoving(ctx, r, "waiting to stop it: "+why)
			return false, nil
		}
	}
	ctx.Operation().Hold(l.Name, int32(r.ordinal))
	if st.storeCount(l) > r.ordinal || st.podExists(r.ordinal) {
		setRemoving(ctx, r, fmt.Sprintf("stopping %s", r.pod))
		return false, nil
	}
	ctx.Log.Info("Stopped a leaving log store", "pod", r.pod, "store", r.store)
	return true, nil
}

// podExists reports whether the pod at ordinal exists, terminating or
// not.
func (st *logState) podExists(ordinal int) bool {
	_, ok := st.allPods[ordinal]
	return ok
}

// waitForReplicasToMove is done once HAKeeper lists no member of any shard
// on the leaving store and every shard runs its replica count; at once
// when the pod runs again (the removal was withdrawn before it stopped).
func (c *LogSetController) waitForReplicasToMove(ctx *LogContext, st *logState) (bool, error) {
	r, err := removing(ctx)
	if err != nil || st == nil {
		return false, err
	}
	if st.podExists(r.ordinal) {
		return true, nil
	}
	switch {
	case !st.viewOK:
		setRemoving(ctx, r, "waiting for a view of HAKeeper: "+st.viewErr)
	case len(st.heldShards(r.store)) > 0:
		setRemoving(ctx, r, fmt.Sprintf("waiting for HAKeeper to move the replicas of shards %v to other stores "+
			"(it does once it expires the store: logservice.HAKeeperConfig.log-store-timeout after its last heartbeat)", st.heldShards(r.store)))
	case st.underReplicated() != "":
		setRemoving(ctx, r, "waiting for the replicas HAKeeper added to run: "+st.underReplicated())
	default:
		return true, nil
	}
	return false, nil
}

// retireStore records a new UUID for the leaving pod and deletes its
// volume claim, unless the pod runs again; done then.
func (c *LogSetController) retireStore(ctx *LogContext, st *logState) (bool, error) {
	r, err := removing(ctx)
	if err != nil || st == nil {
		return false, err
	}
	if st.podExists(r.ordinal) {
		return true, nil
	}
	l := ctx.Obj
	if st.storeID(r.pod) == r.store {
		if !st.viewOK {
			return false, nil // which UUIDs HAKeeper knows is HAKeeper's to say
		}
		uuid := st.nextStoreID(l, r.pod, r.store)
		if err := recordStores(ctx, map[string]string{r.pod: uuid}); err != nil {
			return false, err
		}
		st.stores[r.pod] = uuid
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: logSet(l).ClaimName(r.ordinal)}}
	if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, claim)); err != nil {
		return false, fmt.Errorf("delete volume claim %s: %w", claim.Name, err)
	}
	ctx.Log.Info("Removed a log store", "pod", r.pod, "store", r.store, "persistentVolumeClaim", claim.Name)
	ctx.Event(corev1.EventTypeNormal, mov1.EventStoreRemoved,
		"Removed the log store of %s (%s): no shard has a replica on it; deleted its volume claim %s", r.pod, r.store, claim.Name)
	return true, nil
}

// setRemoving says in Progressing and Ready how the removal r goes.
func setRemoving(ctx *LogContext, r removal, wait string) {
	message := fmt.Sprintf("removing the log store of %s (%s): %s", r.pod, r.store, wait)
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, commonv1.ReasonScaling, message)
	ctx.SetReady(false, commonv1.ReasonScaling, message)
}
