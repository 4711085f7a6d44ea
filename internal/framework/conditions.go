package framework

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Condition types the framework maintains on every object.
const (
	// ConditionReady reports whether the object serves its purpose. The
	// framework sets it False while the spec is invalid, dependencies are not
	// ready or the object is deleting, and True after an in-sync pass unless
	// the actor set it itself during the pass (Context.SetReady).
	ConditionReady = "Ready"
	// ConditionSynced reports whether the last pass found nothing to do.
	// When an action ran, its reason is the action's name.
	ConditionSynced = "Synced"
	// ConditionPaused reports whether reconciliation is paused.
	ConditionPaused = "Paused"
	// ConditionDependenciesReady reports whether the declared dependencies
	// are ready; its message names what the object waits for.
	ConditionDependenciesReady = "DependenciesReady"
	// ConditionOperationFailed is True while status.operation is Failed and
	// waits for a rescue annotation.
	ConditionOperationFailed = "OperationFailed"
)

// Condition reasons the framework uses.
const (
	ReasonReconciled             = "Reconciled"
	ReasonReconciling            = "Reconciling"
	ReasonInSync                 = "InSync"
	ReasonInvalidSpec            = "InvalidSpec"
	ReasonClash                  = "Clash"
	ReasonTerminalError          = "TerminalError"
	ReasonReconcileError         = "ReconcileError"
	ReasonDeleting               = "Deleting"
	ReasonPaused                 = "Paused"
	ReasonNotPaused              = "NotPaused"
	ReasonDependenciesReady      = "DependenciesReady"
	ReasonWaitingForDependencies = "WaitingForDependencies"
	ReasonDependencyError        = "DependencyError"
	ReasonOperationRunning       = "OperationRunning"
	ReasonOperationFailed        = "OperationFailed"
	ReasonOperationSucceeded     = "OperationSucceeded"
	ReasonOperationAborted       = "OperationAborted"
	ReasonOperationRescued       = "OperationRescued"
	ReasonOperationInterrupted   = "OperationInterrupted"
)

// MaxConditionMessage is metav1.Condition's schema bound on message, in
// characters: a longer one would make the API server refuse the whole
// status patch.
const MaxConditionMessage = 32768

// SetCondition sets condition t on conds with the given status, reason and
// message at generation gen (the message shortened to MaxConditionMessage).
// Like meta.SetStatusCondition it keeps LastTransitionTime unless the
// status changes, so setting an unchanged condition leaves conds deeply
// equal. It reports whether anything changed.
func SetCondition(conds *[]metav1.Condition, t string, status metav1.ConditionStatus, reason, message string, gen int64) bool {
	return meta.SetStatusCondition(conds, metav1.Condition{
		Type:               t,
		Status:             status,
		Reason:             reason,
		Message:            Shorten(message, MaxConditionMessage),
		ObservedGeneration: gen,
	})
}

// Shorten returns s cut to at most n bytes, at a character boundary, so
// that a bounded status field or message stays valid UTF-8 (n bytes are at
// most n characters, the unit of an OpenAPI maxLength).
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// IsConditionTrue reports whether condition t is present and True.
func IsConditionTrue(conds []metav1.Condition, t string) bool {
	return meta.IsStatusConditionTrue(conds, t)
}

// Transition is a condition whose status changed (or that appeared) during a
// pass.
type Transition struct {
	// Old is the condition before the pass; nil when it was absent.
	Old *metav1.Condition
	// New is the condition after the pass.
	New metav1.Condition
}

// Transitions returns the conditions of after that appeared or changed
// status relative to before, in the order of after.
func Transitions(before, after []metav1.Condition) []Transition {
	var out []Transition
	for _, c := range after {
		old := meta.FindStatusCondition(before, c.Type)
		if old == nil || old.Status != c.Status {
			out = append(out, Transition{Old: old, New: c})
		}
	}
	return out
}

// warningReasons are the reasons reported as Warning events. A condition
// that takes one of them records an Event even when its status stays the
// same (Progressing True from Scaling to QuorumAtRisk): each asks the user
// to look.
var warningReasons = map[string]bool{
	ReasonInvalidSpec:            true,
	ReasonTerminalError:          true,
	ReasonReconcileError:         true,
	ReasonDependencyError:        true,
	ReasonOperationFailed:        true,
	commonv1.ReasonQuorumAtRisk:  true,
	commonv1.ReasonNoQuorum:      true,
	commonv1.ReasonNoLeader:      true,
	commonv1.ReasonRolloutHalted: true,
}

// WarningChanges returns the conditions of after whose status stayed the
// same as in before but whose reason changed to a warning reason: a
// transition a user must act on that Transitions does not report.
func WarningChanges(before, after []metav1.Condition) []Transition {
	var out []Transition
	for _, c := range after {
		old := meta.FindStatusCondition(before, c.Type)
		if old != nil && old.Status == c.Status && old.Reason != c.Reason && warningReasons[c.Reason] {
			out = append(out, Transition{Old: old, New: c})
		}
	}
	return out
}

// eventWorthy reports whether a transition deserves an Event: every status
// change does, and so does a new condition unless it only says that nothing
// is going on (a fresh Paused=False or OperationFailed=False).
func eventWorthy(t Transition) bool {
	if t.Old != nil {
		return true
	}
	quiet := (t.New.Type == ConditionPaused || t.New.Type == ConditionOperationFailed) &&
		t.New.Status == metav1.ConditionFalse
	return !quiet
}
