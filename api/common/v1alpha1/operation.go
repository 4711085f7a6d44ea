package v1alpha1

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is the state of an [Operation].
// +kubebuilder:validation:Enum=Running;Succeeded;Failed;Aborted
type Phase string

// Phases of an operation.
const (
	// PhaseRunning means a step is running or waiting for its next attempt.
	PhaseRunning Phase = "Running"
	// PhaseSucceeded means every step completed or was skipped.
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed means a step ran out of attempts; the flow waits for a
	// rescue annotation and blocks other actions on the object meanwhile.
	PhaseFailed Phase = "Failed"
	// PhaseAborted means a user aborted the flow.
	PhaseAborted Phase = "Aborted"
)

// Active reports whether an operation in this phase still owns the object:
// a running or failed flow blocks the object's other actions.
func (p Phase) Active() bool {
	return p == PhaseRunning || p == PhaseFailed
}

// Operation is the persisted progress of a task flow, stored in
// status.operation. Whichever manager runs next resumes the flow from it.
type Operation struct {
	// name is the flow's name, as registered with the controller.
	// +required
	Name string `json:"name"`
	// trigger records what started the flow (for example a spec generation
	// or a request token), so the controller does not start it twice for the
	// same cause.
	// +optional
	Trigger string `json:"trigger,omitempty"`
	// steps are the names of the flow's steps, in order.
	// +required
	// +listType=atomic
	Steps []string `json:"steps"`
	// current is the index in steps of the step running; it equals the
	// number of steps once the flow has succeeded.
	// +required
	// +kubebuilder:validation:Minimum=0
	Current int32 `json:"current"`
	// step is the name of the current step, or empty once the flow is over.
	// +optional
	Step string `json:"step,omitempty"`
	// progress is "<current+1>/<steps>" for printer columns.
	// +optional
	Progress string `json:"progress,omitempty"`
	// phase is the flow's state. A flow's phase, not the object's: the
	// object's state is in its conditions.
	// +required
	Phase Phase `json:"phase"` //nolint:kubeapilinter // nophase: the phase of one task flow, shown beside its step; the object's state is in conditions
	// attempts counts the failed attempts of the current step.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// lastError is the error of the current step's last failed attempt.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// skipped lists the steps a user skipped.
	// +optional
	// +listType=atomic
	Skipped []string `json:"skipped,omitempty"`
	// startedAt is when the flow started.
	// +required
	StartedAt metav1.Time `json:"startedAt"`
	// stepStartedAt is when the current step became current (or was
	// retried by a rescue); a step's timeout counts from it.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// nextAttemptAt is when the current step is retried after a failure.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`
	// message says why the operation was aborted: the rescue or the
	// controller's interruption (for example a scale-out that cancels a
	// drain).
	// +optional
	Message string `json:"message,omitempty"`
	// finishedAt is when the flow succeeded, failed or was aborted.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// held lists the workloads the flow holds at a size other than the one
	// the spec alone gives: a scale-in keeps a StatefulSet's departing pods
	// until it has removed their members, then releases them; a scale-out
	// that adds one member at a time grows the set one pod at a time. The
	// step that decides a size writes it here, and the controller sizes the
	// workload from it while the flow is running or failed. Empty: the flow
	// holds nothing, and a flow that is over holds nothing either.
	// +optional
	// +listType=map
	// +listMapKey=workload
	// +kubebuilder:validation:MaxItems=64
	Held []HeldReplicas `json:"held,omitempty"`
}

// HeldReplicas is the size an operation holds one workload at.
type HeldReplicas struct {
	// workload is the name of the workload (a StatefulSet) in the object's
	// namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Workload string `json:"workload"`
	// replicas is the number of pods the workload keeps while the
	// operation holds it.
	// +required
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
}

// Running reports whether o is a flow whose steps are running (nil is
// none): they decide on what the servers say now, and wait for fresh
// answers where other passes read the last ones.
func (o *Operation) Running() bool {
	return o != nil && o.Phase == PhaseRunning
}

// Hold records that the operation holds workload at replicas, replacing
// what it held before. Steps call it; the controller reads it with
// [Operation.HeldReplicas] when it sizes the workload.
func (o *Operation) Hold(workload string, replicas int32) {
	for i := range o.Held {
		if o.Held[i].Workload == workload {
			o.Held[i].Replicas = replicas
			return
		}
	}
	o.Held = append(o.Held, HeldReplicas{Workload: workload, Replicas: replicas})
}

// HeldReplicas returns the size the operation holds workload at, if it is
// running or failed and holds it. A nil operation holds nothing.
func (o *Operation) HeldReplicas(workload string) (int32, bool) {
	if o == nil || !o.Phase.Active() {
		return 0, false
	}
	for _, h := range o.Held {
		if h.Workload == workload {
			return h.Replicas, true
		}
	}
	return 0, false
}

// NewOperation returns a running operation at its first step.
func NewOperation(name, trigger string, steps []string, now metav1.Time) *Operation {
	op := &Operation{
		Name:      name,
		Trigger:   trigger,
		Steps:     append([]string(nil), steps...),
		Phase:     PhaseRunning,
		StartedAt: now,
	}
	op.SetCurrent(0, now)
	return op
}

// SetCurrent moves the operation to step i at time now and refreshes Step,
// Progress and StepStartedAt. It resets the attempt bookkeeping of the
// previous step.
func (o *Operation) SetCurrent(i int32, now metav1.Time) {
	o.Current = i
	o.ResetAttempts()
	if int(i) < len(o.Steps) {
		o.Step = o.Steps[i]
		o.Progress = fmt.Sprintf("%d/%d", i+1, len(o.Steps))
		o.StepStartedAt = &now
		return
	}
	o.Step = ""
	o.Progress = fmt.Sprintf("%d/%d", len(o.Steps), len(o.Steps))
	o.StepStartedAt = nil
}

// ResetAttempts forgets the current step's failed attempts and its last
// error. The framework calls it when a step becomes current, on a retry
// rescue, and once a step with failed attempts has run without error for
// the flow's Backoff.Max since its last retry was due: a run without error
// in between (a poll of what the step sent) does not reset them, so
// failures separated by such runs add up towards the flow's limit.
func (o *Operation) ResetAttempts() {
	o.Attempts = 0
	o.LastError = ""
	o.NextAttemptAt = nil
}

// Finish ends the operation in phase p at time now.
func (o *Operation) Finish(p Phase, now metav1.Time) {
	o.Phase = p
	o.NextAttemptAt = nil
	o.FinishedAt = &now
}

// RescueAnnotation is the annotation a user sets on an object to rescue its
// operation. The framework acts on it once, removes it and records an Event.
const RescueAnnotation = "steward.dev/operation-rescue"

// Rescue is a verb of the [RescueAnnotation].
type Rescue string

// Rescue verbs.
const (
	// RescueRetry retries the current step with a fresh attempt budget.
	RescueRetry Rescue = "retry"
	// RescueSkip skips the current step and continues with the next one.
	RescueSkip Rescue = "skip"
	// RescueAbort aborts the flow.
	RescueAbort Rescue = "abort"
)

// ParseRescue parses an annotation value, ignoring case and surrounding
// space.
func ParseRescue(value string) (Rescue, error) {
	switch r := Rescue(strings.ToLower(strings.TrimSpace(value))); r {
	case RescueRetry, RescueSkip, RescueAbort:
		return r, nil
	default:
		return "", fmt.Errorf("invalid %s %q: want %q, %q or %q",
			RescueAnnotation, value, RescueRetry, RescueSkip, RescueAbort)
	}
}
