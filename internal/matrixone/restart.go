package matrixone

import (
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
)

// The rolling-restart flow and its step, for every kind of set: a store
// whose pod runs an older revision of the pod template (image, resources,
// configuration, placement) than the StatefulSet's latest is restarted by
// deleting its pod (the StatefulSets update OnDelete), one at a time.
const (
	flowRollingRestart = "rolling-restart"
	stepRestartStale   = "restart-stale-stores"
)

// rollingRestartTrigger names the revision a rolling restart moves to.
func rollingRestartTrigger(sts *appsv1.StatefulSet) string {
	return "revision " + sts.Status.UpdateRevision
}

// restartBackoff spaces a restart step's failed attempts: a pod deletion
// or a CN's mo_ctl that failed. The step waits without error between
// restarts, so a step that ran a minute without one has left its failures
// behind.
var restartBackoff = framework.Backoff{Initial: 2 * time.Second, Max: time.Minute}

// rollingRestartFlow restarts the set's stale stores, one per run of its
// one step, restart-stale-stores (restartNext), each only when the others
// serve; a CN drained first. The step heads for the StatefulSet's latest
// revision on every run, so a change of the pod template during the flow
// redirects it. It has no timeout: a restart that waits says why in
// Ready, and a store that never comes back is the StatefulSet's to
// re-create.
func (c *StoreSetController[T]) rollingRestartFlow() framework.Flow[T, *storeState] {
	return framework.Flow[T, *storeState]{
		Name:        flowRollingRestart,
		Steps:       []framework.Step[T, *storeState]{{Name: stepRestartStale, Run: c.restartNext}},
		MaxAttempts: 8,
		Backoff:     restartBackoff,
		Poll:        time.Second,
	}
}

// staleKept returns the pods the set keeps (below spec.replicas) that run
// an older revision than the StatefulSet's latest, by ordinal; none while
// the StatefulSet controller has not computed the latest revision. Pods
// above spec.replicas leave through a scale-in instead.
func (st *storeState) staleKept() []*corev1.Pod {
	if !workload.RevisionKnown(st.sts) {
		return nil
	}
	var out []*corev1.Pod
	for _, ordinal := range slices.Sorted(maps.Keys(st.pods)) {
		p := st.pods[ordinal]
		if ordinal < int(st.set.Replicas) && p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.sts.Status.UpdateRevision {
			out = append(out, p)
		}
	}
	return out
}

// restartNext moves the restart of the set's stale stores one step on:
// the first stale store the set keeps restarts once restartBlocked
// allows it (a set of one store restarts it anyway: there is no other to
// keep serving), a CN drained first (but not the only CN: no other could
// take its sessions). done once no store the set keeps is stale.
func (c *StoreSetController[T]) restartNext(ctx *framework.Context[T], st *storeState) (bool, error) {
	if st == nil {
		return false, nil
	}
	if c.k.drainTimeout != nil {
		if pods := c.toUndrain(st); len(pods) > 0 {
			return false, c.undrain(ctx, st, pods)
		}
	}
	stale := st.staleKept()
	if len(stale) == 0 {
		return workload.RevisionKnown(st.sts), nil
	}
	pod := stale[0]
	drains := c.k.drainTimeout != nil && st.set.Replicas > 1
	if started, _ := drainOf(pod); !drains || started.IsZero() {
		if why := st.restartBlocked(); why != "" && st.set.Replicas > 1 {
			ctx.Log.V(1).Info("Restart waits", "pod", pod.Name, "why", why)
			return false, nil
		}
	}
	if drains {
		if done, err := c.drain(ctx, st, []*corev1.Pod{pod}, c.k.drainTimeout(ctx.Obj)); !done || err != nil {
			return false, err
		}
	}
	return false, c.restartStore(ctx, st, pod)
}

// restartStore deletes pod: the StatefulSet re-creates it on the latest
// revision.
func (c *StoreSetController[T]) restartStore(ctx *framework.Context[T], st *storeState, pod *corev1.Pod) error {
	if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})); err != nil {
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	ctx.Log.Info("Restarting a store", "pod", pod.Name, "revision", st.sts.Status.UpdateRevision)
	ctx.Event(corev1.EventTypeNormal, mov1.EventStoreRestarted, "Restarting %s onto revision %s", pod.Name, st.sts.Status.UpdateRevision)
	return nil
}

// logRollingRestartFlow is the LogSet's rolling-restart: its one step,
// restart-stale-stores (restartNextLog), restarts the stale log stores one
// at a time, stores that lead no shard first, each only while the shards
// keep their majority without it (logState.restartBlocked).
func (c *LogSetController) logRollingRestartFlow() framework.Flow[*LogSet, *logState] {
	return framework.Flow[*LogSet, *logState]{
		Name:        flowRollingRestart,
		Steps:       []framework.Step[*LogSet, *logState]{{Name: stepRestartStale, Run: c.restartNextLog}},
		MaxAttempts: 8,
		Backoff:     restartBackoff,
		Poll:        time.Second,
	}
}

// restartNextLog restarts the next stale log store once it is safe; done
// once no store is stale. The pods come back under their names, with
// their volumes, as the same stores.
func (c *LogSetController) restartNextLog(ctx *LogContext, st *logState) (bool, error) {
	if st == nil { // Declare waits for the shared storage
		return false, nil
	}
	stale := st.stale()
	if len(stale) == 0 {
		return workload.RevisionKnown(st.sts), nil
	}
	pod := stale[0]
	if why := st.restartBlocked(ctx.Obj, pod); why != "" {
		ctx.Log.V(1).Info("Restart waits", "pod", pod.Name, "why", why)
		return false, nil
	}
	if err := client.IgnoreNotFound(ctx.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})); err != nil {
		return false, fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	ctx.Log.Info("Restarting a log store", "pod", pod.Name, "revision", st.sts.Status.UpdateRevision)
	ctx.Event(corev1.EventTypeNormal, mov1.EventStoreRestarted, "Restarting log store %s onto revision %s",
		pod.Name, st.sts.Status.UpdateRevision)
	return false, nil
}

// InterruptFlow ends a LogSet's rolling restart, or a store's removal that
// has not stopped the store yet, when a failed store is to be replaced
// (framework.FlowInterrupter): both wait for every store to be up, which
// the failed one never is again, and Observe, which runs in the same pass,
// replaces it first. They start again afterwards (the new store on the
// latest revision already).
func (c *LogSetController) InterruptFlow(_ *LogContext, st *logState, op *commonv1.Operation) (string, bool) {
	if st == nil || st.replace == nil {
		return "", false
	}
	switch _, holding := op.HeldReplicas(st.name); {
	case op.Name == flowRollingRestart, op.Name == flowRemoveStore && op.Step == stepStopStore && !holding:
		return fmt.Sprintf("the store of %s failed: its replacement goes first", st.replace.name), true
	}
	return "", false
}
