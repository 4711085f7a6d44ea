package matrixone

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	mov1 "github.com/stewardhq/steward/api/matrixone/v1alpha1"
	"github.com/stewardhq/steward/internal/framework"
)

func claimAt(ns, name string, created int64, bound bool) *BucketClaim {
	b := &BucketClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if created > 0 {
		b.CreationTimestamp = metav1.Unix(created, 0)
	}
	if bound {
		b.Status.BoundTo = &mov1.BucketClaimBinding{Name: "log", UID: "u1"}
	}
	return b
}

// TestClaimYields decides which of two overlapping claims keeps the
// location: a bound one over one never bound, else the older, by time and
// then namespace/name; a claim being created yields to every other.
func TestClaimYields(t *testing.T) {
	for _, tc := range []struct {
		name     string
		b, other *BucketClaim
		want     bool
	}{
		{"the later yields", claimAt("a", "x", 20, false), claimAt("a", "y", 10, false), true},
		{"the older keeps it", claimAt("a", "x", 10, false), claimAt("a", "y", 20, false), false},
		{"within a second, by namespace/name", claimAt("b", "a", 10, false), claimAt("a", "z", 10, false), true},
		{"within a second, the first name keeps it", claimAt("a", "a", 10, false), claimAt("a", "b", 10, false), false},
		{"a claim being created yields", claimAt("a", "a", 0, false), claimAt("z", "z", 10, false), true},
		{"a bound claim keeps it, however late", claimAt("a", "x", 20, true), claimAt("a", "y", 10, false), false},
		{"a claim never bound yields to a bound one", claimAt("a", "x", 10, false), claimAt("a", "y", 20, true), true},
		{"both bound: the later yields", claimAt("a", "x", 20, true), claimAt("a", "y", 10, true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := claimYields(tc.b, tc.other); got != tc.want {
				t.Errorf("claimYields = %t, want %t", got, tc.want)
			}
			// Exactly one of two claims yields (but for one being created,
			// which no stored claim yields to).
			if !tc.b.CreationTimestamp.IsZero() {
				if back := claimYields(tc.other, tc.b); back == tc.want {
					t.Errorf("both or neither yield: %t and %t", tc.want, back)
				}
			}
		})
	}
}

// recorder keeps the conditions the setters set.
type recorder struct{ conditions []metav1.Condition }

func (r *recorder) SetCondition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&r.conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message})
}

func (r *recorder) get(t string) string {
	c := meta.FindStatusCondition(r.conditions, t)
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// TestClaimStatus sets a claim's phase and conditions from what a pass
// observed.
func TestClaimStatus(t *testing.T) {
	log := &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Name: "log", UID: "u1"}}
	other := claimAt("ns2", "older", 1, false)
	other.Spec.S3 = mov1.S3Storage{Endpoint: "http://s3:7070", Bucket: "mo", KeyPrefix: "team"}
	claim := func(bound bool, policy commonv1.ReclaimPolicy) *BucketClaim {
		b := claimAt("ns", "data", 5, bound)
		b.Spec.ReclaimPolicy = policy
		return b
	}
	type want struct {
		phase                mov1.BucketClaimPhase
		ready, bound, bucket string // prefixes of the conditions
	}
	for _, tc := range []struct {
		name string
		b    *BucketClaim
		st   claimState
		want want
	}{
		{"pending", claim(false, commonv1.ReclaimRetain),
			claimState{bucketReason: mov1.ReasonCredentialsMissing, bucketWhy: "the credentials Secret k does not exist"},
			want{mov1.BucketClaimPending, "False CredentialsMissing: the credentials Secret k", "False Available", "False CredentialsMissing"}},
		{"available", claim(false, commonv1.ReclaimRetain), claimState{},
			want{mov1.BucketClaimAvailable, "True Available", "False Available: no LogSet names the claim", "True BucketExists"}},
		{"a LogSet waits for the bucket", claim(false, commonv1.ReclaimRetain),
			claimState{candidate: log, bucketReason: mov1.ReasonBucketUnreachable, bucketWhy: "s3: checking bucket mo: refused"},
			want{mov1.BucketClaimPending, "False BucketUnreachable: s3: checking", "False Available: the LogSet log names the claim, and binds it once the bucket answers", "False BucketUnreachable"}},
		{"bound", claim(true, commonv1.ReclaimRetain), claimState{bound: log},
			want{mov1.BucketClaimBound, "True Bound: bound to the LogSet log", "True Bound: bound to the LogSet log (UID u1)", "True"}},
		{"bound, the keys gone", claim(true, commonv1.ReclaimRetain),
			claimState{bound: log, bucketReason: mov1.ReasonCredentialsMissing, bucketWhy: "gone"},
			want{mov1.BucketClaimBound, "False CredentialsMissing: gone", "True Bound", "False"}},
		{"released, retained", claim(true, commonv1.ReclaimRetain), claimState{},
			want{mov1.BucketClaimReleased, "True Released: the LogSet log (UID u1) the claim was bound to is gone; reclaimPolicy Retain",
				"False Released", "True"}},
		{"released under Delete, pods left", claim(true, commonv1.ReclaimDelete), claimState{pods: []string{"log-0", "tn-0"}},
			want{mov1.BucketClaimReleased, "False WaitingForPods: 2 pods that mount the claim remain, first log-0", "False Released: the LogSet log", "True"}},
		{"released under Delete", claim(true, commonv1.ReclaimDelete), claimState{},
			want{mov1.BucketClaimReleased, "False Released: the LogSet log (UID u1) the claim was bound to is gone; reclaimPolicy Delete", "False Released", "True"}},
		{"conflict", claim(false, commonv1.ReclaimDelete), claimState{conflict: other},
			want{mov1.BucketClaimConflict, "False Conflict: the location overlaps the BucketClaim ns2/older (s3://mo/team/ at http://s3:7070)",
				"False Conflict: the location overlaps", "False Conflict: not checked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			if got := tc.st.phase(tc.b); got != tc.want.phase {
				t.Errorf("phase %s, want %s", got, tc.want.phase)
			}
			tc.st.setConditions(r, tc.b)
			for typ, want := range map[string]string{
				framework.ConditionReady:  tc.want.ready,
				mov1.ConditionBound:       tc.want.bound,
				mov1.ConditionBucketReady: tc.want.bucket,
			} {
				if got := r.get(typ); !strings.HasPrefix(got, want) {
					t.Errorf("%s is %q, want %q...", typ, got, want)
				}
			}
		})
	}
}

// TestClaimDecisions checks what Observe may do from a pass's view: bind
// (never a claim in Conflict, one whose bucket does not answer, or one
// released under Delete) and release.
func TestClaimDecisions(t *testing.T) {
	log := &mov1.LogSet{ObjectMeta: metav1.ObjectMeta{Name: "next", UID: "u2", CreationTimestamp: metav1.NewTime(time.Now())}}
	for _, tc := range []struct {
		name               string
		bound              bool
		policy             commonv1.ReclaimPolicy
		st                 claimState
		bindable, released bool
	}{
		{"a LogSet names an available claim", false, commonv1.ReclaimRetain, claimState{candidate: log}, true, false},
		{"no LogSet names it", false, commonv1.ReclaimRetain, claimState{}, false, false},
		{"the bucket does not answer", false, commonv1.ReclaimRetain, claimState{candidate: log, bucketWhy: "x"}, false, false},
		{"in Conflict", false, commonv1.ReclaimRetain, claimState{candidate: log, conflict: claimAt("a", "b", 1, false)}, false, false},
		{"released under Retain: rebinding", true, commonv1.ReclaimRetain, claimState{candidate: log}, true, true},
		{"released under Delete: never again", true, commonv1.ReclaimDelete, claimState{candidate: log}, false, true},
		{"bound", true, commonv1.ReclaimDelete, claimState{bound: log}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := claimAt("ns", "data", 1, tc.bound)
			b.Spec.ReclaimPolicy = tc.policy
			if got := tc.st.bindable(b); got != tc.bindable {
				t.Errorf("bindable = %t", got)
			}
			if got := tc.st.released(b); got != tc.released {
				t.Errorf("released = %t", got)
			}
		})
	}
}
