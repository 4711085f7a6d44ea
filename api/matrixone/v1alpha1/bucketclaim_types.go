package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Condition types of a BucketClaim, next to the framework's Ready.
const (
	// ConditionBucketReady says whether the claim's bucket exists and
	// answers Steward with the claim's credentials.
	ConditionBucketReady = "BucketReady"
	// ConditionBound says whether the claim is bound to a LogSet, and when
	// it is not, why (none names it, its LogSet is gone, or it overlaps an
	// older claim).
	ConditionBound = "Bound"
)

// BucketClaimSpec is a claim on one prefix of one bucket, for one LogSet's
// shared storage.
type BucketClaimSpec struct {
	// s3 is the claimed location: a prefix of a bucket of an S3-compatible
	// store, with the credentials Secret and CA Secret (both in the claim's
	// namespace, which is its LogSet's) Steward and MatrixOne reach it
	// with. No two claims, in any namespace, may overlap: a keyPrefix that
	// equals, contains or lies within another claim's in the same bucket
	// of the same store is refused. The controller makes the bucket when
	// it does not exist. Required; immutable (the data lives there).
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="s3 is immutable: the claim's data lives there"
	S3 S3Storage `json:"s3"`

	// reclaimPolicy is what happens to the objects under the prefix once
	// the claim is released (its LogSet is gone) or deleted: Retain keeps
	// them, and a Released claim may be bound again by a new LogSet that
	// names it (the data is found there); Delete deletes every object
	// under the prefix, once no pod that mounted the claim remains, and
	// then the claim. Default Retain; can change (until the objects are
	// deleted: a claim may be switched to Retain while it waits or
	// empties, and then keeps what is left).
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy commonv1.ReclaimPolicy `json:"reclaimPolicy,omitempty"`
}

// BucketClaimPhase is where a BucketClaim is in its life.
// +kubebuilder:validation:Enum=Pending;Available;Bound;Released;Deleting;Conflict
type BucketClaimPhase string

// BucketClaim phases.
const (
	// BucketClaimPending: the bucket has not answered yet (the
	// credentials Secret is missing, or the store refuses or cannot be
	// reached: the BucketReady condition says which).
	BucketClaimPending BucketClaimPhase = "Pending"
	// BucketClaimAvailable: the bucket exists, and no LogSet has bound the
	// claim yet: the first LogSet that names it will.
	BucketClaimAvailable BucketClaimPhase = "Available"
	// BucketClaimBound: a LogSet (status.boundTo) holds the claim; it
	// holds it for life.
	BucketClaimBound BucketClaimPhase = "Bound"
	// BucketClaimReleased: the LogSet it was bound to is gone. Under
	// Retain the objects stay, and a new LogSet that names the claim binds
	// it; under Delete the controller waits for the pods that mounted it
	// to go, then deletes the claim, emptying the prefix first.
	BucketClaimReleased BucketClaimPhase = "Released"
	// BucketClaimDeleting: the claim is being deleted: it waits for its
	// LogSet and the pods that mounted it to go and, under Delete, empties
	// the prefix (status.deletion).
	BucketClaimDeleting BucketClaimPhase = "Deleting"
	// BucketClaimConflict: the claim's location overlaps an older claim's
	// (two creates raced past admission, or admission was off). It is
	// never bound and never emptied; delete it.
	BucketClaimConflict BucketClaimPhase = "Conflict"
)

// BucketClaimBinding is the LogSet a claim is bound to.
type BucketClaimBinding struct {
	// name is the LogSet's name, in the claim's namespace.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// uid is the LogSet's UID: a LogSet re-created under the same name is
	// another LogSet.
	// +required
	UID types.UID `json:"uid"`
}

// BucketClaimDeletion is the progress of emptying a claim's prefix.
type BucketClaimDeletion struct {
	// startedAt is when the first objects were deleted.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// completedAt is when a listing found the prefix empty.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// objectsDeleted and bytesDeleted count what was deleted so far.
	// +optional
	ObjectsDeleted int64 `json:"objectsDeleted,omitempty"`
	// bytesDeleted is the size of the objects deleted so far, as listed.
	// +optional
	BytesDeleted int64 `json:"bytesDeleted,omitempty"`
	// lastError is the last failure of a deletion pass, cleared by the
	// next pass that makes progress.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	LastError string `json:"lastError,omitempty"`
}

// BucketClaimStatus is the observed state of a BucketClaim.
type BucketClaimStatus struct {
	// conditions (Ready, BucketReady, Bound, Synced, and the framework's
	// Paused and OperationFailed), observedGeneration, and operation.
	commonv1.StatusCore `json:",inline"`

	// phase is where the claim is in its life: Pending, Available, Bound,
	// Released, Deleting or Conflict (docs/matrixone.md).
	// +optional
	Phase BucketClaimPhase `json:"phase,omitempty"` //nolint:kubeapilinter // nophase: a claim's lifecycle as a volume claim's, which users know by phase; the conditions (Ready, BucketReady, Bound) carry the same state

	// boundTo is the LogSet the claim is, or was, bound to; it stays
	// after the LogSet is gone (Released), until a new LogSet binds the
	// claim.
	// +optional
	BoundTo *BucketClaimBinding `json:"boundTo,omitempty"`

	// deletion is the progress of emptying the prefix, under
	// reclaimPolicy Delete.
	// +optional
	Deletion *BucketClaimDeletion `json:"deletion,omitempty"`
}

// BucketClaim claims one prefix of one bucket of an S3-compatible store as
// a LogSet's shared storage (sharedStorage.bucketClaim), with a volume
// claim's lifecycle: it binds to one LogSet for life, is released when the
// LogSet goes, and its objects are then kept or deleted as reclaimPolicy
// says.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mobc,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must have at most 63 characters: the pods that mount the claim carry it as a label"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.s3.bucket`
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.s3.keyPrefix`
// +kubebuilder:printcolumn:name="Bound-To",type=string,JSONPath=`.status.boundTo.name`
// +kubebuilder:printcolumn:name="Reclaim",type=string,JSONPath=`.spec.reclaimPolicy`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BucketClaim struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the claimed location and its reclaim policy; s3 is required.
	// +required
	Spec BucketClaimSpec `json:"spec"`
	// status is the claim's phase, binding and deletion progress.
	// +optional
	Status BucketClaimStatus `json:"status,omitempty"`
}

// BucketClaimList is a list of BucketClaims.
//
// +kubebuilder:object:root=true
type BucketClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BucketClaim `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (b *BucketClaim) StatusCore() *commonv1.StatusCore { return &b.Status.StatusCore }

// BoundToLogSet reports whether the claim is bound to the LogSet l (by
// UID: one re-created under the same name is another).
func (b *BucketClaim) BoundToLogSet(l *LogSet) bool {
	return b.Status.BoundTo != nil && b.Status.BoundTo.UID == l.UID && l.UID != ""
}
