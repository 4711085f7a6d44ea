// Package v1alpha1 holds the API types every Steward system shares, so that
// a system's API (api/<system>/v1alpha1) embeds them instead of writing
// them again, and so that public CRD packages never import internal/:
//
//   - [StatusCore], embedded inline in every kind's status:
//     conditions, observedGeneration and the task-flow [Operation];
//   - the task flow's [Operation], its [Phase] and the rescue verbs a user
//     writes into the [RescueAnnotation];
//   - [StorageSpec] and [ReclaimPolicy], a member's persistent volume;
//   - [PodPlacement] and [PodOverrides], where pods run and what users add
//     to them;
//   - the condition types every system reports ([ConditionAvailable],
//     [ConditionProgressing]) and the reasons they share.
//
// It is not an API group of its own: it registers no kind. The types carry
// kubebuilder markers and generated DeepCopy methods, so controller-gen
// describes them in each system's CRD.
//
// +kubebuilder:object:generate=true
package v1alpha1
