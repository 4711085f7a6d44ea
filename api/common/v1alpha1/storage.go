package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// ReclaimPolicy says what happens to the members' volumes when the cluster
// is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

// Reclaim policies.
const (
	// ReclaimRetain keeps the PersistentVolumeClaims when the cluster is
	// deleted.
	ReclaimRetain ReclaimPolicy = "Retain"
	// ReclaimDelete deletes the PersistentVolumeClaims with the cluster.
	ReclaimDelete ReclaimPolicy = "Delete"
)

// StorageSpec is the persistent volume of each member.
//
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storageClassName is immutable",fieldPath=.storageClassName
type StorageSpec struct {
	// size is each member's volume request. Default "1Gi"; can change, by
	// growing only: admission refuses a smaller size, and a larger one
	// where the StorageClass does not allow volume expansion. The
	// controller asks for the larger size on every existing claim and
	// re-creates the StatefulSet with the larger claim template, its pods
	// left running (docs/design/framework.md, "Volume growth").
	// +optional
	// +kubebuilder:default="1Gi"
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName is the volumes' StorageClass. Default: the cluster's
	// default class; immutable (it cannot be set, changed or unset after
	// creation).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// reclaimPolicy says what happens to the volumes when the cluster is
	// deleted: Retain keeps them, Delete deletes them. Default Retain; can
	// change. A scale-in never deletes a volume by itself, whatever the
	// policy: the controller removes the member first, and deletes the
	// volumes of departed members (policy Delete) only then.
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
}
