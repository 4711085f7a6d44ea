package framework

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Trigger enqueues objects of one controller from outside its watches: a
// background probe whose answer changed (probe.Options.Notify), say. Create
// it with the actor, before the controller exists, and hand it to
// Options.Trigger; until the controller starts, Enqueue does nothing, which
// loses nothing because a starting controller passes over every object.
type Trigger struct {
	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// NewTrigger returns a Trigger that is not attached to a controller yet.
func NewTrigger() *Trigger { return &Trigger{} }

// Group returns how a Trigger names obj: "namespace/name", the Group of the
// probe targets that belong to it.
func Group(obj client.Object) string { return client.ObjectKeyFromObject(obj).String() }

// Enqueue adds the object named group ("namespace/name", see [Group]) to
// its controller's queue, once however often it is called before the pass.
func (t *Trigger) Enqueue(group string) {
	ns, name, ok := strings.Cut(group, "/")
	if !ok {
		ns, name = "", group
	}
	t.mu.Lock()
	q := t.queue
	t.mu.Unlock()
	if q != nil {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	}
}

// Start implements source.TypedSource: the controller hands over its queue.
func (t *Trigger) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue = q
	return nil
}
