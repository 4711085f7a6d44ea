package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// PodPlacement says where a set's pods run. Embed it inline in a spec;
// every field can change and, since it is part of the pod template,
// restarts the pods (each system's rolling restart applies).
type PodPlacement struct {
	// nodeSelector constrains the pods' nodes. Default: none; can change
	// (restarts the pods).
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// affinity replaces the pods' default affinity (each system spreads
	// the members of a set over nodes by default with a preferred pod
	// anti-affinity). Default: that spreading; can change
	// (restarts the pods).
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// tolerations of the pods. Default: none; can change (restarts the
	// pods).
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// topologySpreadConstraints of the pods; their label selectors may use
	// the standard app.kubernetes.io labels of the pods. Default: none; can
	// change (restarts the pods).
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// priorityClassName of the pods. Default: none; can change (restarts
	// the pods).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// PodOverrides are what users add to a set's pods beyond placement: labels
// and annotations for their own tooling (service meshes, cost accounting,
// log shippers), the service account their workload identity needs, and
// pull secrets for a private registry. Embed it inline in a spec next to
// PodPlacement; every field can change and restarts the pods.
type PodOverrides struct {
	// podLabels are added to the pods. They cannot replace the standard
	// app.kubernetes.io labels Steward selects its pods by. Default: none;
	// can change.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !k.startsWith('app.kubernetes.io/'))`,message="labels under app.kubernetes.io/ are Steward's: they select the pods"
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// podAnnotations are added to the pods. Default: none; can change.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// serviceAccountName is the pods' ServiceAccount, which must exist in
	// the namespace. Default: the namespace's default ServiceAccount; can
	// change.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// imagePullSecrets name Secrets of the namespace that the kubelet uses
	// to pull the images. Default: none; can change.
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}
