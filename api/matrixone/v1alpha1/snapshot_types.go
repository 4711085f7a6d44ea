package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// SnapshotSpec is an account snapshot of a MatrixOneCluster, taken with
// MatrixOne's CREATE SNAPSHOT.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a Snapshot's spec is immutable: create another Snapshot"
type SnapshotSpec struct {
	// cluster names the MatrixOneCluster to snapshot, in the Snapshot's
	// namespace. The snapshot is taken once it is Ready. Required;
	// immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`

	// account is the MatrixOne account (tenant) whose databases the
	// snapshot keeps: "sys" or one made with CREATE ACCOUNT. Account
	// snapshots only: MatrixOne 1.2.4 takes cluster snapshots but cannot
	// restore from one (its RESTORE CLUSTER does nothing). Required;
	// immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	Account string `json:"account"`
}

// SnapshotStatus is what MatrixOne holds of a Snapshot, read again on
// every pass.
type SnapshotStatus struct {
	// conditions (Ready: MatrixOne holds the snapshot; Synced, and the
	// framework's Paused and OperationFailed), observedGeneration, and
	// operation: the snapshot flow's steps.
	commonv1.StatusCore `json:",inline"`

	// snapshotName is the snapshot's name in MatrixOne (the Snapshot's
	// name), set once the snapshot is taken.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SnapshotName string `json:"snapshotName,omitempty"`

	// snapshotTime is the snapshot's point in time, as MatrixOne records
	// it (the CN's clock): the account's data as of then is what a
	// restore brings back.
	// +optional
	SnapshotTime *metav1.Time `json:"snapshotTime,omitempty"`

	// snapshotTS is the same point in MatrixOne's units: nanoseconds since
	// the Unix epoch, in decimal, as mo_catalog.mo_snapshots holds it (a
	// string: JSON numbers of that size lose digits on the way).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	SnapshotTS string `json:"snapshotTS,omitempty"`
}

// Snapshot is a point-in-time snapshot of one account of a
// MatrixOneCluster, inside the cluster (MatrixOne keeps the data it needs
// from being collected). Creating it takes the snapshot; its status says
// whether MatrixOne still holds it, read on every pass; deleting it drops
// the snapshot. A SnapshotRestore brings an account back to it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mosn,categories={steward,matrixone}
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 64",message="metadata.name must have at most 64 characters: MatrixOne's snapshot is named after it"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Account",type=string,JSONPath=`.spec.account`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Taken",type=date,JSONPath=`.status.snapshotTime`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Snapshot struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the cluster and the account.
	// +required
	Spec SnapshotSpec `json:"spec"`
	// status is what MatrixOne holds of it.
	// +optional
	Status SnapshotStatus `json:"status,omitempty"`
}

// SnapshotList is a list of Snapshots.
//
// +kubebuilder:object:root=true
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Snapshot `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (s *Snapshot) StatusCore() *commonv1.StatusCore { return &s.Status.StatusCore }

// SnapshotRestoreSpec brings an account of a MatrixOneCluster back to a
// Snapshot, with MatrixOne's RESTORE ACCOUNT ... FROM SNAPSHOT.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a SnapshotRestore's spec is immutable: create another"
// +kubebuilder:validation:XValidation:rule="self.overwrite",message="overwrite must be true: a restore replaces the target account's databases with the snapshot's"
type SnapshotRestoreSpec struct {
	// snapshot names the Snapshot to restore from, in the same namespace;
	// it must be Ready. Required; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Snapshot string `json:"snapshot"`

	// targetAccount is the account the snapshot's databases are restored
	// into: an existing account of the same cluster (MatrixOne does not
	// create it). Default: the snapshot's own account, in place. A
	// non-sys account's snapshot is never restored into sys. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	TargetAccount string `json:"targetAccount,omitempty"`

	// overwrite confirms that the target account's databases are replaced:
	// every database the snapshot holds is dropped and restored as it was
	// then, and what was written to them since is gone. Required to be
	// true; the field exists so that no one restores by mistake.
	// Immutable.
	// +required
	Overwrite bool `json:"overwrite"`
}

// SnapshotRestoreStatus is the observed state of a SnapshotRestore.
type SnapshotRestoreStatus struct {
	// conditions (Ready: the restore completed; Synced, and the
	// framework's Paused and OperationFailed), observedGeneration, and
	// operation: the restore flow's steps.
	commonv1.StatusCore `json:",inline"`

	// cluster and account are the Snapshot's, read when the restore
	// starts; targetAccount is where its databases go.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster,omitempty"`
	// account is the snapshot's account.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Account string `json:"account,omitempty"`
	// targetAccount is the account restored into.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TargetAccount string `json:"targetAccount,omitempty"`

	// startedAt is when the RESTORE statement was sent: from then on a
	// lost answer (an operator restart) fails the restore rather than
	// sending it twice.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// completedAt is when MatrixOne answered that the restore committed.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// SnapshotRestore restores one account of a MatrixOneCluster from a
// Snapshot, once: in place, or into another existing account. MatrixOne
// runs the restore as one transaction. Restores of one cluster run one at
// a time, the oldest first, and a Snapshot is not deleted while one
// restores from it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mosr,categories={steward,matrixone}
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.targetAccount`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.operation.phase`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.operation.step`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SnapshotRestore struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's standard metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the snapshot and the account it goes into.
	// +required
	Spec SnapshotRestoreSpec `json:"spec"`
	// status is the restore's progress.
	// +optional
	Status SnapshotRestoreStatus `json:"status,omitempty"`
}

// SnapshotRestoreList is a list of SnapshotRestores.
//
// +kubebuilder:object:root=true
type SnapshotRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SnapshotRestore `json:"items"`
}

// StatusCore returns the status the framework owns (framework.Object).
func (r *SnapshotRestore) StatusCore() *commonv1.StatusCore { return &r.Status.StatusCore }
