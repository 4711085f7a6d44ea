package matrixone

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

// A BucketClaim's status from what Declare observed (claimState): the
// phase, then one setter per condition.

// claimConditions is what the setters write to: the pass's context, or a
// recorder in unit tests. Ready is set with SetCondition, True with the
// phase's reason (SetReady's True is always Reconciled).
type claimConditions interface {
	SetCondition(t string, status metav1.ConditionStatus, reason, message string)
}

// setClaimReady sets Ready, with reason whether True or False.
func setClaimReady(ctx claimConditions, ready bool, reason, message string) {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	ctx.SetCondition(framework.ConditionReady, status, reason, message)
}

// setStatus sets the phase and the conditions of ctx.Obj.
func (st *claimState) setStatus(ctx *ClaimContext) {
	b := ctx.Obj
	b.Status.Phase = st.phase(b)
	st.setConditions(ctx, b)
}

func (st *claimState) setConditions(ctx claimConditions, b *BucketClaim) {
	st.setBucketReady(ctx)
	st.setBound(ctx, b)
	st.setReady(ctx, b)
}

// phase is the claim's phase: Conflict before anything (a claim that
// yields is never bound), then Bound while its LogSet exists, Released
// once it is gone, Pending until the bucket answers, else Available.
// Deleting is Finalize's.
func (st *claimState) phase(b *BucketClaim) mov1.BucketClaimPhase {
	switch {
	case st.conflict != nil:
		return mov1.BucketClaimConflict
	case st.bound != nil:
		return mov1.BucketClaimBound
	case b.Status.BoundTo != nil:
		return mov1.BucketClaimReleased
	case st.bucketWhy != "":
		return mov1.BucketClaimPending
	}
	return mov1.BucketClaimAvailable
}

// conflictMessage says which claim this one yields to.
func (st *claimState) conflictMessage() string {
	return "the location " + overlapMessage(st.conflict) + ". That claim was there first (or is bound): this one is never bound or emptied; delete it"
}

// setBucketReady: True once the bucket answered; False with why not, or
// because a claim in Conflict is not checked.
func (st *claimState) setBucketReady(ctx claimConditions) {
	switch {
	case st.conflict != nil:
		ctx.SetCondition(mov1.ConditionBucketReady, metav1.ConditionFalse, mov1.ReasonConflict, "not checked: the claim is in Conflict")
	case st.bucketWhy != "":
		ctx.SetCondition(mov1.ConditionBucketReady, metav1.ConditionFalse, st.bucketReason, st.bucketWhy)
	default:
		ctx.SetCondition(mov1.ConditionBucketReady, metav1.ConditionTrue, mov1.ReasonBucketExists, "")
	}
}

// setBound: True while bound; False with Conflict, Released (and what
// reclaimPolicy does next) or Available (and which LogSet, if any, waits
// for the bucket).
func (st *claimState) setBound(ctx claimConditions, b *BucketClaim) {
	switch {
	case st.conflict != nil:
		ctx.SetCondition(mov1.ConditionBound, metav1.ConditionFalse, mov1.ReasonConflict, st.conflictMessage())
	case st.bound != nil:
		ctx.SetCondition(mov1.ConditionBound, metav1.ConditionTrue, mov1.ReasonBound,
			fmt.Sprintf("bound to the LogSet %s (UID %s)", st.bound.Name, st.bound.UID))
	case b.Status.BoundTo != nil:
		ctx.SetCondition(mov1.ConditionBound, metav1.ConditionFalse, mov1.ReasonReleased, st.releasedMessage(b))
	case st.candidate != nil:
		ctx.SetCondition(mov1.ConditionBound, metav1.ConditionFalse, mov1.ReasonAvailable,
			fmt.Sprintf("the LogSet %s names the claim, and binds it once the bucket answers", st.candidate.Name))
	default:
		ctx.SetCondition(mov1.ConditionBound, metav1.ConditionFalse, mov1.ReasonAvailable, "no LogSet names the claim")
	}
}

// releasedMessage says that the claim's LogSet is gone, and what follows.
func (st *claimState) releasedMessage(b *BucketClaim) string {
	gone := fmt.Sprintf("the LogSet %s (UID %s) the claim was bound to is gone", b.Status.BoundTo.Name, b.Status.BoundTo.UID)
	if b.Spec.ReclaimPolicy == commonv1.ReclaimDelete {
		return gone + "; reclaimPolicy Delete: the claim is deleted, its objects first, once no pod mounts it"
	}
	return gone + "; reclaimPolicy Retain: the objects stay, and the next LogSet that names the claim binds it"
}

// setReady: False in Conflict, while the bucket does not answer, and
// while a claim released under Delete waits for its pods or is being
// deleted; True otherwise, with the phase as reason.
func (st *claimState) setReady(ctx claimConditions, b *BucketClaim) {
	switch {
	case st.conflict != nil:
		setClaimReady(ctx, false, mov1.ReasonConflict, st.conflictMessage())
	case st.bucketWhy != "":
		setClaimReady(ctx, false, st.bucketReason, st.bucketWhy)
	case st.bound != nil:
		setClaimReady(ctx, true, mov1.ReasonBound, fmt.Sprintf("bound to the LogSet %s", st.bound.Name))
	case b.Status.BoundTo != nil && b.Spec.ReclaimPolicy == commonv1.ReclaimDelete && len(st.pods) > 0:
		setClaimReady(ctx, false, mov1.ReasonWaitingForPods, waitingForPods(st.pods))
	case b.Status.BoundTo != nil && b.Spec.ReclaimPolicy == commonv1.ReclaimDelete:
		setClaimReady(ctx, false, mov1.ReasonReleased, st.releasedMessage(b))
	case b.Status.BoundTo != nil:
		setClaimReady(ctx, true, mov1.ReasonReleased, st.releasedMessage(b))
	default:
		setClaimReady(ctx, true, mov1.ReasonAvailable, "the bucket exists; the first LogSet that names the claim binds it")
	}
}
