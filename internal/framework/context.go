package framework

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/stewardhq/steward/api/common/v1alpha1"
	"github.com/stewardhq/steward/internal/framework/standard"
)

// Context is what an actor, its actions and its flow steps work with during
// one pass. It is a context.Context (canceled when the manager stops), so it
// can be passed to the client directly.
type Context[T Object] struct {
	context.Context

	// Obj is the object being reconciled, with defaults applied in memory.
	// Set its status freely: the framework writes status once at the end of
	// the pass, only if it changed. Do not update the object itself.
	Obj T
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Reader reads from the API server directly, bypassing the cache.
	Reader client.Reader
	// Scheme is the manager's scheme.
	Scheme *runtime.Scheme
	// Recorder records Events; prefer Context.Event.
	Recorder events.EventRecorder
	// Log is the pass's logger, with the object's key.
	Log logr.Logger
	// Dependencies are the declared dependencies, all ready, in the order the
	// actor declared them.
	Dependencies []client.Object

	r          *core
	actionName string
	readySet   bool
	// applied records the children applied in this pass, for DeleteOrphans.
	applied map[childKey]bool
	// configs records the config ConfigMaps ensured in this pass, which
	// CollectConfigMaps never deletes.
	configs map[string]bool
}

// childKey identifies a child by kind and name within the owner's namespace.
type childKey struct {
	gk   schema.GroupKind
	name string
}

// Event records an Event on the object.
func (c *Context[T]) Event(eventType, reason, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	c.Recorder.Eventf(c.Obj, nil, eventType, reason, eventAction(note), "%s", note)
}

// EventAbout records an Event on the object about related, one of its
// children: the Event names the child as its related object, and Events
// about different children are separate series.
func (c *Context[T]) EventAbout(related client.Object, eventType, reason, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	c.Recorder.Eventf(c.Obj, related, eventType, reason, eventAction(note), "%s", note)
}

// eventAction is the action of an Event with note: "Reconcile-" and a
// digest of the note. client-go's events.k8s.io broadcaster counts the
// Events of one type, action, reason, regarding object (at one
// resourceVersion) and related object as one series, and keeps the first
// one's note: two Events of one reason recorded in one pass (ServerAdded
// for two servers) would show as one, "x2", the second note lost. With the
// note in the action, Events whose notes differ are never merged, and a
// repeat of the same note still counts in its series.
func eventAction(note string) string {
	sum := sha256.Sum256([]byte(note))
	return "Reconcile-" + hex.EncodeToString(sum[:4])
}

// SetCondition sets a condition on the object at its current generation.
// Setting ConditionReady this way stops the framework from setting Ready on
// its own in this pass.
func (c *Context[T]) SetCondition(t string, status metav1.ConditionStatus, reason, message string) {
	if t == ConditionReady {
		c.readySet = true
	}
	SetCondition(&c.Obj.StatusCore().Conditions, t, status, reason, message, c.Obj.GetGeneration())
}

// SetReady sets the Ready condition: True with reason Reconciled when ready,
// False with the given reason and message otherwise.
func (c *Context[T]) SetReady(ready bool, reason, message string) {
	if ready {
		c.SetCondition(ConditionReady, metav1.ConditionTrue, ReasonReconciled, message)
		return
	}
	c.SetCondition(ConditionReady, metav1.ConditionFalse, reason, message)
}

// Operation returns the object's task flow record, nil when no flow ever
// ran. Flow steps read their progress from it.
func (c *Context[T]) Operation() *commonv1.Operation {
	return c.Obj.StatusCore().Operation
}

// RequireFresh reads the object from the API server, bypassing the cache,
// and fails with a quiet requeue (classified like a conflict) when the
// cache's copy is not the latest. Call it before acting on what status
// says when acting twice would do harm: the framework does before every
// flow step, since a status.operation read from a cache that has not seen
// the last status write would run a completed step again.
func (c *Context[T]) RequireFresh() error {
	live := newObject[T]()
	if err := c.Reader.Get(c, client.ObjectKeyFromObject(c.Obj), live); err != nil {
		return fmt.Errorf("read %s %s from the API server: %w", c.r.kind, key(c.Obj), err)
	}
	if live.GetResourceVersion() != c.Obj.GetResourceVersion() {
		return fmt.Errorf("%s %s is at resourceVersion %s, the cache at %s: %w", c.r.kind, key(c.Obj),
			live.GetResourceVersion(), c.Obj.GetResourceVersion(), errStaleCache)
	}
	return nil
}

// Labels returns the standard labels of a child of the object playing
// component.
func (c *Context[T]) Labels(component string) map[string]string {
	return standard.Labels(c.r.app, c.Obj.GetName(), component, c.r.partOf)
}

// Selector returns the labels that select the object's children playing
// component, suitable for a workload's (immutable) selector: name,
// instance, component and managed-by — the standard labels minus part-of,
// the one label a system may rename without its pods changing.
func (c *Context[T]) Selector(component string) map[string]string {
	return standard.Selector(c.r.app, c.Obj.GetName(), component)
}

// Owner returns a controller owner reference to the object.
func (c *Context[T]) Owner() metav1.OwnerReference {
	return *metav1.NewControllerRef(c.Obj, c.r.gvk)
}

// key returns a short "namespace/name" for messages.
func key(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return fmt.Sprintf("%s/%s", obj.GetNamespace(), obj.GetName())
}
