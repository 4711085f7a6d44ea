package framework

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stewardhq/steward/internal/framework/flow"
)

// Object is a kind the framework reconciles. Its status carries conditions
// and an observedGeneration that only the framework writes.
//
// Both accessors return pointers into the object's status so that the
// framework can read and set them without knowing the status type:
//
//	func (w *Widget) Conditions() *[]metav1.Condition { return &w.Status.Conditions }
//	func (w *Widget) ObservedGeneration() *int64      { return &w.Status.ObservedGeneration }
type Object interface {
	client.Object
	// Conditions returns a pointer to status.conditions.
	Conditions() *[]metav1.Condition
	// ObservedGeneration returns a pointer to status.observedGeneration.
	ObservedGeneration() *int64
}

// Pausable is implemented by kinds with a spec.paused field. The framework
// also honors the PausedAnnotation on every kind.
type Pausable interface {
	// IsPaused reports whether spec.paused is set.
	IsPaused() bool
}

// OperationHolder is implemented by kinds that run task flows; the
// operation lives in status.operation.
type OperationHolder interface {
	// GetOperation returns status.operation, nil when no flow ever ran.
	GetOperation() *flow.Operation
	// SetOperation replaces status.operation.
	SetOperation(op *flow.Operation)
}

// PausedAnnotation pauses reconciliation of any object when set to "true".
const PausedAnnotation = "steward.dev/paused"

// DefaultFinalizer is the finalizer the framework puts on the objects it
// reconciles unless Options.Finalizer names another.
const DefaultFinalizer = "steward.dev/finalizer"

// FieldOwner is the server-side apply field manager of every write the
// framework makes.
const FieldOwner = "steward"

// isPaused reports whether obj is paused by its spec or the annotation.
func isPaused(obj client.Object) bool {
	if p, ok := obj.(Pausable); ok && p.IsPaused() {
		return true
	}
	return obj.GetAnnotations()[PausedAnnotation] == "true"
}
