package matrixone

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// The CNs' scale-in flow and its steps. A CN leaves its set only drained
// (drain.go): its sessions moved to the CNs that stay and its lock tables
// handed to them. The StatefulSet removes the highest ordinals first, so
// the flow keeps every pod until the leaving CNs drained, then releases
// them.
const (
	flowScaleIn      = "scale-in"
	stepDrainLeaving = "drain-leaving-cns"
	stepReleaseCNs   = "release-leaving-cns"
	// releaseTimeout bounds the wait for the leaving pods to go once
	// released: a pod stuck terminating (its node gone) fails the flow,
	// for a user to look at and rescue.
	releaseTimeout = 15 * time.Minute
)

// scaleInFlow removes the CNs above spec.replicas in two steps:
// drain-leaving-cns drains them all at once (each ends on its own: no
// session left and its lock tables moved, or spec.drainTimeout), and
// release-leaving-cns holds the StatefulSet at spec.replicas
// (status.operation.held) and waits until their pods are gone. Until the
// release, Declare keeps the StatefulSet at its size (cnReplicas). A
// change of spec.replicas during the flow interrupts it (InterruptFlow):
// a scale-out sets the drained CNs Working again (Observe's undrain), a
// further scale-in starts again with the drains recorded on the pods.
func (c *StoreSetController[T]) scaleInFlow() framework.Flow[T, *storeState] {
	return framework.Flow[T, *storeState]{
		Name: flowScaleIn,
		Steps: []framework.Step[T, *storeState]{
			// Bounded by spec.drainTimeout: each drain ends by then.
			{Name: stepDrainLeaving, Run: c.drainLeaving},
			{Name: stepReleaseCNs, Run: c.releaseLeaving, Timeout: releaseTimeout},
		},
		MaxAttempts: 8,
		Backoff:     framework.Backoff{Initial: 2 * time.Second, Max: time.Minute},
		Poll:        time.Second,
	}
}

// scaleInTrigger names a scale-in for status.operation.trigger: the
// StatefulSet's size and spec.replicas when it started.
func scaleInTrigger(from, to int32) string { return fmt.Sprintf("replicas %d to %d", from, to) }

// scaleInTarget reads the replicas a scale-in heads for from its trigger.
func scaleInTarget(trigger string) (int32, bool) {
	var from, to int32
	if _, err := fmt.Sscanf(trigger, "replicas %d to %d", &from, &to); err != nil {
		return 0, false
	}
	return to, true
}

// drainLeaving drains the CNs above spec.replicas; done once each drained.
// The CNs the set keeps that HAKeeper has Draining (one restarted meanwhile)
// are set Working first: the leaving ones' sessions go to them.
func (c *StoreSetController[T]) drainLeaving(ctx *framework.Context[T], st *storeState) (bool, error) {
	if st == nil {
		return false, nil
	}
	if pods := c.toUndrain(st); len(pods) > 0 {
		return false, c.undrain(ctx, st, pods)
	}
	return c.drain(ctx, st, st.leaving(), c.k.drainTimeout(ctx.Obj))
}

// releaseLeaving holds the StatefulSet at spec.replicas, so that Declare
// shrinks it, and is done once the cache shows it shrunk and the pods
// above it are gone (terminating ones too: a CN still runs while it
// stops).
func (c *StoreSetController[T]) releaseLeaving(ctx *framework.Context[T], st *storeState) (bool, error) {
	if st == nil {
		return false, nil
	}
	want := st.set.Replicas
	ctx.Obj.StatusCore().Operation.Hold(st.sts.Name, want)
	var why string
	switch {
	case *st.sts.Spec.Replicas != want || st.cachedReplicas == nil || *st.cachedReplicas != want:
		// The cache too: once the flow is over, the declarative half keeps
		// the size the cache shows, which must be the released one.
		why = fmt.Sprintf("the drained CNs leave: the StatefulSet goes to %d", want)
	case st.highest >= int(want):
		why = fmt.Sprintf("the drained CNs leave: waiting for %s to go", st.set.PodName(st.highest))
	default:
		return true, nil
	}
	ctx.SetCondition(commonv1.ConditionProgressing, metav1.ConditionTrue, commonv1.ReasonScaling, why)
	ctx.SetReady(false, commonv1.ReasonScaling, why)
	return false, nil
}

// InterruptFlow ends a scale-in whose spec.replicas changed since it
// started (framework.FlowInterrupter). Observe runs in the same pass: after
// a scale-out it sets the CNs the set keeps Working again (undrain), and
// after a further scale-in it starts a scale-in to the new size, which
// finds the drains already started recorded on the pods.
//
// It also ends a CN set's rolling restart when spec.replicas went below the
// StatefulSet's size: the scale-in goes first, as CNs that leave need no
// restart, and a restart waiting for a CN that never gets ready (the one
// a user removes) would hold the scale-in back for ever. The rolling
// restart starts again afterwards, and a CN it had begun to drain goes on
// draining (its drain is on its pod).
func (c *StoreSetController[T]) InterruptFlow(_ *framework.Context[T], st *storeState, op *commonv1.Operation) (string, bool) {
	if st == nil {
		return "", false
	}
	if op.Name == flowRollingRestart && c.k.drainTimeout != nil && *st.sts.Spec.Replicas > st.set.Replicas {
		return fmt.Sprintf("spec.replicas went down to %d: the scale-in goes first", st.set.Replicas), true
	}
	if op.Name != flowScaleIn {
		return "", false
	}
	target, ok := scaleInTarget(op.Trigger)
	switch want := st.set.Replicas; {
	case !ok || want == target:
		return "", false
	case want > target:
		return fmt.Sprintf("spec.replicas went up to %d: the CNs the set keeps are set working again", want), true
	default:
		return fmt.Sprintf("spec.replicas went down to %d: a scale-in to it starts", want), true
	}
}
