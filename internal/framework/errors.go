package framework

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// invalidSpecError marks an error caused by the object's spec.
type invalidSpecError struct{ err error }

func (e *invalidSpecError) Error() string { return "invalid spec: " + e.err.Error() }
func (e *invalidSpecError) Unwrap() error { return e.err }

// InvalidSpec marks err as caused by the object's spec. The framework sets
// Synced and Ready to False with reason InvalidSpec and err's message, and
// does not call the actor again until the spec (metadata.generation)
// changes. It returns nil for a nil err.
func InvalidSpec(err error) error {
	if err == nil {
		return nil
	}
	return &invalidSpecError{err: err}
}

// IsInvalidSpec reports whether err, or an error it wraps, was marked with
// InvalidSpec.
func IsInvalidSpec(err error) bool {
	var e *invalidSpecError
	return errors.As(err, &e)
}

// Terminal marks err as one that retrying cannot fix (it wraps
// reconcile.TerminalError). The framework sets Synced to False with reason
// TerminalError and does not retry until the object changes. It returns nil
// for a nil err.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return reconcile.TerminalError(err)
}

// IsTerminal reports whether err is terminal: marked with Terminal or
// InvalidSpec, or a reconcile.TerminalError.
func IsTerminal(err error) bool {
	return IsInvalidSpec(err) || errors.Is(err, reconcile.TerminalError(nil))
}

// errStaleCache reports that the cache is behind the API server for the
// object; the pass is requeued quietly, like a conflict.
var errStaleCache = errors.New("the cache is behind the API server")

// errorClass is how the framework handles an error.
type errorClass int

const (
	classNone errorClass = iota
	// classConflict: the cache was stale (a write conflicted, or the cache
	// is behind the API server), or a StatefulSet is being re-created;
	// requeue quietly.
	classConflict
	// classInvalidSpec: terminal until the generation changes.
	classInvalidSpec
	// classTerminal: terminal until the object changes.
	classTerminal
	// classTransient: back off exponentially.
	classTransient
)

func (c errorClass) String() string {
	switch c {
	case classNone:
		return "none"
	case classConflict:
		return "conflict"
	case classInvalidSpec:
		return "invalidSpec"
	case classTerminal:
		return "terminal"
	default:
		return "transient"
	}
}

// classify sorts err into its class.
func classify(err error) errorClass {
	switch {
	case err == nil:
		return classNone
	case IsInvalidSpec(err):
		return classInvalidSpec
	case IsTerminal(err):
		return classTerminal
	case apierrors.IsConflict(err) || errors.Is(err, errStaleCache) || errors.Is(err, errReplacingStatefulSet):
		// Only a conflict is a quiet requeue. AlreadyExists is not: a
		// create that keeps failing that way (a name taken by someone else)
		// must back off like any other error.
		return classConflict
	default:
		return classTransient
	}
}
