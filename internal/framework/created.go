package framework

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// createdTTL is how long an object this process created is taken to exist
// while the cache does not show it yet. Longer than the cache ever lags; an
// object deleted meanwhile is created again after it.
const createdTTL = time.Minute

// createdKey names a created object across kinds.
type createdKey struct {
	kind string
	types.NamespacedName
}

// Created records that this pass created obj (a child the framework does
// not apply, such as a generated Secret), for CreatedRecently.
func (c *Context[T]) Created(obj client.Object) {
	c.r.rememberCreated(c.createdKey(obj))
}

// CreatedRecently reports whether this process created obj (by kind,
// namespace and name) within the last minute: when the cache does not
// show it, the cache is behind, and a Create would only be answered 409.
func (c *Context[T]) CreatedRecently(obj client.Object) bool {
	return c.r.createdRecently(c.createdKey(obj), true)
}

func (c *Context[T]) createdKey(obj client.Object) createdKey {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := apiutil.GVKForObject(obj, c.Scheme); err == nil {
		kind = gvk.Kind
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = c.Obj.GetNamespace()
	}
	return createdKey{kind: kind, NamespacedName: types.NamespacedName{Namespace: ns, Name: obj.GetName()}}
}

// rememberCreated records that this process created the object at k, and
// drops the records past createdTTL (those of objects deleted before their
// cache caught up).
func (r *core) rememberCreated(k createdKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for old, at := range r.created {
		if now.Sub(at) > createdTTL {
			delete(r.created, old)
		}
	}
	r.created[k] = now
}

// createdRecently reports whether this process created the object at k
// within createdTTL, while the cache does not show it (missing). Once the
// cache shows it, or the record is older, the record goes.
func (r *core) createdRecently(k createdKey, missing bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.created[k]
	if ok && (!missing || time.Since(at) > createdTTL) {
		delete(r.created, k)
		return false
	}
	return ok
}
