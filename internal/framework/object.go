package framework

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
)

// Object is a kind the framework reconciles. Its status embeds
// commonv1.StatusCore (conditions, observedGeneration and the task flow's
// operation), which only the framework writes, and StatusCore returns it
// so that the framework can read and set it without knowing the status
// type:
//
//	func (w *Widget) StatusCore() *commonv1.StatusCore { return &w.Status.StatusCore }
type Object interface {
	client.Object
	// StatusCore returns a pointer to the status core embedded in status.
	StatusCore() *commonv1.StatusCore
}

// Pausable is implemented by kinds with a spec.paused field. The framework
// also honors the PausedAnnotation on every kind.
type Pausable interface {
	// IsPaused reports whether spec.paused is set.
	IsPaused() bool
}

// PausedAnnotation pauses reconciliation of any object when set to "true".
const PausedAnnotation = "steward.dev/paused"

// DefaultFinalizer is the finalizer the framework puts on the objects it
// reconciles unless Options.Finalizer names another.
const DefaultFinalizer = "steward.dev/finalizer"

// FieldOwner is the server-side apply field manager of every write the
// framework makes.
const FieldOwner = "steward"

// IsPaused reports whether obj is paused by its spec or the annotation.
func IsPaused(obj client.Object) bool {
	if p, ok := obj.(Pausable); ok && p.IsPaused() {
		return true
	}
	return obj.GetAnnotations()[PausedAnnotation] == "true"
}
