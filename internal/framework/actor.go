package framework

import (
	"context"

	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Actor is a controller's business logic. The framework calls it once per
// pass with a Context holding the defaulted object.
//
// S is what the actor observes of the application in a pass: the value its
// Declare returns (see Declarer), which the framework keeps for the rest
// of the pass and hands to Observe, to the running flow's step (Step.Run)
// and to InterruptFlow, so that they act on what was observed instead of
// observing again. An actor without Declare, or whose Declare observes
// nothing, uses Nothing. A step or an Observe that expects another type
// than Declare returns does not compile.
type Actor[T Object, S any] interface {
	// Observe compares desired and observed state and returns the next
	// action, or nil when the object is in sync. It runs when no flow is
	// active, after Declare (when the actor has one), with what Declare
	// returned: it decides, and leaves anything imperative to the action
	// it returns.
	Observe(ctx *Context[T], seen S) (Action[T], error)
	// Finalize cleans up external state of a deleting object; it is called
	// until it reports done, then the finalizer is removed. It receives no
	// observation: Declare does not run on a deleting object.
	Finalize(ctx *Context[T]) (done bool, err error)
}

// Nothing is the observation of an actor that has no Declare, or whose
// Declare observes nothing for Observe and the flow steps: the S of
// Actor[T, Nothing].
type Nothing = struct{}

// Action is one step towards the desired state. The framework runs at most
// one per pass, sets Synced=False with the action's name as reason, and
// requeues soon. Its name is the function's name (return method values or
// named functions, e.g. "return a.scaleOut, nil" is named "ScaleOut"), or
// the name given with Named.
type Action[T Object] func(ctx *Context[T]) error

// Named returns fn as an action called name, for closures whose function
// name says nothing.
func Named[T Object](name string, fn Action[T]) Action[T] {
	return func(ctx *Context[T]) error {
		ctx.actionName = name
		return fn(ctx)
	}
}

// Declarer is implemented by actors with declarative children. Declare
// runs on every pass that reaches the actor (not paused, spec valid,
// dependencies ready) before anything else the actor does: before the
// running flow's step, while a flow is Failed and waits for a rescue, and
// before Observe. It applies the children whose desired form follows from
// the spec and the observed state (Services, budgets, configuration,
// workloads: Context.Apply writes only when something changed), observes
// the application into status, and sets the conditions that describe it.
// It does nothing imperative (no member added or removed, no pod evicted):
// that is for actions and flow steps. It returns what it observed, which
// the framework passes to Observe, to the flow's step and to InterruptFlow
// in the same pass; the next pass starts from a new Declare. A Declare
// that returns early without an observation (waiting for something)
// returns S's zero value, and its readers treat that as "not observed".
// An actor whose S is not Nothing must implement Declarer (New fails
// otherwise).
//
// Because it runs during flows that can last an hour, a child Declare
// applies is repaired within a pass of being changed or deleted, whatever
// the object is doing.
type Declarer[T Object, S any] interface {
	Declare(ctx *Context[T]) (S, error)
}

// Defaulter is implemented by actors whose kind has defaults. Default is the
// same function the defaulting webhook calls (SetupWebhooks); the framework
// applies it in memory at the start of every pass, so the controller is
// safe without webhooks. The controller never writes defaults back to the
// spec; the webhook does. Default must be idempotent and leave set fields
// alone.
type Defaulter[T Object] interface {
	Default(obj T)
}

// Validator is implemented by actors that check the (defaulted) spec before
// anything else. An error marks the spec invalid (see InvalidSpec); the
// validating webhook (SetupWebhooks) calls the same Validate and rejects
// the object with a 422 Invalid. Return a field.ErrorList's ToAggregate()
// so that the webhook's answer names each field. Warnings (valid but
// doubtful specs) are a separate, optional hook: Warner.
type Validator[T Object] interface {
	Validate(obj T) error
}

// ClashChecker is implemented by actors whose objects must not clash with
// other objects (a GpssCluster's clusterID is unique among the
// GpssClusters of its namespace). The validating webhook calls Clashes on
// create and on an update outside metadata and status, with the manager's
// cached client, and rejects a clash with a 422 Invalid as it rejects a
// Validate error (return field errors). Two creates can race past a cache,
// and webhooks may be off, so the controller calls it on every pass too,
// after Validate: a clash fails the pass (Synced=False, ReconcileError,
// retried with backoff) rather than marking the spec invalid, because it
// clears by itself once the other object goes. Decide clashes so that one
// of two clashing objects is kept (the older, say).
type ClashChecker[T Object] interface {
	Clashes(ctx context.Context, r client.Reader, obj T) error
}

// NamesMayClash reports whether two objects' children may take one name,
// for a ClashChecker whose children's names all start with their owner's:
// then a child of each can share a name only if one owner's name starts
// with the other's. Every other pair is skipped without naming a child, so
// that a pass that reads every object of its namespace stays cheap.
func NamesMayClash(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// Older reports whether a was created before b, for ClashChecker's "the
// older keeps it": an object not created yet (b at admission) is the
// newest, and of two created in the same second (creation timestamps have
// seconds only) the one whose name sorts first is older, so that exactly
// one of two clashing objects is refused.
func Older(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	switch {
	case tb.IsZero():
		return true
	case !ta.Equal(&tb):
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}

// Admitter is implemented by actors whose objects refer to other objects
// that must exist, or agree with them, when the object is applied (an
// OBTenant names its OBCluster and zones of it). The validating webhook
// calls Admit on create and on an update outside metadata and status,
// after Clashes, with the manager's cached client, and rejects an error
// with a 422 Invalid (return field errors). Unlike Clashes, the controller
// does not call it: what an object refers to can go, or change, after the
// object was admitted, so the controller waits for it as a dependency
// (DependencyDeclarer) or reports it in a condition instead.
type Admitter[T Object] interface {
	Admit(ctx context.Context, r client.Reader, obj T) error
}

// UpdateValidator is implemented by actors whose kind refuses some changes
// that depend on what the object was: a version an image may not go back
// to, or may not jump to. The validating webhook calls ValidateUpdate(old,
// obj) on an update outside metadata and status, both defaulted, old with
// the status stored, after Validate, and rejects an error as Validate's
// (return field errors). The controller never calls it: it sees only the
// object as it is now, so what must also hold while it acts (a race with
// the webhook) it checks itself.
type UpdateValidator[T Object] interface {
	ValidateUpdate(old, obj T) error
}

// DependencyDeclarer is implemented by actors whose objects wait for other
// objects. The framework gets every declared dependency and calls Observe
// only once all are ready; meanwhile DependenciesReady is False and names
// what the object waits for.
type DependencyDeclarer[T Object] interface {
	Dependencies(ctx *Context[T]) ([]Dependency, error)
}

// Dependency is an object another one waits for.
type Dependency struct {
	// Object is an empty object of the dependency's type with its name (and
	// namespace; the dependent's when empty) set. The framework gets it into
	// this object and hands it to the actor through Context.Dependencies.
	Object client.Object
	// Ready reports whether the dependency is ready, with a reason shown in
	// DependenciesReady's message when it is not. Nil means IsReady.
	Ready func(obj client.Object) (ready bool, why string)
}

// IsReady is the default readiness of a dependency: a framework Object is
// ready when its controller has observed its current generation
// (status.observedGeneration) and its Ready condition is True for that
// generation (the condition's observedGeneration); any other object is
// ready once it exists.
func IsReady(obj client.Object) (bool, string) {
	o, ok := obj.(Object)
	if !ok {
		return true, ""
	}
	gen := o.GetGeneration()
	if observed := o.StatusCore().ObservedGeneration; observed != gen {
		return false, fmt.Sprintf("not observed yet (generation %d, observed %d)", gen, observed)
	}
	c := meta.FindStatusCondition(o.StatusCore().Conditions, ConditionReady)
	switch {
	case c == nil:
		return false, "not ready"
	case c.ObservedGeneration != gen:
		return false, fmt.Sprintf("not ready at generation %d (Ready is for generation %d)", gen, c.ObservedGeneration)
	case c.Status != metav1.ConditionTrue:
		return false, fmt.Sprintf("not ready (%s)", c.Reason)
	}
	return true, ""
}

var (
	anonymousFunc = regexp.MustCompile(`^(func|gowrap|deferwrap)?\d+(-range\d+)*$`)
	typeArguments = regexp.MustCompile(`\[[^\]]*\]`)
)

// actionName derives the name of fn from its symbol: the method or function
// name with its first letter upper-cased; "Action" for anonymous closures.
func actionName(fn any) string {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	if f == nil {
		return "Action"
	}
	name := strings.TrimSuffix(f.Name(), "-fm")
	name = typeArguments.ReplaceAllString(name, "")
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	if name == "" || anonymousFunc.MatchString(name) {
		return "Action"
	}
	return reasonFrom(name)
}

// reasonFrom turns s into a valid condition reason in CamelCase: letters and
// digits are kept, other runes split words, and the result starts with a
// letter ("scale-out" is "ScaleOut"). It returns "Unknown" when nothing is
// left.
func reasonFrom(s string) string {
	var b strings.Builder
	upper := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) || r > unicode.MaxASCII {
			upper = true
			continue
		}
		if b.Len() == 0 && !unicode.IsLetter(r) {
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "Unknown"
	}
	return b.String()
}
