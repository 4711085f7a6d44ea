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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
	"github.com/stewardhq/steward/internal/matrixone/build"
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
	for i := range int(l.Spec.Replicas) {
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
	for i := range int(l.Spec.Replicas) {
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
		running := 0
		for _, uuid := range sh.Replicas {
			if st.view.RunsReplica(uuid, sh.ShardID) {
				running++
			}
		}
		if uint64(running) < sh.NumberOfReplicas {
			short = append(short, fmt.Sprintf("log shard %d has %d of %d replicas running", sh.ShardID, running, sh.NumberOfReplicas))
		}
	}
	return strings.Join(short, ", ")
}

// nextStoreID is the UUID of the store that replaces the one in pod: the
// first generation's that HAKeeper has never known.
func (st *logState) nextStoreID(l *LogSet, pod string) string {
	for generation := 1; ; generation++ {
		uuid := build.ReplacementStoreID(l, pod, generation)
		if _, known := st.view.LogStore(uuid); !known && uuid != st.storeID(pod) {
			return uuid
		}
	}
}

// replaceStore returns the action that replaces d's store: it records the
// new store's UUID in the stores ConfigMap (first, so that the pod finds
// it), then deletes the volume claim and the pod, both by UID.
func (st *logState) replaceStore(d downStore) framework.Action[*LogSet] {
	return framework.Named("ReplaceStore", func(ctx *LogContext) error {
		l := ctx.Obj
		old, uuid := st.storeID(d.name), st.nextStoreID(l, d.name)
		if err := recordStores(ctx, map[string]string{d.name: uuid}); err != nil {
			return err
		}
		set := logSet(l)
		ordinal, _ := set.PodOrdinal(d.pod)
		claim := &corev1.PersistentVolumeClaim{}
		err := ctx.Client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: set.ClaimName(ordinal)}, claim)
		switch {
		case err == nil:
			if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, claim, client.Preconditions{UID: &claim.UID})); err != nil {
				return fmt.Errorf("delete volume claim %s: %w", claim.Name, err)
			}
		case !apierrors.IsNotFound(err):
			return err
		}
		if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, d.pod, client.Preconditions{UID: &d.pod.UID})); err != nil {
			return fmt.Errorf("delete pod %s: %w", d.name, err)
		}
		ctx.Log.Info("Replaced a failed log store", "pod", d.name, "store", old, "newStore", uuid, "down", d.down.Round(time.Second))
		ctx.Event(corev1.EventTypeWarning, mov1.EventStoreReplaced,
			"Replaced the log store of %s (%s), not ready for %s, by a new store %s on a new volume",
			d.name, old, d.down.Round(time.Second), uuid)
		return nil
	})
}
