package matrixone

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
	"github.com/stewardhq/steward/internal/framework/workload"
)

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
