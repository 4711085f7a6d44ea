package matrixone

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
	"github.com/stewardhq/steward/tools/mo-agent/wire"
)

// A failed log store is replaced, never repaired in place: its volume claim
// and pod are deleted, and the pod comes back on a new volume as a new
// store (a new UUID, from the stores ConfigMap), to which HAKeeper gives
// the replicas of the failed one once it expires it. A store that came
// back under its old UUID with an empty volume would rejoin its shards as
// members that forgot what they acknowledged; mo-agent refuses to start
// one (its package identity), and the operator never makes one.

// ensureStores returns the data of the set's stores ConfigMap, creating it
// empty when it does not exist. It has no owner (build.LogStoresName).
func ensureStores(ctx *LogContext) (map[string]string, error) {
	l := ctx.Obj
	cm := &corev1.ConfigMap{}
	_, err := framework.CreateIfAbsent(ctx, ctx.Client, ctx.Reader, client.ObjectKey{Namespace: l.Namespace, Name: build.LogStoresName(l)},
		cm, func() client.Object { return build.LogStores(l, nil) })
	if err != nil {
		return nil, fmt.Errorf("the stores ConfigMap %s: %w", build.LogStoresName(l), err)
	}
	return cm.Data, nil
}

// recordStores sets keys of the set's stores ConfigMap.
func recordStores(ctx *LogContext, data map[string]string) error {
	l := ctx.Obj
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	cm := build.LogStores(l, nil)
	if err := ctx.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("record %v in the stores ConfigMap %s: %w", data, cm.Name, err)
	}
	return nil
}

// deleteStores deletes the set's stores ConfigMap (reclaimPolicy Delete:
// the volumes whose stores it names are gone).
func deleteStores(ctx *LogContext) error {
	l := ctx.Obj
	_, err := framework.DeleteGenerated(ctx, ctx.Client, build.LogStores(l, nil), build.Labels(l.Name, build.ComponentLogStores))
	return err
}

// downStore is a store whose pod is not ready.
type downStore struct {
	pod *corev1.Pod
	// name is the pod's name; since is when it stopped being ready, and
	// down how long ago that was. Messages name since, which stays the
	// same from pass to pass: a duration would rewrite status every pass.
	name  string
	since time.Time
	down  time.Duration
}

// downStores returns the set's stores whose pods are not ready (or do not
// exist), the longest down first.
func (st *logState) downStores(l *LogSet) []downStore {
	var out []downStore
	for i := range st.storeCount(l) {
		name := build.LogPodName(l, i)
		p, ok := st.pods[i]
		switch {
		case !ok:
			out = append(out, downStore{name: name})
		case !workload.IsReady(p):
			since := workload.UnreadySince(p)
			out = append(out, downStore{pod: p, name: name, since: since, down: st.now.Sub(since)})
		}
	}
	slices.SortStableFunc(out, func(a, b downStore) int { return cmp.Compare(b.down, a.down) })
	return out
}

// storesHealth says how the set's stores are, for the StoresHealthy
// condition, and returns the store to replace now, if any.
func (st *logState) storesHealth(l *LogSet) (reason, message string, replace *downStore) {
	down := st.downStores(l)
	if len(down) == 0 {
		if under := st.underReplicated(); under != "" {
			return mov1.ReasonReplicasMissing, under + ": HAKeeper adds the missing ones (to a replaced store once it has expired the failed one)", nil
		}
		return mov1.ReasonAllStoresUp, fmt.Sprintf("%d log stores up", l.Spec.Replicas), nil
	}
	d := down[0]
	timeout := l.Spec.StoreFailureTimeout.Duration
	since := d.since.UTC().Format(time.RFC3339)
	switch {
	case d.pod == nil:
		return mov1.ReasonStoreDown, d.name + " does not exist", nil
	case timeout == 0:
		return mov1.ReasonReplacementDisabled, fmt.Sprintf("%s has not been ready since %s; storeFailureTimeout is 0, so it is not replaced",
			d.name, since), nil
	case d.down < timeout:
		return mov1.ReasonStoreDown, fmt.Sprintf("%s has not been ready since %s; it is replaced after %s if the shards keep their majority without it",
			d.name, since, timeout), nil
	}
	if why := st.replacementBlocked(l, d); why != "" {
		return mov1.ReasonReplacementBlocked, fmt.Sprintf("%s has not been ready since %s and is not replaced: %s", d.name, since, why), nil
	}
	return mov1.ReasonStoreDown, fmt.Sprintf("%s has not been ready since %s: replacing its store", d.name, since), &d
}

// replacementBlocked says why replacing d's store now would not be safe;
// empty when it is: the shards have more than one replica, HAKeeper runs
// and every shard is led, HAKeeper does not hear from the store, every
// other store is up, and every shard keeps a majority of its replicas
// without it. So one store is replaced at a time, and never while the
// shards' majority is in doubt.
func (st *logState) replacementBlocked(l *LogSet, d downStore) string {
	if l.Spec.ShardReplicas < 2 {
		return "the log shards have one replica each, on this store's volume"
	}
	if reason, message := st.notServing(); reason != "" {
		return message
	}
	uuid := st.storeID(d.name)
	if st.storeState(d.name) == mov1.StoreUp {
		return fmt.Sprintf("HAKeeper still hears from its store %s", uuid)
	}
	for i := range st.storeCount(l) {
		name := build.LogPodName(l, i)
		if name == d.name {
			continue
		}
		if p, ok := st.pods[i]; !ok || !workload.IsReady(p) || st.storeState(name) != mov1.StoreUp {
			return fmt.Sprintf("the store of %s is not up either: one store is replaced at a time, with every other up", name)
		}
	}
	if reasons := st.view.MajorityKeptWithout(uuid); len(reasons) > 0 {
		return strings.Join(reasons, "; ")
	}
	return ""
}

// underReplicated names the shards with fewer replicas running (on a
// store HAKeeper hears from, which reports the replica) than they should
// have; empty when none. HAKeeper adds a member to a shard before the new
// store has started its replica and caught up: real MatrixOne took about a
// minute.
func (st *logState) underReplicated() string {
	if !st.viewOK {
		return ""
	}
	var short []string
	for _, sh := range st.view.LogShards {
		if running := st.runningReplicas(sh); uint64(running) < sh.NumberOfReplicas {
			short = append(short, fmt.Sprintf("log shard %d has %d of %d replicas running", sh.ShardID, running, sh.NumberOfReplicas))
		}
	}
	return strings.Join(short, ", ")
}

// runningReplicas counts the members of sh that run: HAKeeper hears from
// their store, which reports running sh's replica (the majority guard's
// count, wire.View.MajorityKeptWithout), and the store's pod, when it is
// one of the set's, is ready (HAKeeper counts a stopped store up until
// it expires it). Status, Ready and the guards all count this way.
func (st *logState) runningReplicas(sh wire.LogShard) int {
	running := 0
	for _, uuid := range sh.Replicas {
		if st.view.RunsReplica(uuid, sh.ShardID) && st.podReadyOrNotOurs(uuid) {
			running++
		}
	}
	return running
}

// podReadyOrNotOurs reports whether the pod whose store is uuid is ready
// and not terminating, or uuid is no store of the set's pods (of any
// ordinal the set may have: a store stopped to leave the set is its
// pod's until it has left).
func (st *logState) podReadyOrNotOurs(uuid string) bool {
	for i := range maxStores {
		if st.storeID(st.podName(i)) == uuid {
			p, ok := st.pods[i]
			return ok && workload.IsReady(p)
		}
	}
	return true
}

// maxStores is the most log stores a set has (spec.replicas' maximum).
const maxStores = 7

// nextStoreID is the UUID of the store that replaces old, the store of
// pod: the first generation's that HAKeeper has never known.
func (st *logState) nextStoreID(l *LogSet, pod, old string) string {
	for generation := 1; ; generation++ {
		uuid := build.ReplacementStoreID(l, pod, generation)
		if _, known := st.view.LogStore(uuid); !known && uuid != old {
			return uuid
		}
	}
}

// The replace-store flow and its steps.
const (
	flowReplaceStore   = "replace-store"
	stepRecordNewStore = "record-new-store"
	stepDeleteVolume   = "delete-volume-and-pod"
	stepWaitNewStore   = "wait-for-new-store"
	// newStoreTimeout bounds the wait for the new store: its pod starts
	// on an empty volume and mo-agent asks HAKeeper about its UUID for up
	// to a minute first.
	newStoreTimeout = 10 * time.Minute
)

// replaceStoreFlow replaces a failed log store (Declare decides which,
// behind the majority guard: storesHealth) in three steps:
// record-new-store writes the new store's UUID into the stores ConfigMap,
// first, so that the pod finds it, with the failed pod's UID, so that the
// failed pod, whose container may restart before it is deleted, does not
// take it (wire.FailedPodKey); delete-volume-and-pod deletes the
// failed store's volume claim and pod, each only if it is still the one
// the flow started with (their UIDs are in the trigger), so that a step
// that runs again never deletes the new store's; wait-for-new-store waits
// until HAKeeper hears from the new store on its new volume. HAKeeper
// gives it the replicas of the failed store once it has expired that one
// (StoresHealthy says ReplicasMissing until then).
func (c *LogSetController) replaceStoreFlow() framework.Flow[*LogSet, *logState] {
	return framework.Flow[*LogSet, *logState]{
		Name: flowReplaceStore,
		Steps: []framework.Step[*LogSet, *logState]{
			{Name: stepRecordNewStore, Run: c.recordNewStore},
			{Name: stepDeleteVolume, Run: c.deleteVolumeAndPod},
			{Name: stepWaitNewStore, Run: c.waitForNewStore, Timeout: newStoreTimeout},
		},
		MaxAttempts: 5,
		Backoff:     framework.Backoff{Initial: 2 * time.Second, Max: time.Minute},
		Poll:        time.Second,
	}
}

// replacement is what a replace-store flow replaces: the pod, its failed
// store's UUID, and the UIDs of the pod and of its volume claim ("" when
// it had none) when the flow started. It is the flow's trigger.
type replacement struct {
	pod, store       string
	podUID, claimUID types.UID
}

// String is the trigger: "log-2: store <uuid>, pod uid <uid>, claim uid
// <uid>" (claim uid "none" without a claim).
func (r replacement) String() string {
	claim := string(r.claimUID)
	if claim == "" {
		claim = "none"
	}
	return fmt.Sprintf("%s: store %s, pod uid %s, claim uid %s", r.pod, r.store, r.podUID, claim)
}

// parseReplacement reads a replace-store flow's trigger.
func parseReplacement(trigger string) (replacement, error) {
	f := strings.Fields(strings.ReplaceAll(trigger, ",", ""))
	if len(f) != 9 || !strings.HasSuffix(f[0], ":") || f[1] != "store" || f[3] != "pod" || f[4] != "uid" || f[6] != "claim" || f[7] != "uid" {
		return replacement{}, framework.Terminal(fmt.Errorf("trigger %q does not name a store to replace", trigger))
	}
	r := replacement{pod: strings.TrimSuffix(f[0], ":"), store: f[2], podUID: types.UID(f[5]), claimUID: types.UID(f[8])}
	if r.claimUID == "none" {
		r.claimUID = ""
	}
	return r, nil
}

// startReplacement returns the action that starts the replace-store flow
// for d's store, recording in its trigger the UIDs of its pod and claim.
func (st *logState) startReplacement(d downStore) framework.Action[*LogSet] {
	return framework.Named("StartReplaceStore", func(ctx *LogContext) error {
		l := ctx.Obj
		r := replacement{pod: d.name, store: st.storeID(d.name), podUID: d.pod.UID}
		ordinal, _ := logSet(l).PodOrdinal(d.pod)
		// From the API server: a claim the cache does not hold (one a
		// user made under the StatefulSet's name, without Steward's
		// labels) is deleted all the same.
		claim := &corev1.PersistentVolumeClaim{}
		switch err := ctx.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: logSet(l).ClaimName(ordinal)}, claim); {
		case err == nil:
			r.claimUID = claim.UID
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("get volume claim %s: %w", logSet(l).ClaimName(ordinal), err)
		}
		return framework.StartFlow[*LogSet](flowReplaceStore, r.String())(ctx)
	})
}

// replacing returns the replacement the running replace-store flow makes.
func replacing(ctx *LogContext) (replacement, error) {
	return parseReplacement(ctx.Obj.Status.Operation.Trigger)
}

// recordNewStore records the new store's UUID for the pod in the stores
// ConfigMap; done once it names a store other than the failed one. The
// UUID is the first generation's HAKeeper never knew, computed from the
// failed store, so a run repeated finds the same one.
func (c *LogSetController) recordNewStore(ctx *LogContext, st *logState) (bool, error) {
	r, err := replacing(ctx)
	if err != nil || st == nil {
		return false, err
	}
	if cur := st.stores[r.pod]; cur != "" && cur != r.store {
		return true, nil
	}
	if !st.viewOK {
		// Which UUIDs HAKeeper knows is HAKeeper's to say.
		return false, nil
	}
	uuid := st.nextStoreID(ctx.Obj, r.pod, r.store)
	// With the failed pod's UID: that pod, still running (its container
	// restarting on the volume deleted next), must not start as the new
	// store; only the pod re-created on the new volume may.
	if err := recordStores(ctx, map[string]string{r.pod: uuid, wire.FailedPodKey(r.pod): string(r.podUID)}); err != nil {
		return false, err
	}
	ctx.Log.Info("Recorded the store that replaces a failed one", "pod", r.pod, "store", r.store, "newStore", uuid)
	return true, nil
}

// deleteVolumeAndPod deletes the failed store's volume claim, then its
// pod, both by the UIDs the flow started with: a claim or pod that has
// another UID is the new store's, re-created by the StatefulSet, and
// stays. It waits until the stores ConfigMap, as this pass read it, names
// the new store, which the pod re-created will start as.
func (c *LogSetController) deleteVolumeAndPod(ctx *LogContext, st *logState) (bool, error) {
	r, err := replacing(ctx)
	if err != nil || st == nil {
		return false, err
	}
	l := ctx.Obj
	uuid := st.stores[r.pod]
	if uuid == "" || uuid == r.store {
		setReplacing(ctx, r, fmt.Sprintf("waiting for the stores ConfigMap %s to name the new store", build.LogStoresName(l)))
		return false, nil
	}
	if r.claimUID != "" {
		ordinal, _ := workload.Ordinal(r.pod, l.Name+"-")
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: logSet(l).ClaimName(ordinal)}}
		if _, err := deleteByUID(ctx, claim, r.claimUID); err != nil {
			return false, fmt.Errorf("delete volume claim %s: %w", claim.Name, err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: r.pod}}
	deleted, err := deleteByUID(ctx, pod, r.podUID)
	if err != nil {
		return false, fmt.Errorf("delete pod %s: %w", r.pod, err)
	}
	if deleted {
		since := "since it failed"
		if ordinal, ok := workload.Ordinal(r.pod, l.Name+"-"); ok && st.pods[ordinal] != nil && st.pods[ordinal].UID == r.podUID {
			since = "for " + st.now.Sub(workload.UnreadySince(st.pods[ordinal])).Round(time.Second).String()
		}
		ctx.Log.Info("Replaced a failed log store", "pod", r.pod, "store", r.store, "newStore", uuid)
		ctx.Event(corev1.EventTypeWarning, mov1.EventStoreReplaced,
			"Replaced the log store of %s (%s), not ready %s, by a new store %s on a new volume", r.pod, r.store, since, uuid)
	}
	return true, nil
}

// deleteByUID deletes obj if it still has uid; deleted reports whether
// this call deleted it (not when it was gone, or is another object now).
func deleteByUID(ctx *LogContext, obj client.Object, uid types.UID) (deleted bool, err error) {
	err = ctx.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or re-created under its name: a precondition on the UID
		// fails with a conflict.
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// waitForNewStore is done once the pod runs the new store: ready, and
// HAKeeper hears from it.
func (c *LogSetController) waitForNewStore(ctx *LogContext, st *logState) (bool, error) {
	r, err := replacing(ctx)
	if err != nil || st == nil {
		return false, err
	}
	l := ctx.Obj
	ordinal, _ := workload.Ordinal(r.pod, l.Name+"-")
	p, ok := st.pods[ordinal]
	switch {
	case !ok || p.UID == r.podUID:
		setReplacing(ctx, r, fmt.Sprintf("waiting for the StatefulSet to re-create %s", r.pod))
	case !workload.IsReady(p):
		setReplacing(ctx, r, fmt.Sprintf("waiting for %s to start as the new store", r.pod))
	case st.storeState(r.pod) != mov1.StoreUp:
		setReplacing(ctx, r, fmt.Sprintf("waiting for HAKeeper to hear from the new store of %s", r.pod))
	default:
		ctx.Log.Info("The new log store is up", "pod", r.pod, "newStore", st.storeID(r.pod))
		return true, nil
	}
	return false, nil
}

// setReplacing says in StoresHealthy how the replacement r goes: the
// store is down, and what the flow waits for.
func setReplacing(ctx *LogContext, r replacement, wait string) {
	ctx.SetCondition(mov1.ConditionStoresHealthy, metav1.ConditionFalse, mov1.ReasonStoreDown,
		fmt.Sprintf("replacing the failed store %s of %s: %s", r.store, r.pod, wait))
}
