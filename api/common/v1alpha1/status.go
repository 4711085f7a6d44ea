package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusCore is the part of status the framework owns. Every kind embeds it
// inline in its status, so its fields sit at the top of status:
//
//	type WidgetStatus struct {
//		commonv1.StatusCore `json:",inline"`
//		// ... the kind's own observed state
//	}
//
// and exposes it with one method (framework.Object):
//
//	func (w *Widget) StatusCore() *commonv1.StatusCore { return &w.Status.StatusCore }
type StatusCore struct {
	// conditions are Ready, Synced and the other conditions of the
	// framework (Paused, DependenciesReady, OperationFailed) and of the
	// kind's controller (Available, Progressing, ...).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// operation is the running or last task flow (a scaling, a rolling
	// restart, an upgrade). Kinds that run no flows leave it unset.
	// +optional
	Operation *Operation `json:"operation,omitempty"`
}

// Condition types that systems' controllers set, next to the framework's
// Ready, Synced, Paused, DependenciesReady and OperationFailed.
const (
	// ConditionAvailable is True while the system serves its clients (for
	// a quorum system: a quorum serves).
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the object moves towards its
	// spec: creating, scaling, restarting onto a new revision.
	ConditionProgressing = "Progressing"
)

// Reasons of Available and Progressing that several systems share. A
// system declares the reasons only it uses next to its own API.
const (
	// ReasonCreating: the first pods are being created.
	ReasonCreating = "Creating"
	// ReasonScaling: members are joining or leaving.
	ReasonScaling = "Scaling"
	// ReasonRestarting: pods are restarting onto the latest revision.
	ReasonRestarting = "Restarting"
	// ReasonStable: nothing is in progress (Progressing=False).
	ReasonStable = "Stable"
	// ReasonQuorumServing: a quorum serves (Available=True).
	ReasonQuorumServing = "QuorumServing"
	// ReasonNoQuorum: no quorum serves (Available=False), or a change
	// waits for one.
	ReasonNoQuorum = "NoQuorum"
	// ReasonQuorumAtRisk: a change waits because making it now would leave
	// less than a quorum serving.
	ReasonQuorumAtRisk = "QuorumAtRisk"
	// ReasonNoLeader: no member answers as leader.
	ReasonNoLeader = "NoLeader"
	// ReasonRolloutHalted: a member restarted onto a new pod template does
	// not become ready; the rollout touches no other member until the spec
	// changes (a rollback) or the member recovers.
	ReasonRolloutHalted = "RolloutHalted"
)

// Reasons of Events that several systems record.
const (
	// EventVolumeDeleted: a member's volume claim was deleted under reclaim
	// policy Delete (a departed member's after a scale-in, or every one
	// with the cluster).
	EventVolumeDeleted = "VolumeDeleted"
)
